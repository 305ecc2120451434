package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
)

func TestMatrixAndSelect(t *testing.T) {
	all := Matrix([]string{"fast", "balanced"})
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	want := "bm25 dense rrf weighted-0.3 weighted-0.5 weighted-0.7 relative " +
		"rrf+fast rrf+balanced weighted-0.3+fast weighted-0.3+balanced weighted-0.5+fast weighted-0.5+balanced " +
		"weighted-0.7+fast weighted-0.7+balanced relative+fast relative+balanced rrf+mmr-0.7"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("matrix:\n%s\nwant\n%s", got, want)
	}
	if all[0].Dense || !all[1].Dense || all[1].Alpha != 1 || all[8].Rerank != "balanced" || all[len(all)-1].MMRLambda != 0.7 {
		t.Fatalf("matrix fields: %+v", all)
	}
	tests := []struct {
		name     string
		patterns []string
		want     string
		err      bool
	}{
		{"all", nil, strings.Join(names, " "), false},
		{"exact", []string{"bm25", "relative"}, "bm25 relative", false},
		{"glob keeps matrix order", []string{"*+balanced", "bm25"}, "bm25 rrf+balanced weighted-0.3+balanced weighted-0.5+balanced weighted-0.7+balanced relative+balanced", false},
		{"unknown", []string{"bm26"}, "", true},
		{"bad pattern", []string{"["}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(all, tt.patterns)
			if (err != nil) != tt.err {
				t.Fatalf("err %v", err)
			}
			var got []string
			for _, c := range sel {
				got = append(got, c.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestBudgetPlot(t *testing.T) {
	pts := []BudgetPoint{
		{Profile: "balanced", BudgetMs: 50, P50Ms: 40, P99Ms: 49, MeanReranked: 8},
		{Profile: "balanced", BudgetMs: 100, P50Ms: 90, P99Ms: 99, MeanReranked: 17},
	}
	pts = append(pts, BudgetPoint{Profile: "fast", BudgetMs: 50, MeanReranked: 60})
	ps := budgetPlot(pts)
	if len(ps) != 2 || len(ps[0].Series) != 5 || ps[0].Series[4].Y[1] != 100 || ps[0].Series[0].Name != "balanced p99" ||
		ps[1].Series[0].Y[1] != 17 || ps[1].Series[1].Name != "fast" || ps[1].Series[1].Y[0] != 60 {
		t.Fatalf("plots %+v", ps)
	}
	var b bytes.Buffer
	report.RenderSVG(&b, ps...)
	if !strings.Contains(b.String(), "y = x") {
		t.Fatal("no y = x line")
	}
}

// hybridDataset writes a small BEIR collection where each query's words
// appear in its relevant document only, and returns its folder.
func hybridDataset(t *testing.T) string {
	var docs []eval.Doc
	var queries []eval.Query
	qrels := eval.Qrels{}
	for i := range 40 {
		docs = append(docs, eval.Doc{ID: fmt.Sprintf("d%d", i), Title: fmt.Sprintf("topic %d", i),
			Text: fmt.Sprintf("alpha%d beta%d common words about retrieval number %d", i, i, i)})
		if i < 10 {
			q := fmt.Sprintf("q%d", i)
			queries = append(queries, eval.Query{ID: q, Text: fmt.Sprintf("alpha%d beta%d", i, i)})
			qrels[q] = map[string]int{fmt.Sprintf("d%d", i): 1}
		}
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := eval.WriteBEIR(dir, docs, queries, qrels); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Datasets = []string{"d"}
	configtest.Check(t, ok,
		configtest.OK("default with a dataset", func(*Config) {}),
		configtest.OK("with a sweep", func(c *Config) { c.Sweep.Budgets = []time.Duration{50 * time.Millisecond} }),
		configtest.Bad("no dataset", func(c *Config) { c.Datasets = nil }),
		configtest.Bad("zero k", func(c *Config) { c.K = 0 }),
		configtest.Bad("negative budget", func(c *Config) { c.Budget = -1 }),
		configtest.Bad("negative warmup", func(c *Config) { c.Warmup = -1 }),
		configtest.Bad("embed as a reranker", func(c *Config) { c.Profiles = []string{"embed"} }),
		configtest.Bad("unknown sweep profile", func(c *Config) { c.Sweep.Profiles = []string{"huge"} }),
		configtest.Bad("zero budget in the sweep", func(c *Config) { c.Sweep.Budgets = []time.Duration{0} }),
		configtest.Bad("sweep without searches", func(c *Config) { c.Sweep.Budgets, c.Sweep.Searches = []time.Duration{time.Second}, 0 }),
		configtest.Bad("unknown setup", func(c *Config) { c.Setups = []string{"bm26"} }),
		configtest.Bad("bad pattern", func(c *Config) { c.Setups = []string{"["} }),
		configtest.Bad("negative target", func(c *Config) { c.Targets.MaxP99 = -1 }),
		configtest.Bad("bad engine", func(c *Config) { c.Engine.RRFK = -1 }),
		configtest.OK("tune on a dataset's folder name", func(c *Config) { c.Datasets, c.TuneOn = []string{"/x/cisi/", "/x/cran"}, "cisi" }),
		configtest.Bad("tune on an unknown dataset", func(c *Config) { c.TuneOn = "scifact" }),
	)
}

func TestFusionChoice(t *testing.T) {
	rows := []Row{
		{Config: "bm25", Dataset: "cisi", NDCG10: 0.30},
		{Config: "dense", Dataset: "cisi", NDCG10: 0.40},
		{Config: "rrf", Dataset: "cisi", NDCG10: 0.41},
		{Config: "weighted-0.7", Dataset: "cisi", NDCG10: 0.45},
		{Config: "rrf+mmr-0.7", Dataset: "cisi", NDCG10: 0.90}, // MMR is not a fusion choice
		{Config: "bm25", Dataset: "scifact", NDCG10: 0.66},
		{Config: "dense", Dataset: "scifact", NDCG10: 0.64},
		{Config: "rrf", Dataset: "scifact", NDCG10: 0.70},
		{Config: "weighted-0.7", Dataset: "scifact", NDCG10: 0.65},
		{Config: "bm25", Dataset: "cran", NDCG10: 0.5},
		{Config: "dense", Dataset: "cran", NDCG10: 0.3},
		{Config: "weighted-0.7", Dataset: "cran", NDCG10: 0.55},
	}
	cs, notes := FusionChoice(rows, Matrix(nil), "cisi")
	if len(cs) != 2 || len(notes) != 3 {
		t.Fatalf("checks %v notes %v", cs, notes)
	}
	// weighted-0.7 wins on cisi; on scifact it trails bm25, on cran it beats it.
	if cs[0].Verdict != report.Fail || math.Abs(cs[0].Value - -0.01) > 1e-12 || !strings.Contains(cs[0].Name, "scifact: weighted-0.7 (chosen on cisi) nDCG@10 − bm25") {
		t.Errorf("scifact: %v", cs[0])
	}
	if cs[1].Verdict != report.Pass || math.Abs(cs[1].Value-0.05) > 1e-12 {
		t.Errorf("cran: %v", cs[1])
	}
	if !strings.Contains(notes[1], "scifact: best fusion rrf") {
		t.Errorf("notes %v", notes)
	}
	if cs, notes := FusionChoice(rows, Matrix(nil), ""); cs != nil || notes != nil {
		t.Fatalf("no tune dataset: %v %v", cs, notes)
	}
	// Setups without a single retriever (--setups 'rrf*') have nothing
	// to beat: no check, where a missing bm25 row had counted as 0.
	var fusedOnly []Row
	for _, r := range rows {
		if r.Config != "bm25" && r.Config != "dense" {
			fusedOnly = append(fusedOnly, r)
		}
	}
	if cs, notes := FusionChoice(fusedOnly, Matrix(nil), "cisi"); len(cs) != 0 || len(notes) != 3 || !strings.Contains(notes[1], "no single retriever") {
		t.Fatalf("fusion setups only: checks %v notes %v", cs, notes)
	}
}

func TestTargetsCheck(t *testing.T) {
	tg := DefaultConfig().Targets
	pts := []BudgetPoint{
		{Dataset: "scifact", Profile: "balanced", BudgetMs: 50, P99Ms: 80},
		{Dataset: "scifact", Profile: "balanced", BudgetMs: 100, P99Ms: 101.6, Candidates: 100, Searches: 200},
		{Dataset: "scifact", Profile: "fast", BudgetMs: 100, P99Ms: 300},
	}
	pts[1].MeanReranked = 0.4
	cs := tg.Check(pts)
	if len(cs) != 4 || len(report.Failed(cs)) != 0 || cs[0].Value != 101.6 || cs[0].Target != 110 || cs[1].Verdict != report.Info || cs[1].Value != 0.4 {
		t.Fatalf("checks %v", cs)
	}
	pts[1].P99Ms, pts[1].DegradedUnmarked, pts[1].Timeouts = 120, 1, 2
	if failed := report.Failed(tg.Check(pts)); len(failed) != 3 {
		t.Fatalf("failed %v", failed)
	}
	// A sweep without the target's point says so (no silent target).
	if cs := tg.Check(pts[:1]); len(cs) != 1 || cs[0].Verdict != report.Info || !strings.Contains(cs[0].Detail, "not checked") {
		t.Fatalf("no point at the target budget: %v", cs)
	}
}

// TestHybridBM25Only runs the bm25 setup without any model.
func TestHybridBM25Only(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Datasets, cfg.Setups, cfg.Queries = []string{hybridDataset(t)}, []string{"bm25"}, 5
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || len(res.Sweep) != 0 || len(res.Checks) != 0 {
		t.Fatalf("result %+v", res)
	}
	r := res.Rows[0]
	if r.Queries != 5 || r.NDCG10 != 1 || !r.RealWeights || r.DegradedFrac != 0 || r.Searches != 5 || r.Dataset != "tiny" {
		t.Fatalf("bm25 result %+v", r)
	}
	rep := Report(cfg, res, "bench hybrid")
	want := "config dataset queries real_weights budget_ms ndcg@10 recall@100 mrr@10 p50_ms p99_ms qps degraded_frac mean_reranked timeouts bm25_ms dense_ms fusion_ms rerank_ms mmr_ms fallbacks commit_s"
	if got := strings.Join(rep.Columns, " "); got != want || len(rep.Figures) != 0 {
		t.Fatalf("columns %s", got)
	}
	rep = Report(cfg, Result{Rows: res.Rows, Sweep: []BudgetPoint{{Profile: "balanced"}}}, "")
	if got := strings.Join(rep.Columns, " "); got != strings.Replace(want, "mean_reranked", "mean_reranked mean_first_stage", 1)+" max_ms searches candidates degraded_unmarked" || len(rep.Figures) != 1 {
		t.Fatalf("columns with a sweep %s", got)
	}

	// Without models: a dense setup and a sweep cannot run on these engines.
	ds, err := eval.LoadBEIR(cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	h, err := openEngines(context.Background(), ds, cfg, modelSet{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, _, err := h.run(context.Background(), Matrix(nil)[1]); err == nil {
		t.Fatal("dense config ran without an embedder")
	}
	if _, err := h.budgetSweep(context.Background(), "fast", []time.Duration{time.Second}, 3); err == nil {
		t.Fatal("sweep ran without a reranker")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHybridWithModels runs dense, fused, reranked and MMR setups and a
// budget sweep with small generated (random-weight) models.
func TestHybridWithModels(t *testing.T) {
	testenv.NeedORT(t)
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	berttest.WriteTiny(t, root, vocab, tok)
	// The generated embedder, also where real models are installed (the
	// resolver prefers $HYBRANK_REAL_MODELS' all-MiniLM-L6-v2 for embed).
	t.Setenv("HYBRANK_REAL_MODELS", t.TempDir())
	cfg := DefaultConfig()
	cfg.Datasets, cfg.Profiles = []string{hybridDataset(t)}, []string{"fast"}
	cfg.Models = modeldir.Source{Root: root} // no assets: nothing is generated
	cfg.Provider, cfg.Threads, cfg.CacheDir = "cpu", 1, t.TempDir()
	cfg.Budget, cfg.Candidates, cfg.K, cfg.Warmup = 0, 20, 20, 1
	cfg.Setups = []string{"bm25", "dense", "rrf", "rrf+fast", "rrf+mmr-0.7"}
	// A generous budget reranks everything; 12 searches cycle the 10
	// queries. (Cut-short searches are covered by the engine's tests: how
	// many fit in a tight budget depends on the machine.)
	cfg.Sweep = Sweep{Budgets: []time.Duration{time.Minute}, Profiles: []string{"fast"}, Searches: 12}
	cfg.Replay = Replay{Setup: "rrf+fast", Searches: 30, Zipf: 1.5, CacheMB: []int{0, 1}, Seed: 3}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 5 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.Queries != 10 || r.Searches != 10 {
			t.Fatalf("%s: %+v", r.Config, r)
		}
		if r.RealWeights != (r.Config == "bm25") {
			t.Errorf("%s: real_weights %v with generated models", r.Config, r.RealWeights)
		}
		reranked := strings.Contains(r.Config, "+fast")
		if reranked && (r.MeanReranked != 20 || r.DegradedFrac != 0) {
			t.Errorf("%s unbudgeted: reranked %.1f degraded %.2f", r.Config, r.MeanReranked, r.DegradedFrac)
		}
		if !reranked && r.MeanReranked != 0 {
			t.Errorf("%s reranked %v", r.Config, r.MeanReranked)
		}
	}
	pts := res.Sweep
	if len(pts) != 1 || pts[0].DegradedFrac != 0 || pts[0].MeanReranked != 20 || pts[0].Searches != 12 ||
		pts[0].DegradedUnmarked != 0 || pts[0].MaxOverrunMs >= 0 || pts[0].Config != "sweep rrf+fast" {
		t.Fatalf("sweep %+v", pts)
	}
	if len(res.Checks) != 1 || res.Checks[0].Verdict != report.Info || !strings.Contains(res.Checks[0].Detail, "not checked") {
		t.Fatalf("checks of a profile the target does not name: %v", res.Checks)
	}
	// The replay: 30 searches over at most 10 distinct queries repeat, so
	// the cached row hits; the uncached one has no cache to hit.
	rp := res.Replay
	if len(rp) != 2 || rp[0].CacheMB != 0 || rp[1].CacheMB != 1 || rp[0].Searches != 30 || rp[0].Distinct > 10 {
		t.Fatalf("replay %+v", rp)
	}
	if rp[0].RerankHits != 0 || rp[0].EmbedHits != 0 || rp[1].RerankHits <= 0 || rp[1].EmbedHits <= 0 || rp[1].MeanReranked != 20 {
		t.Fatalf("replay hit rates %+v", rp)
	}
	bad := cfg
	bad.Replay.Setup = "nope"
	if err := bad.Validate(); err == nil {
		t.Fatal("replay of an unknown setup accepted")
	}
}

func TestCascadeSweepProfiles(t *testing.T) {
	if f, l := stages("fast>accurate"); f != "fast" || l != "accurate" {
		t.Fatalf("stages = %q, %q", f, l)
	}
	if f, l := stages("balanced"); f != "" || l != "balanced" {
		t.Fatalf("stages = %q, %q", f, l)
	}
	if got := rerankProfiles([]string{"fast>accurate", "balanced"}); !slices.Equal(got, []string{"fast", "accurate", "balanced"}) {
		t.Fatalf("rerankProfiles = %v", got)
	}
	c := DefaultConfig()
	c.Datasets = []string{"x"}
	c.Sweep.Budgets, c.Sweep.Profiles = []time.Duration{time.Second}, []string{"fast>huge"}
	if err := c.Validate(); err == nil {
		t.Fatal("a cascade of an unknown profile accepted")
	}
	c.Sweep.Profiles, c.Sweep.CascadeKeep = []string{"fast>accurate"}, 0
	if err := c.Validate(); err == nil {
		t.Fatal("a cascade without cascade_keep accepted")
	}
}
