package tokenize

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Data, ok.Tokenizer = "d", "t"
	configtest.Check(t, ok,
		configtest.OK("ok", func(*Config) {}),
		configtest.Bad("no data", func(c *Config) { c.Data = "" }),
		configtest.Bad("no tokenizer", func(c *Config) { c.Tokenizer = "" }),
		configtest.Bad("zero pairs", func(c *Config) { c.Pairs = 0 }),
		configtest.Bad("max len 2", func(c *Config) { c.MaxLen = 2 }),
		configtest.Bad("bad truncation", func(c *Config) { c.Truncation = "sideways" }),
		configtest.Bad("zero rounds", func(c *Config) { c.Rounds = 0 }),
		configtest.Bad("zero docs per query", func(c *Config) { c.DocsPerQuery = 0 }),
		configtest.Bad("parity above 1", func(c *Config) { c.Targets.MinParity = 1.5 }),
		configtest.Bad("negative parity", func(c *Config) { c.Targets.MinParity = -0.1 }),
	)
}

// TestRunTokenizeNoHF runs the benchmark on a tiny BEIR folder without HF and
// writes the report.
func TestRunTokenizeNoHF(t *testing.T) {
	vocab := testenv.NeedVocabTxt(t)
	dir := t.TempDir()
	docs := []eval.Doc{{ID: "d1", Title: "Cats", Text: "Cats are small furry animals."}, {ID: "d2", Text: "Dogs bark; cats meow. Ünïcödé too."}}
	if err := eval.WriteBEIR(dir, docs, []eval.Query{{ID: "q1", Text: "what do cats do?"}}, eval.Qrels{"q1": {"d1": 1}}); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Data, cfg.Tokenizer, cfg.Pairs, cfg.Rounds, cfg.MaxLen, cfg.DocsPerQuery = dir, vocab, 10, 1, 16, 4
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.HFSkipped == "" {
		t.Fatalf("rows %d, hf skipped %q", len(res.Rows), res.HFSkipped)
	}
	for _, r := range res.Rows {
		if r.PairsPerSec <= 0 || r.Tokens <= 10*3 {
			t.Errorf("row %+v: bad figures", r)
		}
	}
	if len(res.Checks) != 0 {
		t.Errorf("checks without HF: %+v", res.Checks)
	}
	path, err := report.Write(t.TempDir(), "tokenize", Report(cfg, res, "bench tokenize"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "EncodePairs") || !strings.Contains(string(md), "HF not measured") {
		t.Errorf("report lacks rows or notes:\n%s", md)
	}
}

func TestTargetsCheck(t *testing.T) {
	tg := DefaultConfig().Targets
	if cs := tg.Check(Result{HFSkipped: "no addon"}); cs != nil {
		t.Fatalf("checks without HF: %+v", cs)
	}
	cs := tg.Check(Result{ParityEqual: 2000, ParityTotal: 2000, Ratio: 20.3})
	if len(cs) != 2 || !cs[0].Passed() || cs[0].Value != 1 || cs[1].Verdict != report.Info || cs[1].Value != 20.3 {
		t.Fatalf("all equal: %+v", cs)
	}
	if cs := tg.Check(Result{ParityEqual: 1999, ParityTotal: 2000}); cs[0].Passed() {
		t.Fatalf("one pair differs yet %+v", cs[0])
	}
	tg.MinParity = 0.99
	if cs := tg.Check(Result{ParityEqual: 1999, ParityTotal: 2000}); !cs[0].Passed() {
		t.Fatalf("99.95%% against 99%%: %+v", cs[0])
	}
}
