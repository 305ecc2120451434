package serve

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
)

func TestConfigValidate(t *testing.T) {
	configtest.Check(t, DefaultConfig(),
		configtest.OK("default", func(*Config) {}),
		configtest.Bad("no clients", func(c *Config) { c.Clients = 0 }),
		configtest.Bad("no docs", func(c *Config) { c.Docs = 0 }),
		configtest.Bad("no duration", func(c *Config) { c.Duration = 0 }),
		configtest.Bad("bad model", func(c *Config) { c.Model.DocTokens = 600 }),
		configtest.Bad("embedder", func(c *Config) { c.Model.Profile = models.ProfileEmbed }),
		configtest.Bad("curve size 0", func(c *Config) { c.CurveSizes = []int{1, 0} }),
		configtest.Bad("curve without time", func(c *Config) { c.CurveMinTime = 0 }),
		configtest.OK("no curve, no time", func(c *Config) { c.CurveSizes, c.CurveMinTime = nil, 0 }),
		configtest.Bad("share above 1", func(c *Config) { c.Targets.MinLibraryShare = 1.2 }),
		configtest.Bad("negative gain", func(c *Config) { c.Targets.MinBatchingGain = -1 }),
		configtest.OK("with overload", func(c *Config) { o := DefaultOverloadConfig(); c.Overload = &o }),
		configtest.Bad("bad overload", func(c *Config) { o := DefaultOverloadConfig(); o.Clients = 0; c.Overload = &o }),
	)
}

func TestOverloadConfigValidate(t *testing.T) {
	configtest.Check(t, DefaultOverloadConfig(),
		configtest.OK("default", func(*OverloadConfig) {}),
		configtest.Bad("no clients", func(c *OverloadConfig) { c.Clients = 0 }),
		configtest.Bad("no duration", func(c *OverloadConfig) { c.Duration = 0 }),
		configtest.Bad("no request bound", func(c *OverloadConfig) { c.MaxRequestsPerClient = 0 }),
		configtest.Bad("no queue", func(c *OverloadConfig) { c.QueueItems = 0 }),
		configtest.Bad("no in-flight", func(c *OverloadConfig) { c.MaxConcurrentRequests = 0 }),
		configtest.Bad("negative backoff", func(c *OverloadConfig) { c.Backoff = -1 }),
		configtest.Bad("negative growth", func(c *OverloadConfig) { c.Targets.MaxRSSGrowth = -0.1 }),
	)
}

func TestTargetsCheck(t *testing.T) {
	res := Result{
		Serve: []ServeRow{{Batching: true, PairsPerS: 59.2}, {Batching: false, PairsPerS: 65.2}},
		Curve: []CurvePoint{{BatchSize: 1, PairsPerS: 54}, {BatchSize: 8, PairsPerS: 65.6}, {BatchSize: 16, PairsPerS: 66.1}},
	}
	cs := DefaultTargets().Check(res, 8)
	if len(cs) != 3 || cs[0].Verdict != report.Info || cs[1].Passed() || !cs[2].Passed() {
		t.Fatalf("checks %v", cs)
	}
	if !strings.Contains(cs[1].String(), "59.2 / 65.2 pairs/s") || math.Abs(cs[2].Value-59.2/66.1) > 1e-9 {
		t.Fatalf("checks %v", cs)
	}
	// A run that is missing is not checked.
	if cs := DefaultTargets().Check(Result{Serve: res.Serve[:1]}, 8); len(cs) != 0 {
		t.Fatalf("batching on only, no curve: %v", cs)
	}
	if cs := (Targets{}).Check(res, 8); len(cs) != 1 {
		t.Fatalf("targets off: %v", cs)
	}
}

func TestOverloadTargetsCheck(t *testing.T) {
	tg := DefaultOverloadConfig().Targets
	good := OverloadRow{Statuses: map[string]int{"200": 10, "429": 50}, OK: 10, Healthy: true, RSSPeakFirstHalfMiB: 300, RSSPeakMiB: 350, RSSSecondHalf: true}
	if cs := tg.Check(good); len(report.Failed(cs)) != 0 || report.Verdict(cs) != report.Pass {
		t.Fatalf("good run: %v", cs)
	}
	bad := good
	bad.Statuses = map[string]int{"200": 10, "429": 50, "500": 2}
	bad.NoRetryAfter, bad.RSSPeakMiB, bad.Healthy, bad.HealthDetail = 1, 400, false, "/readyz: 503"
	failed := report.Failed(tg.Check(bad))
	if len(failed) != 4 {
		t.Fatalf("failed %v", failed)
	}
	if v := report.Verdict(failed); !strings.HasPrefix(v, "FAIL: overload: answers other than 200 and 429 2 > 0") {
		t.Fatalf("verdict %q", v)
	}
	// A run that ended before its halfway point has no second-half sample:
	// the memory check is not made (a peak of 0 had passed it).
	early := good
	early.RSSSecondHalf, early.RSSPeakFirstHalfMiB, early.RSSPeakMiB = false, 0, 0
	if cs := tg.Check(early); len(report.Failed(cs)) != 0 || cs[len(cs)-1].Verdict != report.Info {
		t.Fatalf("no second-half sample: %v", cs)
	}
	// A half shorter than the sampling period has no first-half sample:
	// the baseline is the memory at the start (0 MiB had failed it).
	short := good
	short.RSSPeakFirstHalfMiB, short.RSSStartMiB, short.RSSPeakMiB = 0, 184, 186
	if cs := tg.Check(short); len(report.Failed(cs)) != 0 {
		t.Fatalf("no first-half sample: %v", report.Failed(cs))
	}
}

