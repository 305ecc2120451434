package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
)

// Versions are what ran: Weaviate's version per node and the sidecars'
// models (their /meta).
type Versions struct {
	Weaviate      string            `json:"weaviate"`
	Nodes         map[string]string `json:"nodes"`
	Modules       []string          `json:"modules"`
	SidecarMeta   string            `json:"sidecar_meta"`
	Collection    ClassSettings     `json:"collection"`
	Fusion        fusion            `json:"fusion"`
	EngineAnalyze string            `json:"engine_analysis,omitempty"`
	// Analyzer is the version of hybrank's analysis the collection's
	// terms were made with (the sidecar's /analyze; Config.Analysis).
	Analyzer     string `json:"analyzer,omitempty"`
	EngineModels string `json:"engine_models,omitempty"`
}

// Result is one Run.
type Result struct {
	Nodes    []Endpoint   `json:"nodes"`
	Versions Versions     `json:"versions"`
	Dataset  string       `json:"dataset"`
	Docs     int          `json:"docs"`
	Queries  int          `json:"queries"`
	Imports  []ImportRow  `json:"imports"`
	Searches []SearchRow  `json:"searches"`
	Peer     *PeerResult  `json:"peer,omitempty"`
	Faults   *FaultResult `json:"faults,omitempty"`
	// RerankGap and RerankRho compare a sidecar's rerank scores with the
	// engine's reranker on the same pairs; RerankErr says why not.
	RerankGap float64 `json:"sidecar_rerank_gap"`
	RerankRho float64 `json:"sidecar_rerank_rho"`
	RerankErr string  `json:"sidecar_rerank_error,omitempty"`
	// Phases are the wall times of the run's phases, in order.
	Phases []Event        `json:"phases"`
	Checks []report.Check `json:"checks"`

	// runs are the ranked ids of each of Searches' Weaviate rows (same
	// index; nil for engine rows).
	runs []eval.Run
}

// Run benchmarks the running cluster that cfg.StatePath describes (see the
// package doc): load, searches beside the engine, the peer, the faults.
// cl is the cluster to drive; nil reads cfg.StatePath. A failed phase
// ends the run with what was measured before it.
func Run(ctx context.Context, cfg Config, cl Cluster) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if cl == nil {
		if cl, err = OpenState(cfg.StatePath); err != nil {
			return res, err
		}
	}
	f, _ := fusedSetup(cfg.Fused, cfg.Profile)
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	w := &weaviate{hc: &http.Client{Timeout: cfg.RequestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	defer w.hc.CloseIdleConnections()
	nodes := cl.Nodes()
	res.Nodes = nodes
	if err := checkReady(ctx, w, nodes, cfg.StatePath); err != nil {
		return res, err
	}
	start := time.Now()
	phase := func(what string) {
		res.Phases = append(res.Phases, Event{T: measure.Round(time.Since(start).Seconds(), 1), What: what})
		logf("t=%.0fs %s", time.Since(start).Seconds(), what)
	}
	if res.Versions, err = versions(ctx, w, nodes); err != nil {
		return res, err
	}
	res.Versions.Fusion = f

	c, err := loadCorpus(cfg.Dataset, cfg.Docs, cfg.Queries)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close()) }()
	res.Dataset, res.Docs, res.Queries = c.ds.Name, len(c.ds.Docs), len(c.ds.Queries)

	phase(fmt.Sprintf("load: %d documents of %s into %s", len(c.objects), c.ds.Name, cfg.collection()))
	if cfg.analyzed() {
		if err := c.analyze(ctx, w, nodes[0].Sidecar); err != nil {
			return res, err
		}
		res.Versions.Analyzer = c.analyzer
	}
	coll := Collection{Name: cfg.collection(), Shards: cfg.Shards, Replicas: cfg.Replicas, AsyncReplication: cfg.AsyncReplication, Rerank: true, Analyzed: cfg.analyzed()}
	if err := w.createCollection(ctx, nodes[0].HTTP, coll); err != nil {
		return res, err
	}
	if res.Versions.Collection, err = w.classSettings(ctx, nodes[0].HTTP, coll.Name); err != nil {
		return res, err
	}
	imp, err := importAll(ctx, w, nodes, coll.Name, cfg.Consistency, c.objects, cfg.BatchSize, cfg.Importers,
		measure.NewProgress("import", len(c.objects), cfg.Progress))
	imp.Phase, imp.Sidecars = "load", string(SidecarHybrank)
	res.Imports = append(res.Imports, imp)
	report.Log(cfg.Log, imp)
	if err != nil {
		return res, err
	}

	phase("searches")
	if err := searchAll(ctx, cfg, w, cl, c, f, &res); err != nil {
		return res, err
	}
	if cfg.Engine.Enabled {
		phase("engine in process")
		if sm, ok := cl.(sidecarModels); ok {
			embed, rerank := sm.SidecarModels()
			cfg.Engine.EmbedDir = cmp.Or(cfg.Engine.EmbedDir, embed)
			cfg.Engine.RerankDir = cmp.Or(cfg.Engine.RerankDir, rerank)
		}
		res.Versions.EngineModels = fmt.Sprintf("embedder %s, reranker %s", cmp.Or(cfg.Engine.EmbedDir, "(resolved by profile)"), cmp.Or(cfg.Engine.RerankDir, "(resolved by profile)"))
		side, err := runEngine(ctx, cfg, c, f, w, nodes[0].Inference)
		if err != nil {
			return res, err
		}
		res.RerankGap, res.RerankRho, res.RerankErr = side.rerankGap, side.rerankRho, side.rerankErr
		res.compare(side)
		for _, r := range side.rows {
			report.Log(cfg.Log, r)
		}
		res.Searches = append(res.Searches, side.rows...)
		res.Versions.EngineAnalyze = fmt.Sprintf("%+v", cfg.Engine.Engine.Analysis)
	}
	if cfg.Peer.Enabled {
		phase("peer")
		p, err := runPeer(ctx, cfg, w, cl, c, f, logf)
		res.Peer = &p
		for _, r := range p.Rows {
			report.Log(cfg.Log, r)
		}
		if err != nil {
			return res, err
		}
	}
	if cfg.Faults.Enabled {
		phase("faults")
		fr, err := runFaults(ctx, cfg, w, cl, c, f, logf)
		res.Faults = &fr
		if err != nil {
			return res, err
		}
	}
	phase("done")
	res.Checks = cfg.Targets.Check(cfg, res)
	return res, nil
}

