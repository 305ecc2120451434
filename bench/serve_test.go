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
		for _, c := range ServeColumns {
			if _, ok := row[c]; !ok {
				t.Fatalf("row lacks column %q", c)
			}
		}
	}
}
