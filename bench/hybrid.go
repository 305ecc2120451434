package bench

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// HybridConfig is one retrieval configuration of the hybrid benchmark: a row
// of hybrid.md.
type HybridConfig struct {
	// Name identifies the configuration ("bm25", "weighted-0.5",
	// "rrf+balanced", "rrf+mmr-0.7", …).
	Name string `json:"name"`
	// Dense says whether the dense retriever takes part. Without it the
	// configuration runs on a BM25-only engine (no embedder attached).
	Dense bool `json:"dense"`
	// Fusion and Alpha are the request's fusion method and dense weight.
	Fusion engine.Fusion `json:"fusion"`
	Alpha  float64       `json:"alpha"`
	// Rerank is the reranker profile ("" = none).
	Rerank string `json:"rerank,omitempty"`
	// MMRLambda enables MMR when > 0.
	MMRLambda float64 `json:"mmr_lambda,omitempty"`
}

// HybridMatrix returns the benchmark's configurations: bm25, dense (weighted
// α = 1), rrf, weighted-0.3/0.5/0.7, relative; each fused one followed by
// each rerank profile (name "FUSED+PROFILE"); and rrf+mmr-0.7.
func HybridMatrix(profiles []string) []HybridConfig {
	fused := []HybridConfig{
		{Name: "rrf", Dense: true, Fusion: engine.FusionRRF},
		{Name: "weighted-0.3", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.3},
		{Name: "weighted-0.5", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.5},
		{Name: "weighted-0.7", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.7},
		{Name: "relative", Dense: true, Fusion: engine.FusionRelative},
	}
	out := []HybridConfig{
		{Name: "bm25", Fusion: engine.FusionRRF},
		{Name: "dense", Dense: true, Fusion: engine.FusionWeighted, Alpha: 1},
	}
	out = append(out, fused...)
	for _, f := range fused {
		for _, p := range profiles {
			c := f
			c.Name, c.Rerank = f.Name+"+"+p, p
			out = append(out, c)
		}
	}
	return append(out, HybridConfig{Name: "rrf+mmr-0.7", Dense: true, Fusion: engine.FusionRRF, MMRLambda: 0.7})
}