// checkReady fails unless every node answers ready, saying how to start
// the cluster.
func checkReady(ctx context.Context, w *weaviate, nodes []Endpoint, state string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("cluster: the state %s lists no node: run `make cluster`", state)
	}
	for _, n := range nodes {
		if !w.ready(ctx, n.HTTP, 5*time.Second) {
			return fmt.Errorf("cluster: node %s (%s) does not answer ready: the cluster of %s is not running; start it with `make cluster`", n.Name, n.HTTP, state)
		}
	}
	return nil
}

// versions reads Weaviate's and the sidecars' versions.
func versions(ctx context.Context, w *weaviate, nodes []Endpoint) (Versions, error) {
	v := Versions{Nodes: map[string]string{}}
	var mods map[string]any
	var err error
	if v.Weaviate, mods, err = w.meta(ctx, nodes[0].HTTP); err != nil {
		return v, err
	}
	// The modules the collection uses (/v1/meta lists every module
	// compiled in), when the node has them.
	for _, m := range []string{"text2vec-transformers", "reranker-transformers"} {
		if _, ok := mods[m]; ok {
			v.Modules = append(v.Modules, m)
		}
	}
	if st, err := w.nodes(ctx, nodes[0].HTTP, ""); err == nil {
		for _, n := range st {
			v.Nodes[n.Name] = n.Version + " " + n.GitHash + " " + n.Status
		}
	}
	v.SidecarMeta = w.sidecarMeta(ctx, nodes[0].Inference)
	return v, nil
}

