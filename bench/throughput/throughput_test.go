package throughput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
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

func TestConfigValidate(t *testing.T) {
	configtest.Check(t, DefaultConfig(models.KindCrossEncoder),
		configtest.OK("default", func(*Config) {}),
		configtest.Bad("no model", func(c *Config) { c.Profile = "" }),
		configtest.Bad("zero pairs", func(c *Config) { c.Pairs = 0 }),
		configtest.Bad("too long", func(c *Config) { c.DocTokens = 510 }),
		configtest.Bad("zero pool", func(c *Config) { c.PoolSize = 0 }),
		configtest.Bad("negative peak", func(c *Config) { c.PeakN = -1 }),
		configtest.Bad("call per batch without batches", func(c *Config) { c.Sweep.CallPerBatch = true }),
		configtest.OK("call per batch", func(c *Config) { c.Sweep.CallPerBatch, c.Sweep.BatchPairs = true, []int{1, 8} }),
		configtest.OK("model dir only", func(c *Config) { c.Profile, c.ModelDir = "", "/m" }),
		configtest.OK("custom name with a dir", func(c *Config) { c.Profile, c.ModelDir = "bge-reranker", "/m" }),
		configtest.Bad("unknown profile", func(c *Config) { c.Profile = "huge" }),
		configtest.Bad("embedder profile", func(c *Config) { c.Profile = "embed" }),
		configtest.Bad("sweep of the wrong kind", func(c *Config) { c.Sweep.Profiles = []string{"fast", "embed"} }),
		configtest.OK("default sweep", func(c *Config) { c.Sweep = DefaultSweep(c.Kind) }),
		configtest.Bad("sweep batch 0", func(c *Config) { c.Sweep.BatchPairs = []int{0} }),
		configtest.Bad("sweep too long", func(c *Config) { c.Sweep.DocTokens = []int{128, 600} }),
		configtest.Bad("no kind", func(c *Config) { c.Kind = "" }),
	)
}