// SelectHybridConfigs keeps the configurations whose name matches one of
// the patterns (path.Match syntax: "rrf*", "*+balanced"); no patterns keep
// all. A pattern that matches nothing is an error.
func SelectHybridConfigs(all []HybridConfig, patterns []string) ([]HybridConfig, error) {
	if len(patterns) == 0 {
		return all, nil
	}
	keep := map[string]bool{}
	for _, p := range patterns {
		n := 0
		for _, c := range all {
			ok, err := path.Match(p, c.Name)
			if err != nil {
				return nil, fmt.Errorf("bench hybrid: config pattern %q: %w", p, err)
			}
			if ok {
				keep[c.Name] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("bench hybrid: config %q matches none of the matrix", p)
		}
	}
	var out []HybridConfig
	for _, c := range all {
		if keep[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// HybridOptions configures a hybrid benchmark run over one BEIR dataset.
type HybridOptions struct {
	// Engine is the engine configuration (analysis, postings, dense,
	// rerank batching).
	Engine engine.Config `json:"engine"`
	// Budget is the per-query latency budget of the rerank configurations
	// (0 = none: every candidate is reranked).
	Budget time.Duration `json:"budget_ns"`
	// Candidates per retriever and hits per query (100 by default so
	// recall@100 is meaningful).
	Candidates int `json:"candidates"`
	K          int `json:"k"`
	// Queries caps the judged queries run per configuration (0 = all, in
	// file order).
	Queries int `json:"queries"`
	// Warmup searches run before each configuration's measured queries
	// (not recorded): they load the models and seed the rerank cost
	// estimate.
	Warmup int `json:"warmup"`
	// EmbedModel is the bi-encoder; a zero Profile and Dir mean none (only
	// configurations without Dense can run). Its MaxLength bounds the
	// document tokens embedded.
	EmbedModel models.Config `json:"embed_model"`
	// RerankModels are the cross-encoders by profile name.
	RerankModels map[string]models.Config `json:"rerank_models"`
	// Eval selects evaluation conventions.
	Eval eval.Options `json:"eval"`
	// Progress forces a progress bar.
	Progress bool `json:"-"`
}

// DefaultHybridOptions returns the engine defaults, a 100 ms budget, 100
// candidates and hits, all queries, 3 warm-up searches, no models.
func DefaultHybridOptions() HybridOptions {
	return HybridOptions{
		Engine:     engine.DefaultConfig(),
		Budget:     100 * time.Millisecond,
		Candidates: 100,
		K:          100,
		Warmup:     3,
	}
}

func hasModel(c models.Config) bool { return c.Profile != "" || c.Dir != "" }

// Validate reports whether the options can be used.
func (o HybridOptions) Validate() error {
	if err := o.Engine.Validate(); err != nil {
		return err
	}
	if o.K <= 0 || o.Candidates <= 0 || o.Budget < 0 || o.Queries < 0 || o.Warmup < 0 {
		return errors.New("bench hybrid: need K > 0, candidates > 0, budget ≥ 0, queries ≥ 0, warmup ≥ 0")
	}
	return nil
}

// HybridColumns are the table columns of the hybrid report.
var HybridColumns = []string{"config", "dataset", "queries", "real_weights", "budget_ms",
	"ndcg@10", "recall@100", "mrr@10", "p50_ms", "p99_ms", "qps",
	"degraded_frac", "mean_reranked", "timeouts", "bm25_ms", "dense_ms", "fusion_ms", "rerank_ms", "mmr_ms", "fallbacks"}

// HybridResult is one row: one configuration over one dataset.
type HybridResult struct {
	Config  HybridConfig `json:"config"`
	Dataset string       `json:"dataset"`
	Docs    int          `json:"docs"`
	// RealWeights is false when a model the configuration uses (embedder,
	// reranker) is a generated random-weight stand-in: its quality figures
	// are then meaningless.
	RealWeights  bool            `json:"real_weights"`
	Budget       time.Duration   `json:"budget_ns"`
	Scores       eval.Scores     `json:"scores"`
	QPS          float64         `json:"qps"`
	Latency      measure.Latency `json:"latency"`
	DegradedFrac float64         `json:"degraded_frac"`
	MeanReranked float64         `json:"mean_reranked"`
	// MeanStages are mean per-stage times over the queries.
	MeanStages engine.Timings `json:"mean_stages"`
	// Fallbacks counts fallback codes over the queries.
	Fallbacks map[engine.FallbackCode]int `json:"fallbacks"`
	// Timeouts counts budgeted searches whose retrieval (query embedding,
	// BM25, dense) missed the budget: the engine returns an error then; the
	// query counts as returning nothing, its wall time is in Latency.
	Timeouts int `json:"timeouts"`
}

// Row renders r for the report table and the JSON output.
func (r HybridResult) Row() map[string]any {
	fb := ""
	codes := make([]string, 0, len(r.Fallbacks))
	for c := range r.Fallbacks {
		codes = append(codes, string(c))
	}
	sort.Strings(codes)
	for _, c := range codes {
		fb += fmt.Sprintf("%s:%d ", c, r.Fallbacks[engine.FallbackCode(c)])
	}
	return map[string]any{
		"config": r.Config.Name, "dataset": r.Dataset, "queries": r.Scores.Queries, "real_weights": r.RealWeights,
		"budget_ms": measure.Ms(r.Budget),
		"ndcg@10":   measure.Round(r.Scores.NDCG10, 4), "recall@100": measure.Round(r.Scores.Recall100, 4), "mrr@10": measure.Round(r.Scores.MRR10, 4),
		"p50_ms": measure.Round(measure.Ms(r.Latency.P50), 3), "p99_ms": measure.Round(measure.Ms(r.Latency.P99), 3), "qps": measure.Round(r.QPS, 1),
		"degraded_frac": measure.Round(r.DegradedFrac, 3), "mean_reranked": measure.Round(r.MeanReranked, 1),
		"bm25_ms": measure.Round(measure.Ms(r.MeanStages.BM25), 3), "dense_ms": measure.Round(measure.Ms(r.MeanStages.Dense), 3),
		"fusion_ms": measure.Round(measure.Ms(r.MeanStages.Fusion), 3), "rerank_ms": measure.Round(measure.Ms(r.MeanStages.Rerank), 3),
		"mmr_ms": measure.Round(measure.Ms(r.MeanStages.MMR), 3), "fallbacks": fb, "timeouts": r.Timeouts,
	}
}

// HybridBench holds the engines of one dataset so that every configuration
// reuses one embedding of the corpus: a BM25-only engine and, with an
// embedder, a hybrid engine with every reranker attached. It is not safe for
// concurrent use (runs are sequential so latencies do not interfere).
type HybridBench struct {
	ds      *eval.Dataset
	opt     HybridOptions
	lexical *engine.Engine
	hybrid  *engine.Engine // nil without an embedder
	real    map[string]bool
	closers []func() error
	// CommitLexical and CommitHybrid are the commit (analysis, and for the
	// hybrid engine embedding) wall times.
	CommitLexical, CommitHybrid time.Duration
}

// OpenHybridBench loads the models and commits ds (title and text, one
// batch) into the engines. realDirs says, per profile ("embed", "fast", …),
// whether the model directory holds real weights (see RealWeights).
func OpenHybridBench(ctx context.Context, ds *eval.Dataset, opt HybridOptions, realDirs map[string]bool) (_ *HybridBench, err error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	h := &HybridBench{ds: ds, opt: opt, real: realDirs}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close())
		}
	}()
	add := func(e *engine.Engine) (time.Duration, error) {
		runtime.GC()
		b := e.NewBatch()
		for _, d := range ds.Docs {
			b.Add(engine.Document{ID: d.ID, Title: d.Title, Text: d.Text})
		}
		start := time.Now()
		if err := e.Commit(ctx, b); err != nil {
			return 0, fmt.Errorf("bench hybrid %s: commit: %w", ds.Name, err)
		}
		return time.Since(start), nil
	}
	var ropts []engine.Option
	profiles := make([]string, 0, len(opt.RerankModels))
	for p := range opt.RerankModels {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		ce, err := ort.NewCrossEncoder(opt.RerankModels[p])
		if err != nil {
			return nil, fmt.Errorf("bench hybrid: reranker %s: %w", p, err)
		}
		h.closers = append(h.closers, ce.Close)
		if err := ce.Load(); err != nil {
			return nil, fmt.Errorf("bench hybrid: reranker %s: %w", p, err)
		}
		// One call so the runtime's first-run set-up is not timed (nor
		// taken by the engine for the model's cost).
		if _, err := ce.Score(ctx, "warm up", []string{"a short document", "another one"}); err != nil {
			return nil, fmt.Errorf("bench hybrid: reranker %s: %w", p, err)
		}
		ropts = append(ropts, engine.WithReranker(p, ce))
	}
	if h.lexical, err = engine.Open("", opt.Engine, ropts...); err != nil {
		return nil, err
	}
	h.closers = append(h.closers, h.lexical.Close)
	if h.CommitLexical, err = add(h.lexical); err != nil {
		return nil, err
	}
	if !hasModel(opt.EmbedModel) {
		return h, nil
	}
	be, err := ort.NewBiEncoder(opt.EmbedModel)
	if err != nil {
		return nil, fmt.Errorf("bench hybrid: embedder: %w", err)
	}
	h.closers = append(h.closers, be.Close)
	if err := be.Load(); err != nil {
		return nil, fmt.Errorf("bench hybrid: embedder: %w", err)
	}
	eopts := append([]engine.Option{engine.WithEmbedder(be)}, ropts...)
	if h.hybrid, err = engine.Open("", opt.Engine, eopts...); err != nil {
		return nil, err
	}
	h.closers = append(h.closers, h.hybrid.Close)
	bar := measure.NewProgress("embed "+ds.Name, 1, opt.Progress)
	h.CommitHybrid, err = add(h.hybrid)
	bar.Done()
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Close closes the engines and the models (engines first).
func (h *HybridBench) Close() error {
	var err error
	for i := len(h.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, h.closers[i]())
	}
	h.closers = nil
	return err
}

func (h *HybridBench) queries(n int) []eval.Query {
	qs := h.ds.Queries
	if n <= 0 || n == len(qs) {
		return qs
	}
	if len(qs) == 0 {
		return nil
	}
	out := make([]eval.Query, n) // cycle through the judged queries when n exceeds them
	for i := range out {
		out[i] = qs[i%len(qs)]
	}
	return out
}

// Run measures one configuration over the first opt.Queries judged queries.
func (h *HybridBench) Run(ctx context.Context, c HybridConfig) (HybridResult, error) {
	e := h.lexical
	real := true
	if c.Dense {
		if h.hybrid == nil {
			return HybridResult{}, fmt.Errorf("bench hybrid: config %s needs an embedder", c.Name)
		}
		e, real = h.hybrid, h.real[models.ProfileEmbed]
	}
	var budget time.Duration
	if c.Rerank != "" {
		if _, ok := h.opt.RerankModels[c.Rerank]; !ok {
			return HybridResult{}, fmt.Errorf("bench hybrid: config %s: no %s reranker loaded", c.Name, c.Rerank)
		}
		budget, real = h.opt.Budget, real && h.real[c.Rerank]
	}
	req := func(q string) engine.Request {
		return engine.Request{Query: q, TopK: h.opt.K, Candidates: h.opt.Candidates, Fusion: c.Fusion,
			Alpha: engine.Float(c.Alpha), Rerank: c.Rerank, Budget: budget, MMRLambda: c.MMRLambda}
	}
	qs := h.queries(h.opt.Queries)
	if err := h.warm(ctx, e, qs, req); err != nil {
		return HybridResult{}, err
	}
	res := HybridResult{Config: c, Dataset: h.ds.Name, Docs: len(h.ds.Docs), RealWeights: real, Budget: budget,
		Fallbacks: map[engine.FallbackCode]int{}}
	run := eval.Run{}
	lat := make([]time.Duration, 0, len(qs))
	var st engine.Timings
	degraded, reranked := 0, 0
	bar := measure.NewProgress(fmt.Sprintf("hybrid %s %s", h.ds.Name, c.Name), len(qs), h.opt.Progress)
	wall := time.Now()
	for _, q := range qs {
		t0 := time.Now()
		r, err := e.Search(ctx, req(q.Text))
		if err != nil && budget > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Retrieval itself missed the budget: no hits for this query.
			res.Timeouts++
			run[q.ID] = nil
			lat = append(lat, time.Since(t0))
			bar.Add(1)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("bench hybrid %s %s: query %s: %w", h.ds.Name, c.Name, q.ID, err)
		}
		if c.Name == "bm25" {
			run[q.ID] = eval.TrecOrder(r.Hits, func(h engine.Hit) string { return h.Document.ID }, func(h engine.Hit) float64 { return h.Provenance.BM25Score })
		} else {
			ids := make([]string, len(r.Hits))
			for i, hit := range r.Hits {
				ids[i] = hit.Document.ID
			}
			run[q.ID] = ids
		}
		lat = append(lat, r.Timings.Total)
		st.BM25 += r.Timings.BM25
		st.Dense += r.Timings.Dense
		st.Fusion += r.Timings.Fusion
		st.Rerank += r.Timings.Rerank
		st.MMR += r.Timings.MMR
		st.Packing += r.Timings.Packing
		if r.Degraded {
			degraded++
		}
		reranked += r.Reranked
		for _, fb := range r.Fallbacks {
			res.Fallbacks[fb.Code]++
		}
		bar.Add(1)
	}
	bar.Done()
	if n := len(qs); n > 0 {
		res.QPS = float64(n) / time.Since(wall).Seconds()
		d := time.Duration(n)
		res.MeanStages = engine.Timings{BM25: st.BM25 / d, Dense: st.Dense / d, Fusion: st.Fusion / d,
			Rerank: st.Rerank / d, MMR: st.MMR / d, Packing: st.Packing / d}
		res.DegradedFrac = float64(degraded) / float64(n)
		res.MeanReranked = float64(reranked) / float64(n)
	}
	res.Scores = eval.Evaluate(h.ds.Qrels, run, h.opt.Eval)
	res.Latency = measure.LatencyStats(lat)
	return res, nil
}

