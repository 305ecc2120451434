package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
)

func TestJoinPieces(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"hello"}, "hello"},
		{[]string{"un", "##believ", "##able", "story"}, "unbelievable story"},
	}
	for _, tt := range tests {
		if got := joinPieces(tt.in); got != tt.want {
			t.Errorf("joinPieces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRerankConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*RerankConfig)
		ok   bool
	}{
		{"default", func(*RerankConfig) {}, true},
		{"no model", func(c *RerankConfig) { c.Profile = "" }, false},
		{"zero pairs", func(c *RerankConfig) { c.Pairs = 0 }, false},
		{"too long", func(c *RerankConfig) { c.DocTokens = 510 }, false},
		{"zero pool", func(c *RerankConfig) { c.PoolSize = 0 }, false},
		{"negative peak", func(c *RerankConfig) { c.PeakN = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultRerankConfig()
			tt.mod(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestRerankAndEmbedRuns runs the drivers end to end on the generated fast
// profile and a tiny embedder sweep, and writes the report.
func TestRerankAndEmbedRuns(t *testing.T) {
	testenv.NeedORT(t)
	cfg := DefaultRerankConfig()
	cfg.Profile = models.ProfileFast
	cfg.ModelsRoot = t.TempDir()
	cfg.VocabTxt, cfg.TokenizerJSON = testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	cfg.Threads, cfg.Pairs, cfg.DocTokens, cfg.QueryTokens = 1, 6, 20, 5
	cfg.MinTime, cfg.MinCalls, cfg.PeakN = 0, 2, 128
	mb := NewModelBench()
	defer mb.Close()
	ctx := context.Background()
	sc := SweepConfig{BatchPairs: []int{1, 4}}
	var emitted int
	res, err := mb.RerankSweep(ctx, cfg, sc, models.KindCrossEncoder, func(RerankResult) { emitted++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || emitted != 2 {
		t.Fatalf("%d results, %d emitted", len(res), emitted)
	}
	for _, r := range res {
		// Synthetic text is exact: 3 specials + query + document tokens.
		if r.SeqLen != 28 || r.Calls < 2 || r.PairsPerS <= 0 || r.GFLOPs <= 0 || r.PeakGFLOPs <= 0 || r.RealWeights || r.Provider != "cpu" {
			t.Fatalf("result %+v", r)
		}
	}
	if res[0].BatchPairs != 1 || res[1].BatchPairs != 4 || res[1].BatchTokens != 4*28 {
		t.Fatalf("batch sizes %+v / %+v", res[0], res[1])
	}

	// A TinyBERT-shaped embedder keeps the test fast (the embed profile
	// has 22M parameters to generate).
	ecfg := cfg
	ecfg.Profile = models.ProfileEmbed
	ecfg.PeakN = 0
	ecfg.ModelDir = filepath.Join(t.TempDir(), "embed-small")
	small := bertgen.TinyBERTL2CrossEncoder()
	small.Kind = bertgen.BiEncoder
	if err := bertgen.Write(ecfg.ModelDir, small, cfg.VocabTxt, cfg.TokenizerJSON); err != nil {
		t.Fatal(err)
	}
	er, err := mb.RunEmbed(ctx, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	if er.SeqLen != 22 || er.Kind != string(models.KindEmbedder) || er.PairsPerS <= 0 {
		t.Fatalf("embed result %+v", er)
	}

	out := t.TempDir()
	path, err := WriteModelReport(out, "rerank", "bench rerank --test", res, nil)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "rerank.svg") || !strings.Contains(string(md), `"pairs_per_s"`) {
		t.Fatalf("report:\n%s", md)
	}
	svg, err := os.ReadFile(filepath.Join(out, "rerank.svg"))
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("svg: %v", err)
	}
	// The generated directories are reused, not rewritten.
	st, err := os.Stat(filepath.Join(cfg.ModelsRoot, "fast", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeldir.Write(cfg.ModelsRoot, "fast", cfg.VocabTxt, cfg.TokenizerJSON, false); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(filepath.Join(cfg.ModelsRoot, "fast", "config.json"))
	if !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("WriteModel rewrote an existing directory")
	}

	// Queries and documents from a BEIR dataset, documents cut to exactly
	// DocTokens word pieces.
	t.Run("beir text", func(t *testing.T) {
		dcfg := cfg
		dcfg.Data = testenv.NeedDataset(t, "scifact")
		dcfg.Pairs, dcfg.DocTokens, dcfg.MinCalls, dcfg.PeakN = 4, 24, 1, 0
		r, err := mb.RunRerank(ctx, dcfg)
		if err != nil {
			t.Fatal(err)
		}
		// [CLS] query [SEP] 24 document pieces [SEP].
		if r.Data != "scifact" || r.SeqLen < 28 || r.SeqLen > 24+3+64 || r.PairsPerS <= 0 {
			t.Fatalf("result %+v", r)
		}
	})
}