// TestRerankAndEmbedRuns runs the drivers end to end on the generated fast
// profile and a tiny embedder sweep, and writes the report.
func TestRerankAndEmbedRuns(t *testing.T) {
	testenv.NeedORT(t)
	cfg := DefaultConfig(models.KindCrossEncoder)
	cfg.Profile = models.ProfileFast
	cfg.Models = modeldir.Source{Root: t.TempDir(), VocabTxt: testenv.NeedVocabTxt(t), TokenizerJSON: testenv.NeedTokenizerJSON(t)}
	cfg.Threads, cfg.Pairs, cfg.DocTokens, cfg.QueryTokens = 1, 6, 20, 5
	cfg.MinTime, cfg.MinCalls, cfg.PeakN = 0, 2, 128
	cfg.Sweep = Sweep{BatchPairs: []int{1, 4}}
	var log bytes.Buffer
	cfg.Log = &log
	ctx := context.Background()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := out.Rows
	if emitted := strings.Count(log.String(), "\n"); len(res) != 2 || emitted != 2 {
		t.Fatalf("%d results, %d emitted", len(res), emitted)
	}
	for _, r := range res {
		// Synthetic text is exact: 3 specials + query + document tokens.
		if r.SeqLen != 28 || r.Calls < 2 || r.PairsPerS <= 0 || r.GFLOPs <= 0 || r.PeakGFLOPs <= 0 || r.RealWeights || r.Provider != "cpu" {
			t.Fatalf("result %+v", r)
		}
	}
	// BatchPairs is the mean per runtime call the batcher chose: at most
	// the cap's 4 (cost batching may cut smaller).
	if res[0].BatchPairs != 1 || res[1].BatchPairs < 1 || res[1].BatchPairs > 4 || res[1].BatchTokens != 4*28 {
		t.Fatalf("batch sizes %+v / %+v", res[0], res[1])
	}
	if _, err := RunKind(ctx, cfg, models.KindEmbedder); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("cross-encoder config run as embed: %v", err)
	}

	// A TinyBERT-shaped embedder keeps the test fast (the embed profile
	// has 22M parameters to generate).
	ecfg := cfg
	ecfg.Kind, ecfg.Profile, ecfg.Sweep, ecfg.Log = models.KindEmbedder, models.ProfileEmbed, Sweep{}, nil
	ecfg.PeakN = 0
	ecfg.ModelDir = filepath.Join(t.TempDir(), "embed-small")
	small := bertgen.TinyBERTL2CrossEncoder()
	small.Kind = bertgen.BiEncoder
	if err := bertgen.Write(ecfg.ModelDir, small, cfg.Models.VocabTxt, cfg.Models.TokenizerJSON); err != nil {
		t.Fatal(err)
	}
	eres, err := Run(ctx, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	if er := eres.Rows[0]; len(eres.Rows) != 1 || er.SeqLen != 22 || er.Kind != string(models.KindEmbedder) || er.PairsPerS <= 0 {
		t.Fatalf("embed result %+v", eres.Rows)
	}

	dir := t.TempDir()
	path, err := report.Write(dir, "rerank", Report("rerank", cfg, out, "bench rerank --test"))
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
	svg, err := os.ReadFile(filepath.Join(dir, "rerank.svg"))
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("svg: %v", err)
	}
	// The JSON lines of --json read back into the same rows.
	var lines bytes.Buffer
	for _, r := range res {
		b, _ := json.Marshal(r)
		lines.Write(append(b, '\n'))
	}
	saved := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(saved, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadRows(saved); err != nil || len(back) != 2 || !reflect.DeepEqual(back[1], res[1]) {
		t.Fatalf("read back %+v, %v", back, err)
	}
	// The generated directories are reused, not rewritten.
	st, err := os.Stat(filepath.Join(cfg.Models.Root, "fast", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeldir.Write(cfg.Models.Root, "fast", cfg.Models.VocabTxt, cfg.Models.TokenizerJSON, false); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(filepath.Join(cfg.Models.Root, "fast", "config.json"))
	if !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("WriteModel rewrote an existing directory")
	}

	// Queries and documents from a BEIR dataset, documents cut to exactly
	// DocTokens word pieces.
	t.Run("beir text", func(t *testing.T) {
		dcfg := cfg
		dcfg.Data = testenv.NeedDataset(t, "scifact")
		dcfg.Pairs, dcfg.DocTokens, dcfg.MinCalls, dcfg.PeakN, dcfg.Sweep, dcfg.Log = 4, 24, 1, 0, Sweep{}, nil
		dres, err := Run(ctx, dcfg)
		if err != nil {
			t.Fatal(err)
		}
		// [CLS] query [SEP] 24 document pieces [SEP].
		if r := dres.Rows[0]; r.Data != "scifact" || r.SeqLen < 28 || r.SeqLen > 24+3+64 || r.PairsPerS <= 0 {
			t.Fatalf("result %+v", r)
		}
	})
}

func TestMeasureTextRounds(t *testing.T) {
	testenv.NeedORT(t)
	dir := filepath.Join(t.TempDir(), "fast-small")
	if err := bertgen.Write(dir, bertgen.TinyBERTL2CrossEncoder(), testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)); err != nil {
		t.Fatal(err)
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := md.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultConfig(models.KindCrossEncoder).Spec
	s.ModelDir, s.Threads, s.Pairs, s.DocTokens, s.QueryTokens, s.PeakN = dir, 1, 6, 20, 5, 0
	text, err := MakeText(s, tok)
	if err != nil {
		t.Fatal(err)
	}
	capped := s
	capped.Batching, capped.BatchTokens = models.BatchingTokens, 512
	rows, err := MeasureTextRounds(context.Background(), dir, []Spec{s, capped}, text, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Batching != models.BatchingCost || rows[1].Batching != models.BatchingTokens || rows[1].BatchTokens != 512 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		// Every spec scored the same pairs: one pass (a call per query, 6
		// pairs of 28 tokens each), its median among 3.
		if r.Calls != len(text.Queries) || r.PaddedTokens != 6*28*len(text.Queries) || r.SeqLen != 28 || r.PairsPerS <= 0 || r.GFLOPs <= 0 || r.GFLOPsBest < r.GFLOPs || r.PeakGFLOPs != 0 {
			t.Fatalf("row %+v", r)
		}
	}
	if _, err := MeasureTextRounds(context.Background(), dir, []Spec{s}, text, 0); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("0 rounds: %v", err)
	}
}

