package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/modeltest"
)

// perPair predicts 1 ms a pair.
func perPair(pairTokens []int) (time.Duration, bool) {
	return time.Duration(len(pairTokens)) * time.Millisecond, true
}

// TestRerankerKeepsCapabilities: the queue has the model's window and
// chunking, and its Cost is the model's plus the wait ahead of a call.
func TestRerankerKeepsCapabilities(t *testing.T) {
	sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 8),
		Caps: models.Capabilities{Window: 128, Chunking: true, Cost: perPair}}
	cfg := testBatchConfig()
	cfg.Workers = 1
	q, err := NewReranker(sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c := q.Capabilities()
	if c.Window != 128 || !c.Chunking || c.Cost == nil {
		t.Fatalf("capabilities %+v", c)
	}
	if d, ok := c.Cost([]int{10, 10}); !ok || d != 2*time.Millisecond {
		t.Fatalf("idle cost %v %v, want the model's 2ms", d, ok)
	}
	// One batch of 4 running (predicted 4 ms), 8 more pairs queued behind.
	done := make(chan error, 2)
	go func() { _, _, err := q.ScorePairs(context.Background(), pairs("a", 4)); done <- err }()
	<-sc.Started
	go func() { _, _, err := q.ScorePairs(context.Background(), pairs("b", 8)); done <- err }()
	waitQueuedR(t, q, 8)
	d, ok := q.Capabilities().Cost([]int{10, 10})
	// Round robin: 2 of b's 8 pairs go before a call of 2 pairs (2 ms),
	// after the running batch's remaining time (at most 4 ms), plus the
	// call's own 2 ms.
	if !ok || d < 4*time.Millisecond || d > 8*time.Millisecond {
		t.Fatalf("cost behind the queue %v %v, want 4ms to 8ms", d, ok)
	}
	close(sc.Gate)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if st := q.Stats(); st.Items.Count < 2 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A model without a cost model has none behind the queue either.
	plain, _ := NewReranker(&modeltest.Scorer{}, cfg)
	defer plain.Close()
	if plain.Capabilities().Cost != nil {
		t.Fatal("a cost from a model without one")
	}
}

func pairs(q string, n int) []models.Pair {
	out := make([]models.Pair, n)
	for i := range out {
		out[i] = models.Pair{Query: q, Doc: q + " doc " + string(rune('a'+i))}
	}
	return out
}

func waitQueuedR(t *testing.T, q *Reranker, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if q.Stats().Queued == n {
			return
		}
	}
	t.Fatalf("queue never held %d items (%d)", n, q.Stats().Queued)
}

// TestRerankerSpansTakeASlot: ScoreSpans runs the model's own chunked call
// in one of the queue's worker slots, so it waits while every worker is
// busy.
func TestRerankerSpansTakeASlot(t *testing.T) {
	sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 8)}
	cfg := testBatchConfig()
	cfg.Workers = 1
	q, _ := NewReranker(sc, cfg)
	defer q.Close()
	go q.ScorePairs(context.Background(), pairs("a", 2))
	<-sc.Started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := q.ScoreSpans(ctx, "q", []string{"d"}, models.Chunking{Stride: 4}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ScoreSpans beside a busy worker: %v, want it to wait for the slot", err)
	}
	close(sc.Gate)
	if _, _, err := q.ScoreSpans(context.Background(), "q", []string{"d"}, models.Chunking{Stride: 4}); !errors.Is(err, models.ErrNoChunking) {
		t.Fatalf("ScoreSpans of a model that cannot chunk: %v", err)
	}
}

// kindEmbedder embeds a text as (len, kind) and records each call's kind.
type kindEmbedder struct {
	modeltest.Embedder
	gate  chan struct{}
	mu    sync.Mutex
	kinds []models.Input
}

func (k *kindEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	<-k.gate
	k.mu.Lock()
	k.kinds = append(k.kinds, in)
	k.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), float32(len(in))}
	}
	return out, models.Usage{Pairs: len(texts)}, nil
}

// TestEmbedderSplitsKinds: a batch holding queries and documents makes one
// model call per kind (each with its prompt), and every call gets its own
// vectors back.
func TestEmbedderSplitsKinds(t *testing.T) {
	inner := &kindEmbedder{gate: make(chan struct{})}
	cfg := testBatchConfig()
	cfg.Workers = 1
	q, _ := NewEmbedder(inner, cfg)
	defer q.Close()
	type res struct {
		in  models.Input
		v   [][]float32
		err error
	}
	out := make(chan res, 3)
	submit := func(in models.Input, texts ...string) {
		v, _, err := q.EmbedPooled(context.Background(), in, texts)
		out <- res{in, v, err}
	}
	go submit(models.InputRaw, "first") // holds the worker
	for deadline := time.Now().Add(10 * time.Second); q.Stats().Items.Count == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	go submit(models.InputQuery, "q1", "q22")
	go submit(models.InputDocument, "d333")
	for deadline := time.Now().Add(10 * time.Second); q.Stats().Queued != 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(inner.gate)
	for range 3 {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		for _, v := range r.v {
			if v[1] != float32(len(r.in)) {
				t.Fatalf("a %q text got a %v vector", r.in, v)
			}
		}
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	kinds := slices.Clone(inner.kinds)
	slices.Sort(kinds)
	want := []models.Input{models.InputDocument, models.InputQuery, models.InputRaw}
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Fatalf("model calls by kind %q, want one per kind", inner.kinds)
	}
}