// weaviateSpecs are the Weaviate searches: BM25 alone, vector alone
// (hybrid α 1), the fusion, and the fusion reranked; with hybrank's
// analysis (Config.Analysis), BM25 and the fusion also on Weaviate's own,
// named as the engine's rows with that analysis (plainSetup).
func weaviateSpecs(cfg Config, class string, f fusion, c *corpus) []searchSpec {
	cl := cfg.readConsistency()
	an := cfg.analyzed()
	base := func(q string, s Search) Search {
		s.Class, s.Query, s.Consistency = class, q, cl
		if an {
			s.Analyzed, s.Terms = true, c.terms(q)
		}
		return s
	}
	specs := []searchSpec{
		{setup: setupBM25, real: true, trec: true, once: true, make: func(q string) Search {
			return base(q, Search{BM25: true, Limit: cfg.Limit})
		}},
		{setup: setupDense, real: true, once: true, make: func(q string) Search {
			return base(q, Search{Alpha: 1, Fusion: f.Type, Limit: cfg.Limit})
		}},
		{setup: f.Setup.Name, real: true, make: func(q string) Search {
			return base(q, Search{Alpha: f.Alpha, Fusion: f.Type, Limit: cfg.Limit})
		}},
		// The reranker's weights: the sidecars serve the profile's
		// generated stand-in unless the engine finds real ones (its row
		// says so too).
		{setup: rerankSetup(f, cfg.RerankLimit), make: func(q string) Search {
			return base(q, Search{Alpha: f.Alpha, Fusion: f.Type, Limit: cfg.RerankLimit, Rerank: true})
		}},
	}
	if !an {
		return specs
	}
	own := func(q string, s Search) Search {
		s.Class, s.Query, s.Consistency = class, q, cl
		return s
	}
	return append(specs,
		searchSpec{setup: plainSetup(setupBM25), real: true, trec: true, once: true, make: func(q string) Search {
			return own(q, Search{BM25: true, Limit: cfg.Limit})
		}},
		searchSpec{setup: plainSetup(f.Setup.Name), real: true, once: true, make: func(q string) Search {
			return own(q, Search{Alpha: f.Alpha, Fusion: f.Type, Limit: cfg.Limit})
		}})
}

// searchAll runs the single retrievers (and the rows on Weaviate's own
// analysis) at the first client count and the fusion, plain and
// reranked, at every client count.
func searchAll(ctx context.Context, cfg Config, w *weaviate, cl Cluster, c *corpus, f fusion, res *Result) error {
	nodes := cl.Nodes()
	for _, spec := range weaviateSpecs(cfg, cfg.collection(), f, c) {
		counts := cfg.Clients
		if spec.once {
			counts = counts[:1]
		}
		for _, n := range counts {
			if cfg.ColdCaches && !spec.make("").BM25 {
				if err := restartSidecars(ctx, w, cl, cfg.Peer.Ready); err != nil {
					return err
				}
			}
			out, err := runSearches(ctx, w, nodes, c, spec, n, cfg.Warmup, cfg.Progress)
			if err != nil {
				return err
			}
			res.Searches = append(res.Searches, out.row)
			res.runs = append(res.runs, out.run)
			report.Log(cfg.Log, out.row)
		}
	}
	return nil
}

// compare sets each Weaviate row's gap to the engine's row of the same
// setup (and to its row with Weaviate's analysis) and the overlap of their
// top 10s, and takes the reranked rows'
// weights from the engine's (the sidecars serve the same model).
func (res *Result) compare(side engineSide) {
	by := map[string]SearchRow{}
	for _, r := range side.rows {
		by[r.Setup] = r
	}
	for i := range res.Searches {
		r := &res.Searches[i]
		e, ok := by[r.Setup]
		if r.Impl != "weaviate" || !ok || i >= len(res.runs) {
			continue
		}
		r.EngineGap, r.Overlap10 = Some(r.NDCG10-e.NDCG10), Some(overlap10(res.runs[i], side.runs[r.Setup]))
		r.RealWeights = e.RealWeights
		// The gap to the engine with Weaviate's analysis, for rows on
		// Weaviate's own analysis that are not already compared to it.
		if p, ok := by[plainSetup(r.Setup)]; ok && r.Analysis == AnalysisWeaviate {
			r.PlainGap = Some(r.NDCG10 - p.NDCG10)
		}
	}
}

// restartSidecars restarts every node's hybrank sidecar (emptying its
// caches) and waits until each answers ready, up to limit.
func restartSidecars(ctx context.Context, w *weaviate, cl Cluster, limit time.Duration) error {
	for i, n := range cl.Nodes() {
		if err := cl.KillSidecar(i); err != nil {
			return fmt.Errorf("cluster: restart sidecar %d: %w", i, err)
		}
		if err := cl.StartSidecar(ctx, i, SidecarHybrank); err != nil {
			return fmt.Errorf("cluster: restart sidecar %d: %w", i, err)
		}
		if _, err := w.sidecarReady(ctx, n.Inference, limit); err != nil {
			return fmt.Errorf("cluster: sidecar %d not ready after its restart: %w", i, err)
		}
	}
	return nil
}
