package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
	"github.com/hybrank/hybrank/models/queue"
)

// Token is one token of a tokenized text, TEI's /tokenize item. For a
// token of the input, Text is input[Start:Stop]: Start and Stop are byte
// offsets into the UTF-8 input (Stop exclusive), as the Hugging Face
// tokenizers TEI runs report them, and equal character offsets for ASCII
// text. A special token ([CLS], [SEP]) has Special set, its vocabulary
// form as Text, and no place in the input: its start and stop are JSON
// null.
type Token struct {
	ID      int    `json:"id"`
	Text    string `json:"text"`
	Special bool   `json:"special"`
	Start   int    `json:"start"`
	Stop    int    `json:"stop"`
}

// MarshalJSON writes Token as TEI does: start and stop are null for
// special tokens.
func (t Token) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

// appendJSON appends t's JSON form (MarshalJSON's) to b.
func (t Token) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(t.ID), 10)
	b = append(b, `,"text":`...)
	b = appendJSONString(b, t.Text)
	b = append(b, `,"special":`...)
	b = strconv.AppendBool(b, t.Special)
	if t.Special {
		return append(b, `,"start":null,"stop":null}`...)
	}
	b = append(b, `,"start":`...)
	b = strconv.AppendInt(b, int64(t.Start), 10)
	b = append(b, `,"stop":`...)
	b = strconv.AppendInt(b, int64(t.Stop), 10)
	return append(b, '}')
}

// tokenLists is /tokenize's reply, one list per input, encoded in one
// buffer (a reply may hold a million tokens; encoding/json's reflection
// and per-token Marshaler calls cost several times the reply's size in
// garbage).
type tokenLists [][]Token

