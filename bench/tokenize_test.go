package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/hftok"
)

func TestTokenizeConfigValidate(t *testing.T) {
	ok := DefaultTokenizeConfig()
	ok.Data, ok.Tokenizer = "d", "t"
	tests := []struct {
		name string
		mut  func(*TokenizeConfig)
		ok   bool
	}{
		{"ok", func(*TokenizeConfig) {}, true},
		{"no data", func(c *TokenizeConfig) { c.Data = "" }, false},
		{"no tokenizer", func(c *TokenizeConfig) { c.Tokenizer = "" }, false},
		{"zero pairs", func(c *TokenizeConfig) { c.Pairs = 0 }, false},
		{"max len 2", func(c *TokenizeConfig) { c.MaxLen = 2 }, false},
		{"bad truncation", func(c *TokenizeConfig) { c.Truncation = "sideways" }, false},
		{"zero rounds", func(c *TokenizeConfig) { c.Rounds = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mut(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// tinyBEIR writes a two-document, one-query BEIR folder.
func tinyBEIR(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("corpus.jsonl", `{"_id":"d1","title":"Cats","text":"Cats are small furry animals."}
{"_id":"d2","title":"","text":"Dogs bark; cats meow. Ünïcödé too."}
`)
	write("queries.jsonl", `{"_id":"q1","text":"what do cats do?"}
`)
	write("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
	return dir
}

// TestRunTokenizeNoHF runs the benchmark on a tiny BEIR folder without HF and
// writes the report.
func TestRunTokenizeNoHF(t *testing.T) {
	vocab := testenv.NeedVocabTxt(t)
	dir := tinyBEIR(t)
	cfg := DefaultTokenizeConfig()
	cfg.Data, cfg.Tokenizer, cfg.Pairs, cfg.Rounds, cfg.MaxLen, cfg.DocsPerQuery = dir, vocab, 10, 1, 16, 4
	res, err := RunTokenize(context.Background(), cfg)
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
	path, err := WriteTokenizeReport(t.TempDir(), "tokenize", "bench tokenize", res)
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

// TestRunTokenizeHFRust: with a tokenizer.json, HF in process adds a row and
// agrees with us on every pair when it is linked; otherwise the result says
// why it was skipped.
func TestRunTokenizeHFRust(t *testing.T) {
	cfg := DefaultTokenizeConfig()
	cfg.Data, cfg.Tokenizer, cfg.Pairs, cfg.Rounds, cfg.MaxLen, cfg.DocsPerQuery = tinyBEIR(t), testenv.NeedTokenizerJSON(t), 10, 1, 16, 4
	res, err := RunTokenize(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !hftok.Available {
		if !strings.Contains(res.RustSkipped, "hftokenizers") || len(res.Rows) != 3 {
			t.Fatalf("rows %d, skipped %q", len(res.Rows), res.RustSkipped)
		}
		return
	}
	if len(res.Rows) != 4 || res.Rows[3].Impl != hfRustImpl || res.Rows[3].PairsPerSec <= 0 {
		t.Fatalf("rows %+v", res.Rows)
	}
	if res.RustParityTotal != 10 || res.RustParityEqual != 10 || res.RatioRust <= 0 {
		t.Errorf("parity %d/%d ratio %v", res.RustParityEqual, res.RustParityTotal, res.RatioRust)
	}
}
