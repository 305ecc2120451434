package modeltest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/hybrank/hybrank/models"
)

// PairScore is the deterministic score of a pair: the number of query
// words found in the document, minus a small hash-based tie breaker.
func PairScore(p models.Pair) float32 {
	doc := strings.Fields(strings.ToLower(p.Doc))
	set := map[string]bool{}
	for _, w := range doc {
		set[w] = true
	}
	n := 0
	for _, w := range strings.Fields(strings.ToLower(p.Query)) {
		if set[w] {
			n++
		}
	}
	h := fnv.New32a()
	h.Write([]byte(p.Doc))
	return float32(n) - float32(h.Sum32()%1000)/10000
}

// Scorer is a models.Reranker scoring with PairScore that records every
// call's pairs. Set its fields before the first call.
type Scorer struct {
	Delay   time.Duration // each call takes this long (or until ctx ends)
	Gate    chan struct{} // when set, each call waits for a value
	Started chan int      // when set, receives each call's size on entry
	Err     error         // when set, every call fails with it
	Caps    models.Capabilities

	mu      sync.Mutex
	batches [][]models.Pair
}

// ScorePairs implements models.Reranker.
func (f *Scorer) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	f.mu.Lock()
	f.batches = append(f.batches, append([]models.Pair(nil), pairs...))
	f.mu.Unlock()
	if f.Started != nil {
		f.Started <- len(pairs)
	}
	if f.Gate != nil {
		select {
		case <-f.Gate:
		case <-ctx.Done():
			return nil, models.Usage{}, ctx.Err()
		}
	}
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-ctx.Done():
			return nil, models.Usage{}, ctx.Err()
		}
	}
	if f.Err != nil {
		return nil, models.Usage{}, f.Err
	}
	out := make([]float32, len(pairs))
	tokens := 0
	for i, p := range pairs {
		out[i] = PairScore(p)
		tokens += len(strings.Fields(p.Query)) + len(strings.Fields(p.Doc)) + 3
	}
	return out, models.Usage{Tokens: tokens, Pairs: len(pairs), Batches: 1}, nil
}

// ScoreSpans implements models.Reranker: an error wrapping
// models.ErrNoChunking.
func (f *Scorer) ScoreSpans(context.Context, string, []string, models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

// Capabilities implements models.Reranker: Caps.
func (f *Scorer) Capabilities() models.Capabilities { return f.Caps }

// Load implements models.Reranker: nothing to load.
func (f *Scorer) Load() error { return nil }

// Batches returns the pairs of every call so far, in call order.
func (f *Scorer) Batches() [][]models.Pair {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]models.Pair(nil), f.batches...)
}

// BatchSizes returns the number of pairs of every call so far.
func (f *Scorer) BatchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(f.batches))
	for i, b := range f.batches {
		out[i] = len(b)
	}
	return out
}

// Dim is the length of Embedder's vectors.
const Dim = 8

// Vector is the deterministic unit vector of a text.
func Vector(t string) []float32 {
	v := make([]float32, Dim)
	h := fnv.New64a()
	h.Write([]byte(t))
	x := h.Sum64()
	var ss float64
	for i := range v {
		v[i] = float32(int64(x>>(8*i))&0xff) - 127.5
		ss += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(ss))
	}
	return v
}

// RawVector is the pooled (unnormalised) vector of a text: its unit vector
// scaled by a length that differs between texts.
func RawVector(t string) []float32 {
	v := Vector(t)
	for i := range v {
		v[i] *= float32(len(t) + 2)
	}
	return v
}

// Embedder is a models.Embedder whose pooled vectors are RawVector (Dim
// long), normalised by models.Embed (its Capabilities say Normalize), and
// that counts its calls.
type Embedder struct {
	mu    sync.Mutex
	calls int
}

// EmbedPooled implements models.Embedder.
func (f *Embedder) EmbedPooled(ctx context.Context, _ models.Input, texts []string) ([][]float32, models.Usage, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	out := make([][]float32, len(texts))
	tokens := 0
	for i, t := range texts {
		out[i] = RawVector(t)
		tokens += len(strings.Fields(t)) + 2
	}
	return out, models.Usage{Tokens: tokens, Pairs: len(texts), Batches: 1}, nil
}

// EmbedSpans implements models.Embedder: an error wrapping
// models.ErrNoChunking.
func (f *Embedder) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

// Dim implements models.Embedder.
func (f *Embedder) Dim() int { return Dim }

// Capabilities implements models.Embedder: normalised vectors.
func (f *Embedder) Capabilities() models.Capabilities {
	return models.Capabilities{Embedding: models.Embedding{Pooling: models.PoolingMean, Normalize: true}}
}

// Load implements models.Embedder: nothing to load.
func (f *Embedder) Load() error { return nil }

// Calls returns the number of EmbedPooled calls so far.
func (f *Embedder) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
