package throughput

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// Row is one measurement: a line of rerank.md or embed.md.
type Row struct {
	// Impl is who ran the model: "hybrank" (models/ort); a peer (ONNX
	// Runtime from Python) adds rows of its own.
	Impl     string `json:"impl" table:""`
	Profile  string `json:"profile" table:""`
	Kind     string `json:"kind"`
	Provider string `json:"provider" table:""`
	Threads  int    `json:"threads" table:""`
	PoolSize int    `json:"pool_size" table:""`
	GraphOpt string `json:"graph_optimization"`
	Arena    bool   `json:"arena"`
	Spinning bool   `json:"spinning"`
	// Batching is the planning in effect: "cost" (the default) or
	// "tokens" (fixed cap BatchTokens).
	Batching    string `json:"batching" table:""`
	BatchTokens int    `json:"batch_tokens" table:""`
	// Quantize is the weights the row ran: "" as the directory holds them
	// (float32 for generated and exported models), "int8" or "fp16"
	// converted by onnx/quantize (models.Config.Quantize).
	Quantize string `json:"quantize,omitempty" table:""`
	// Fusion is what package onnx/fuse did to the graph the CPU ran
	// (ort.Plan's Loaded.Fusion): e.g. "12 SkipLayerNorm (12 with bias)",
	// "none" (CUDA, nothing to fuse), "off" (--no-fusion); "" for peers.
	Fusion string `json:"fusion,omitempty" table:""`
	// Plan is the model's acceleration plan (ort.Plan.Key): the weight
	// and activation codes, the rewrites and the attention it ran with;
	// "" for peers.
	Plan string `json:"plan,omitempty"`
	// Narrowing is the last layer's narrowing behind Fusion's "first
	// token", which GFLOPs counts the work of (modeldir.NarrowedFLOPs).
	Narrowing modeldir.Narrowing `json:"narrowing,omitempty"`
	// BatchPairs is the mean number of sequences per runtime call of the
	// timed pass (Usage.Pairs / Usage.Batches: what the batcher chose
	// under the cap BatchTokens; BatchTokens / SeqLen when the model
	// reports no calls).
	BatchPairs int `json:"batch_pairs" table:""`
	// DocTokens is the synthetic documents' length (absent for real text).
	DocTokens int `json:"doc_tokens,omitempty" table:""`
	// SeqLen is the mean real sequence length, special tokens included;
	// PaddedTokens the tokens the model ran, padding included.
	SeqLen       float64 `json:"seq_len" table:""`
	PaddedTokens int     `json:"padded_tokens,omitempty"`
	// LenP10 … LenMax are the distribution of real sequence lengths
	// (nearest rank), on rows of real-length text.
	LenP10     int     `json:"len_p10,omitempty"`
	LenP50     int     `json:"len_p50,omitempty"`
	LenP90     int     `json:"len_p90,omitempty"`
	LenMax     int     `json:"len_max,omitempty"`
	Pairs      int     `json:"pairs"`
	Calls      int     `json:"calls"`
	PairsPerS  float64 `json:"pairs_per_s" table:""`
	TokensPerS float64 `json:"tokens_per_s" table:""`
	P50Ms      float64 `json:"p50_ms" table:""`
	P99Ms      float64 `json:"p99_ms" table:""`
	GFLOPs     float64 `json:"gflops" table:""`
	// GFLOPsBest is the fastest call's rate, each call's by its own work
	// (MeasureTextRounds: the fastest pass's): less sensitive to other
	// load.
	GFLOPsBest float64 `json:"gflops_best" table:""`
	// PeakGFLOPs and Efficiency (GFLOPs / PeakGFLOPs) are 0 (absent) where
	// the peak was not measured.
	PeakGFLOPs  float64 `json:"peak_gflops,omitempty" table:""`
	Efficiency  float64 `json:"efficiency,omitempty" table:""`
	RealWeights bool    `json:"real_weights" table:""`
	Data        string  `json:"data"`
	// PeakRSSMB is the process's peak resident memory while the row's
	// model was loaded and measured (VmHWM reset at the row's start; the
	// process's baseline included), 0 where it cannot be read.
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty" table:"peak RSS MB"`
	// GPUMemMB is the GPU memory the process held at the end of the row
	// (provider cuda: CUDA context, the runtime's arena at its high-water
	// mark, buffers; measure.GPUMemoryMB), 0 on the CPU.
	GPUMemMB float64 `json:"gpu_mem_mb,omitempty" table:"GPU MB"`
	// PassPairsPerS is each pass's pairs/s in the order the passes ran
	// (MeasureTextRounds only): pass r of every spec ran in round r, so
	// rows of one call compare pass by pass.
	PassPairsPerS []float64 `json:"pass_pairs_per_s,omitempty"`
}

