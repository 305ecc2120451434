package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
)

// countingReranker scores len(query)+len(doc) and records every call.
type countingReranker struct {
	mu    sync.Mutex
	calls [][]string
	err   error
	loads int
}

func (r *countingReranker) Score(_ context.Context, q string, docs []string) ([]float32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, slices.Clone(docs))
	if r.err != nil {
		return nil, r.err
	}
	out := make([]float32, len(docs))
	for i, d := range docs {
		out[i] = float32(len(q)*100 + len(d))
	}
	return out, nil
}

func (r *countingReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

func (r *countingReranker) ScoreSpans(ctx context.Context, q string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return models.RerankFunc(r.Score).ScoreSpans(ctx, q, docs, ch)
}

func (r *countingReranker) Capabilities() models.Capabilities { return models.Capabilities{} }

func (r *countingReranker) Load() error { r.loads++; return nil }

// score is models.Score without the usage.
func score(ctx context.Context, r models.Reranker, q string, docs []string) ([]float32, error) {
	s, _, err := models.Score(ctx, r, q, docs)
	return s, err
}

// embed is models.Embed without the usage.
func embed(ctx context.Context, e models.Embedder, in models.Input, texts []string) ([][]float32, error) {
	v, _, err := models.Embed(ctx, e, in, texts)
	return v, err
}

func TestRerankerCache(t *testing.T) {
	ctx := context.Background()
	inner := &countingReranker{}
	r, err := NewReranker(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := inner.Score(ctx, "q", []string{"a", "bb", "ccc"})
	inner.calls = nil
	if got, _ := score(ctx, r, "q", []string{"a", "bb"}); !slices.Equal(got, want[:2]) {
		t.Fatalf("first %v", got)
	}
	got, err := score(ctx, r, "q", []string{"a", "bb", "ccc"})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("second %v %v", got, err)
	}
	if len(inner.calls) != 2 || !slices.Equal(inner.calls[1], []string{"ccc"}) {
		t.Fatalf("inner calls %q: the second call must score only the miss", inner.calls)
	}
	if st := r.Stats(); st.Hits != 2 || st.Misses != 3 || st.Entries != 3 || st.Bytes != 3*int64(4+entryOverhead) {
		t.Fatalf("stats %+v", st)
	}
	// Another query is another key.
	if _, err := score(ctx, r, "other", []string{"a"}); err != nil || len(inner.calls) != 3 {
		t.Fatalf("other query: %v, calls %d", err, len(inner.calls))
	}
	// Pairs share the cache; usage counts only what the model scored.
	s, u, err := r.ScorePairs(ctx, []models.Pair{{Query: "q", Doc: "a"}, {Query: "q", Doc: "dddd"}})
	if err != nil || s[0] != want[0] || u.Pairs != 1 {
		t.Fatalf("pairs %v %+v %v", s, u, err)
	}
	// Errors are returned and not cached.
	inner.err = errors.New("boom")
	if _, err := score(ctx, r, "q", []string{"eeeee"}); !errors.Is(err, inner.err) {
		t.Fatalf("err %v", err)
	}
	inner.err = nil
	if _, err := score(ctx, r, "q", []string{"eeeee"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Load(); err != nil || inner.loads != 1 {
		t.Fatalf("Load %v, loads %d", err, inner.loads)
	}
	if _, err := NewReranker(inner, 0); !errors.Is(err, models.ErrInvalidConfig) {
		t.Fatalf("zero bound: %v", err)
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	per := int64(4 + entryOverhead)
	c := newLRU(3*per, func(float32) int64 { return 4 })
	for i := range 3 {
		c.put(hashKey(fmt.Sprint(i)), float32(i))
	}
	c.get(hashKey("0")) // 0 is now the most recent: 1 is the oldest
	c.put(hashKey("3"), 3)
	if _, ok := c.get(hashKey("1")); ok {
		t.Fatal("1 was not evicted")
	}
	for _, k := range []string{"0", "2", "3"} {
		if _, ok := c.get(hashKey(k)); !ok {
			t.Fatalf("%s evicted", k)
		}
	}
	st := c.stats()
	if st.Evictions != 1 || st.Entries != 3 || st.Bytes != 3*per || st.Bytes > st.MaxBytes {
		t.Fatalf("stats %+v", st)
	}
	// Replacing a value keeps the count; a value over the bound is not kept.
	c.put(hashKey("3"), 33)
	if v, _ := c.get(hashKey("3")); v != 33 || c.stats().Entries != 3 {
		t.Fatalf("replace: %v %+v", v, c.stats())
	}
	big := newLRU(10, func(float32) int64 { return 4 })
	big.put(hashKey("x"), 1)
	if big.stats().Entries != 0 {
		t.Fatal("an entry larger than the bound was stored")
	}
}

// fakeEmbedder embeds a text as (its length, its kind's length).
type fakeEmbedder struct {
	calls     int
	normalize bool
}

func (f *fakeEmbedder) Dim() int { return 2 }
func (f *fakeEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := f.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts), Tokens: 7}, err
}
func (f *fakeEmbedder) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}
func (f *fakeEmbedder) Capabilities() models.Capabilities {
	return models.Capabilities{Embedding: models.Embedding{Normalize: f.normalize}}
}
func (f *fakeEmbedder) Load() error { return nil }
func (f *fakeEmbedder) Embed(_ context.Context, in models.Input, texts []string) ([][]float32, error) {
	f.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), float32(len(in))}
	}
	return out, nil
}

