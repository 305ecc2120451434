package hybrid

import (
	"fmt"
	"slices"

	"github.com/hybrank/hybrank/bench/report"
)

// Report renders res for bench/results/hybrid.md, with hybrid_budget.svg
// when there is a sweep.
func Report(cfg Config, res Result, command string) report.Report {
	allReal := true
	for _, r := range res.Rows {
		allReal = allReal && r.RealWeights
	}
	for _, p := range res.Sweep {
		allReal = allReal && p.RealWeights
	}
	weights := "Models: real exports (real_weights true): quality columns are meaningful."
	if !allReal {
		weights = "**Models with real_weights = false are generated random-weight stand-ins (bench models): for those rows the dense and rerank quality columns (ndcg@10, recall@100, mrr@10) are meaningless — only latency, degradation and reranked-count figures are real. The bm25 row does not use a model. Pass real exports with --models-root or --embed-dir/--rerank-dir to get real quality figures.**"
	}
	rep := report.Report{
		Title:   "Hybrid engine: configuration matrix and rerank budget",
		Command: command,
		Checks:  res.Checks,
		Notes: []string{
			weights,
			fmt.Sprintf("The corpus is committed once per run (title + text); %s. bm25 runs on an engine with no embedder (BM25 only, tied scores in trec_eval order as lexical.md); dense is weighted fusion with α = 1; rrf, weighted-α, relative fuse %d candidates per retriever; X+PROFILE reranks X's candidates with the cross-encoder PROFILE under a %v budget per search; rrf+mmr-0.7 selects hits by MMR with λ = 0.7.", embedNote(cfg), cfg.Candidates, cfg.Budget),
			"Reranking 100 candidates without a budget takes seconds per query with MiniLM-sized cross-encoders on a 2-core CPU, so the rerank rows are budgeted: degraded_frac is the share of searches whose reranking the budget cut short (Result.Degraded), mean_reranked the mean number of candidates scored (a prefix in fused order, the rest follow unreranked).",
			"Queries run sequentially through engine.Search after unrecorded warm-up searches (model load, rerank cost estimate); latency is Result.Timings.Total (wall time for timeouts); stage columns are means. timeouts counts budgeted searches whose retrieval (query embedding, BM25, dense) itself missed the budget, which the engine reports as an error; they count as returning nothing.",
		},
		Config:  cfg,
		Columns: report.Columns(Row{}),
		Rows:    report.Rows(res.Rows),
	}
	if setups, err := cfg.setups(); err == nil {
		if _, notes := FusionChoice(res.Rows, setups, cfg.TuneOn); len(notes) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Fusion chosen on %s (best nDCG@10 among rrf, weighted-α, relative there) and checked unchanged on the other datasets against the better single retriever. Per dataset:", cfg.TuneOn))
			rep.Notes = append(rep.Notes, notes...)
		}
	}
	if len(res.Replay) > 0 {
		rp := cfg.Replay
		rep.Notes = append(rep.Notes, fmt.Sprintf("Replay (rows with cache MB): %d searches of setup %s drawn from the judged queries with Zipf(%.2f) frequencies (distinct: how many different queries the log holds), each cache size on a fresh engine with fresh caches (models/cache: query embeddings and rerank scores by (query, document), LRU bounded in bytes; 0 = no cache); hit rates are hits / lookups; rerank cache MB is what the score cache held at the end.", rp.Searches, rp.Setup, rp.Zipf))
		rep.Columns = report.Columns(Row{}, ReplayRow{})
		rep.Rows = append(rep.Rows, report.Rows(res.Replay)...)
	}
	if len(res.Sweep) == 0 {
		return rep
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("Budget sweep (table rows named sweep …, plot hybrid_budget.svg): searches cycle through the judged queries, rrf fusion, all candidates offered to the reranker; max_ms is the slowest search; degraded_unmarked counts searches whose Degraded flag disagrees with reranked < candidates (must be 0); timeouts counts searches whose retrieval itself (query embedding, BM25, dense) missed the budget, which the engine reports as an error, not a degraded result. Target: budget %v, %s, p99 ≤ %v.", cfg.Targets.Budget, cfg.Targets.Profile, cfg.Targets.MaxP99))
	kinds := []any{Row{}, BudgetPoint{}}
	if len(res.Replay) > 0 {
		kinds = append(kinds, ReplayRow{})
	}
	rep.Columns = report.Columns(kinds...)
	rep.Rows = append(rep.Rows, report.Rows(res.Sweep)...)
	rep.Figures = []report.Figure{{Alt: "budget sweep: latency and candidates reranked against the budget", Panels: budgetPlot(res.Sweep)}}
	return rep
}

// budgetPlot renders budget sweeps (one line per profile): p50/p99 latency
// against the budget with the y = x line, and the mean candidates reranked
// against the budget.
func budgetPlot(points []BudgetPoint) []report.Plot {
	var profiles []string
	by := map[string][]BudgetPoint{}
	for _, p := range points {
		if _, ok := by[p.Profile]; !ok {
			profiles = append(profiles, p.Profile)
		}
		by[p.Profile] = append(by[p.Profile], p)
	}
	var offered float64
	for _, p := range points {
		offered += p.Candidates / float64(len(points))
	}
	lat := report.Plot{Title: fmt.Sprintf("Search latency vs budget (%.0f candidates offered to the reranker, mean)", offered), XLabel: "budget (ms)", YLabel: "latency (ms)"}
	rr := report.Plot{Title: "Candidates reranked vs budget", XLabel: "budget (ms)", YLabel: "mean candidates reranked"}
	var all []float64
	for _, prof := range profiles {
		var x, p50, p99, n []float64
		for _, p := range by[prof] {
			x = append(x, p.BudgetMs)
			p50 = append(p50, p.P50Ms)
			p99 = append(p99, p.P99Ms)
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

// embedNote says how the run embedded documents.
func embedNote(cfg Config) string {
	switch {
	case cfg.NoDense:
		return "no embedder (BM25 only)"
	case cfg.MaxDocTokens == 0:
		return "the embedder truncates documents to the model's own maximum length (max-doc-tokens 0)"
	}
	return fmt.Sprintf("the embedder truncates documents to %d tokens (max-doc-tokens)", cfg.MaxDocTokens)
}
