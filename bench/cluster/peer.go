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

// PeerRow is one sidecar implementation's inference requests per second
// in one measurement: a line of cluster.md.
type PeerRow struct {
	Sidecars string `json:"sidecars" table:""`
	// What was measured: "embed via import" (each object one vectors
	// request), "rerank via search" (a reranked search of n hits is
	// 2·ceil(n/32) rerank requests and one vectors request), and the
	// protocol driven at node 0's sidecar alone with the bodies Weaviate
	// sends: "embed direct" (documents), "embed query direct" (short
	// texts, as a search's query), "rerank direct" (32 documents).
	What     string  `json:"what" table:""`
	Clients  int     `json:"clients" table:""`
	Requests int     `json:"requests" table:""`
	Seconds  float64 `json:"seconds" table:""`
	ReqPerS  float64 `json:"req_per_s" table:"req/s"`
	Errors   int     `json:"errors" table:""`
	// CPUPerReq is the sidecars' CPU time per request in milliseconds
	// (user + system, every thread; absent where the cluster cannot read
	// it): on a machine the sidecars share with Weaviate, the cost that
	// requests per second cannot show.
	CPUPerReq Optional `json:"cpu_ms_per_req" table:"cpu ms/req"`
	// Counted is the requests hybrank's sidecars counted on the route
	// (/metrics; absent for the peer), beside Requests derived from the
	// work.
	Counted Optional `json:"counted" table:""`
	Detail  string   `json:"detail,omitempty"`
}

// Measurements of the peer phase (PeerRow.What).
const (
	whatImport       = "embed via import"
	whatSearch       = "rerank via search"
	whatEmbedDirect  = "embed direct"
	whatQueryDirect  = "embed query direct"
	whatRerankDirect = "rerank direct"
)

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
	// Int8MinCosine and Int8MeanCosine compare the int8 sidecar's vectors
	// of the same documents with the stored (float32) ones; absent
	// without the int8 measurement.
	Int8MinCosine  Optional `json:"int8_min_cosine"`
	Int8MeanCosine Optional `json:"int8_mean_cosine"`
	// RerankRho and RerankGap compare hybrank's and the peer's rerank
	// scores of one query's documents (Spearman, largest |Δ|).
	RerankRho float64 `json:"rerank_rho"`
	RerankGap float64 `json:"rerank_gap"`
	// Meta is each implementation's /meta answer.
	Meta map[string]string `json:"meta"`
	// Threads and Pool are the sidecars' intra-op threads per model call
	// and calls at once (0: not known); the peer ran Threads × Pool torch
	// threads.
	Threads int `json:"threads"`
	Pool    int `json:"pool"`
	// SwapS is how long the swap to the peer took (kill, start, ready on
	// every node) and back.
	SwapS float64 `json:"swap_s"`
	BackS float64 `json:"back_s"`
}

// runPeer measures hybrank's sidecars (and node 0's with int8 models),
// swaps in the peer on every node, measures it the same way, compares
// vectors and rerank scores, and swaps hybrank back (also when a step
// fails).
func runPeer(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, f fusion, logf func(string, ...any)) (res PeerResult, err error) {
	res.Meta = map[string]string{}
	if sm, ok := cl.(sidecarModels); ok {
		res.Threads, res.Pool = sm.SidecarThreads()
	}
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
	res.Meta[string(SidecarHybrank)] = w.sidecarMeta(ctx, nodes[0].Inference)
	if cfg.ColdCaches {
		// Empty caches, as the peer's start with (it has none).
		if err := restartSidecars(ctx, w, cl, cfg.Peer.Ready); err != nil {
			return res, err
		}
	}
	if err := measureSidecars(ctx, cfg, w, cl, c, f, SidecarHybrank, &res); err != nil {
		return res, err
	}
	if cfg.Peer.Int8 && cfg.Peer.Direct > 0 {
		if err := measureInt8(ctx, cfg, w, cl, c, sample, stored, &res, logf); err != nil {
			return res, err
		}
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
		if berr := swap(context.WithoutCancel(ctx), cfg, w, cl, SidecarHybrank); berr != nil {
			err = errors.Join(err, fmt.Errorf("cluster: peer: swapping hybrank back: %w", berr))
		}
		res.BackS = measure.Round(time.Since(t1).Seconds(), 1)
	}()
	swapped = true
	if err := swap(ctx, cfg, w, cl, SidecarPeer); err != nil {
		return res, fmt.Errorf("cluster: peer: %w", err)
	}
	res.SwapS = measure.Round(time.Since(t0).Seconds(), 1)
	res.Meta[string(SidecarPeer)] = w.sidecarMeta(ctx, nodes[0].Inference)

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
	if err := measureSidecars(ctx, cfg, w, cl, c, f, SidecarPeer, &res); err != nil {
		return res, err
	}
	return res, nil
}

