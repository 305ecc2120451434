package hybrid

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// Run commits each dataset into the engines its setups need, measures
// every setup over the judged queries, then the budget sweep, and checks
// the targets.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	setups, _ := cfg.setups()
	r := modeldir.NewResolver(cfg.Models)
	defer r.Close()
	ms, err := resolveModels(r, cfg, setups)
	if err != nil {
		return res, err
	}
	for _, dir := range cfg.Datasets {
		if err := runDataset(ctx, cfg, dir, setups, ms, &res); err != nil {
			return res, err
		}
	}
	res.Checks = cfg.Targets.Check(res.Sweep)
	cs, _ := FusionChoice(res.Rows, setups, cfg.TuneOn)
	res.Checks = append(res.Checks, cs...)
	return res, nil
}

// runDataset adds one dataset's rows and sweep points to res.
func runDataset(ctx context.Context, cfg Config, dir string, setups []Setup, ms modelSet, res *Result) (err error) {
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		return err
	}
	h, err := openEngines(ctx, ds, cfg, ms)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Close()) }()
	h.logf("%s: %d docs, commit BM25-only %.1fs, with embedding %.1fs (max-doc-tokens %d)",
		ds.Name, len(ds.Docs), h.commitLexical.Seconds(), h.commitHybrid.Seconds(), cfg.MaxDocTokens)
	for _, s := range setups {
		row, _, err := h.run(ctx, s)
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, row)
		report.Log(h.cfg.Log, row)
	}
	for _, p := range cfg.Sweep.Profiles {
		if len(cfg.Sweep.Budgets) == 0 {
			break
		}
		pts, err := h.budgetSweep(ctx, p, cfg.Sweep.Budgets, cfg.Sweep.Searches)
		if err != nil {
			return err
		}
		for _, pt := range pts {
			report.Log(h.cfg.Log, pt)
		}
		res.Sweep = append(res.Sweep, pts...)
	}
	if cfg.Replay.Searches > 0 {
		rows, err := h.replay(ctx, Matrix(cfg.Profiles))
		if err != nil {
			return err
		}
		for _, r := range rows {
			report.Log(h.cfg.Log, r)
		}
		res.Replay = append(res.Replay, rows...)
	}
	return nil
}

func (h *engines) logf(format string, args ...any) {
	if h.cfg.Log != nil {
		fmt.Fprintf(h.cfg.Log, format+"\n", args...)
	}
}

// run measures one setup over the first cfg.Queries judged queries: its
// row and the ranked ids of each query.
func (h *engines) run(ctx context.Context, c Setup) (Row, eval.Run, error) {
	e, real := h.lexical, true
	row := Row{Impl: "hybrank", Config: c.Name, Dataset: h.ds.Name, Docs: len(h.ds.Docs),
		CommitS: measure.Round(h.commitLexical.Seconds(), 2), Fallbacks: map[engine.FallbackCode]int{}}
	if c.Dense {
		if h.hybrid == nil {
			return Row{}, nil, fmt.Errorf("hybrid: setup %s needs an embedder", c.Name)
		}
		e, real = h.hybrid, h.ms.real[models.ProfileEmbed]
		row.CommitS, row.MaxDocTokens = measure.Round(h.commitHybrid.Seconds(), 2), h.cfg.MaxDocTokens
	}
	var budget time.Duration
	if c.Rerank != "" {
		if _, ok := h.ms.rerank[c.Rerank]; !ok {
			return Row{}, nil, fmt.Errorf("hybrid: setup %s: no %s reranker loaded", c.Name, c.Rerank)
		}
		budget, real = h.cfg.Budget, real && h.ms.real[c.Rerank]
	}
	row.RealWeights, row.BudgetMs = real, measure.Ms(budget)
	req := func(q string) engine.Request { return h.request(c, q, budget) }
	qs := h.queries(h.cfg.Queries)
	if err := h.warm(ctx, e, qs, req); err != nil {
		return Row{}, nil, err
	}
	run := eval.Run{}
	var t tally
	bar := measure.NewProgress(fmt.Sprintf("hybrid %s %s", h.ds.Name, c.Name), len(qs), h.cfg.Progress)
	wall := time.Now()
	for _, q := range qs {
		t0 := time.Now()
		r, err := e.Search(ctx, req(q.Text))
		bar.Add(1)
		if err != nil && budget > 0 && retrievalTimeout(ctx, err) {
			// Retrieval itself missed the budget: no hits for this query.
			row.Timeouts++
			run[q.ID] = nil
			t.lat = append(t.lat, time.Since(t0))
			continue
		}
		if err != nil {
			return row, nil, fmt.Errorf("hybrid %s %s: query %s: %w", h.ds.Name, c.Name, q.ID, err)
		}
		run[q.ID] = ranked(c, r.Hits)
		t.add(r)
		for _, fb := range r.Fallbacks {
			row.Fallbacks[fb.Code]++
		}
	}
	bar.Done()
	if n := len(qs); n > 0 {
		row.QPS = measure.Round(float64(n)/time.Since(wall).Seconds(), 1)
	}
	t.fill(&row)
	sc := eval.Evaluate(h.ds.Qrels, run, h.cfg.Eval)
	row.Queries = sc.Queries
	// Unrounded: the checks compare these (tables show 4 decimals).
	row.NDCG10, row.Recall100, row.MRR10 = sc.NDCG10, sc.Recall100, sc.MRR10
	return row, run, nil
}

