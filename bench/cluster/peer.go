package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench/loadgen"
	"github.com/hybrank/hybrank/bench/measure"
)

// Sidecar implementations.
const (
	sideHybrank = "hybrank"
	sidePeer    = "peer"
)

// PeerRow is one sidecar implementation's inference requests per second
// in one measurement: a line of cluster.md.
type PeerRow struct {
	Sidecars string `json:"sidecars" table:""`
	// What was measured: "embed via import" (each object one vectors
	// request), "rerank via search" (a reranked search of n hits is
	// 2·ceil(n/32) rerank requests and one vectors request),
	// "embed direct" / "rerank direct" (the protocol driven at node 0's
	// sidecar alone, with the bodies Weaviate sends).
	What     string  `json:"what" table:""`
	Clients  int     `json:"clients" table:""`
	Requests int     `json:"requests" table:""`
	Seconds  float64 `json:"seconds" table:""`
	ReqPerS  float64 `json:"req_per_s" table:"req/s"`
	Errors   int     `json:"errors" table:""`
	// Counted is the requests hybrank's sidecars counted on the route
	// (/metrics; absent for the peer), beside Requests derived from the
	// work.
	Counted Optional `json:"counted" table:""`
	Detail  string   `json:"detail,omitempty"`
}

// PeerResult is the peer phase.
type PeerResult struct {
	Rows []PeerRow `json:"rows"`
	// Imports are the peer collection's imports (hybrank, then peer).
	Imports []ImportRow `json:"imports"`
	// MinCosine is the least cosine of a stored vector (made by hybrank
	// through the module) and the peer's vector of the same text over
	// Compared documents.
	MinCosine float64 `json:"min_cosine"`
	Compared  int     `json:"compared"`
	// Within is how many of them are within MaxCosineGap; WorstDoc the
	// BEIR id of the least cosine.
	Within   int    `json:"within"`
	WorstDoc string `json:"worst_doc"`
	// RerankRho and RerankGap compare hybrank's and the peer's rerank
	// scores of one query's documents (Spearman, largest |Δ|).
	RerankRho float64 `json:"rerank_rho"`
	RerankGap float64 `json:"rerank_gap"`
	// Meta is each implementation's /meta answer.
	Meta map[string]string `json:"meta"`
	// SwapS is how long the swap to the peer took (kill, start, ready on
	// every node) and back.
	SwapS float64 `json:"swap_s"`
	BackS float64 `json:"back_s"`
}

// runPeer measures hybrank's sidecars, swaps in the peer on every node,
// measures it the same way, compares vectors and rerank scores, and swaps
// hybrank back (also when a step fails).
func runPeer(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, f fusion, logf func(string, ...any)) (res PeerResult, err error) {
	res.Meta = map[string]string{}
	nodes := cl.Nodes()
	class := cfg.collection()
	sample := c.objects[:min(cfg.Peer.Sample, len(c.objects))]
	stored := make([][]float32, len(sample))
	for i, o := range sample {
		if stored[i], err = w.vector(ctx, nodes[i%len(nodes)].HTTP, class, o.ID); err != nil {
			return res, fmt.Errorf("cluster: peer: stored vector: %w", err)
		}
	}
	probeQ, probeDocs := rerankProbe(c)
	hybScores, err := w.rerank(ctx, nodes[0].Inference, probeQ, probeDocs)
	if err != nil {
		return res, fmt.Errorf("cluster: peer: hybrank rerank probe: %w", err)
	}
	res.Meta[sideHybrank] = w.sidecarMeta(ctx, nodes[0].Inference)
	if cfg.ColdCaches {
		// Empty caches, as the peer's start with (it has none).
		if err := restartSidecars(ctx, w, cl, cfg.Peer.Ready); err != nil {
			return res, err
		}
	}
	if err := measureSidecars(ctx, cfg, w, nodes, c, f, sideHybrank, &res); err != nil {
		return res, err
	}

	logf("peer: swapping the peer in on %d sidecars", len(nodes))
	t0 := time.Now()
	swapped := false
	defer func() {
		if !swapped {
			return
		}
		t1 := time.Now()
		// Also when ctx was cancelled: the cluster must get hybrank back.
		if berr := swap(context.WithoutCancel(ctx), cfg, w, cl, false); berr != nil {
			err = errors.Join(err, fmt.Errorf("cluster: peer: swapping hybrank back: %w", berr))
		}
		res.BackS = measure.Round(time.Since(t1).Seconds(), 1)
	}()
	swapped = true
	if err := swap(ctx, cfg, w, cl, true); err != nil {
		return res, fmt.Errorf("cluster: peer: %w", err)
	}
	res.SwapS = measure.Round(time.Since(t0).Seconds(), 1)
	res.Meta[sidePeer] = w.sidecarMeta(ctx, nodes[0].Inference)

	res.MinCosine = 1
	for i, o := range sample {
		v, err := w.embed(ctx, nodes[i%len(nodes)].Inference, o.Text, "passage")
		if err != nil {
			return res, fmt.Errorf("cluster: peer: vectors: %w", err)
		}
		if len(v) != len(stored[i]) {
			return res, fmt.Errorf("cluster: peer: %d-d vector, hybrank's is %d-d", len(v), len(stored[i]))
		}
		cs := cosine(v, stored[i])
		if cs < res.MinCosine || res.WorstDoc == "" {
			res.MinCosine, res.WorstDoc = min(res.MinCosine, cs), o.DocID
		}
		if 1-cs <= cfg.Targets.MaxCosineGap {
			res.Within++
		}
		res.Compared++
	}
	peerScores, err := w.rerank(ctx, nodes[0].Inference, probeQ, probeDocs)
	if err != nil {
		return res, fmt.Errorf("cluster: peer: rerank probe: %w", err)
	}
	a, b := make([]float32, len(hybScores)), make([]float32, len(peerScores))
	for i := range a {
		a[i], b[i] = float32(hybScores[i]), float32(peerScores[i])
		res.RerankGap = max(res.RerankGap, math.Abs(hybScores[i]-peerScores[i]))
	}
	res.RerankRho = measure.Spearman(a, b)
	if err := measureSidecars(ctx, cfg, w, nodes, c, f, sidePeer, &res); err != nil {
		return res, err
	}
	return res, nil
}