// measureInt8 restarts node 0's sidecar with int8 models, compares its
// vectors of the sample with the stored float32 ones, drives it directly
// as measureSidecars does, and restarts it with float32 models (also
// when a step fails).
func measureInt8(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, sample []Object, stored [][]float32, res *PeerResult, logf func(string, ...any)) (err error) {
	node := cl.Nodes()[0]
	logf("peer: node 0's sidecar with int8 models")
	defer func() {
		if rerr := restartAs(context.WithoutCancel(ctx), cfg, w, cl, 0, SidecarHybrank); rerr != nil {
			err = errors.Join(err, fmt.Errorf("cluster: peer: restoring node 0's float32 sidecar: %w", rerr))
		}
	}()
	if err := restartAs(ctx, cfg, w, cl, 0, SidecarHybrankInt8); err != nil {
		return fmt.Errorf("cluster: peer: int8 sidecar: %w", err)
	}
	least, sum := 1.0, 0.0
	for i, o := range sample {
		v, err := w.embed(ctx, node.Inference, o.Text, "passage")
		if err != nil {
			return fmt.Errorf("cluster: peer: int8 vectors: %w", err)
		}
		if len(v) != len(stored[i]) {
			return fmt.Errorf("cluster: peer: int8 sidecar's vector is %d-d, the stored one %d-d", len(v), len(stored[i]))
		}
		cs := cosine(v, stored[i])
		least, sum = min(least, cs), sum+cs
	}
	if len(sample) > 0 {
		res.Int8MinCosine, res.Int8MeanCosine = Some(least), Some(sum/float64(len(sample)))
	}
	return measureDirect(ctx, cfg, w, cl, c, SidecarHybrankInt8, res)
}

// swap replaces every node's sidecar with s and waits until each
// answers ready.
func swap(ctx context.Context, cfg Config, w *weaviate, cl Cluster, s SidecarKind) error {
	for i := range cl.Nodes() {
		if err := restartAs(ctx, cfg, w, cl, i, s); err != nil {
			return err
		}
	}
	return nil
}

