package dense

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/simd"
)

// Vectors are the data of a run: Base is indexed, Queries are searched.
// Every vector has the same dimension; the index L2-normalises copies, so
// similarity is cosine. The driver does not modify them.
type Vectors struct {
	// Name says what the vectors are in rows and reports ("scifact
	// all-MiniLM-L6-v2"); synthetic data is "synthetic".
	Name    string      `json:"name"`
	Base    [][]float32 `json:"-"`
	Queries [][]float32 `json:"-"`
}

// validate reports empty or ragged data.
func (v *Vectors) validate() error {
	if len(v.Base) == 0 || len(v.Queries) == 0 || len(v.Base[0]) == 0 {
		return fmt.Errorf("%w: dense: vectors %q: need base and query vectors", bench.ErrBadOption, v.Name)
	}
	dim := len(v.Base[0])
	for _, set := range [][][]float32{v.Base, v.Queries} {
		for i, x := range set {
			if len(x) != dim {
				return fmt.Errorf("%w: dense: vectors %q: vector %d has dimension %d, want %d", bench.ErrBadOption, v.Name, i, len(x), dim)
			}
		}
	}
	return nil
}

// Config configures `bench dense`: a vector set (given, or synthetic
// clustered vectors), exact ground truth, and an HNSW sweep over M and
// EfSearch. Safe to copy.
type Config struct {
	// Vectors are the data; nil generates synthetic vectors from N, Dim,
	// Queries and the shape fields below.
	Vectors *Vectors `json:"vectors,omitempty"`
	// N is the number of indexed vectors; Queries more are drawn from the
	// same distribution and held out as queries (synthetic data only).
	N       int `json:"n"`
	Dim     int `json:"dim"`
	Queries int `json:"queries"`
	// K is the cut-off of recall@K.
	K int `json:"k"`
	// Ms and Efs are the graph degrees and search beam widths swept; each
	// M is one build, searched at every ef.
	Ms  []int `json:"m"`
	Efs []int `json:"ef_search"`
	// EfConstruction is the insertion beam width of every build.
	EfConstruction int `json:"ef_construction"`
	// Clusters, Rank, Noise and Seed shape the data (synth.VectorConfig).
	Clusters int     `json:"clusters"`
	Rank     int     `json:"rank"`
	Noise    float64 `json:"noise"`
	Seed     uint64  `json:"seed"`
	// Peers builds faiss's IndexHNSWFlat (make peers) with every M, the
	// same EfConstruction, and searches it at every ef on the same vectors,
	// one thread; recall against the same exact truth. Off by default.
	Peers peers.Config `json:"peers"`
	// Targets are the report's checks against the peer.
	Targets Targets `json:"targets"`
	// Progress forces progress bars on a non-terminal stderr.
	Progress bool `json:"-"`
	// Log receives one line per row as it is measured (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig returns the sweep of the task statement: 100K × 384
// synthetic vectors, 1000 queries, M 8/16/32, ef 16..256, no peers.
func DefaultConfig() Config {
	return Config{
		N: 100_000, Dim: 384, Queries: 1000, K: 10,
		Ms:             []int{8, 16, 32},
		Efs:            []int{16, 32, 64, 128, 256},
		EfConstruction: dense.DefaultConfig(384).EfConstruction,
		Clusters:       300, Rank: 64, Noise: 0.5, Seed: 1,
		Peers:   peers.DefaultConfig(),
		Targets: DefaultTargets(),
	}
}

// Targets are what a run with a peer is checked against, per M: the
// fastest hybrank row with recall ≥ MinRecall must reach MinSpeedup × the
// QPS of the fastest peer row with recall ≥ MinRecall (the real-models
// issue's bar: 0.95 at 0.5×).
type Targets struct {
	MinRecall  float64 `json:"min_recall"`
	MinSpeedup float64 `json:"min_speedup"`
}

// DefaultTargets is recall@K 0.95 at half the peer's QPS.
func DefaultTargets() Targets { return Targets{MinRecall: 0.95, MinSpeedup: 0.5} }

// Check evaluates t per M that has peer rows. A hybrank that never reaches
// MinRecall fails (value 0); a peer that never does leaves an INFO line.
func (t Targets) Check(rows []Row) []report.Check {
	type best struct {
		qps float64
		ef  int
	}
	var ms []int
	ours, peer := map[int]best{}, map[int]best{}
	names := map[int]string{}
	for _, r := range rows {
		if r.Kind != kindHNSW {
			continue
		}
		m := ours
		if r.Impl != implHybrank {
			m, names[r.M] = peer, r.Impl
		}
		if !slices.Contains(ms, r.M) {
			ms = append(ms, r.M)
		}
		if r.RecallAtK >= t.MinRecall && r.QPS > m[r.M].qps {
			m[r.M] = best{r.QPS, r.EfSearch}
		}
	}
	var cs []report.Check
	for _, m := range ms {
		name, ok := names[m]
		if !ok {
			continue
		}
		o, p := ours[m], peer[m]
		label := fmt.Sprintf("M=%d QPS hybrank / %s at recall@K ≥ %.2f", m, name, t.MinRecall)
		switch {
		case p.qps == 0:
			cs = append(cs, report.Inform(label, 0, name+" never reached the recall"))
		case o.qps == 0:
			// A failure whatever MinSpeedup is (0 >= 0 would pass).
			cs = append(cs, report.Check{Name: label, Verdict: report.Fail, Value: 0, Op: ">=", Target: t.MinSpeedup, Detail: "hybrank never reached the recall"})
		default:
			cs = append(cs, report.AtLeast(label, o.qps/p.qps, t.MinSpeedup,
				fmt.Sprintf("hybrank %.0f q/s at ef %d, %s %.0f q/s at ef %d", o.qps, o.ef, name, p.qps, p.ef)))
		}
	}
	return cs
}

// Row kinds and implementations.
const (
	kindFlat    = "flat"
	kindHNSW    = "hnsw"
	implHybrank = "hybrank"
)

func (c Config) synthetic() synth.VectorConfig {
	return synth.VectorConfig{N: c.N + c.Queries, Dim: c.Dim, Clusters: c.Clusters, Rank: c.Rank, Noise: c.Noise, Seed: c.Seed}
}

// data returns c.Vectors, or generates the synthetic set.
func (c Config) data(ctx context.Context) (*Vectors, error) {
	if c.Vectors != nil {
		return c.Vectors, nil
	}
	vecs, err := synth.Vectors(ctx, c.synthetic())
	if err != nil {
		return nil, err
	}
	return &Vectors{Name: "synthetic", Base: vecs[:c.N], Queries: vecs[c.N:]}, nil
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	switch {
	case c.K < 1:
		return fmt.Errorf("%w: dense: k must be positive", bench.ErrBadOption)
	case c.Vectors == nil && (c.N < 1 || c.Dim < 1 || c.Queries < 1):
		return fmt.Errorf("%w: dense: n, dim and queries must be positive", bench.ErrBadOption)
	case len(c.Ms) == 0 || len(c.Efs) == 0:
		return fmt.Errorf("%w: dense: need at least one M and one ef", bench.ErrBadOption)
	case c.EfConstruction < 1:
		return fmt.Errorf("%w: dense: ef_construction %d", bench.ErrBadOption, c.EfConstruction)
	case !(c.Targets.MinRecall >= 0 && c.Targets.MinRecall <= 1) || !(c.Targets.MinSpeedup >= 0):
		return fmt.Errorf("%w: dense: targets %+v", bench.ErrBadOption, c.Targets)
	}
	if c.Vectors != nil {
		if err := c.Vectors.validate(); err != nil {
			return err
		}
	} else if err := c.synthetic().Validate(); err != nil {
		return err
	}
	if err := c.Peers.Validate(); err != nil {
		return err
	}
	for _, m := range c.Ms {
		if m < 2 {
			return fmt.Errorf("%w: dense: M %d must be at least 2", bench.ErrBadOption, m)
		}
	}
	for _, ef := range c.Efs {
		if ef < 1 {
			return fmt.Errorf("%w: dense: ef %d must be positive", bench.ErrBadOption, ef)
		}
	}
	return nil
}

// Row is one measured search configuration: a line of dense.md.
type Row struct {
	// Impl is who ran it: "hybrank", or the peer "faiss" (Version says
	// which release) on the same vectors in the same run.
	Impl    string `json:"impl" table:""`
	Version string `json:"version,omitempty"`
	// Kind is "flat" (exact search over every vector) or "hnsw".
	Kind string `json:"kind" table:""`
	// Data names the vectors (Vectors.Name).
	Data    string `json:"data"`
	N       int    `json:"n"`
	Dim     int    `json:"dim"`
	Queries int    `json:"queries"`
	K       int    `json:"k"`
	SIMD    string `json:"simd,omitempty"`
	// M, EfConstruction, EfSearch and BuildS describe an hnsw row's graph
	// (absent on the flat row).
	M              int     `json:"m,omitempty" table:""`
	EfConstruction int     `json:"ef_construction,omitempty"`
	EfSearch       int     `json:"ef_search,omitempty" table:""`
	BuildS         float64 `json:"build_s,omitempty" table:""`
	// RecallAtK is mean |found ∩ exact| / K over the queries.
	RecallAtK float64 `json:"recall_at_k" table:""`
	QPS       float64 `json:"qps" table:""`
	// HybrankSpeedup is on a peer's row: hybrank's QPS at the same M and
	// ef in the same run / this row's QPS.
	HybrankSpeedup float64 `json:"hybrank_speedup,omitempty" table:"hybrank ×"`
	// Latency percentiles are hybrank's (the peer searches all queries in
	// one call).
	P50Ms float64 `json:"p50_ms,omitempty" table:""`
	P99Ms float64 `json:"p99_ms,omitempty" table:""`
}

// Result is the rows of one Run: the flat row, then each M's builds at
// every ef (each followed by the peer's rows for that M), and
// Targets.Check of them.
type Result struct {
	Rows   []Row          `json:"rows"`
	Checks []report.Check `json:"checks,omitempty"`
}

// Run takes (or generates) the vectors, computes exact top-K for every
// query (the "flat" row: exact search QPS), then for each M builds an
// index and measures recall@K, single-goroutine QPS and latency
// percentiles at every ef; with Peers, faiss's HNSW follows each M.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	var peer *peers.Runner
	if cfg.Peers.Enabled {
		var err error
		if peer, err = peers.New(cfg.Peers); err != nil {
			return res, fmt.Errorf("dense: %w", err)
		}
	}
	vecs, err := cfg.data(ctx)
	if err != nil {
		return res, err
	}
	data, queries := vecs.Base, vecs.Queries
	dim := len(data[0])
	add := func(r Row) {
		r.Data, r.N, r.Dim, r.Queries, r.K = vecs.Name, len(data), dim, len(queries), cfg.K
		if r.Impl == "" {
			r.Impl, r.SIMD = implHybrank, simd.Dispatch()
		}
		res.Rows = append(res.Rows, r)
		report.Log(cfg.Log, r)
	}
	var truth [][]string
	for mi, m := range cfg.Ms {
		ix, build, err := buildIndex(ctx, cfg, dim, m, data)
		if err != nil {
			return res, err
		}
		if mi == 0 {
			truth = make([][]string, len(queries))
			lat, err := timeQueries(ctx, queries, func(i int, q []float32) error {
				hits, err := ix.SearchExact(ctx, q, cfg.K, nil)
				truth[i] = ids(hits)
				return err
			})
			if err != nil {
				ix.Close()
				return res, err
			}
			add(withLatency(Row{Kind: kindFlat, RecallAtK: 1}, lat))
		}
		qps := map[int]float64{}
		for _, ef := range cfg.Efs {
			r, err := searchAt(ctx, ix, ef, queries, truth, cfg.K)
			if err != nil {
				ix.Close()
				return res, err
			}
			r.M, r.EfConstruction, r.BuildS = m, cfg.EfConstruction, measure.Round(build.Seconds(), 2)
			qps[ef] = r.QPS
			add(r)
		}
		// Closed before the peer runs, so both have the machine to
		// themselves.
		if err := ix.Close(); err != nil {
			return res, err
		}
		if peer == nil {
			continue
		}
		rows, err := runFaiss(ctx, peer, cfg, m, vecs, truth, qps)
		if err != nil {
			return res, err
		}
		for _, r := range rows {
			add(r)
		}
	}
	res.Checks = cfg.Targets.Check(res.Rows)
	return res, nil
}

