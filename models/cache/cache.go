package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hybrank/hybrank/models"
)

// ErrNoPairScorer is returned by Reranker.ScorePairs when the wrapped
// model has no ScorePairs.
var ErrNoPairScorer = errors.New("cache: the wrapped reranker does not score pairs")

// pairScorer is the server's pair-scoring method (server.PairScorer),
// which *ort.CrossEncoder has.
type pairScorer interface {
	ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error)
}

// Reranker caches a reranker's scores by (query, document).
type Reranker struct {
	inner models.Reranker
	c     *lru[float32]
}

// NewReranker wraps r with a cache of at most maxBytes (> 0).
func NewReranker(r models.Reranker, maxBytes int64) (*Reranker, error) {
	if r == nil || maxBytes <= 0 {
		return nil, fmt.Errorf("%w: cache: need a reranker and a positive byte bound (got %d)", models.ErrInvalidConfig, maxBytes)
	}
	return &Reranker{inner: r, c: newLRU(maxBytes, func(float32) int64 { return 4 })}, nil
}

// Stats returns the cache's counters.
func (r *Reranker) Stats() Stats { return r.c.stats() }

// Unwrap returns the wrapped reranker.
func (r *Reranker) Unwrap() models.Reranker { return r.inner }

// Score returns the scores of docs for query: cached ones from the cache,
// the others from one call of the wrapped reranker.
func (r *Reranker) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	out := make([]float32, len(docs))
	keys := make([]key, len(docs))
	var miss []int
	var missDocs []string
	for i, d := range docs {
		keys[i] = hashKey(query, d)
		if s, ok := r.c.get(keys[i]); ok {
			out[i] = s
		} else {
			miss, missDocs = append(miss, i), append(missDocs, d)
		}
	}
	if len(miss) == 0 {
		return out, nil
	}
	s, err := r.inner.Score(ctx, query, missDocs)
	if err != nil {
		return nil, err
	}
	if len(s) != len(miss) {
		return nil, fmt.Errorf("cache: reranker returned %d scores for %d documents", len(s), len(miss))
	}
	for j, i := range miss {
		out[i] = s[j]
		r.c.put(keys[i], s[j])
	}
	return out, nil
}

// EstimateScore is the wrapped reranker's (models.CostEstimator), so that
// a budgeted rerank stage sizes its batches by the model's own cost model
// behind the cache too; ok is false when the wrapped reranker has none.
// It prices every pair as a model call: pairs the cache holds cost less,
// so a batch is sized on the safe side.
func (r *Reranker) EstimateScore(pairTokens []int) (time.Duration, bool) {
	if ce, ok := r.inner.(models.CostEstimator); ok {
		return ce.EstimateScore(pairTokens)
	}
	return 0, false
}

// ScorePairs is Score for independent pairs (the server's batched path);
// Usage counts the pairs the wrapped model scored.
func (r *Reranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	ps, ok := r.inner.(pairScorer)
	if !ok {
		return nil, models.Usage{}, ErrNoPairScorer
	}
	out := make([]float32, len(pairs))
	keys := make([]key, len(pairs))
	var miss []int
	var missPairs []models.Pair
	for i, p := range pairs {
		keys[i] = hashKey(p.Query, p.Doc)
		if s, ok := r.c.get(keys[i]); ok {
			out[i] = s
		} else {
			miss, missPairs = append(miss, i), append(missPairs, p)
		}
	}
	if len(miss) == 0 {
		return out, models.Usage{}, nil
	}
	s, u, err := ps.ScorePairs(ctx, missPairs)
	if err != nil {
		return nil, u, err
	}
	if len(s) != len(miss) {
		return nil, u, fmt.Errorf("cache: reranker returned %d scores for %d pairs", len(s), len(miss))
	}
	for j, i := range miss {
		out[i] = s[j]
		r.c.put(keys[i], s[j])
	}
	return out, u, nil
}

// ScoreSpans is the wrapped reranker's ScoreSpans (models.SpanReranker),
// uncached: a chunked score depends on the chunking as well as the texts,
// and the server, which chunks in front of its batcher, scores the windows
// through ScorePairs and so through the cache. It returns an error
// wrapping models.ErrNoChunking when the wrapped reranker has none.
func (r *Reranker) ScoreSpans(ctx context.Context, query string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	sr, ok := r.inner.(models.SpanReranker)
	if !ok {
		return nil, models.Usage{}, fmt.Errorf("cache: %w", models.ErrNoChunking)
	}
	return sr.ScoreSpans(ctx, query, docs, ch)
}

// usageEmbedder is the server's embedding method (server.Embedder), which
// *ort.BiEncoder has.
type usageEmbedder interface {
	EmbedWithUsage(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error)
}

// Embedder caches an embedder's vectors of queries and raw texts by
// (input kind, text); documents (models.InputDocument), embedded once at
// ingest, pass through uncached so they do not evict the queries.
type Embedder struct {
	inner models.Embedder
	c     *lru[[]float32]
}

