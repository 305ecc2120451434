package cache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/models"
)

// gatedReranker is countingReranker whose first call with the document
// gate is held: it signals entered and waits for release (then fails with
// fail, if set).
type gatedReranker struct {
	countingReranker
	gate    string
	entered chan struct{}
	release chan struct{}
	fail    error
	held    bool
}

func newGated(gate string) *gatedReranker {
	return &gatedReranker{gate: gate, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	g.mu.Lock()
	hold := !g.held && slices.ContainsFunc(pairs, func(p models.Pair) bool { return p.Doc == g.gate })
	g.held = g.held || hold
	g.mu.Unlock()
	if hold {
		close(g.entered)
		<-g.release
		if g.fail != nil {
			g.mu.Lock()
			g.calls = append(g.calls, []string{"failed:" + g.gate})
			g.mu.Unlock()
			return nil, models.Usage{}, g.fail
		}
	}
	return g.countingReranker.ScorePairs(ctx, pairs)
}

// docsOf are the documents of every inner call, sorted call by call.
func (g *gatedReranker) docsOf() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([][]string, len(g.calls))
	for i, c := range g.calls {
		out[i] = slices.Sorted(slices.Values(c))
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

// TestConcurrentMissesShareOneCall: a call that misses keys another call
// is scoring waits for that call instead of scoring them again, and scores
// only what nobody else is scoring.
func TestConcurrentMissesShareOneCall(t *testing.T) {
	ctx := context.Background()
	inner := newGated("a")
	r, err := NewReranker(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := inner.countingReranker.Score(ctx, "q", []string{"a", "bb", "ccc"})
	inner.calls = nil

	var wg sync.WaitGroup
	var first []float32
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		first, firstErr = score(ctx, r, "q", []string{"a", "bb"})
	}()
	<-inner.entered // the first call is scoring a and bb
	second := make(chan []float32)
	go func() {
		s, err := score(ctx, r, "q", []string{"bb", "ccc", "a", "ccc"})
		if err != nil {
			t.Error(err)
		}
		second <- s
	}()
	// The second call scores its own miss (ccc, once) and then waits for
	// the first.
	for len(inner.docsOf()) == 0 {
		select {
		case <-second:
			t.Fatal("the second call returned before the first call's scores existed")
		default:
		}
	}
	close(inner.release)
	wg.Wait()
	got := <-second
	if firstErr != nil || !slices.Equal(first, want[:2]) {
		t.Fatalf("first %v %v", first, firstErr)
	}
	if !slices.Equal(got, []float32{want[1], want[2], want[0], want[2]}) {
		t.Fatalf("second %v, want %v", got, want)
	}
	if calls := inner.docsOf(); !slices.EqualFunc(calls, [][]string{{"a", "bb"}, {"ccc"}}, slices.Equal) {
		t.Fatalf("inner calls %q: want a and bb once (the first call) and ccc once", calls)
	}
	if st := r.Stats(); st.Shared != 3 || st.Entries != 3 {
		t.Fatalf("stats %+v: want 3 shared (bb, a, the second ccc)", st)
	}
}

// TestSharedMissAfterFailure: when the call a waiter waits for fails, the
// waiter scores the keys itself; the failure is the failing caller's.
func TestSharedMissAfterFailure(t *testing.T) {
	ctx := context.Background()
	inner := newGated("a")
	inner.fail = errors.New("boom")
	r, err := NewReranker(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	firstErr := make(chan error)
	go func() {
		_, err := score(ctx, r, "q", []string{"a"})
		firstErr <- err
	}()
	<-inner.entered
	second := make(chan error)
	go func() {
		_, err := score(ctx, r, "q", []string{"a"})
		second <- err
	}()
	for r.Stats().Misses < 2 { // the second call has missed and waits
		runtime.Gosched()
	}
	close(inner.release)
	if err := <-firstErr; !errors.Is(err, inner.fail) {
		t.Fatalf("first call: %v, want its model's error", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second call: %v, want it to score a itself", err)
	}
	if calls := inner.docsOf(); !slices.EqualFunc(calls, [][]string{{"a"}, {"failed:a"}}, slices.Equal) {
		t.Fatalf("inner calls %q", calls)
	}
	if st := r.Stats(); st.Shared != 0 || st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSharedMissWaiterCancelled: a waiter whose context ends returns its
// context's error without waiting for the other call.
func TestSharedMissWaiterCancelled(t *testing.T) {
	inner := newGated("a")
	r, err := NewReranker(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := score(context.Background(), r, "q", []string{"a"})
		done <- err
	}()
	<-inner.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := score(ctx, r, "q", []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(inner.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// gatedEmbedder embeds a text as (its length, 1), its first call held
// until release.
type gatedEmbedder struct {
	mu      sync.Mutex
	calls   [][]string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gatedEmbedder) embed(_ context.Context, _ models.Input, texts []string) ([][]float32, models.Usage, error) {
	g.once.Do(func() { close(g.entered); <-g.release })
	g.mu.Lock()
	g.calls = append(g.calls, slices.Clone(texts))
	g.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, models.Usage{Pairs: len(texts)}, nil
}

func (g *gatedEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	return g.embed(ctx, in, texts)
}
func (g *gatedEmbedder) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, errors.New("unused")
}
func (g *gatedEmbedder) Dim() int                          { return 2 }
func (g *gatedEmbedder) Capabilities() models.Capabilities { return models.Capabilities{} }
func (g *gatedEmbedder) Load() error                       { return nil }

// TestEmbedderSharesConcurrentQueries: two concurrent embeddings of the
// same query make one model call, and each caller owns its vector.
func TestEmbedderSharesConcurrentQueries(t *testing.T) {
	ctx := context.Background()
	inner := &gatedEmbedder{entered: make(chan struct{}), release: make(chan struct{})}
	e, err := NewEmbedder(inner, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan [][]float32)
	go func() {
		v, _, err := e.EmbedPooled(ctx, models.InputQuery, []string{"query"})
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	<-inner.entered
	second := make(chan [][]float32)
	go func() {
		v, u, err := e.EmbedPooled(ctx, models.InputQuery, []string{"query"})
		if err != nil || u.Pairs != 0 {
			t.Errorf("second: usage %+v, %v: want the first call's vector", u, err)
		}
		second <- v
	}()
	for e.Stats().Misses < 2 {
		runtime.Gosched()
	}
	close(inner.release)
	a, b := <-first, <-second
	if len(inner.calls) != 1 || !slices.Equal(a[0], b[0]) {
		t.Fatalf("calls %q, vectors %v %v", inner.calls, a, b)
	}
	a[0][0] = -1 // the callers' vectors are their own
	if b[0][0] == -1 {
		t.Fatal("the two callers share a vector")
	}
	if v, _, _ := e.EmbedPooled(ctx, models.InputQuery, []string{"query"}); v[0][0] != 5 {
		t.Fatalf("cached vector %v changed by a caller", v)
	}
}
