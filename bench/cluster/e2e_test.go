package cluster

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/testenv"
)

// TestOnRunningCluster loads 200 scifact documents into the cluster `make
// cluster` started and searches them, with and without reranking; it
// skips, saying why, where no cluster runs (make test starts none).
func TestOnRunningCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("loads documents into a running cluster: not in -short")
	}
	path := DefaultStatePath()
	cl, err := OpenState(path)
	if err != nil {
		t.Skipf("no cluster to run on: %v", err)
	}
	w := &weaviate{hc: &http.Client{Timeout: time.Minute}}
	for _, n := range cl.Nodes() {
		if !w.ready(context.Background(), n.HTTP, 2*time.Second) {
			t.Skipf("the cluster of %s is not running (node %s does not answer ready): run `make cluster`", path, n.Name)
		}
	}
	cfg := DefaultConfig()
	cfg.Dataset = testenv.NeedDataset(t, "scifact")
	cfg.Collection = "BenchClusterTest"
	cfg.Docs, cfg.Queries, cfg.RerankLimit, cfg.Clients, cfg.Warmup = 200, 10, 5, []int{1, 4}, 1
	cfg.Engine.Enabled, cfg.Peer.Enabled, cfg.Faults.Enabled = false, false, false
	res, err := Run(context.Background(), cfg, cl)
	defer w.dropCollection(context.Background(), cl.Nodes()[0].HTTP, cfg.Collection)
	if err != nil {
		t.Fatal(err)
	}
	if im := res.Imports[0]; im.Acked != im.Docs || im.Counted != im.Docs {
		t.Errorf("import %+v", im)
	}
	for _, r := range res.Searches {
		if r.Errors != 0 || r.Queries != 10 {
			t.Errorf("%s ×%d: %+v", r.Setup, r.Clients, r)
		}
		// The judged documents are in the collection: the real
		// embedder and BM25 find most of them.
		if r.Setup != rerankSetup(res.Versions.Fusion, 5) && r.NDCG10 < 0.3 {
			t.Errorf("%s: nDCG@10 %.3f", r.Setup, r.NDCG10)
		}
	}
	if s := res.Versions.Collection; s.Shards != 3 || s.Replicas != 3 || !s.Async {
		t.Errorf("collection %+v", s)
	}
}
