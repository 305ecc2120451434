package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hybrank/hybrank/simd"
)

// Reranker is the one contract of a cross-encoder: the model itself
// (models/ort's CrossEncoder), and every decorator in front of it — a
// score cache (models/cache), the per-model queue that the HTTP routes
// and the engine share (models/queue) — each of which keeps the
// Capabilities of what it wraps. Implementations are safe for concurrent
// use.
type Reranker interface {
	// ScorePairs scores (query, document) pairs, which may come from
	// different queries: one score per pair, in input order (the model's
	// logit, or its sigmoid when its Config.Sigmoid says so), and the work
	// done. A pair with an empty query is an error wrapping ErrEmptyQuery.
	// Any number of pairs may be given: the model batches them itself.
	ScorePairs(ctx context.Context, pairs []Pair) ([]float32, Usage, error)
	// ScoreSpans scores documents longer than the model's window: each
	// document is split into overlapping windows of its own tokens
	// (Chunking), all windows of all documents are scored together as
	// ordinary pairs, and each document gets the aggregate of its windows'
	// scores and the byte span of its best window. One SpanScore per
	// document, in input order; Usage counts the windows as Pairs. ch must
	// be enabled and valid (else an error wrapping ErrInvalidConfig). A
	// reranker whose Capabilities say no Chunking returns an error
	// wrapping ErrNoChunking.
	ScoreSpans(ctx context.Context, query string, docs []string, ch Chunking) ([]SpanScore, Usage, error)
	// Capabilities says what the reranker can do; it is cheap, never
	// loads the model, and may say more once the model has loaded.
	Capabilities() Capabilities
	// Load loads a model that loads lazily, now, and reports why it
	// cannot; it is a no-op for one that is loaded, safe to call more than
	// once and concurrently with the other methods, and a failed Load may
	// be retried. The engine calls it when a model is registered
	// (engine.Open), so that no search pays a load inside its budget.
	Load() error
}

// Embedder is the one contract of a bi-encoder, with the same
// decorators as Reranker. Implementations are safe for concurrent use.
type Embedder interface {
	// EmbedPooled returns one vector of length Dim per text, in input
	// order, as the model pools it, before any L2 normalisation (Embed
	// normalises them as the model's Capabilities say), and the work done.
	// in says what the texts are, so that the model's prompts apply
	// (queries and documents of e5 and bge are embedded differently;
	// InputRaw embeds the texts as given). The vectors are the caller's: an
	// implementation keeps no reference it would later read or hand out
	// again (package cache returns copies of what it stores).
	EmbedPooled(ctx context.Context, in Input, texts []string) ([][]float32, Usage, error)
	// EmbedSpans embeds texts longer than the model's window: each text is
	// split into overlapping windows of its own tokens and every window is
	// embedded (all windows of all texts in one call, batched together).
	// It returns, per text in input order, one normalised vector per window
	// with the window's byte span, not an aggregate: a caller scoring
	// against a query takes the best (or top-k) window, SpanVectors.Best,
	// as chunked reranking does, while averaging windows would blur a
	// relevant passage into an irrelevant document. ch must be enabled and
	// valid; an embedder without Chunking returns an error wrapping
	// ErrNoChunking. Usage counts the windows embedded as Pairs.
	EmbedSpans(ctx context.Context, in Input, texts []string, ch Chunking) ([]SpanVectors, Usage, error)
	// Dim is the length of every vector (0 when the model cannot load).
	Dim() int
	// Capabilities and Load are as Reranker's.
	Capabilities() Capabilities
	Load() error
}

// Capabilities is what a model can do, as a value: decorators pass on the
// capabilities of what they wrap (a queue adds its wait to Cost), so
// nothing is found out by type assertions and nothing fails at run time
// for a method a decorator has but its model has not.
type Capabilities struct {
	// Window is the most tokens one sequence holds (a pair, special tokens
	// included), 0 when not known yet (the model has not loaded).
	Window int
	// Chunking says ScoreSpans (EmbedSpans) score texts in windows;
	// without it they return an error wrapping ErrNoChunking and callers
	// truncate instead.
	Chunking bool
	// Embedding is an embedder's pooling, normalisation (Embed
	// L2-normalises EmbedPooled's vectors when its Normalize is set) and
	// prompts, once loaded; zero for a reranker.
	Embedding Embedding
	// Cost, when not nil, predicts the wall time of one ScorePairs call on
	// pairs of these token lengths (EstimatePairTokens; a length past the
	// window counts as the window). ok is false when there is nothing to
	// predict from (the model has not loaded, or has no cost model). It
	// never loads the model and is cheap (no tokenization, no runtime
	// call). The engine sizes the batches of a budgeted rerank stage with
	// it; a queue in front of the model adds the predicted wait.
	Cost func(pairTokens []int) (d time.Duration, ok bool)
}

// Score scores docs against one query with r.ScorePairs: one score per
// document, in input order. A blank query is an error wrapping
// ErrEmptyQuery.
func Score(ctx context.Context, r Reranker, query string, docs []string) ([]float32, Usage, error) {
	if strings.TrimSpace(query) == "" {
		return nil, Usage{}, ErrEmptyQuery
	}
	pairs := make([]Pair, len(docs))
	for i, d := range docs {
		pairs[i] = Pair{Query: query, Doc: d}
	}
	s, u, err := r.ScorePairs(ctx, pairs)
	if err == nil && len(s) != len(docs) {
		err = fmt.Errorf("models: reranker returned %d scores for %d documents", len(s), len(docs))
	}
	return s, u, err
}

// Embed embeds texts with e.EmbedPooled and L2-normalises the vectors
// when e's Capabilities say so (Embedding.Normalize): the vectors a search
// compares.
func Embed(ctx context.Context, e Embedder, in Input, texts []string) ([][]float32, Usage, error) {
	v, u, err := e.EmbedPooled(ctx, in, texts)
	if err != nil {
		return nil, u, err
	}
	if len(v) != len(texts) {
		return nil, u, fmt.Errorf("models: embedder returned %d vectors for %d texts", len(v), len(texts))
	}
	if e.Capabilities().Embedding.Normalize {
		for _, x := range v {
			simd.L2Normalize(x)
		}
	}
	return v, u, nil
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("2ms", "30s"); a bare JSON number is taken as nanoseconds. The
// model queue's and the server's config files use it.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"2ms\" or nanoseconds, got %s", b)
	}
	*d = Duration(n)
	return nil
}
