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
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/simd"
)

// Config configures `bench dense`: a synthetic clustered vector set, exact
// ground truth, and an HNSW sweep over M and EfSearch. Safe to copy.
type Config struct {
	// N is the number of indexed vectors; Queries more are drawn from the
	// same distribution and held out as queries.
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
	// Progress forces progress bars on a non-terminal stderr.
	Progress bool `json:"-"`
	// Log receives one line per row as it is measured (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig returns the sweep of the task statement: 100K × 384, 1000
// queries, M 8/16/32, ef 16..256.
func DefaultConfig() Config {
	return Config{
		N: 100_000, Dim: 384, Queries: 1000, K: 10,
		Ms:             []int{8, 16, 32},
		Efs:            []int{16, 32, 64, 128, 256},
		EfConstruction: dense.DefaultConfig(384).EfConstruction,
		Clusters:       300, Rank: 64, Noise: 0.5, Seed: 1,
	}
}

func (c Config) vectors() synth.VectorConfig {
	return synth.VectorConfig{N: c.N + c.Queries, Dim: c.Dim, Clusters: c.Clusters, Rank: c.Rank, Noise: c.Noise, Seed: c.Seed}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	switch {
	case c.N < 1 || c.Dim < 1 || c.Queries < 1 || c.K < 1:
		return fmt.Errorf("%w: dense: n, dim, queries and k must be positive", bench.ErrBadOption)
	case len(c.Ms) == 0 || len(c.Efs) == 0:
		return fmt.Errorf("%w: dense: need at least one M and one ef", bench.ErrBadOption)
	case c.EfConstruction < 1:
		return fmt.Errorf("%w: dense: ef_construction %d", bench.ErrBadOption, c.EfConstruction)
	}
	if err := c.vectors().Validate(); err != nil {
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
	// Impl is who ran it: "hybrank"; a peer (hnswlib) adds rows of its own.
	Impl string `json:"impl"`
	// Kind is "flat" (exact search over every vector) or "hnsw".
	Kind    string `json:"kind" table:""`
	N       int    `json:"n"`
	Dim     int    `json:"dim"`
	Queries int    `json:"queries"`
	K       int    `json:"k"`
	SIMD    string `json:"simd"`
	// M, EfConstruction, EfSearch and BuildS describe an hnsw row's graph
	// (absent on the flat row).
	M              int     `json:"m,omitempty" table:""`
	EfConstruction int     `json:"ef_construction,omitempty"`
	EfSearch       int     `json:"ef_search,omitempty" table:""`
	BuildS         float64 `json:"build_s,omitempty" table:""`
	// RecallAtK is mean |found ∩ exact| / K over the queries.
	RecallAtK float64 `json:"recall_at_k" table:""`
	QPS       float64 `json:"qps" table:""`
	P50Ms     float64 `json:"p50_ms" table:""`
	P99Ms     float64 `json:"p99_ms" table:""`
}

// Result is the rows of one Run: the flat row, then each M's builds at
// every ef.
type Result struct {
	Rows []Row `json:"rows"`
}

// Run generates the data, computes exact top-K for every query (the "flat"
// row: exact search QPS), then for each M builds an index and measures
// recall@K, single-goroutine QPS and latency percentiles at every ef.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	vecs, err := synth.Vectors(ctx, cfg.vectors())
	if err != nil {
		return res, err
	}
	data, queries := vecs[:cfg.N], vecs[cfg.N:]
	add := func(r Row) {
		r.Impl, r.N, r.Dim, r.Queries, r.K, r.SIMD = "hybrank", cfg.N, cfg.Dim, cfg.Queries, cfg.K, simd.Dispatch()
		res.Rows = append(res.Rows, r)
		report.Log(cfg.Log, r)
	}
	var truth [][]string
	for mi, m := range cfg.Ms {
		ix, build, err := buildIndex(ctx, cfg, m, data)
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
			add(withLatency(Row{Kind: "flat", RecallAtK: 1}, lat))
		}
		for _, ef := range cfg.Efs {
			r, err := searchAt(ctx, ix, ef, queries, truth, cfg.K)
			if err != nil {
				ix.Close()
				return res, err
			}
			r.M, r.EfConstruction, r.BuildS = m, cfg.EfConstruction, measure.Round(build.Seconds(), 2)
			add(r)
		}
		if err := ix.Close(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// buildIndex builds an M-degree graph over data (never the exact
// shortcut) and returns it with its build time.
func buildIndex(ctx context.Context, cfg Config, m int, data [][]float32) (*dense.Index, time.Duration, error) {
	dc := dense.DefaultConfig(cfg.Dim)
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
	return withLatency(Row{Kind: "hnsw", EfSearch: ef, RecallAtK: measure.Round(recall(got, truth), 4)}, lat), nil
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
	def := dense.DefaultConfig(cfg.Dim)
	return report.Report{
		Title:   "Dense vector search: HNSW sweep and exact flat search",
		Command: command,
		Notes: []string{
			fmt.Sprintf("Data: %d + %d held-out query vectors of dimension %d from a Gaussian mixture (%d centroids; per-cluster rank-%d subspace noise plus isotropic σ=%.2f; see synth.Vectors), L2-normalised by the index. Ground truth: exact top-%d by SearchExact (simd %s). Recall@%d is against it; QPS and latency are one goroutine, sequential queries, unfiltered.", cfg.N, cfg.Queries, cfg.Dim, cfg.Clusters, cfg.Rank, cfg.Noise, cfg.K, simd.Dispatch(), cfg.K),
			"Build = single-goroutine streaming inserts (Add one item at a time). kind=flat is the exact search over all vectors (DotBatch over the slabs).",
			fmt.Sprintf("Index defaults: M=%d, EfConstruction=%d, EfSearch=%d (dense.DefaultConfig).", def.M, def.EfConstruction, def.EfSearch),
		},
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    report.Rows(res.Rows),
	}
}