// NewEmbedder wraps e with a cache of at most maxBytes (> 0).
func NewEmbedder(e models.Embedder, maxBytes int64) (*Embedder, error) {
	if e == nil || maxBytes <= 0 {
		return nil, fmt.Errorf("%w: cache: need an embedder and a positive byte bound (got %d)", models.ErrInvalidConfig, maxBytes)
	}
	return &Embedder{inner: e, c: newLRU(maxBytes, func(v []float32) int64 { return 4*int64(len(v)) + 24 })}, nil
}

// Stats returns the cache's counters.
func (e *Embedder) Stats() Stats { return e.c.stats() }

// Unwrap returns the wrapped embedder.
func (e *Embedder) Unwrap() models.Embedder { return e.inner }

// Dim is the wrapped embedder's.
func (e *Embedder) Dim() int { return e.inner.Dim() }

// Embed returns the vectors of texts, the caller's to keep and modify (a
// hit is a copy of the stored vector, a miss the model's own).
func (e *Embedder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	v, _, err := e.EmbedWithUsage(ctx, in, texts)
	return v, err
}

// EmbedWithUsage is Embed that reports the wrapped model's work (zero on
// all hits). Over an embedder without EmbedWithUsage, Usage counts the
// texts embedded as Pairs.
func (e *Embedder) EmbedWithUsage(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	return e.cached(ctx, "", in, texts, e.embed)
}

// pooledEmbedder is the server's raw-vector method (server.Embedder),
// which *ort.BiEncoder has: vectors before L2 normalisation.
type pooledEmbedder interface {
	EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error)
}

// EmbedPooled is the wrapped model's EmbedPooled (vectors before
// normalisation) through the cache, under keys of their own; it returns
// ErrNoPooled when the model has none.
func (e *Embedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	pe, ok := e.inner.(pooledEmbedder)
	if !ok {
		return nil, models.Usage{}, ErrNoPooled
	}
	return e.cached(ctx, "pooled", in, texts, pe.EmbedPooled)
}

// EmbedSpans is the wrapped embedder's EmbedSpans (models.SpanEmbedder),
// uncached (documents are not cached anyway); it returns an error wrapping
// models.ErrNoChunking when the wrapped embedder has none.
func (e *Embedder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	se, ok := e.inner.(models.SpanEmbedder)
	if !ok {
		return nil, models.Usage{}, fmt.Errorf("cache: %w", models.ErrNoChunking)
	}
	return se.EmbedSpans(ctx, in, texts, ch)
}

// ErrNoPooled is returned by Embedder.EmbedPooled when the wrapped model
// has no EmbedPooled.
var ErrNoPooled = errors.New("cache: the wrapped embedder does not return pooled vectors")

// cached serves texts from the cache (keys in namespace ns) and the misses
// from compute; documents bypass the cache. Every vector it returns is the
// caller's: hits are copies, misses are compute's, stored as copies.
func (e *Embedder) cached(ctx context.Context, ns string, in models.Input, texts []string,
	compute func(context.Context, models.Input, []string) ([][]float32, models.Usage, error)) ([][]float32, models.Usage, error) {
	if in == models.InputDocument {
		return compute(ctx, in, texts)
	}
	out := make([][]float32, len(texts))
	keys := make([]key, len(texts))
	var miss []int
	var missTexts []string
	for i, t := range texts {
		keys[i] = hashKey(ns, string(in), t)
		if v, ok := e.c.get(keys[i]); ok {
			out[i] = slices.Clone(v) // the stored one stays the cache's
		} else {
			miss, missTexts = append(miss, i), append(missTexts, t)
		}
	}
	if len(miss) == 0 {
		return out, models.Usage{}, nil
	}
	v, u, err := compute(ctx, in, missTexts)
	if err != nil {
		return nil, u, err
	}
	if len(v) != len(miss) {
		return nil, u, fmt.Errorf("cache: embedder returned %d vectors for %d texts", len(v), len(miss))
	}
	for j, i := range miss {
		out[i] = v[j]
		// A copy of its own: the vectors of one call may share a backing
		// array (models/ort's do), which evicting one of them would not
		// free while the others stay, so the cache's bytes would lie.
		e.c.put(keys[i], slices.Clone(v[j]))
	}
	return out, u, nil
}

// embed calls the wrapped embedder, with its usage when it reports one
// (else Usage counts the texts as Pairs).
func (e *Embedder) embed(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	if ue, ok := e.inner.(usageEmbedder); ok {
		return ue.EmbedWithUsage(ctx, in, texts)
	}
	v, err := e.inner.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts)}, err
}

// Load loads the wrapped reranker when it loads lazily (models.Loader).
func (r *Reranker) Load() error { return load(r.inner) }

// Load loads the wrapped embedder when it loads lazily (models.Loader).
func (e *Embedder) Load() error { return load(e.inner) }

func load(m any) error {
	if l, ok := m.(models.Loader); ok {
		return l.Load()
	}
	return nil
}