func TestBestPointAndResident(t *testing.T) {
	pts := []CurvePoint{{BatchSize: 1, PairsPerS: 10}, {BatchSize: 8, PairsPerS: 30}, {BatchSize: 64, PairsPerS: 25}}
	if b := bestPoint(pts); b.BatchSize != 8 {
		t.Fatalf("best %+v", b)
	}
	if b := bestPoint(nil); b.PairsPerS != 0 {
		t.Fatalf("best of none %+v", b)
	}
	if r := residentMiB(); r <= 0 || r > 1<<20 {
		t.Fatalf("resident %v MiB", r)
	}
}

func TestReportColumns(t *testing.T) {
	want := "run route profile threads clients batching docs doc_tokens batch_size budget_ms requests rps pairs_per_s p50_ms p99_ms errors " +
		"pairs_per_call library_pairs_per_s rss_start_mib rss_peak_mib rss_end_mib verdict real_weights"
	if got := strings.Join(Report(DefaultConfig(), Result{}, "").Columns, " "); got != want {
		t.Fatalf("columns\n%s\nwant\n%s", got, want)
	}
}

// TestRun drives a real server over loopback on the generated fast
// profile, batching on and off, the curve and an overload run, and checks
// the result is filled in.
func TestRun(t *testing.T) {
	testenv.NeedORT(t)
	if testing.Short() {
		t.Skip("starts a server and a model")
	}
	cfg := DefaultConfig()
	cfg.Model.Profile = models.ProfileFast
	cfg.Model.Models = modeldir.Source{Root: t.TempDir(), VocabTxt: testenv.NeedVocabTxt(t), TokenizerJSON: testenv.NeedTokenizerJSON(t)}
	cfg.Model.Threads, cfg.Model.DocTokens = 1, 20
	cfg.Clients, cfg.Docs, cfg.Duration, cfg.Warmup = 3, 4, 2*time.Second, 300*time.Millisecond // long enough for a request on a loaded machine
	cfg.CurveSizes, cfg.CurveMinTime = []int{1, 4}, 50*time.Millisecond
	oc := DefaultOverloadConfig()
	oc.Clients, oc.Duration, oc.MaxConcurrentRequests, oc.QueueItems, oc.Backoff = 12, time.Second, 2, 4, time.Millisecond
	cfg.Overload = &oc
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Serve) != 2 {
		t.Fatalf("serve rows %+v", res.Serve)
	}
	for i, on := range []bool{true, false} {
		r := res.Serve[i]
		if r.Batching != on || r.Requests == 0 || r.RPS <= 0 || math.Abs(r.PairsPerS-r.RPS*4) > 0.1 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms ||
			len(r.Errors) != 0 || r.LibraryPairsPerS <= 0 || r.ModelCalls == 0 || r.Route != "/v1/rerank" || r.RealWeights {
			t.Fatalf("result %+v", r)
		}
	}
	pts := res.Curve
	if len(pts) != 2 || pts[0].BatchSize != 1 || pts[1].BatchSize != 4 || pts[0].Calls < 2 || pts[1].PairsPerS <= 0 || pts[1].MsPerCall <= 0 {
		t.Fatalf("curve %+v", pts)
	}
	or := res.Overload
	if or == nil || !or.Pass() || !or.Healthy || or.Statuses["200"] == 0 || or.Statuses["429"] == 0 || or.RSSStartMiB <= 0 ||
		or.RSSPeakMiB < or.RSSPeakFirstHalfMiB || or.RSSEndMiB <= 0 {
		t.Fatalf("overload %+v", or)
	}
	if or.Verdict != "PASS" {
		t.Fatalf("verdict %v", or.Verdict)
	}
	// Batching on and off, the curve: three target lines, then five overload checks.
	if len(res.Checks) != 3+5 {
		t.Fatalf("checks %v", res.Checks)
	}
	rep := Report(cfg, res, "bench serve")
	if len(rep.Rows) != 5 {
		t.Fatalf("%d report rows", len(rep.Rows))
	}
}

// TestRunSearch runs the search run on scifact with the generated fast
// profile: /v1/rerank, /search and budgeted /search rows, each with
// pairs scored by the model, and its two checks.
func TestRunSearch(t *testing.T) {
	testenv.NeedORT(t)
	if testing.Short() {
		t.Skip("starts a server, a model and an engine over scifact")
	}
	cfg := DefaultConfig()
	cfg.Model.Profile = models.ProfileFast
	cfg.Model.Models = modeldir.Source{Root: t.TempDir(), VocabTxt: testenv.NeedVocabTxt(t), TokenizerJSON: testenv.NeedTokenizerJSON(t)}
	cfg.Model.Threads, cfg.Model.DocTokens = 1, 20
	cfg.Clients, cfg.Docs, cfg.Duration, cfg.Warmup = 2, 4, 2*time.Second, 300*time.Millisecond
	cfg.Batching, cfg.CurveSizes = nil, nil
	sc := DefaultSearchConfig(testenv.NeedDataset(t, "scifact"))
	cfg.Search = &sc
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	routes := []string{"/v1/rerank", "/search", "/search"}
	if len(res.Search) != len(routes) {
		t.Fatalf("search rows %+v", res.Search)
	}
	for i, r := range res.Search {
		if r.Route != routes[i] || r.Requests == 0 || r.PairsPerS <= 0 || r.PairsPerCall <= 0 || len(r.Errors) != 0 {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if b := res.Search[2].BudgetMs; b <= 0 {
		t.Fatalf("budgeted row without a budget: %v", b)
	}
	if len(res.Checks) != 2 {
		t.Fatalf("checks %v", res.Checks)
	}
}