// Result is the rows of one Run, in sweep order.
type Result struct {
	Rows []Row `json:"rows"`
}

// Run measures cfg.Spec, or every combination of cfg.Sweep (profiles × doc
// tokens × threads × batch sizes), each with the machine's peak GFLOP/s
// through the same runtime and thread count.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	r := modeldir.NewResolver(cfg.Models)
	defer r.Close()
	for _, p := range orList(cfg.Sweep.Profiles, cfg.Profile) {
		for _, dt := range orInts(cfg.Sweep.DocTokens, cfg.DocTokens) {
			for _, th := range orInts(cfg.Sweep.Threads, cfg.Threads) {
				for _, bp := range orInts(cfg.Sweep.BatchPairs, 0) {
					s := cfg.Spec
					s.Profile, s.DocTokens, s.Threads = p, dt, th
					switch {
					case bp > 0 && cfg.Sweep.CallPerBatch:
						// Real text may run longer than the nominal length:
						// the cap must not split the call.
						s.Pairs, s.Batching, s.BatchTokens = bp, models.BatchingTokens, bp*models.MaxSupportedLength
					case bp > 0:
						s.BatchTokens = bp * s.seqLen(cfg.Kind)
					}
					row, err := measureOne(ctx, r, s, cfg.Kind)
					if err != nil {
						return res, fmt.Errorf("%s doc_tokens=%d threads=%d batch=%d: %w", p, dt, th, bp, err)
					}
					if bp > 0 && cfg.Sweep.CallPerBatch {
						row.BatchPairs = bp // not the cap over the nominal length
					}
					res.Rows = append(res.Rows, row)
					report.Log(cfg.Log, row)
				}
			}
		}
	}
	return res, nil
}

// RunKind is Run for a driver of one kind of model: a Config of another
// kind is an error rather than a run of the wrong benchmark.
func RunKind(ctx context.Context, cfg Config, kind models.Kind) (Result, error) {
	if cfg.Kind != kind {
		return Result{}, fmt.Errorf("%w: this benchmark measures %s models, not %q", bench.ErrBadOption, kind, cfg.Kind)
	}
	return Run(ctx, cfg)
}

// model is a loaded model and one call of it on the prepared text: the
// scores (cross-encoder; nil for a bi-encoder) and the work done.
type model struct {
	call     func(ctx context.Context, i int) ([]float32, models.Usage, error)
	provider func() string
	// plan is the loaded model's plan: what its load did (fusion, and how
	// much of the last layer the graph computes for the first token only,
	// package onnx/fuse's FirstToken).
	plan  func() ort.Plan
	close func() error
}

// narrowing reads what FirstToken did from a loaded plan's rewrites: the
// attention's query row narrowed, or (where a shape computation read
// elsewhere stops it) only what follows the attention.
func narrowing(p ort.Plan) modeldir.Narrowing {
	switch rep := p.Loaded.Rewrites; {
	case rep.FirstToken.Attention:
		return modeldir.NarrowAttention
	case rep.FirstToken.MatMuls > 0:
		return modeldir.NarrowFeedForward
	}
	return modeldir.NarrowNone
}