// request is setup c's search for query q under budget.
func (h *engines) request(c Setup, q string, budget time.Duration) engine.Request {
	return engine.Request{Query: q, TopK: h.cfg.K, Candidates: h.cfg.Candidates, Fusion: c.Fusion,
		Alpha: engine.Float(c.Alpha), Rerank: c.Rerank, Budget: budget, MMRLambda: c.MMRLambda}
}

// ranked is the run of one query: the bm25 setup's hits in trec_eval
// order (BM25 score descending, ties by id descending, as lexical.md
// evaluates them, so the bm25 row reproduces its figure), the others in
// the engine's order.
func ranked(c Setup, hits []engine.Hit) []string {
	if c.Name == "bm25" {
		return eval.TrecOrder(hits, func(h engine.Hit) string { return h.Document.ID }, func(h engine.Hit) float64 { return h.Provenance.BM25Score })
	}
	ids := make([]string, len(hits))
	for i, hit := range hits {
		ids[i] = hit.Document.ID
	}
	return ids
}

// tally sums what the searches of a setup returned.
type tally struct {
	lat                []time.Duration
	st                 engine.Timings
	n                  int
	degraded, reranked int
}

func (t *tally) add(r *engine.Result) {
	t.lat = append(t.lat, r.Timings.Total)
	t.st.BM25 += r.Timings.BM25
	t.st.Dense += r.Timings.Dense
	t.st.Fusion += r.Timings.Fusion
	t.st.Rerank += r.Timings.Rerank
	t.st.MMR += r.Timings.MMR
	t.st.Packing += r.Timings.Packing
	if r.Degraded {
		t.degraded++
	}
	t.reranked += r.Reranked
}

// fill sets row's latency, stage means and degradation over every timed
// search (timeouts included).
func (t *tally) fill(row *Row) {
	n := len(t.lat)
	row.Searches = n
	l := measure.LatencyStats(t.lat)
	row.P50Ms, row.P99Ms = measure.Round(measure.Ms(l.P50), 3), measure.Round(measure.Ms(l.P99), 3)
	if n == 0 {
		return
	}
	mean := func(d time.Duration) float64 { return measure.Round(measure.Ms(d/time.Duration(n)), 3) }
	row.BM25Ms, row.DenseMs, row.FusionMs = mean(t.st.BM25), mean(t.st.Dense), mean(t.st.Fusion)
	row.RerankMs, row.MMRMs, row.PackingMs = mean(t.st.Rerank), mean(t.st.MMR), mean(t.st.Packing)
	row.DegradedFrac = measure.Round(float64(t.degraded)/float64(n), 3)
	row.MeanReranked = measure.Round(float64(t.reranked)/float64(n), 1)
}

