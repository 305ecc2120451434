package hybrid

import (
	"fmt"

	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/engine"
)

// Row is one setup over one dataset: a line of hybrid.md.
type Row struct {
	// Impl is who ran it: "hybrank"; a peer adds rows of its own.
	Impl    string `json:"impl"`
	Config  string `json:"config" table:""` // the Setup's name
	Dataset string `json:"dataset" table:""`
	Docs    int    `json:"docs"`
	Queries int    `json:"queries" table:""`
	// RealWeights is false when a model the setup uses (embedder,
	// reranker) is a generated random-weight stand-in: its quality figures
	// are then meaningless.
	RealWeights bool    `json:"real_weights" table:""`
	BudgetMs    float64 `json:"budget_ms" table:""`
	NDCG10      float64 `json:"ndcg@10" table:""`
	Recall100   float64 `json:"recall@100" table:""`
	MRR10       float64 `json:"mrr@10" table:""`
	P50Ms       float64 `json:"p50_ms" table:""`
	P99Ms       float64 `json:"p99_ms" table:""`
	QPS         float64 `json:"qps" table:""`
	// DegradedFrac is the share of searches whose reranking the budget cut
	// short; MeanReranked the mean number of candidates reranked.
	DegradedFrac float64 `json:"degraded_frac" table:""`
	MeanReranked float64 `json:"mean_reranked" table:""`
	// Timeouts counts budgeted searches whose retrieval (query embedding,
	// BM25, dense) missed the budget: the engine returns an error then; the
	// query counts as returning nothing, its wall time is in the latency.
	Timeouts int `json:"timeouts" table:""`
	// Mean per-stage times over the queries.
	BM25Ms    float64 `json:"bm25_ms" table:""`
	DenseMs   float64 `json:"dense_ms" table:""`
	FusionMs  float64 `json:"fusion_ms" table:""`
	RerankMs  float64 `json:"rerank_ms" table:""`
	MMRMs     float64 `json:"mmr_ms" table:""`
	PackingMs float64 `json:"packing_ms"`
	// Fallbacks counts fallback codes over the queries.
	Fallbacks map[engine.FallbackCode]int `json:"fallbacks" table:""`
	// CommitS is the commit time of the engine the setup ran on (BM25
	// only, or with the corpus embedded up to MaxDocTokens tokens).
	CommitS      float64 `json:"commit_s" table:""`
	MaxDocTokens int     `json:"max_doc_tokens,omitempty"`
	// Searches is how many searches were timed.
	Searches int `json:"searches"`
}

// BudgetPoint is one budget of the budget sweep: a "sweep …" line of
// hybrid.md and a point of hybrid_budget.svg.
type BudgetPoint struct {
	// Config is "sweep rrf+PROFILE" (or "sweep bm25+PROFILE" without an
	// embedder).
	Config       string  `json:"config" table:""`
	Dataset      string  `json:"dataset" table:""`
	RealWeights  bool    `json:"real_weights" table:""`
	Profile      string  `json:"profile"`
	BudgetMs     float64 `json:"budget_ms" table:""`
	P50Ms        float64 `json:"p50_ms" table:""`
	P99Ms        float64 `json:"p99_ms" table:""`
	DegradedFrac float64 `json:"degraded_frac" table:""`
	MeanReranked float64 `json:"mean_reranked" table:""`
	// MeanFirstStage is the mean number of candidates a cascade's first
	// stage scored (cascade profiles "FIRST>SECOND" only; MeanReranked is
	// then the second stage's).
	MeanFirstStage float64 `json:"mean_first_stage,omitempty" table:""`
	// Timeouts counts searches whose retrieval (query embedding, BM25,
	// dense) did not finish within the budget: the engine returns an error
	// then, not a degraded result. Their wall time is in the latency.
	Timeouts int `json:"timeouts" table:""`
	// MaxMs is the slowest search; MaxOverrunMs its excess over the budget
	// (≤ 0 when every search met it).
	MaxMs        float64 `json:"max_ms" table:""`
	MaxOverrunMs float64 `json:"max_overrun_ms"`
	Searches     int     `json:"searches" table:""`
	// Candidates is the mean size of the fused candidate list offered to
	// the reranker (Result.Candidates: the union of the retrievers'
	// lists, up to twice Config.Candidates), over the searches that
	// returned.
	Candidates float64 `json:"candidates" table:""`
	// DegradedUnmarked counts searches that reranked fewer than all
	// candidates without Degraded set, or set Degraded with every candidate
	// reranked (must be 0).
	DegradedUnmarked int `json:"degraded_unmarked" table:""`
}

// Result is one Run: the setup rows and the sweep, dataset by dataset, and
// the checks of the targets.
type Result struct {
	Rows   []Row          `json:"rows"`
	Sweep  []BudgetPoint  `json:"sweep,omitempty"`
	Replay []ReplayRow    `json:"replay,omitempty"`
	Checks []report.Check `json:"checks,omitempty"`
}

// Check compares the sweep points at t.Budget with t.Profile against t:
// p99 at most MaxP99 (the budget kept), no search with a wrong Degraded
// mark, no retrieval timeout; and says, as INFO, how many candidates were
// reranked within it (keeping the budget by reranking nothing passes the
// p99 check). Points of other budgets or profiles are not checked; a sweep
// without the target's point says so in an INFO line.
func (t Targets) Check(points []BudgetPoint) []report.Check {
	var out []report.Check
	for _, p := range points {
		if p.Profile != t.Profile || p.BudgetMs != measure.Ms(t.Budget) {
			continue
		}
		at := fmt.Sprintf("%s, %s at %v, %.1f candidates offered (mean), %d searches", p.Dataset, p.Profile, t.Budget, p.Candidates, p.Searches)
		out = append(out,
			report.AtMost("budget kept: search p99 (ms)", p.P99Ms, measure.Ms(t.MaxP99), fmt.Sprintf("%s; %.0f %% degraded", at, 100*p.DegradedFrac)),
			report.Inform("candidates reranked within the budget (mean)", p.MeanReranked, fmt.Sprintf("%s; the p99 check says the budget was kept, this how much reranking fit in it", at)),
			report.AtMost("searches without a correct Degraded mark", float64(p.DegradedUnmarked), 0, at),
			report.AtMost("retrieval timeouts", float64(p.Timeouts), 0, at))
	}
	if len(out) == 0 && len(points) > 0 {
		out = append(out, report.Inform(fmt.Sprintf("budget target (%s at %v, p99 ≤ %v)", t.Profile, t.Budget, t.MaxP99), 0,
			"not checked: the sweep has no point of that profile and budget"))
	}
	return out
}