// open loads the model of kind with mc and binds it to t.
func open(mc models.Config, kind models.Kind, t Text) (model, error) {
	if kind == models.KindCrossEncoder {
		ce, err := ort.NewCrossEncoder(mc)
		if err != nil {
			return model{}, err
		}
		return model{call: func(ctx context.Context, i int) ([]float32, models.Usage, error) {
			return ce.ScoreWithUsage(ctx, t.Queries[i%len(t.Queries)], t.docs(i))
		}, provider: ce.Provider, plan: ce.Plan, close: ce.Close}, nil
	}
	be, err := ort.NewBiEncoder(mc)
	if err != nil {
		return model{}, err
	}
	return model{call: func(ctx context.Context, _ int) ([]float32, models.Usage, error) {
		_, u, err := be.EmbedWithUsage(ctx, models.InputDocument, t.Docs)
		return nil, u, err
	}, provider: be.Provider, plan: be.Plan, close: be.Close}, nil
}

// measureOne runs one Spec: resolve the model, make the text, then
// measure it (MeasureText).
func measureOne(ctx context.Context, r *modeldir.Resolver, s Spec, kind models.Kind) (Row, error) {
	dir, err := r.Dir(s.Profile, s.ModelDir)
	if err != nil {
		return Row{}, err
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return Row{}, err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return Row{}, err
	}
	t, err := MakeText(s, tok)
	if err != nil {
		return Row{}, err
	}
	row, _, err := MeasureText(ctx, dir, s, kind, t)
	return row, err
}

// MeasureText measures the model of kind in dir on t as s says: load,
// one warm-up call, calls until s.MinCalls and s.MinTime are reached and,
// for a cross-encoder, the last pass over the queries is whole (call i
// scores Queries[i % len] against its documents, so every query counts
// equally), then the peak
// GFLOP/s when s.PeakN is set. It returns the row and, for a
// cross-encoder, the scores of the first len(t.Queries) timed calls (one
// slice per query; nil for a query no timed call reached).
func MeasureText(ctx context.Context, dir string, s Spec, kind models.Kind, t Text) (Row, [][]float32, error) {
	if len(t.Queries) == 0 && kind == models.KindCrossEncoder || t.PerQuery != nil && len(t.PerQuery) != len(t.Queries) {
		return Row{}, nil, fmt.Errorf("%w: %d queries, %d candidate lists", bench.ErrBadOption, len(t.Queries), len(t.PerQuery))
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return Row{}, nil, err
	}
	mc := s.ModelConfig(dir, kind)
	rss := measure.ResetPeakRSS()
	m, err := open(mc, kind, t)
	if err != nil {
		return Row{}, nil, err
	}
	defer m.close()
	// Warm-up: loads the model and lets the runtime plan its memory.
	if _, _, err := m.call(ctx, 0); err != nil {
		return Row{}, nil, err
	}
	var lat []time.Duration
	var usage models.Usage
	var best float64 // the fastest call's FLOP/s, by its own work
	scores := make([][]float32, len(t.Queries))
	pass := 1 // an embedder's every call embeds the same texts
	if kind == models.KindCrossEncoder {
		pass = max(1, len(t.Queries))
	}
	start := time.Now()
	for i := 0; i < s.MinCalls || time.Since(start) < s.MinTime || i%pass != 0; i++ {
		t0 := time.Now()
		sc, u, err := m.call(ctx, i)
		if err != nil {
			return Row{}, nil, err
		}
		dt := time.Since(t0)
		lat = append(lat, dt)
		usage.Add(u)
		best = max(best, workFLOPs(md, kind, u, narrowing(m.plan()))/dt.Seconds())
		if i < len(scores) {
			scores[i] = sc
		}
	}
	row := newRow(s, kind, mc, md, m.provider(), narrowing(m.plan()), usage, lat, time.Since(start))
	row.Fusion, row.Plan = m.plan().Loaded.Fusion, m.plan().Key()
	row.GFLOPsBest = measure.Round(best/1e9, 2)
	if rss {
		row.PeakRSSMB = measure.Round(float64(measure.PeakRSS())/(1<<20), 1)
	}
	if row.Provider == "cuda" {
		row.GPUMemMB = measure.GPUMemoryMB(ctx)
	}
	// The peak is a float32 n×n MatMul through the same runtime: the CPU's
	// bound. On CUDA it would be neither the tensor cores' rate nor the
	// model's precision, so no efficiency is claimed there.
	if s.PeakN > 0 && row.Provider == "cpu" {
		// Measured right after the model, under the same conditions (other
		// load on the machine lowers both).
		peak, err := ort.PeakGFLOPs(ctx, s.PeakN, s.Threads, s.Provider, 5)
		if err != nil {
			return row, nil, err
		}
		row.PeakGFLOPs = measure.Round(peak, 2)
		if peak > 0 && row.Quantize == "" { // int8 operations over a float32 peak are no efficiency
			row.Efficiency = efficiency(row.GFLOPs, peak)
		}
	}
	return row, scores, nil
}

