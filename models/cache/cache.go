package cache

import (
	"context"
	"fmt"
	"slices"

	"github.com/hybrank/hybrank/models"
)

// Reranker caches a reranker's scores by (query, document).
type Reranker struct {
	inner models.Reranker
	c     *lru[float32]
	f     flights[float32]
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

// Capabilities are the wrapped reranker's: a cache can do what its model
// can. Its Cost prices every pair as a model call: pairs the cache holds
// cost less, so a budgeted batch is sized on the safe side.
func (r *Reranker) Capabilities() models.Capabilities { return r.inner.Capabilities() }

// ScorePairs returns the scores of pairs: cached ones from the cache, those
// a concurrent call is scoring now from that call, the others from one call
// of the wrapped reranker. Usage counts the pairs the wrapped model scored
// for this call.
func (r *Reranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	out := make([]float32, len(pairs))
	keys := make([]key, len(pairs))
	for i, p := range pairs {
		keys[i] = hashKey(p.Query, p.Doc)
	}
	same := func(s float32) float32 { return s }
	u, err := resolve(ctx, r.c, &r.f, keys, out, same, same, func(idx []int) ([]float32, models.Usage, error) {
		miss := make([]models.Pair, len(idx))
		for j, i := range idx {
			miss[j] = pairs[i]
		}
		s, u, err := r.inner.ScorePairs(ctx, miss)
		if err == nil && len(s) != len(miss) {
			err = fmt.Errorf("cache: reranker returned %d scores for %d pairs", len(s), len(miss))
		}
		return s, u, err
	})
	if err != nil {
		return nil, u, err
	}
	return out, u, nil
}

// ScoreSpans is the wrapped reranker's, uncached: a chunked score depends
// on the chunking as well as the texts, and the server, which chunks in
// front of the model, scores the windows through ScorePairs and so through
// the cache.
func (r *Reranker) ScoreSpans(ctx context.Context, query string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return r.inner.ScoreSpans(ctx, query, docs, ch)
}

// Embedder caches an embedder's vectors of queries and raw texts by
// (input kind, text); documents (models.InputDocument), embedded once at
// ingest, pass through uncached so they do not evict the queries.
type Embedder struct {
	inner models.Embedder
	c     *lru[[]float32]
	f     flights[[]float32]
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

// Capabilities are the wrapped embedder's.
func (e *Embedder) Capabilities() models.Capabilities { return e.inner.Capabilities() }

// EmbedPooled returns the wrapped model's vectors of texts (before
// normalisation): hits from the cache, texts a concurrent call is
// embedding now from that call, the others from one call of the model.
// Every vector is the caller's to keep and modify (a hit is a copy of the
// stored vector, a miss the model's own). Usage counts the model's work
// (zero on all hits).
func (e *Embedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	return e.cached(ctx, "pooled", in, texts, e.inner.EmbedPooled)
}

// EmbedSpans is the wrapped embedder's, uncached (documents are not
// cached anyway).
func (e *Embedder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return e.inner.EmbedSpans(ctx, in, texts, ch)
}

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
	for i, t := range texts {
		keys[i] = hashKey(ns, string(in), t)
	}
	// The cache's copy is its own: the vectors of one call may share a
	// backing array (models/ort's do), which evicting one of them would
	// not free while the others stay, so the cache's bytes would lie. A
	// stored or shared vector reaches the caller as a copy.
	u, err := resolve(ctx, e.c, &e.f, keys, out, slices.Clone[[]float32], slices.Clone[[]float32],
		func(idx []int) ([][]float32, models.Usage, error) {
			miss := make([]string, len(idx))
			for j, i := range idx {
				miss[j] = texts[i]
			}
			v, u, err := compute(ctx, in, miss)
			if err == nil && len(v) != len(miss) {
				err = fmt.Errorf("cache: embedder returned %d vectors for %d texts", len(v), len(miss))
			}
			return v, u, err
		})
	if err != nil {
		return nil, u, err
	}
	return out, u, nil
}

// Load loads the wrapped reranker (models.Reranker).
func (r *Reranker) Load() error { return r.inner.Load() }

// Load loads the wrapped embedder (models.Embedder).
func (e *Embedder) Load() error { return e.inner.Load() }