func (h *HybridBench) warm(ctx context.Context, e *engine.Engine, qs []eval.Query, req func(string) engine.Request) error {
	for i := 0; i < h.opt.Warmup && len(qs) > 0; i++ {
		_, err := e.Search(ctx, req(qs[len(qs)-1-i%len(qs)].Text))
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) { // a timeout is fine here
			return fmt.Errorf("bench hybrid: warm-up: %w", err)
		}
	}
	return nil
}

// BudgetPoint is one budget of a budget sweep.
type BudgetPoint struct {
	Profile      string          `json:"profile"`
	Budget       time.Duration   `json:"budget_ns"`
	Searches     int             `json:"searches"`
	Candidates   int             `json:"candidates"`
	Latency      measure.Latency `json:"latency"`
	DegradedFrac float64         `json:"degraded_frac"`
	MeanReranked float64         `json:"mean_reranked"`
	// MaxOverrun is the largest Timings.Total − Budget (≤ 0 when every
	// search met the budget).
	MaxOverrun time.Duration `json:"max_overrun_ns"`
	// DegradedUnmarked counts searches that reranked fewer than all
	// candidates without Degraded set, or set Degraded with every candidate
	// reranked (must be 0).
	DegradedUnmarked int `json:"degraded_unmarked"`
	// Timeouts counts searches whose retrieval (query embedding, BM25,
	// dense) did not finish within the budget: the engine returns an error
	// then, not a degraded result. Their wall time is in Latency.
	Timeouts int `json:"timeouts"`
}