// restartAs kills node i's sidecar, starts s in its place and waits
// until it answers ready.
func restartAs(ctx context.Context, cfg Config, w *weaviate, cl Cluster, i int, s SidecarKind) error {
	if err := cl.KillSidecar(i); err != nil {
		return fmt.Errorf("kill sidecar %d: %w", i, err)
	}
	if err := cl.StartSidecar(ctx, i, s); err != nil {
		return fmt.Errorf("start sidecar %d (%s): %w", i, s, err)
	}
	if _, err := w.sidecarReady(ctx, cl.Nodes()[i].Inference, cfg.Peer.Ready); err != nil {
		return fmt.Errorf("sidecar %d (%s) not ready: %w", i, s, err)
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

// sidecarCPU is the CPU time node i's sidecar has used, or false when
// the cluster cannot say.
func sidecarCPU(cl Cluster, i int) (time.Duration, bool) {
	m, ok := cl.(cpuMeter)
	if !ok {
		return 0, false
	}
	d, err := m.SidecarCPU(i)
	return d, err == nil
}

// cpuMeterOf measures the CPU time the sidecars of nodes (indexes) use
// from now until the returned function is called with the requests
// served: it returns milliseconds per request (absent when unknown).
func cpuMeterOf(cl Cluster, nodes []int) func(requests int) Optional {
	start := make([]time.Duration, len(nodes))
	known := true
	for k, i := range nodes {
		d, ok := sidecarCPU(cl, i)
		start[k], known = d, known && ok
	}
	return func(requests int) Optional {
		if !known || requests <= 0 {
			return Optional{}
		}
		var used time.Duration
		for k, i := range nodes {
			d, ok := sidecarCPU(cl, i)
			if !ok || d < start[k] {
				return Optional{} // restarted, or gone
			}
			used += d - start[k]
		}
		return Some(measure.Round(float64(used.Microseconds())/1e3/float64(requests), 3))
	}
}

// measureSidecars adds side's rows: an import of cfg.Peer.Docs documents
// into the peer collection and cfg.Peer.Queries reranked searches through
// Weaviate, then the protocol endpoints driven directly (measureDirect).
func measureSidecars(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, f fusion, side SidecarKind, res *PeerResult) error {
	nodes := cl.Nodes()
	all := make([]int, len(nodes))
	for i := range all {
		all[i] = i
	}
	class := cfg.collection() + "Peer"
	base := nodes[0].HTTP
	coll := Collection{Name: class, Shards: cfg.Shards, Replicas: cfg.Replicas, AsyncReplication: cfg.AsyncReplication, Rerank: true, Analyzed: cfg.analyzed()}
	if err := w.createCollection(ctx, base, coll); err != nil {
		return fmt.Errorf("cluster: peer: %w", err)
	}
	objs := c.objects[:min(cfg.Peer.Docs, len(c.objects))]
	before := countAll(ctx, w, nodes)
	cpu := cpuMeterOf(cl, all)
	imp, err := importAll(ctx, w, nodes, class, cfg.Consistency, objs, cfg.Peer.BatchSize, cfg.Peer.Importers, nil)
	if err != nil {
		return fmt.Errorf("cluster: peer: %s import: %w", side, err)
	}
	imp.Phase, imp.Sidecars = "peer phase", string(side)
	res.Imports = append(res.Imports, imp)
	row := PeerRow{Sidecars: string(side), What: whatImport, Clients: cfg.Peer.Importers, Requests: imp.Acked, Seconds: imp.Seconds,
		ReqPerS: imp.DocsPerS, Errors: imp.Failed, CPUPerReq: cpu(imp.Acked), Detail: fmt.Sprintf("%d documents, batches of %d", len(objs), cfg.Peer.BatchSize)}
	row.Counted = delta(before, countAll(ctx, w, nodes), route(nodes[0], "/vectors"))
	res.Rows = append(res.Rows, row)
	if err := w.dropCollection(ctx, base, class); err != nil {
		return err
	}

	few := c.withQueries(cfg.Peer.Queries)
	spec := weaviateSpecs(cfg, cfg.collection(), f, c)[3] // the reranked fusion
	before = countAll(ctx, w, nodes)
	cpu = cpuMeterOf(cl, all)
	out, err := runSearches(ctx, w, nodes, few, spec, cfg.Peer.RerankClients, cfg.Warmup, false)
	if err != nil {
		return err
	}
	per := searchRerankRequests(cfg.RerankLimit)
	el := 0.0
	if out.row.QPS > 0 {
		el = float64(len(few.ds.Queries)) / out.row.QPS
	}
	// The CPU covers the warm-up searches and each search's query
	// embedding too.
	n := per * (len(few.ds.Queries) + cfg.Warmup)
	rr := PeerRow{Sidecars: string(side), What: whatSearch, Clients: cfg.Peer.RerankClients, Requests: per * len(few.ds.Queries),
		Seconds: measure.Round(el, 2), ReqPerS: measure.Round(out.row.QPS*float64(per), 2), Errors: out.row.Errors, CPUPerReq: cpu(n),
		Detail: fmt.Sprintf("%d searches (%s), %d rerank requests each; nDCG@10 %.4f", len(few.ds.Queries), out.row.Search, per, out.row.NDCG10)}
	after := countAll(ctx, w, nodes)
	rr.Counted = delta(before, after, route(nodes[0], "/rerank"))
	rr.Detail += cacheShare(before, after)
	res.Rows = append(res.Rows, rr)
	return measureDirect(ctx, cfg, w, cl, c, side, res)
}

// shortTexts are query-length texts, all different: the objects' titles,
// then each text's first queryWords words.
func shortTexts(objs []Object) []string {
	const queryWords = 12
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t = strings.TrimSpace(t); t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, o := range objs {
		add(o.Title)
	}
	for _, o := range objs {
		w := strings.Fields(o.Text)
		add(strings.Join(w[:min(queryWords, len(w))], " "))
	}
	return out
}

// measureDirect drives node 0's sidecar (side) alone with the bodies
// Weaviate sends, cfg.Peer.DirectClients clients for cfg.Peer.Direct per
// endpoint: documents and short texts (shortTexts, as a search's query) to
// /vectors, rerankChunk documents to /rerank. Every request
// differs, so that no answer comes from hybrank's caches; the requests
// still in flight when the window closes are waited for.
func measureDirect(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, side SidecarKind, res *PeerResult) error {
	if cfg.Peer.Direct <= 0 {
		return nil
	}
	node := cl.Nodes()[0]
	n := len(c.objects)
	short := shortTexts(c.objects)
	type direct struct {
		what, path string
		texts      int // distinct bodies
		body       func(i int) any
	}
	ds := []direct{{whatEmbedDirect, "/vectors", n, func(i int) any { return vectorsBody(c.objects[i%n].Text, "passage") }}}
	if len(short) > 0 {
		ds = append(ds, direct{whatQueryDirect, "/vectors", len(short), func(i int) any { return vectorsBody(short[i%len(short)], "query") }})
	}
	ds = append(ds, direct{whatRerankDirect, "/rerank", n, func(i int) any {
		docs := make([]string, min(rerankChunk, n))
		for k := range docs {
			docs[k] = c.objects[(i*rerankChunk+k)%n].Text
		}
		return rerankBody(c.ds.Queries[i%len(c.ds.Queries)].Text, docs)
	}})
	for _, d := range ds {
		var seq atomic.Int64
		cpu := cpuMeterOf(cl, []int{0})
		lg, err := loadgen.Run(ctx, loadgen.Config{URL: node.Inference + d.path, Clients: cfg.Peer.DirectClients,
			Warmup: time.Second, Duration: cfg.Peer.Direct, Drain: true, Client: w.hc,
			Body: func(int, int) []byte {
				b, _ := json.Marshal(d.body(int(seq.Add(1) - 1)))
				return b
			}})
		if err != nil {
			return fmt.Errorf("cluster: peer: %s %s: %w", side, d.what, err)
		}
		ok := lg.Count(200)
		row := PeerRow{Sidecars: string(side), What: d.what, Clients: cfg.Peer.DirectClients, Requests: ok,
			Seconds: measure.Round(lg.Elapsed.Seconds(), 2), CPUPerReq: cpu(int(seq.Load())), Detail: "node 0's sidecar, " + d.path}
		if lg.Elapsed > 0 {
			row.ReqPerS = measure.Round(float64(ok)/lg.Elapsed.Seconds(), 2)
		}
		for st, k := range lg.Statuses {
			if st != "200" {
				row.Errors += k
			}
		}
		switch d.what {
		case whatRerankDirect:
			row.Detail += fmt.Sprintf(", %d documents per request", min(rerankChunk, n))
		case whatQueryDirect:
			row.Detail += ", task_type query, the corpus's titles and each text's first words"
		}
		if int(seq.Load()) > d.texts {
			row.Detail += fmt.Sprintf("; %d requests for %d texts: texts repeated", seq.Load(), d.texts)
		}
		res.Rows = append(res.Rows, row)
	}
	return nil
}

// cacheShare says where the pairs of the rerank requests between two
// readings of the counters were scored: from the cache, shared with a
// concurrent call of the same pairs, or by the model
// ("" without hybrank's counters).
func cacheShare(before, after map[string]float64) string {
	hits, ok1 := delta(before, after, rerankHits).Value()
	misses, ok2 := delta(before, after, rerankMisses).Value()
	shared, ok3 := delta(before, after, rerankShared).Value()
	if !ok1 || !ok2 || !ok3 || hits+misses == 0 {
		return ""
	}
	n := hits + misses
	return fmt.Sprintf("; of %.0f pairs, %.0f%% from the cache, %.0f%% shared with a concurrent call, %.0f%% scored by the model",
		n, 100*hits/n, 100*shared/n, 100*(misses-shared)/n)
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
