package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/simd"
)

// DenseOptions parameterises `bench dense`: a synthetic clustered vector
// set, exact ground truth, and an HNSW sweep over M and EfSearch.
type DenseOptions struct {
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
	// Clusters, Rank and Noise shape the data (see DenseVectors).
	Clusters int     `json:"clusters"`
	Rank     int     `json:"rank"`
	Noise    float64 `json:"noise"`
	Seed     uint64  `json:"seed"`
	// Progress forces progress bars on a non-terminal stderr.
	Progress bool `json:"-"`
}

// DefaultDenseOptions returns the sweep of the task statement: 100K × 384,
// 1000 queries, M 8/16/32, ef 16..256.
func DefaultDenseOptions() DenseOptions {
	return DenseOptions{
		N: 100_000, Dim: 384, Queries: 1000, K: 10,
		Ms:             []int{8, 16, 32},
		Efs:            []int{16, 32, 64, 128, 256},
		EfConstruction: dense.DefaultConfig(384).EfConstruction,
		Clusters:       300, Rank: 64, Noise: 0.5, Seed: 1,
	}
}

// Validate reports the first invalid option.
func (o DenseOptions) Validate() error {
	switch {
	case o.N < 1 || o.Dim < 1 || o.Queries < 1 || o.K < 1:
		return fmt.Errorf("bench dense: n, dim, queries and k must be positive")
	case len(o.Ms) == 0 || len(o.Efs) == 0:
		return fmt.Errorf("bench dense: need at least one M and one ef")
	case o.Clusters < 1 || o.Rank < 0 || o.Noise < 0 || o.EfConstruction < 1:
		return fmt.Errorf("bench dense: bad data or build options")
	}
	for _, m := range o.Ms {
		if m < 2 {
			return fmt.Errorf("bench dense: M %d must be at least 2", m)
		}
	}
	for _, ef := range o.Efs {
		if ef < 1 {
			return fmt.Errorf("bench dense: ef %d must be positive", ef)
		}
	}
	return nil
}

// DenseVectors returns n vectors of dimension dim from a seeded Gaussian
// mixture: clusters centroids with N(0,1) coordinates; each point is its
// centroid, plus Σ z_j·b_j over a random rank-dimensional basis of its
// cluster (b_j coordinates N(0, 0.35²), z_j ~ N(0,1)), plus isotropic
// N(0, noise²) noise. The local intrinsic dimension is thus about rank,
// as with real text embeddings, rather than dim (uniform or isotropic data
// is far harder for any graph index and unlike real embeddings).
func DenseVectors(ctx context.Context, seed uint64, n, dim, clusters, rank int, noise float64) ([][]float32, error) {
	r := rand.New(rand.NewPCG(seed, 0xde45e))
	cents := make([]float32, clusters*dim)
	bases := make([]float32, clusters*rank*dim)
	for i := range cents {
		cents[i] = float32(r.NormFloat64())
	}
	for i := range bases {
		bases[i] = float32(r.NormFloat64()) * 0.35
	}
	out := make([][]float32, n)
	flat := make([]float32, n*dim)
	for i := range out {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		c := r.IntN(clusters)
		v := flat[i*dim : (i+1)*dim : (i+1)*dim]
		copy(v, cents[c*dim:(c+1)*dim])
		for j := range v {
			v[j] += float32(noise * r.NormFloat64())
		}
		for k := 0; k < rank; k++ {
			simd.Axpy(v, float32(r.NormFloat64()), bases[(c*rank+k)*dim:(c*rank+k+1)*dim])
		}
		out[i] = v
	}
	return out, nil
}