// runFaiss builds faiss's HNSW with M m on the same (normalised) vectors
// and measures it at every ef against the same truth; ours holds
// hybrank's QPS by ef for the ratio.
func runFaiss(ctx context.Context, peer *peers.Runner, cfg Config, m int, vecs *Vectors, truth [][]string, ours map[int]float64) ([]Row, error) {
	out, err := peer.FaissHNSW(ctx, peers.FaissArgs{
		Base: vecs.Base, Queries: vecs.Queries, Normalize: true,
		M: m, EfConstruction: cfg.EfConstruction, Efs: cfg.Efs, K: cfg.K, Rounds: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("dense M=%d: faiss: %w", m, err)
	}
	var rows []Row
	for _, fr := range out.Rows {
		got := make([][]string, len(fr.IDs))
		for i, nn := range fr.IDs {
			for _, id := range nn {
				if id >= 0 { // -1: fewer than K found
					got[i] = append(got[i], strconv.FormatInt(id, 10))
				}
			}
		}
		r := Row{
			Impl: "faiss", Version: out.Version, Kind: kindHNSW, M: m, EfConstruction: cfg.EfConstruction, EfSearch: fr.Ef,
			BuildS: measure.Round(out.BuildS, 2), RecallAtK: recall(got, truth), QPS: measure.Round(fr.QPS, 1),
		}
		if fr.QPS > 0 && ours[fr.Ef] > 0 {
			r.HybrankSpeedup = ours[fr.Ef] / fr.QPS
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// buildIndex builds an M-degree graph over data (never the exact
// shortcut) and returns it with its build time.
func buildIndex(ctx context.Context, cfg Config, dim, m int, data [][]float32) (*dense.Index, time.Duration, error) {
	dc := dense.DefaultConfig(dim)
	dc.M = m
	dc.EfConstruction = cfg.EfConstruction
	dc.FlatThreshold = 0 // measure the graph, never the exact shortcut
	ix, err := dense.New(dc)
	if err != nil {
		return nil, 0, err
	}
	build, err := insert(ctx, ix, data, fmt.Sprintf("build M=%d", m), cfg.Progress)
	if err != nil {
		ix.Close()
		return nil, 0, err
	}
	return ix, build, nil
}

// searchAt measures the graph at efSearch ef against the exact truth.
func searchAt(ctx context.Context, ix *dense.Index, ef int, queries [][]float32, truth [][]string, k int) (Row, error) {
	if err := ix.SetEfSearch(ef); err != nil {
		return Row{}, err
	}
	got := make([][]string, len(queries))
	lat, err := timeQueries(ctx, queries, func(i int, q []float32) error {
		hits, err := ix.Search(ctx, q, k, nil)
		got[i] = ids(hits)
		return err
	})
	if err != nil {
		return Row{}, err
	}
	return withLatency(Row{Kind: kindHNSW, EfSearch: ef, RecallAtK: recall(got, truth)}, lat), nil
}

// insert adds data one item per call (as a streaming writer would) and
// returns the wall time.
func insert(ctx context.Context, ix *dense.Index, data [][]float32, label string, force bool) (time.Duration, error) {
	p := measure.NewProgress(label, len(data), force)
	start := time.Now()
	for i, v := range data {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			p.Add(min(1024, len(data)-i))
		}
		if err := ix.Add(dense.Item{ID: strconv.Itoa(i), Vector: v}); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	p.Done()
	return d, nil
}

// timeQueries runs f over every query on one goroutine, timing each call.
func timeQueries(ctx context.Context, queries [][]float32, f func(int, []float32) error) ([]time.Duration, error) {
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := time.Now()
		if err := f(i, q); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t)
	}
	return lat, nil
}

// withLatency fills r's QPS (queries / summed latency) and percentiles.
func withLatency(r Row, lat []time.Duration) Row {
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	s := measure.LatencyStats(lat)
	r.QPS = measure.Round(float64(len(lat))/sum.Seconds(), 1)
	r.P50Ms = measure.Round(measure.Ms(s.P50), 3)
	r.P99Ms = measure.Round(measure.Ms(s.P99), 3)
	return r
}

func ids(hits []dense.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// recall is mean |got ∩ truth| / |truth| over queries.
func recall(got, truth [][]string) float64 {
	var sum float64
	for i, t := range truth {
		if len(t) == 0 {
			continue
		}
		n := 0
		for _, id := range got[i] {
			if slices.Contains(t, id) {
				n++
			}
		}
		sum += float64(n) / float64(len(t))
	}
	return sum / float64(len(truth))
}

// Report renders res for bench/results/dense.md.
func Report(cfg Config, res Result, command string) report.Report {
	n, dim, queries := cfg.N, cfg.Dim, cfg.Queries
	if len(res.Rows) > 0 {
		n, dim, queries = res.Rows[0].N, res.Rows[0].Dim, res.Rows[0].Queries
	}
	data := fmt.Sprintf("Data: %d + %d held-out query vectors of dimension %d from a Gaussian mixture (%d centroids; per-cluster rank-%d subspace noise plus isotropic σ=%.2f; see synth.Vectors), L2-normalised by the index.", n, queries, dim, cfg.Clusters, cfg.Rank, cfg.Noise)
	if cfg.Vectors != nil {
		data = fmt.Sprintf("Data: %s, %d base and %d query vectors of dimension %d, L2-normalised by the index.", cfg.Vectors.Name, n, queries, dim)
	}
	def := dense.DefaultConfig(dim)
	rep := report.Report{
		Title:   "Dense vector search: HNSW sweep and exact flat search",
		Command: command,
		Checks:  res.Checks,
		Notes: []string{
			fmt.Sprintf("%s Ground truth: exact top-%d by SearchExact (simd %s). Recall@%d is against it; QPS and latency are one goroutine, sequential queries, unfiltered.", data, cfg.K, simd.Dispatch(), cfg.K),
			"Build = single-goroutine streaming inserts (Add one item at a time). kind=flat is the exact search over all vectors (DotBatch over the slabs).",
			fmt.Sprintf("Index defaults: M=%d, EfConstruction=%d, EfSearch=%d (dense.DefaultConfig).", def.M, def.EfConstruction, def.EfSearch),
		},
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    report.Rows(res.Rows),
	}
	if slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Impl != implHybrank }) {
		rep.Notes = append(rep.Notes, "impl=faiss: faiss-cpu (make peers; versions pinned in bench/peers/requirements.txt, each row's in its JSON) IndexHNSWFlat, inner product on the same L2-normalised vectors, the same M and efConstruction, "+
			"built (add, one thread) and searched right after hybrank's graph of that M was closed; its neighbours are scored against the same exact truth. "+
			"QPS: queries / one batched search call over all of them on one thread (hybrank: one call per query, summed latencies); build_s is its add time. "+
			"hybrank × = hybrank QPS / faiss QPS at the same M and ef, same run.")
	}
	return rep
}