// MeasureTextRounds compares specs of the cross-encoder in dir on the same
// text, fairly: every spec's model is loaded and warmed up with one call,
// then each of rounds rounds runs one pass per spec (every query once, in
// order), the specs in a rotated order each round. A spec's row is its
// median pass (pairs/s and usage of that pass; latency percentiles over
// all its calls). Unlike one MeasureText per spec, every spec scores the
// same pairs the same number of times, and a slow spell of the machine
// falls on all of them: a comparison of one measurement each against the
// best of several others favours the others by the noise alone. Peak
// GFLOP/s and peak RSS are not measured (the models share the process).
func MeasureTextRounds(ctx context.Context, dir string, specs []Spec, t Text, rounds int) ([]Row, error) {
	if len(t.Queries) == 0 || t.PerQuery != nil && len(t.PerQuery) != len(t.Queries) || rounds < 1 || len(specs) == 0 {
		return nil, fmt.Errorf("%w: %d queries, %d candidate lists, %d rounds, %d specs", bench.ErrBadOption, len(t.Queries), len(t.PerQuery), rounds, len(specs))
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return nil, err
	}
	type pass struct {
		took  time.Duration
		usage models.Usage
	}
	type state struct {
		mc     models.Config
		m      model
		lat    []time.Duration
		passes []pass
	}
	st := make([]*state, len(specs))
	defer func() {
		for _, x := range st {
			if x != nil {
				x.m.close()
			}
		}
	}()
	for i, s := range specs {
		x := &state{mc: s.ModelConfig(dir, models.KindCrossEncoder)}
		if x.m, err = open(x.mc, models.KindCrossEncoder, t); err != nil {
			return nil, err
		}
		st[i] = x
		if _, _, err := x.m.call(ctx, 0); err != nil { // load, warm up
			return nil, err
		}
	}
	for r := range rounds {
		for k := range specs {
			x := st[(k+r)%len(specs)]
			var usage models.Usage
			start := time.Now()
			for q := range t.Queries {
				t0 := time.Now()
				_, u, err := x.m.call(ctx, q)
				if err != nil {
					return nil, err
				}
				x.lat = append(x.lat, time.Since(t0))
				usage.Add(u)
			}
			x.passes = append(x.passes, pass{time.Since(start), usage})
		}
	}
	rows := make([]Row, len(specs))
	for i, x := range st {
		perPass := make([]float64, len(x.passes))
		for r, ps := range x.passes {
			perPass[r] = measure.Round(float64(ps.usage.Pairs)/ps.took.Seconds(), 2)
		}
		// The median pass (the faster middle one of an even count); a
		// learning batcher may plan each pass differently.
		slices.SortFunc(x.passes, func(a, b pass) int { return cmp.Compare(a.took, b.took) })
		median := x.passes[(len(x.passes)-1)/2]
		rows[i] = newRow(specs[i], models.KindCrossEncoder, x.mc, md, x.m.provider(), narrowing(x.m.plan()), median.usage, x.lat, median.took)
		rows[i].Fusion, rows[i].Plan = x.m.plan().Loaded.Fusion, x.m.plan().Key()
		rows[i].Calls = len(t.Queries) // of the median pass
		// The fastest pass's rate (passes do equal work).
		rows[i].GFLOPsBest = measure.Round(rows[i].GFLOPs*median.took.Seconds()/x.passes[0].took.Seconds(), 2)
		rows[i].PassPairsPerS = perPass
	}
	return rows, nil
}