// MarshalJSON writes the lists as a JSON array of arrays of tokens.
func (l tokenLists) MarshalJSON() ([]byte, error) {
	n := 2
	for _, toks := range l {
		n += 2 + 64*len(toks)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, toks := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, t := range toks {
			if j > 0 {
				b = append(b, ',')
			}
			b = t.appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, each byte that is not valid UTF-8 written
// as U+FFFD (as encoding/json does), everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Tokenizer is the model's tokenizer. Tokenize serves /tokenize (special
// tokens only when addSpecial); CountTokens counts a text's tokens without
// special tokens, for input-length checks, truncation (max_tokens_per_doc,
// truncate) and the APIs' usage fields (a request's input tokens, whether
// a cache or the model answered; x-compute-tokens and the tokens metric
// carry what the model reports it computed). Implementations must be
// safe for concurrent use. When a Server has none, it estimates counts
// with models.EstimateTokens.
type Tokenizer interface {
	Tokenize(text string, addSpecial bool) ([]Token, error)
	CountTokens(text string) int
}

// Analyzer is the engine's text analysis (*analysis.Analyzer): the
// terms BM25 indexes a document's text as, and searches a query's as.
type Analyzer interface {
	Analyze(text string) []string
	AnalyzeQuery(text string) []string
	// Version names the analysis (its settings' digest).
	Version() string
}

// DocumentBatch is one atomic change to an index: every upsert and delete
// becomes visible together or not at all. Document IDs are scoped to a
// tenant (the same ID in two tenants is two documents): upserts write their
// own Document.Tenant, deletes remove IDs of Tenant only. A batch is the
// engine's (engine.Batch): the upserts in order, then the deletes, the
// last operation on a document winning (an upsert twice keeps the second,
// an upsert and a delete deletes), so a DocumentStore applies it in that
// order.
type DocumentBatch struct {
	Tenant  string
	Upserts []engine.Document
	Deletes []string
}

// Validate checks b, once its tenants are final, with the engine's
// validation (engine.Batch.Validate, the one definition): every upsert a
// valid document, no empty ID deleted. Its errors wrap ErrInvalid and
// carry the engine's message behind the request's field, documents[i] or
// ids[i].
func (b DocumentBatch) Validate() error {
	var eb engine.Batch
	eb.Add(b.Upserts...)
	eb.DeleteIn(b.Tenant, b.Deletes...)
	var oe *engine.OpError
	if err := eb.Validate(); !errors.As(err, &oe) {
		return err
	}
	field := fmt.Sprintf("documents[%d]", oe.Op)
	if oe.Op >= len(b.Upserts) {
		field = fmt.Sprintf("ids[%d]", oe.Op-len(b.Upserts))
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalid, field, oe.Err)
}

// CommitResult reports an applied DocumentBatch.
type CommitResult struct {
	Upserted int `json:"upserted"`
	Deleted  int `json:"deleted"`
	// Generation is the index version that includes the batch, if the
	// store has one.
	Generation uint64 `json:"generation,omitempty"`
}

// DocumentStore is the index behind /documents: Apply commits atomic
// batches (returning only once the batch is as durable as the store
// promises), Get reads one document of a tenant. Implementations must be
// safe for concurrent use and wrap ErrInvalid when they reject a document.
type DocumentStore interface {
	Apply(ctx context.Context, b DocumentBatch) (CommitResult, error)
	Get(ctx context.Context, tenant, id string) (engine.Document, bool, error)
}

// WriteState is implemented by a DocumentStore that can turn read-only
// (the engine after a failed write-ahead log write or fsync): ReadOnly
// returns nil while it takes writes, else why not. It must be cheap and
// safe for concurrent use; /readyz and /metrics report it.
type WriteState interface {
	ReadOnly() error
}

// IndexStats is implemented by an index that reports its state (size,
// maintenance, write-ahead log and recovery): /metrics exports it.
type IndexStats interface {
	Stats() engine.Stats
}

// Searcher runs hybrid searches; the request and result are the engine's
// types, which are also the JSON of /search. The server rewrites
// req.Rerank and req.Cascade.First that name a served reranker by any of
// its names to its served name (RerankerConfig.Name), so an engine
// registers each reranker under that name. Implementations must be safe
// for concurrent use, must never return documents of another tenant than
// req.Tenant, and wrap ErrInvalid when they reject the request.
type Searcher interface {
	Search(ctx context.Context, req engine.Request) (*engine.Result, error)
}

// Services are what a Server serves. Any may be nil: its routes then answer
// 503 (not configured) and /readyz reports it missing.
//
// The server calls the models as they are given: give it each model
// behind its queue (models/queue, shared with the engine that serves
// /search, so that concurrent requests and searches share model calls)
// and, in front of that, its cache (models/cache), as backend.Open does.
// The server applies the sigmoid itself (Cohere's relevance_score, TEI's
// raw_scores), so rerankers return logits (models.Config.Sigmoid off), and
// it normalises embeddings itself (TEI's normalize=false), reading
// EmbedPooled's vectors.
type Services struct {
	// Rerankers are the cross-encoders, by served name
	// (RerankerConfig.Name of Config.Rerankers); a reranker without one
	// answers 503. A key that names no reranker is a configuration error.
	Rerankers map[string]models.Reranker
	Embedder  models.Embedder
	Tokenizer Tokenizer
	// Analyzer is the index's text analysis, served by /analyze; nil
	// answers 503 there.
	Analyzer  Analyzer
	Searcher  Searcher
	Documents DocumentStore
	// Stats, when set, is scraped by /metrics (hybrank_index_*).
	Stats IndexStats
	// Caches, by the served name of the model they front (a reranker's
	// Name, or EmbedModel), are scraped by /metrics
	// (hybrank_cache_*{cache="rerank" or "embed", model="name"}).
	Caches map[string]CacheStats
	// Queues, by the served name of the model they queue, are scraped by
	// /metrics (hybrank_batch_items, hybrank_batch_tokens and
	// hybrank_queue_items{kind="rerank" or "embed", model="name"}).
	Queues map[string]QueueStats
}

// QueueStats is implemented by a model queue (*queue.Reranker,
// *queue.Embedder).
type QueueStats interface {
	Stats() queue.Stats
}

// CacheStats is implemented by a model cache (*cache.Reranker,
// *cache.Embedder).
type CacheStats interface {
	Stats() cache.Stats
}