// BudgetColumns are the table columns of the budget sweep.
var BudgetColumns = []string{"config", "profile", "budget_ms", "searches", "candidates", "p50_ms", "p99_ms", "max_ms",
	"degraded_frac", "mean_reranked", "degraded_unmarked", "timeouts"}

// Row renders p for the report.
func (p BudgetPoint) Row() map[string]any {
	return map[string]any{
		"config": "sweep rrf+" + p.Profile, "profile": p.Profile, "budget_ms": measure.Ms(p.Budget), "searches": p.Searches,
		"candidates": p.Candidates, "p50_ms": measure.Round(measure.Ms(p.Latency.P50), 3), "p99_ms": measure.Round(measure.Ms(p.Latency.P99), 3),
		"max_ms": measure.Round(measure.Ms(p.Latency.Max), 3), "degraded_frac": measure.Round(p.DegradedFrac, 3),
		"mean_reranked": measure.Round(p.MeanReranked, 1), "degraded_unmarked": p.DegradedUnmarked, "timeouts": p.Timeouts,
	}
}

// BudgetSweep runs n searches (rrf over both retrievers when an embedder is
// loaded, BM25 only otherwise; opt.Candidates candidates; judged queries
// cycled) reranked by profile under each budget.
func (h *HybridBench) BudgetSweep(ctx context.Context, profile string, budgets []time.Duration, n int) ([]BudgetPoint, error) {
	if _, ok := h.opt.RerankModels[profile]; !ok {
		return nil, fmt.Errorf("bench hybrid: budget sweep needs the %s reranker", profile)
	}
	e := h.hybrid
	if e == nil {
		e = h.lexical
	}
	if n <= 0 || len(budgets) == 0 {
		return nil, errors.New("bench hybrid: budget sweep needs searches > 0 and budgets")
	}
	qs := h.queries(n)
	var out []BudgetPoint
	for _, b := range budgets {
		if b <= 0 {
			return nil, fmt.Errorf("bench hybrid: budget %v must be positive", b)
		}
		req := func(q string) engine.Request {
			return engine.Request{Query: q, TopK: h.opt.K, Candidates: h.opt.Candidates, Fusion: engine.FusionRRF,
				Rerank: profile, Budget: b}
		}
		if err := h.warm(ctx, e, qs, req); err != nil {
			return nil, err
		}
		p := BudgetPoint{Profile: profile, Budget: b, Searches: len(qs), Candidates: h.opt.Candidates, MaxOverrun: -b}
		lat := make([]time.Duration, 0, len(qs))
		degraded, reranked := 0, 0
		bar := measure.NewProgress(fmt.Sprintf("budget %v %s", b, profile), len(qs), h.opt.Progress)
		for _, q := range qs {
			t0 := time.Now()
			r, err := e.Search(ctx, req(q.Text))
			if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				// Retrieval itself missed the budget: no result at all.
				p.Timeouts++
				lat = append(lat, time.Since(t0))
				p.MaxOverrun = max(p.MaxOverrun, time.Since(t0)-b)
				bar.Add(1)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("bench hybrid: budget %v: query %s: %w", b, q.ID, err)
			}
			lat = append(lat, r.Timings.Total)
			p.MaxOverrun = max(p.MaxOverrun, r.Timings.Total-b)
			if r.Degraded {
				degraded++
			}
			if r.Degraded == (r.Reranked == r.Candidates) {
				p.DegradedUnmarked++
			}
			reranked += r.Reranked
			bar.Add(1)
		}
		bar.Done()
		p.Latency = measure.LatencyStats(lat)
		p.DegradedFrac = float64(degraded) / float64(len(qs))
		p.MeanReranked = float64(reranked) / float64(len(qs))
		out = append(out, p)
	}
	return out, nil
}

