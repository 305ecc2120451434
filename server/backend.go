package server

import (
	"context"
	"encoding/json"
)

// Pair is one (query, document) input of a cross-encoder.
type Pair struct {
	Query string
	Doc   string
}

// Usage counts the work one model call did.
type Usage struct {
	// Tokens is the number of input tokens the model processed.
	Tokens int
	// Pairs is the number of items (pairs or texts) scored or embedded.
	Pairs int
	// Batches is the number of model runs.
	Batches int
}

// PairScorer scores (query, document) pairs with a cross-encoder: one raw
// logit per pair, in input order. Implementations must be safe for
// concurrent use; ort.CrossEncoder satisfies it through an adapter in
// cmd/serve.
type PairScorer interface {
	ScorePairs(ctx context.Context, pairs []Pair) ([]float32, Usage, error)
}

// Embedder embeds texts with a bi-encoder: one vector of length Dim per
// text, in input order. Implementations must be safe for concurrent use.
type Embedder interface {
	EmbedWithUsage(ctx context.Context, texts []string) ([][]float32, Usage, error)
	Dim() int
}

// Token is one token of a tokenized text. Start and Stop are byte offsets
// of the token's text in the input (Stop exclusive) when the tokenizer
// knows them, else both 0; special tokens have Special set.
type Token struct {
	ID      int    `json:"id"`
	Text    string `json:"text"`
	Special bool   `json:"special"`
	Start   int    `json:"start"`
	Stop    int    `json:"stop"`
}

// Tokenizer is the model's tokenizer. Tokenize serves /tokenize (special
// tokens only when addSpecial); CountTokens counts a text's tokens without
// special tokens, for input-length checks, truncation (max_tokens_per_doc,
// truncate) and usage when the model reports none. Implementations must be
// safe for concurrent use. When a Server has none, it estimates counts
// from words.
type Tokenizer interface {
	Tokenize(text string, addSpecial bool) ([]Token, error)
	CountTokens(text string) int
}

// Document is one document of a search index as the HTTP API carries it.
type Document struct {
	ID       string            `json:"id"`
	Title    string            `json:"title,omitempty"`
	Text     string            `json:"text"`
	Tenant   string            `json:"tenant,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Source   string            `json:"source,omitempty"`
	Span     Span              `json:"span"`
	Links    []string          `json:"links,omitempty"`
}

// Span locates a document (a chunk) inside its source, in bytes.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// DocumentBatch is one atomic change to an index: every upsert and delete
// becomes visible together or not at all. When Scoped, the batch belongs to
// Tenant: implementations must only delete documents of that tenant and
// must refuse (with an error wrapping ErrForbidden) to overwrite a document
// of another tenant.
type DocumentBatch struct {
	Tenant  string
	Scoped  bool
	Upserts []Document
	Deletes []string
}

// CommitResult reports an applied DocumentBatch.
type CommitResult struct {
	Upserted int `json:"upserted"`
	Deleted  int `json:"deleted"`
	// Generation is the index version that includes the batch, if the
	// store has one.
	Generation uint64 `json:"generation,omitempty"`
}

// DocumentStore applies atomic batches to the index behind /documents.
// Implementations must be safe for concurrent use.
type DocumentStore interface {
	Apply(ctx context.Context, b DocumentBatch) (CommitResult, error)
}

// SearchRequest is a hybrid search as the HTTP API carries it; it mirrors
// engine.Request field for field (budget in milliseconds). Zero values mean
// the engine's defaults.
type SearchRequest struct {
	Query string `json:"query"`
	// Tenant restricts results to one tenant; with API keys it is forced to
	// the key's tenant.
	Tenant string `json:"tenant,omitempty"`
	// Filter keeps documents whose metadata has every key = value.
	Filter map[string]string `json:"filter,omitempty"`
	TopK   int               `json:"top_k,omitempty"`
	// Candidates is how many documents each retriever returns before fusion.
	Candidates int `json:"candidates,omitempty"`
	// Fusion is "rrf", "weighted" or "relative".
	Fusion string  `json:"fusion,omitempty"`
	RRFK   float64 `json:"rrf_k,omitempty"`
	// Alpha weighs dense against BM25 in weighted fusion, in [0, 1].
	Alpha          *float64 `json:"alpha,omitempty"`
	ScoreThreshold float64  `json:"score_threshold,omitempty"`
	// MMRLambda in (0, 1] turns maximal marginal relevance on.
	MMRLambda float64   `json:"mmr_lambda,omitempty"`
	Expand    Expansion `json:"expand"`
	// Rerank is the reranker profile ("" = no reranking).
	Rerank string `json:"rerank,omitempty"`
	// BudgetMS is a latency budget; running out degrades the result.
	BudgetMS int `json:"budget_ms,omitempty"`
	// TokenBudget and Reserve drive passage packing.
	TokenBudget int `json:"token_budget,omitempty"`
	Reserve     int `json:"reserve,omitempty"`
}

// Expansion follows document links from the best candidates.
type Expansion struct {
	Hops  int     `json:"hops"`
	Decay float64 `json:"decay"`
	Seeds int     `json:"seeds"`
}

// SearchHit is one result with where its score came from.
type SearchHit struct {
	Document Document `json:"document"`
	Score    float64  `json:"score"`
	// Provenance is the engine's account of the score (per-retriever ranks
	// and scores, fusion, rerank, origin), passed through as is.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// SearchResponse is the result of a search.
type SearchResponse struct {
	Hits []SearchHit `json:"hits"`
	// Passages are packed context (engine.Passage), passed through.
	Passages   json.RawMessage `json:"passages,omitempty"`
	Tokens     int             `json:"tokens"`
	Candidates int             `json:"candidates"`
	Reranked   int             `json:"reranked"`
	// Degraded is set when the budget ran out and some stage was cut.
	Degraded bool `json:"degraded"`
	// Fallbacks lists degradations (engine.Fallback), passed through.
	Fallbacks json.RawMessage `json:"fallbacks,omitempty"`
	// Timings are per-stage durations in milliseconds.
	Timings map[string]float64 `json:"timings,omitempty"`
}

// Searcher runs hybrid searches. Implementations must be safe for
// concurrent use and must never return documents of another tenant than
// req.Tenant.
type Searcher interface {
	Search(ctx context.Context, req SearchRequest) (*SearchResponse, error)
}

// Backends are what a Server serves. Any may be nil: its routes then answer
// 503 (not configured) and /readyz reports it missing.
type Backends struct {
	Scorer    PairScorer
	Embedder  Embedder
	Tokenizer Tokenizer
	Searcher  Searcher
	Documents DocumentStore
}