// budgetSweep runs n searches (rrf over both retrievers when an embedder
// is loaded, BM25 only otherwise; cfg.Candidates candidates; judged
// queries cycled) reranked by profile under each budget.
func (h *engines) budgetSweep(ctx context.Context, profile string, budgets []time.Duration, n int) ([]BudgetPoint, error) {
	first, final := stages(profile)
	real := true
	for _, p := range rerankProfiles([]string{profile}) {
		if _, ok := h.ms.rerank[p]; !ok {
			return nil, fmt.Errorf("hybrid: budget sweep needs the %s reranker", p)
		}
		real = real && h.ms.real[p]
	}
	var cascade engine.Cascade
	if first != "" {
		cascade = engine.Cascade{First: first, Keep: h.cfg.Sweep.CascadeKeep}
	}
	e, name := h.hybrid, "sweep rrf+"+profile
	if e == nil {
		e, name = h.lexical, "sweep bm25+"+profile
	} else {
		real = real && h.ms.real[models.ProfileEmbed]
	}
	if n <= 0 || len(budgets) == 0 {
		return nil, errors.New("hybrid: budget sweep needs searches > 0 and budgets")
	}
	qs := h.queries(n)
	var out []BudgetPoint
	for _, b := range budgets {
		if b <= 0 {
			return nil, fmt.Errorf("hybrid: budget %v must be positive", b)
		}
		req := func(q string) engine.Request {
			return engine.Request{Query: q, TopK: h.cfg.K, Candidates: h.cfg.Candidates, Fusion: engine.FusionRRF,
				Rerank: final, Cascade: cascade, Budget: b}
		}
		if err := h.warm(ctx, e, qs, req); err != nil {
			return nil, err
		}
		p, err := h.sweepPoint(ctx, e, qs, req, b)
		if err != nil {
			return nil, err
		}
		p.Config, p.Dataset, p.RealWeights, p.Profile = name, h.ds.Name, real, profile
		out = append(out, p)
	}
	return out, nil
}

// sweepPoint measures the searches of one budget.
func (h *engines) sweepPoint(ctx context.Context, e *engine.Engine, qs []eval.Query, req func(string) engine.Request, b time.Duration) (BudgetPoint, error) {
	p := BudgetPoint{BudgetMs: measure.Ms(b)}
	offered, returned := 0, 0
	lat := make([]time.Duration, 0, len(qs))
	maxOverrun := -b
	degraded, reranked, firstStage := 0, 0, 0
	bar := measure.NewProgress(fmt.Sprintf("budget %v %s", b, req("").Rerank), len(qs), h.cfg.Progress)
	for _, q := range qs {
		t0 := time.Now()
		r, err := e.Search(ctx, req(q.Text))
		bar.Add(1)
		if err != nil && retrievalTimeout(ctx, err) {
			// Retrieval itself missed the budget: no result at all.
			p.Timeouts++
			lat = append(lat, time.Since(t0))
			maxOverrun = max(maxOverrun, time.Since(t0)-b)
			continue
		}
		if err != nil {
			return p, fmt.Errorf("hybrid: budget %v: query %s: %w", b, q.ID, err)
		}
		lat = append(lat, r.Timings.Total)
		maxOverrun = max(maxOverrun, r.Timings.Total-b)
		offered += r.Candidates
		returned++
		if r.Degraded {
			degraded++
		}
		complete := r.Reranked == r.Candidates
		if c := req("").Cascade; c.First != "" {
			complete = r.FirstStage == r.Candidates && r.Reranked == min(c.Keep, r.Candidates)
		}
		if r.Degraded == complete {
			p.DegradedUnmarked++
		}
		reranked += r.Reranked
		firstStage += r.FirstStage
	}
	bar.Done()
	l := measure.LatencyStats(lat)
	p.Searches = l.N
	p.P50Ms, p.P99Ms, p.MaxMs = measure.Round(measure.Ms(l.P50), 3), measure.Round(measure.Ms(l.P99), 3), measure.Round(measure.Ms(l.Max), 3)
	p.MaxOverrunMs = measure.Round(measure.Ms(maxOverrun), 3)
	p.DegradedFrac = measure.Round(float64(degraded)/float64(len(qs)), 3)
	p.MeanReranked = measure.Round(float64(reranked)/float64(len(qs)), 1)
	p.MeanFirstStage = measure.Round(float64(firstStage)/float64(len(qs)), 1)
	if returned > 0 {
		p.Candidates = measure.Round(float64(offered)/float64(returned), 1)
	}
	return p, nil
}