// BudgetPlot renders budget sweeps (one line per profile): p50/p99 latency
// against the budget with the y = x line, and the mean candidates reranked
// against the budget.
func BudgetPlot(points []BudgetPoint) []report.Plot {
	var profiles []string
	by := map[string][]BudgetPoint{}
	for _, p := range points {
		if _, ok := by[p.Profile]; !ok {
			profiles = append(profiles, p.Profile)
		}
		by[p.Profile] = append(by[p.Profile], p)
	}
	lat := report.Plot{Title: "Search latency vs budget (100 candidates offered to the reranker)", XLabel: "budget (ms)", YLabel: "latency (ms)"}
	rr := report.Plot{Title: "Candidates reranked vs budget", XLabel: "budget (ms)", YLabel: "mean candidates reranked"}
	var all []float64
	for _, prof := range profiles {
		var x, p50, p99, n []float64
		for _, p := range by[prof] {
			x = append(x, measure.Ms(p.Budget))
			p50 = append(p50, measure.Ms(p.Latency.P50))
			p99 = append(p99, measure.Ms(p.Latency.P99))
			n = append(n, p.MeanReranked)
		}
		all = append(all, x...)
		lat.Series = append(lat.Series, report.Series{Name: prof + " p99", X: x, Y: p99}, report.Series{Name: prof + " p50", X: x, Y: p50})
		rr.Series = append(rr.Series, report.Series{Name: prof, X: x, Y: n})
	}
	all = slices.Compact(slices.Sorted(slices.Values(all)))
	lat.Series = append(lat.Series, report.Series{Name: "y = x (budget)", X: all, Y: all})
	return []report.Plot{lat, rr}
}

// ParseDurations parses a comma-free list of durations ("25ms").
func ParseDurations(list []string) ([]time.Duration, error) {
	out := make([]time.Duration, 0, len(list))
	for _, s := range list {
		d, err := time.ParseDuration(s)
		if err != nil {
			if ms, err2 := strconv.ParseFloat(s, 64); err2 == nil {
				d, err = time.Duration(ms*float64(time.Millisecond)), nil
			}
		}
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("bench hybrid: bad duration %q", s)
		}
		out = append(out, d)
	}
	return out, nil
}
