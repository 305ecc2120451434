package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
)

// TestRunWithEngine runs the load and the searches on the fake cluster
// beside the engine with generated tiny models: the engine's rows, the
// gaps and overlaps on the Weaviate rows, and the sidecar comparison
// (the fake sidecar is not the engine's model: its check must fail).
func TestRunWithEngine(t *testing.T) {
	testenv.NeedORT(t)
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	berttest.WriteTiny(t, root, vocab, tok)
	t.Setenv("HYBRANK_REAL_MODELS", t.TempDir())
	f := newFakeCluster(t, 3)
	cfg := fakeConfig(t)
	cfg.Peer.Enabled, cfg.Faults.Enabled = false, false
	cfg.Profile, cfg.Clients = "fast", []int{1, 4}
	cfg.Engine.Enabled, cfg.Engine.Models, cfg.Engine.Threads, cfg.Engine.CacheDir = true, modeldir.Source{Root: root}, 1, t.TempDir()
	res, err := Run(context.Background(), cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	engine := map[string]SearchRow{}
	for _, r := range res.Searches {
		if r.Impl == "engine" {
			engine[r.Setup] = r
		}
	}
	for _, s := range []string{setupBM25, setupDense, "weighted-0.5", "weighted-0.5+fast@5", setupBM25Plain, plainSetup("weighted-0.5")} {
		r, ok := engine[s]
		if !ok || r.Queries != 6 || r.QPS <= 0 {
			t.Errorf("engine row %s: %+v", s, r)
		}
	}
	// Every query's relevant documents hold its word: BM25 finds them.
	if r := engine[setupBM25]; r.Recall100 != 1 || r.NDCG10 < 0.9 || !r.RealWeights {
		t.Errorf("engine bm25 %+v", r)
	}
	if r := engine["weighted-0.5+fast@5"]; r.RealWeights {
		t.Errorf("generated models reported real: %+v", r)
	}
	n := 0
	for _, r := range res.Searches {
		if r.Impl != "weaviate" {
			continue
		}
		if _, ok := r.EngineGap.Value(); !ok {
			t.Errorf("weaviate %s ×%d has no gap", r.Setup, r.Clients)
		}
		if ov, ok := r.Overlap10.Value(); !ok || ov < 0 || ov > 1 {
			t.Errorf("overlap %v", r.Overlap10)
		}
		// On hybrank's terms a row compares with the engine's own; the
		// rows on Weaviate's analysis with the engine's on the same.
		if _, ok := r.PlainGap.Value(); ok {
			t.Errorf("weaviate %s: gap to the engine with Weaviate's analysis %v", r.Setup, r.PlainGap)
		}
		n++
	}
	if n != 8 {
		t.Errorf("%d weaviate rows", n)
	}
	found := false
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "analysis:") && !c.Passed() {
			t.Errorf("the fake sidecar's analyzer differs: %s", c)
		}
		if strings.HasPrefix(c.Name, "sidecar vs engine reranker") {
			found = true
			if c.Passed() {
				t.Errorf("the fake sidecar's scores agree with the engine's: %s", c)
			}
		}
	}
	if !found || res.RerankErr != "" {
		t.Errorf("no sidecar comparison (%q)", res.RerankErr)
	}
}