// workFLOPs is the work of the pairs (or texts) u counts: FLOPs of their
// real, unpadded tokens at their mean length, what the model must compute
// (its last layer narrowed as n says).
func workFLOPs(md models.ModelDir, kind models.Kind, u models.Usage, n modeldir.Narrowing) float64 {
	if u.Pairs == 0 {
		return 0
	}
	return float64(u.Pairs) * modeldir.NarrowedFLOPs(md, kind, int(float64(u.Tokens)/float64(u.Pairs)+0.5), n)
}

// efficiency is effective GFLOP/s over the measured peak, as rows report it.
func efficiency(gflops, peak float64) float64 { return measure.Round(gflops/peak, 3) }

// SetWorkPerPair restates the row's effective rates for flopsPerPair, the
// mean work of one pair counted pair by pair (the row counts it at the mean
// length, which undercounts attention's square when lengths spread):
// GFLOPs, GFLOPsBest and Efficiency move together.
func (r *Row) SetWorkPerPair(flopsPerPair float64) {
	if r.PairsPerS <= 0 || r.GFLOPs <= 0 {
		return
	}
	exact := flopsPerPair * r.PairsPerS / 1e9
	r.GFLOPsBest = measure.Round(r.GFLOPsBest*exact/r.GFLOPs, 2)
	r.GFLOPs = measure.Round(exact, 2)
	if r.Efficiency > 0 {
		r.Efficiency = efficiency(r.GFLOPs, r.PeakGFLOPs)
	}
}

// batchPairs is the mean number of sequences per runtime call, or the
// cap's worth at the mean length when usage counts no calls.
func batchPairs(u models.Usage, capTokens int, seqLen float64) int {
	if u.Batches > 0 {
		return max(1, int(math.Round(float64(u.Pairs)/float64(u.Batches))))
	}
	return max(1, int(float64(capTokens)/seqLen))
}

// newRow turns the calls' usage and latencies into a row; the caller sets
// GFLOPsBest (calls differ in work on real text).
func newRow(s Spec, kind models.Kind, mc models.Config, md models.ModelDir, provider string, n modeldir.Narrowing, usage models.Usage, lat []time.Duration, elapsed time.Duration) Row {
	seqLen := float64(usage.Tokens) / float64(usage.Pairs)
	flops := workFLOPs(md, kind, usage, n)
	ls := measure.LatencyStats(lat)
	sec := elapsed.Seconds()
	row := Row{
		Impl: "hybrank", Profile: s.Profile, Kind: string(kind), Provider: provider, Threads: s.Threads, PoolSize: s.PoolSize,
		GraphOpt: orDefault(s.GraphOptimization, "all"), Arena: !s.DisableArena, Spinning: !s.DisableSpinning,
		Batching: mc.BatchingMode(), BatchTokens: mc.MaxBatchTokens, BatchPairs: batchPairs(usage, mc.MaxBatchTokens, seqLen),
		Quantize: mc.Quantize, DocTokens: s.DocTokens, SeqLen: measure.Round(seqLen, 1), PaddedTokens: usage.PaddedTokens, Pairs: s.Pairs, Calls: len(lat),
		PairsPerS: measure.Round(float64(usage.Pairs)/sec, 2), TokensPerS: measure.Round(float64(usage.Tokens)/sec, 0),
		P50Ms: measure.Round(measure.Ms(ls.P50), 2), P99Ms: measure.Round(measure.Ms(ls.P99), 2),
		GFLOPs:      measure.Round(flops/sec/1e9, 2),
		RealWeights: modeldir.RealWeights(md.Dir), Data: "synthetic", Narrowing: n,
	}
	if s.Data != "" {
		row.Data = orDefault(filepath.Base(s.Data), "synthetic")
	}
	return row
}

func orDefault(s, d string) string {
	if s == "" || s == "." {
		return d
	}
	return s
}