// swap replaces every node's sidecar with the peer (toPeer) or hybrank
// and waits until each answers ready.
func swap(ctx context.Context, cfg Config, w *weaviate, cl Cluster, toPeer bool) error {
	for i, n := range cl.Nodes() {
		if err := cl.KillSidecar(i); err != nil {
			return fmt.Errorf("kill sidecar %d: %w", i, err)
		}
		if err := cl.StartSidecar(ctx, i, toPeer); err != nil {
			return fmt.Errorf("start sidecar %d (peer %v): %w", i, toPeer, err)
		}
		if _, err := w.sidecarReady(ctx, n.Inference, cfg.Peer.Ready); err != nil {
			return fmt.Errorf("sidecar %d (peer %v) not ready: %w", i, toPeer, err)
		}
	}
	return nil
}

// rerankProbe is one query and the first rerankChunk documents.
func rerankProbe(c *corpus) (string, []string) {
	docs := make([]string, 0, rerankChunk)
	for _, o := range c.objects[:min(rerankChunk, len(c.objects))] {
		docs = append(docs, o.Text)
	}
	return c.ds.Queries[0].Text, docs
}

// measureSidecars adds side's rows: an import of cfg.Peer.Docs documents
// into the peer collection and cfg.Peer.Queries reranked searches through
// Weaviate, then the protocol endpoints driven directly.
func measureSidecars(ctx context.Context, cfg Config, w *weaviate, nodes []Endpoint, c *corpus, f fusion, side string, res *PeerResult) error {
	class := cfg.collection() + "Peer"
	base := nodes[0].HTTP
	coll := Collection{Name: class, Shards: cfg.Shards, Replicas: cfg.Replicas, AsyncReplication: cfg.AsyncReplication, Rerank: true}
	if err := w.createCollection(ctx, base, coll); err != nil {
		return fmt.Errorf("cluster: peer: %w", err)
	}
	objs := c.objects[:min(cfg.Peer.Docs, len(c.objects))]
	before := countAll(ctx, w, nodes)
	imp, err := importAll(ctx, w, nodes, class, cfg.Consistency, objs, cfg.Peer.BatchSize, cfg.Peer.Importers, nil)
	if err != nil {
		return fmt.Errorf("cluster: peer: %s import: %w", side, err)
	}
	imp.Phase, imp.Sidecars = "peer phase", side
	res.Imports = append(res.Imports, imp)
	row := PeerRow{Sidecars: side, What: "embed via import", Clients: cfg.Peer.Importers, Requests: imp.Acked, Seconds: imp.Seconds,
		ReqPerS: imp.DocsPerS, Errors: imp.Failed, Detail: fmt.Sprintf("%d documents, batches of %d", len(objs), cfg.Peer.BatchSize)}
	row.Counted = delta(before, countAll(ctx, w, nodes), route(nodes[0], "/vectors"))
	res.Rows = append(res.Rows, row)
	if err := w.dropCollection(ctx, base, class); err != nil {
		return err
	}

	few := c.withQueries(cfg.Peer.Queries)
	spec := weaviateSpecs(cfg, cfg.collection(), f)[3] // the reranked fusion
	before = countAll(ctx, w, nodes)
	out, err := runSearches(ctx, w, nodes, few, spec, cfg.Peer.RerankClients, cfg.Warmup, false)
	if err != nil {
		return err
	}
	per := searchRerankRequests(cfg.RerankLimit)
	el := 0.0
	if out.row.QPS > 0 {
		el = float64(len(few.ds.Queries)) / out.row.QPS
	}
	rr := PeerRow{Sidecars: side, What: "rerank via search", Clients: cfg.Peer.RerankClients, Requests: per * len(few.ds.Queries),
		Seconds: measure.Round(el, 2), ReqPerS: measure.Round(out.row.QPS*float64(per), 2), Errors: out.row.Errors,
		Detail: fmt.Sprintf("%d searches (%s), %d rerank requests each; nDCG@10 %.4f", len(few.ds.Queries), out.row.Search, per, out.row.NDCG10)}
	rr.Counted = delta(before, countAll(ctx, w, nodes), route(nodes[0], "/rerank"))
	res.Rows = append(res.Rows, rr)

	if cfg.Peer.Direct <= 0 {
		return nil
	}
	// Every request differs (the documents, and for rerank the query and
	// its documents), so that no answer comes from hybrank's caches; the
	// requests still in flight when the window closes are waited for.
	n := len(c.objects)
	for _, d := range []struct {
		what, path string
		body       func(i int) any
	}{
		{"embed direct", "/vectors", func(i int) any { return vectorsBody(c.objects[i%n].Text, "passage") }},
		{"rerank direct", "/rerank", func(i int) any {
			docs := make([]string, min(rerankChunk, n))
			for k := range docs {
				docs[k] = c.objects[(i*rerankChunk+k)%n].Text
			}
			return rerankBody(c.ds.Queries[i%len(c.ds.Queries)].Text, docs)
		}},
	} {
		var seq atomic.Int64
		lg, err := loadgen.Run(ctx, loadgen.Config{URL: nodes[0].Inference + d.path, Clients: cfg.Peer.DirectClients,
			Warmup: time.Second, Duration: cfg.Peer.Direct, Drain: true, Client: w.hc,
			Body: func(int, int) []byte {
				b, _ := json.Marshal(d.body(int(seq.Add(1) - 1)))
				return b
			}})
		if err != nil {
			return fmt.Errorf("cluster: peer: %s %s: %w", side, d.what, err)
		}
		ok := lg.Count(200)
		row := PeerRow{Sidecars: side, What: d.what, Clients: cfg.Peer.DirectClients, Requests: ok,
			Seconds: measure.Round(lg.Elapsed.Seconds(), 2), Detail: "node 0's sidecar, " + d.path}
		if lg.Elapsed > 0 {
			row.ReqPerS = measure.Round(float64(ok)/lg.Elapsed.Seconds(), 2)
		}
		for st, k := range lg.Statuses {
			if st != "200" {
				row.Errors += k
			}
		}
		if d.what == "rerank direct" {
			row.Detail += fmt.Sprintf(", %d documents per request", min(rerankChunk, n))
		}
		if int(seq.Load()) > n {
			row.Detail += fmt.Sprintf("; %d requests for %d documents: texts repeated", seq.Load(), n)
		}
		res.Rows = append(res.Rows, row)
	}
	return nil
}

// countAll sums every sidecar's request counters by route (empty for
// sidecars without hybrank's /metrics).
func countAll(ctx context.Context, w *weaviate, nodes []Endpoint) map[string]float64 {
	out := map[string]float64{}
	for _, n := range nodes {
		for r, v := range w.requestCounts(ctx, n.Sidecar) {
			out[r] += v
		}
	}
	return out
}

// route is the metrics label of a protocol path on n's sidecar: the
// inference prefix and the path (/weaviate/vectors).
func route(n Endpoint, path string) string {
	return strings.TrimPrefix(n.Inference, n.Sidecar) + path
}

// delta is the growth of the route's counter (none when it was not
// counted: a sidecar without hybrank's metrics).
func delta(before, after map[string]float64, route string) Optional {
	v, ok := after[route]
	if !ok {
		return Optional{}
	}
	return Some(math.Round(v - before[route]))
}

// withQueries is c with its first n queries only (same documents).
func (c *corpus) withQueries(n int) *corpus {
	if n <= 0 || n >= len(c.ds.Queries) {
		return c
	}
	ds := *c.ds
	ds.Queries = ds.Queries[:n]
	cc := *c
	cc.ds = &ds
	return &cc
}