// TestMeasureTextWholePasses: timed calls end with a whole pass over the
// queries, so every query counts equally (the peer rerank is compared with
// scores every pair once per round), and the best rate is a call's own:
// at least the overall rate.
func TestMeasureTextWholePasses(t *testing.T) {
	dir, s := generatedSpec(t, models.KindCrossEncoder, models.ProfileFast)
	s.MinCalls = 3
	text := Text{Queries: []string{"short query", "another query"},
		PerQuery: [][]string{{"one tiny doc"}, {"a much longer document with many more words in it than the first one has", "and a second document for this query"}}}
	row, _, err := MeasureText(context.Background(), dir, s, models.KindCrossEncoder, text)
	if err != nil {
		t.Fatal(err)
	}
	if row.Calls != 4 {
		t.Errorf("%d timed calls over 2 queries with at least 3 asked: want 4, two whole passes", row.Calls)
	}
	if row.GFLOPsBest < row.GFLOPs-0.01 {
		t.Errorf("gflops_best %v below the overall %v: the fastest call's own rate cannot be", row.GFLOPsBest, row.GFLOPs)
	}
}

// TestMeasureTextEmbedderCalls: an embedder's calls all embed the same
// texts, so MinCalls and MinTime decide their number; whole passes over
// the queries are a cross-encoder's (they had made one call per dataset
// query).
func TestMeasureTextEmbedderCalls(t *testing.T) {
	dir, s := generatedSpec(t, models.KindEmbedder, models.ProfileEmbed)
	s.MinCalls = 2
	text := Text{Queries: make([]string, 40), Docs: []string{"one text", "another text"}}
	row, _, err := MeasureText(context.Background(), dir, s, models.KindEmbedder, text)
	if err != nil {
		t.Fatal(err)
	}
	if row.Calls != 2 {
		t.Errorf("%d calls for MinCalls 2 and no MinTime: want 2", row.Calls)
	}
}

// generatedSpec writes the generated model of profile (skipping without
// the runtime or the tokenizer assets) and returns its folder and a Spec
// of one thread, no minimum time and no peak measurement.
func generatedSpec(t *testing.T, kind models.Kind, profile string) (string, Spec) {
	t.Helper()
	testenv.NeedORT(t)
	cfg := DefaultConfig(kind)
	cfg.Profile = profile
	cfg.Models = modeldir.Source{Root: t.TempDir(), VocabTxt: testenv.NeedVocabTxt(t), TokenizerJSON: testenv.NeedTokenizerJSON(t)}
	r := modeldir.NewResolver(cfg.Models)
	t.Cleanup(func() { r.Close() })
	dir, err := r.Dir(cfg.Profile, "")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Spec
	s.Threads, s.MinTime, s.PeakN = 1, 0, 0
	return dir, s
}

// TestBatchPairs: the column is the mean pairs per runtime call (1,280
// pairs in 40 calls: 32, whatever the cap), the cap's worth only without
// calls counted.
func TestBatchPairs(t *testing.T) {
	if got := batchPairs(models.Usage{Pairs: 1280, Batches: 40}, 16384, 376); got != 32 {
		t.Errorf("40 calls of 32 pairs: %d", got)
	}
	if got := batchPairs(models.Usage{Pairs: 10}, 16384, 376); got != 43 {
		t.Errorf("no calls counted, cap 16384 at 376 tokens: %d, want 43", got)
	}
}
