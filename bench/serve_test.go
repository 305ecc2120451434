package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
)

func TestServeConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*ServeConfig)
		ok   bool
	}{
		{"default", func(*ServeConfig) {}, true},
		{"no clients", func(c *ServeConfig) { c.Clients = 0 }, false},
		{"no docs", func(c *ServeConfig) { c.Docs = 0 }, false},
		{"no duration", func(c *ServeConfig) { c.Duration = 0 }, false},
		{"bad model", func(c *ServeConfig) { c.Model.DocTokens = 600 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultServeConfig()
			tt.mod(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestRunServe drives a real server over loopback on the generated fast
// profile, batching on and off, and checks the result is filled in.
func TestRunServe(t *testing.T) {
	testenv.NeedORT(t)
	if testing.Short() {
		t.Skip("starts a server and a model")
	}
	cfg := DefaultServeConfig()
	cfg.Model.Profile = models.ProfileFast
	cfg.Model.ModelsRoot = t.TempDir()
	cfg.Model.VocabTxt, cfg.Model.TokenizerJSON = testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	cfg.Model.Threads, cfg.Model.DocTokens = 1, 20
	cfg.Clients, cfg.Docs, cfg.Duration, cfg.Warmup = 3, 4, 700*time.Millisecond, 100*time.Millisecond
	mb := NewModelBench()
	defer mb.Close()
	for _, on := range []bool{true, false} {
		r, err := mb.RunServe(context.Background(), cfg, on)
		if err != nil {
			t.Fatal(err)
		}
		if r.Batching != on || r.Requests == 0 || r.RPS <= 0 || math.Abs(r.PairsPerS-r.RPS*4) > 1e-6 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms ||
			len(r.Errors) != 0 || r.LibraryPairsPerS <= 0 || r.ModelCalls == 0 || r.Route != "/v1/rerank" {
			t.Fatalf("result %+v", r)
		}
		row := r.Row()
		for _, c := range []string{"run", "profile", "clients", "batching", "requests", "pairs_per_s", "p50_ms", "p99_ms", "errors", "pairs_per_call"} {
			if _, ok := row[c]; !ok {
				t.Fatalf("row lacks column %q", c)
			}
		}
	}

	pts, err := mb.RunServeCurve(context.Background(), cfg, []int{1, 4}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].BatchSize != 1 || pts[1].BatchSize != 4 || pts[0].Calls < 2 || pts[1].PairsPerS <= 0 || pts[1].MsPerCall <= 0 {
		t.Fatalf("curve %+v", pts)
	}
	if _, err := mb.RunServeCurve(context.Background(), cfg, []int{0}, time.Millisecond); err == nil {
		t.Fatal("batch size 0 accepted")
	}

	oc := DefaultOverloadConfig()
	oc.Serve = cfg
	oc.Clients, oc.Duration, oc.MaxConcurrentRequests, oc.QueueItems, oc.Backoff = 12, time.Second, 2, 4, time.Millisecond
	or, err := mb.RunOverload(context.Background(), oc, true)
	if err != nil {
		t.Fatal(err)
	}
	if !or.Pass() || !or.Healthy || or.Statuses["200"] == 0 || or.Statuses["429"] == 0 || or.RSSStartMiB <= 0 ||
		or.RSSPeakMiB < or.RSSPeakFirstHalfMiB || or.RSSEndMiB <= 0 {
		t.Fatalf("overload %+v", or)
	}
	if v := or.Row()["verdict"]; v != "PASS" {
		t.Fatalf("verdict %v", v)
	}
}

func TestOverloadConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*OverloadConfig)
		ok   bool
	}{
		{"default", func(*OverloadConfig) {}, true},
		{"no clients", func(c *OverloadConfig) { c.Clients = 0 }, false},
		{"no duration", func(c *OverloadConfig) { c.Duration = 0 }, false},
		{"no request bound", func(c *OverloadConfig) { c.MaxRequestsPerClient = 0 }, false},
		{"no queue", func(c *OverloadConfig) { c.QueueItems = 0 }, false},
		{"no in-flight", func(c *OverloadConfig) { c.MaxConcurrentRequests = 0 }, false},
		{"negative backoff", func(c *OverloadConfig) { c.Backoff = -1 }, false},
		{"bad serve", func(c *OverloadConfig) { c.Serve.Docs = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultOverloadConfig()
			tt.mod(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestBestCurveAndResident(t *testing.T) {
	pts := []CurvePoint{{BatchSize: 1, PairsPerS: 10}, {BatchSize: 8, PairsPerS: 30}, {BatchSize: 64, PairsPerS: 25}}
	if b := BestCurve(pts); b.BatchSize != 8 {
		t.Fatalf("best %+v", b)
	}
	if b := BestCurve(nil); b.PairsPerS != 0 {
		t.Fatalf("best of none %+v", b)
	}
	if r := residentMiB(); r <= 0 || r > 1<<20 {
		t.Fatalf("resident %v MiB", r)
	}
}
