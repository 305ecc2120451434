package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

// lazyReranker loads on first use unless Load ran first, as the ONNX
// Runtime models do; it records whether any Score call had to load.
type lazyReranker struct {
	enginetest.OverlapReranker
	loadErr    error
	loads      atomic.Int32
	loaded     atomic.Bool
	lazyLoaded atomic.Bool // a Score call paid the load
	scores     atomic.Int32
}

func (r *lazyReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

func (r *lazyReranker) Load() error {
	r.loads.Add(1)
	if r.loadErr != nil {
		return r.loadErr
	}
	r.loaded.Store(true)
	return nil
}

func (r *lazyReranker) Score(ctx context.Context, q string, docs []string) ([]float32, error) {
	r.scores.Add(1)
	if !r.loaded.Swap(true) {
		r.lazyLoaded.Store(true)
	}
	return r.OverlapReranker.Score(ctx, q, docs)
}

type lazyEmbedder struct {
	*enginetest.HashEmbedder
	loads atomic.Int32
}

func (e *lazyEmbedder) Load() error { e.loads.Add(1); return nil }

func TestModelsLoadAtOpen(t *testing.T) {
	ctx := context.Background()
	r := &lazyReranker{}
	emb := &lazyEmbedder{HashEmbedder: enginetest.NewHashEmbedder(8)}
	e, err := Open("", DefaultConfig(), WithReranker("p", r), WithEmbedder(emb))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if r.loads.Load() != 1 || emb.loads.Load() != 1 {
		t.Fatalf("loads: reranker %d, embedder %d", r.loads.Load(), emb.loads.Load())
	}
	b := e.NewBatch()
	b.Add(Document{ID: "a", Text: "alpha beta"}, Document{ID: "b", Text: "beta gamma"})
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Warm-up inference is not a measurement.
	if err := e.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.costs.estimate("p"); ok || r.scores.Load() != 1 || emb.Calls.Load() != 2 {
		t.Fatalf("after Warm: estimate present %v, %d Score calls, %d Embed calls", ok, r.scores.Load(), emb.Calls.Load())
	}
	res, err := e.Search(ctx, Request{Query: "beta", Rerank: "p"})
	if err != nil || res.Reranked == 0 {
		t.Fatalf("search: %v %+v", err, res)
	}
	if r.lazyLoaded.Load() {
		t.Fatal("a Score call paid the model load")
	}
	if _, ok := e.costs.estimate("p"); !ok {
		t.Fatal("no estimate after a reranked search")
	}

	// A model that cannot load fails Open, naming it.
	bad := &lazyReranker{loadErr: errors.New("no such file")}
	_, err = Open("", DefaultConfig(), WithReranker("broken", bad))
	if !errors.Is(err, ErrModelLoad) || !strings.Contains(err.Error(), `"broken"`) {
		t.Fatalf("Open with a failing model: %v", err)
	}
}