func TestEmbedderCache(t *testing.T) {
	ctx := context.Background()
	inner := &fakeEmbedder{}
	e, err := NewEmbedder(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	q1, _ := embed(ctx, e, models.InputQuery, []string{"cats"})
	q2, u, _ := models.Embed(ctx, e, models.InputQuery, []string{"cats"})
	d, _ := embed(ctx, e, models.InputDocument, []string{"cats"})
	embed(ctx, e, models.InputDocument, []string{"cats"}) // documents are not cached
	if inner.calls != 3 || !slices.Equal(q1[0], q2[0]) || u != (models.Usage{}) || slices.Equal(q1[0], d[0]) {
		t.Fatalf("calls %d, q %v %v, usage %+v, document %v", inner.calls, q1, q2, u, d)
	}
	if st := e.Stats(); st.Hits != 1 || st.Misses != 1 || e.Dim() != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestEmbedderNormalizes: models.Embed normalises what the cache returns
// (for a model whose Capabilities say so) without touching the stored
// pooled vector, which a later hit returns as it was.
func TestEmbedderNormalizes(t *testing.T) {
	ctx := context.Background()
	inner := &fakeEmbedder{normalize: true}
	e, _ := NewEmbedder(inner, 1<<20)
	n, _ := embed(ctx, e, models.InputRaw, []string{"cat"})
	a, u1, _ := e.EmbedPooled(ctx, models.InputRaw, []string{"cat"})
	n2, _ := embed(ctx, e, models.InputRaw, []string{"cat"})
	if inner.calls != 1 || a[0][0] != 3 || u1 != (models.Usage{}) || !slices.Equal(n[0], n2[0]) || math.Abs(float64(n[0][0]*n[0][0]+n[0][1]*n[0][1])-1) > 1e-6 {
		t.Fatalf("calls %d, pooled %v, normalised %v %v, usage %+v", inner.calls, a, n, n2, u1)
	}
	if !e.Capabilities().Embedding.Normalize {
		t.Fatal("the cache lost the model's Normalize")
	}
}

// spanFake is a reranker and embedder with the chunked methods.
type spanFake struct {
	countingReranker
	fakeEmbedder
	spanCalls int
}

func (s *spanFake) Capabilities() models.Capabilities { return models.Capabilities{Chunking: true} }
func (s *spanFake) Load() error                       { return nil }

func (s *spanFake) ScoreSpans(_ context.Context, q string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	s.spanCalls++
	out := make([]models.SpanScore, len(docs))
	for i, d := range docs {
		out[i] = models.SpanScore{Score: float32(len(d)), Span: models.Span{Start: 1, End: len(d)}}
	}
	return out, models.Usage{Pairs: len(docs)}, nil
}

func (s *spanFake) EmbedSpans(_ context.Context, _ models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	s.spanCalls++
	return make([]models.SpanVectors, len(texts)), models.Usage{Pairs: len(texts)}, nil
}

// TestSpansPassThrough checks that both caches keep the chunked methods
// and capability of the model they wrap (the server's --cache-mb must not
// lose them) and pass models.ErrNoChunking on over a model without them.
func TestSpansPassThrough(t *testing.T) {
	ctx := context.Background()
	ch := models.Chunking{Stride: 8}
	inner := &spanFake{}
	r, _ := NewReranker(inner, 1<<20)
	if !r.Capabilities().Chunking {
		t.Fatal("the reranker cache lost the model's Chunking")
	}
	got, u, err := r.ScoreSpans(ctx, "q", []string{"abc", "de"}, ch)
	if err != nil || len(got) != 2 || got[0].Span != (models.Span{Start: 1, End: 3}) || u.Pairs != 2 || inner.spanCalls != 1 {
		t.Fatalf("ScoreSpans: %+v %+v %v (calls %d)", got, u, err, inner.spanCalls)
	}
	e, _ := NewEmbedder(inner, 1<<20)
	if !e.Capabilities().Chunking {
		t.Fatal("the embedder cache lost the model's Chunking")
	}
	if v, u, err := e.EmbedSpans(ctx, models.InputDocument, []string{"x"}, ch); err != nil || len(v) != 1 || u.Pairs != 1 || inner.spanCalls != 2 {
		t.Fatalf("EmbedSpans: %v %+v %v", v, u, err)
	}
	plainR, _ := NewReranker(&countingReranker{}, 1<<20)
	if _, _, err := plainR.ScoreSpans(ctx, "q", []string{"d"}, ch); !errors.Is(err, models.ErrNoChunking) {
		t.Fatalf("reranker without ScoreSpans: %v", err)
	}
	plainE, _ := NewEmbedder(&fakeEmbedder{}, 1<<20)
	if _, _, err := plainE.EmbedSpans(ctx, models.InputDocument, []string{"d"}, ch); !errors.Is(err, models.ErrNoChunking) {
		t.Fatalf("embedder without EmbedSpans: %v", err)
	}
}

// TestKeysHoldAnyBytes: a NUL byte moving between query and document
// makes another pair, with its own entry (a separator byte had joined
// ("q\x00d1", "d2") and ("q", "d1\x00d2") under one key).
func TestKeysHoldAnyBytes(t *testing.T) {
	ctx := context.Background()
	inner := &countingReranker{}
	r, err := NewReranker(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	score(ctx, r, "q\x00d1", []string{"d2"})
	got, _ := score(ctx, r, "q", []string{"d1\x00d2"})
	want, _ := inner.Score(ctx, "q", []string{"d1\x00d2"})
	if got[0] != want[0] {
		t.Fatalf("(q, d1\\x00d2) scored %v from another pair's entry; want %v", got[0], want[0])
	}
	if hashKey("ab", "c") == hashKey("a", "bc") || hashKey("a", "") == hashKey("", "a") {
		t.Fatal("keys of different parts collide")
	}
}

// estimatingReranker is a reranker with a cost model of its own.
type estimatingReranker struct{ countingReranker }

func (*estimatingReranker) Capabilities() models.Capabilities {
	return models.Capabilities{Cost: func(pairTokens []int) (time.Duration, bool) {
		return time.Duration(len(pairTokens)) * time.Millisecond, true
	}}
}

// TestRerankerForwardsEstimates: behind the cache a reranker's cost model
// still sizes budgeted batches; without one there is nothing to predict.
func TestRerankerForwardsEstimates(t *testing.T) {
	r, _ := NewReranker(&estimatingReranker{}, 1<<20)
	if d, ok := r.Capabilities().Cost([]int{10, 20, 30}); !ok || d != 3*time.Millisecond {
		t.Fatalf("Cost = %v, %v; want the wrapped model's 3ms", d, ok)
	}
	r, _ = NewReranker(&countingReranker{}, 1<<20)
	if r.Capabilities().Cost != nil {
		t.Fatal("a cost model from a reranker without one")
	}
}

// TestEmbedderStoresOwnCopies: a stored vector does not share memory with
// the call's other vectors (the cache's byte count holds) nor with what
// the caller got.
func TestEmbedderStoresOwnCopies(t *testing.T) {
	ctx := context.Background()
	e, _ := NewEmbedder(&fakeEmbedder{}, 1<<20)
	first, _ := embed(ctx, e, models.InputQuery, []string{"cats", "dogs"})
	first[0][0] = -1 // the caller's copy only
	again, _ := embed(ctx, e, models.InputQuery, []string{"cats"})
	if again[0][0] != 4 {
		t.Fatalf("cached vector %v changed with the caller's", again[0])
	}
}
