package models

import (
	"context"
	"time"
)

// Reranker scores documents against a query with a cross-encoder.
//
// Score returns one score per document, in input order. Implementations are
// safe for concurrent use.
type Reranker interface {
	Score(ctx context.Context, query string, docs []string) ([]float32, error)
}

// CostEstimator is implemented by rerankers that can predict the time of
// a Score call from a model of their own (the ONNX Runtime reranker's
// CallTimeModel, calibrated at load and refined by every call). The engine
// sizes the batches of a budgeted rerank stage with it, so that a batch
// fits the time left given its documents' lengths and the reranker's
// fixed cost per call; rerankers without it are sized by an average cost
// per document.
type CostEstimator interface {
	// EstimateScore predicts the wall time of one Score call on pairs of
	// these token lengths (query and document together, special tokens
	// included, EstimatePairTokens; a length past the model's window
	// counts as the window). ok is false when there is nothing to predict
	// from: the model is not loaded yet, or it has no cost model.
	// EstimateScore never loads the model and is cheap (no tokenization,
	// no runtime call).
	EstimateScore(pairTokens []int) (d time.Duration, ok bool)
}

// Embedder turns texts into fixed-size vectors with a bi-encoder.
//
// Embed returns one vector per text, in input order; in says what the texts
// are, so that the model's prompts apply (queries and documents of e5 and
// bge are embedded differently; InputRaw embeds the texts as given). Vectors
// are L2 normalised unless the embedder's config says otherwise, and are
// the caller's: an implementation keeps no reference it would later read
// or hand out again (package cache returns copies of what it stores).
// Implementations are safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, in Input, texts []string) ([][]float32, error)
	// Dim is the length of every vector Embed returns.
	Dim() int
}

// Loader is implemented by models that load lazily, on first use, and can
// be loaded ahead of time instead. Load loads the model if it is not loaded
// yet and reports why it cannot be; it is safe to call more than once and
// concurrently with the model's other methods, and a failed Load may be
// retried. The engine calls it when a model is registered (engine.Open),
// so that no search pays a load inside its latency budget.
type Loader interface {
	Load() error
}

// SpanReranker is implemented by rerankers that score documents longer
// than their window (Chunking): each document is split into overlapping
// windows of its own tokens, all windows of all documents are scored
// together as ordinary pairs, and each document gets the aggregate of its
// windows' scores and the byte span of its best window.
//
// ScoreSpans returns one SpanScore per document, in input order; ch must
// be enabled and valid (else an error wrapping ErrInvalidConfig). Usage
// counts the windows scored as Pairs. Implementations are safe for
// concurrent use.
type SpanReranker interface {
	ScoreSpans(ctx context.Context, query string, docs []string, ch Chunking) ([]SpanScore, Usage, error)
}

// SpanEmbedder is implemented by embedders that embed texts longer than
// their window (Chunking): each text is split into overlapping windows of
// its own tokens and every window is embedded (all windows of all texts
// in one call, batched together).
//
// EmbedSpans returns, per text in input order, one vector per window with
// the window's byte span, not an aggregate: a caller scoring against a
// query takes the best (or top-k) window, SpanVectors.Best, as chunked
// reranking does, while averaging windows would blur a relevant passage
// into an irrelevant document. ch must be enabled and valid. Usage counts
// the windows embedded as Pairs. Implementations are safe for concurrent
// use.
type SpanEmbedder interface {
	EmbedSpans(ctx context.Context, in Input, texts []string, ch Chunking) ([]SpanVectors, Usage, error)
}