// RunDense generates the data, computes exact top-K for every query (the
// "flat" row: exact search QPS), then for each M builds an index and
// measures recall@K, single-goroutine QPS and latency percentiles at every
// ef. emit receives each row as it is produced.
func RunDense(ctx context.Context, o DenseOptions, emit func(map[string]any) error) ([]map[string]any, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	vecs, err := DenseVectors(ctx, o.Seed, o.N+o.Queries, o.Dim, o.Clusters, o.Rank, o.Noise)
	if err != nil {
		return nil, err
	}
	data, queries := vecs[:o.N], vecs[o.N:]
	var rows []map[string]any
	add := func(row map[string]any) error {
		rows = append(rows, row)
		return emit(row)
	}
	base := func(kind string) map[string]any {
		return map[string]any{"kind": kind, "n": o.N, "dim": o.Dim, "queries": o.Queries, "k": o.K, "simd": simd.Dispatch()}
	}

	var truth [][]string
	for mi, m := range o.Ms {
		cfg := dense.DefaultConfig(o.Dim)
		cfg.M = m
		cfg.EfConstruction = o.EfConstruction
		cfg.FlatThreshold = 0 // measure the graph, never the exact shortcut
		ix, err := dense.New(cfg)
		if err != nil {
			return rows, err
		}
		build, err := denseBuild(ctx, ix, data, fmt.Sprintf("build M=%d", m), o.Progress)
		if err != nil {
			ix.Close()
			return rows, err
		}
		if mi == 0 {
			row := base("flat")
			truth = make([][]string, len(queries))
			lat, err := denseTime(ctx, queries, func(i int, q []float32) error {
				hits, err := ix.SearchExact(ctx, q, o.K, nil)
				truth[i] = denseIDs(hits)
				return err
			})
			if err != nil {
				ix.Close()
				return rows, err
			}
			denseLatency(row, lat)
			row["recall_at_k"] = 1.0
			if err := add(row); err != nil {
				ix.Close()
				return rows, err
			}
		}
		for _, ef := range o.Efs {
			if err := ix.SetEfSearch(ef); err != nil {
				ix.Close()
				return rows, err
			}
			got := make([][]string, len(queries))
			lat, err := denseTime(ctx, queries, func(i int, q []float32) error {
				hits, err := ix.Search(ctx, q, o.K, nil)
				got[i] = denseIDs(hits)
				return err
			})
			if err != nil {
				ix.Close()
				return rows, err
			}
			row := base("hnsw")
			row["m"], row["ef_construction"], row["ef_search"] = m, o.EfConstruction, ef
			row["build_s"] = measure.Round(build.Seconds(), 2)
			row["recall_at_k"] = measure.Round(denseRecall(got, truth), 4)
			denseLatency(row, lat)
			if err := add(row); err != nil {
				ix.Close()
				return rows, err
			}
		}
		ix.Close()
	}
	return rows, nil
}

// denseBuild adds data one item per call (as a streaming writer would) and
// returns the wall time.
func denseBuild(ctx context.Context, ix *dense.Index, data [][]float32, label string, force bool) (time.Duration, error) {
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

// denseTime runs f over every query on one goroutine, timing each call.
func denseTime(ctx context.Context, queries [][]float32, f func(int, []float32) error) ([]time.Duration, error) {
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

func denseLatency(row map[string]any, lat []time.Duration) {
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	s := measure.LatencyStats(lat)
	row["qps"] = measure.Round(float64(len(lat))/sum.Seconds(), 1)
	row["p50_ms"] = measure.Round(measure.Ms(s.P50), 3)
	row["p99_ms"] = measure.Round(measure.Ms(s.P99), 3)
}

func denseIDs(hits []dense.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// denseRecall is mean |got ∩ truth| / |truth| over queries.
func denseRecall(got, truth [][]string) float64 {
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

// DenseReport renders rows for bench/results/dense.md.
func DenseReport(o DenseOptions, command string, rows []map[string]any) report.Report {
	def := dense.DefaultConfig(o.Dim)
	return report.Report{
		Title:   "Dense vector search: HNSW sweep and exact flat search",
		Command: command,
		Notes: []string{
			fmt.Sprintf("Data: %d + %d held-out query vectors of dimension %d from a Gaussian mixture (%d centroids; per-cluster rank-%d subspace noise plus isotropic σ=%.2f; see bench.DenseVectors), L2-normalised by the index. Ground truth: exact top-%d by SearchExact (simd %s). Recall@%d is against it; QPS and latency are one goroutine, sequential queries, unfiltered.", o.N, o.Queries, o.Dim, o.Clusters, o.Rank, o.Noise, o.K, simd.Dispatch(), o.K),
			"Build = single-goroutine streaming inserts (Add one item at a time). kind=flat is the exact search over all vectors (DotBatch over the slabs).",
			fmt.Sprintf("Index defaults: M=%d, EfConstruction=%d, EfSearch=%d (dense.DefaultConfig).", def.M, def.EfConstruction, def.EfSearch),
		},
		Config:  o,
		Columns: []string{"kind", "m", "ef_search", "build_s", "recall_at_k", "qps", "p50_ms", "p99_ms"},
		Rows:    anyRows(rows),
	}
}
