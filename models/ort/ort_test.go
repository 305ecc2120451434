package ort_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/onnx"
)

// Generated model directories are shared by the tests of this package and
// removed by TestMain.
var (
	genRoot string
	genMu   sync.Mutex
	genDirs = map[string]*genModel{}
)

type genModel struct {
	dir string
	w   *bertgen.Weights
}

func TestMain(m *testing.M) {
	code := m.Run()
	if genRoot != "" {
		os.RemoveAll(genRoot)
	}
	os.Exit(code)
}

// smallConfig is a BERT small enough for the float64 reference.
func smallConfig(kind bertgen.Kind) bertgen.Config {
	c := bertgen.TinyBERTL2CrossEncoder()
	c.Name, c.Kind = "small-"+string(kind), kind
	c.Hidden, c.Heads, c.Intermediate = 32, 4, 64
	c.Seed = 7
	return c
}

// generated writes (once per test binary) the model directory for cfg.
func generated(t testing.TB, cfg bertgen.Config) *genModel {
	t.Helper()
	testenv.NeedORT(t)
	vocab := testenv.NeedVocabTxt(t)
	tj := testenv.NeedTokenizerJSON(t)
	genMu.Lock()
	defer genMu.Unlock()
	key := fmt.Sprintf("%+v", cfg)
	if g, ok := genDirs[key]; ok {
		return g
	}
	if genRoot == "" {
		var err error
		if genRoot, err = os.MkdirTemp("", "hybrank-models-test-"); err != nil {
			t.Fatal(err)
		}
	}
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(genRoot, fmt.Sprint(len(genDirs)))
	if err := bertgen.WriteWeights(dir, w, vocab, tj); err != nil {
		t.Fatal(err)
	}
	g := &genModel{dir: dir, w: w}
	genDirs[key] = g
	return g
}

func cpuConfig(dir string, profile string) models.Config {
	c, err := models.ProfileConfig(profile)
	if err != nil {
		panic(err)
	}
	c.Dir = dir
	c.Provider = "cpu"
	c.IntraOpThreads = 1
	return c
}

func tokenizer(t *testing.T, dir string) *wordpiece.Tokenizer {
	t.Helper()
	md, err := models.OpenModelDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := md.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func to64(x []int32) []int64 {
	out := make([]int64, len(x))
	for i, v := range x {
		out[i] = int64(v)
	}
	return out
}

func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

var testDocs = []string{
	"",
	"a short document",
	"The quick brown fox jumps over the lazy dog near the riverbank at dawn.",
	strings.Repeat("cross encoders score query document pairs jointly ", 6),
	"Ünïcödé wörds, CJK 漢字 and emoji 🙂 with punctuation!?",
	"bad utf8 \xff\xfe here",
}

// TestCrossEncoderMatchesReference checks scores against bertgen's float64
// forward pass, one unpadded sequence at a time: batching, padding, type
// ids, truncation and output order must not change a score.
func TestCrossEncoderMatchesReference(t *testing.T) {
	g := generated(t, smallConfig(bertgen.CrossEncoder))
	// The fused copies go to TMPDIR and are removed once loaded.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer func() {
		if left, _ := filepath.Glob(filepath.Join(tmp, "hybrank-fused-*")); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}()
	for _, tc := range []struct {
		name                string
		maxLen, batchTokens int
		pool                int
		sigmoid, noFusion   bool
	}{
		{"full length one batch", 0, 16384, 1, false, false},
		{"truncated small batches", 24, 48, 1, false, false},
		{"pool of two sigmoid", 32, 64, 2, true, false},
		{"graph as in the file", 32, 64, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cpuConfig(g.dir, models.ProfileFast)
			cfg.MaxLength, cfg.MaxBatchTokens, cfg.PoolSize, cfg.Sigmoid = tc.maxLen, tc.batchTokens, tc.pool, tc.sigmoid
			cfg.DisableFusion = tc.noFusion
			ce, err := ort.NewCrossEncoder(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ce.Close()
			query := "what do cross encoders score"
			got, usage, err := ce.ScoreWithUsage(context.Background(), query, testDocs)
			if err != nil {
				t.Fatal(err)
			}
			if ce.Provider() != "cpu" {
				t.Fatalf("provider %q", ce.Provider())
			}
			// Two layers: each one's attention and feed-forward blocks
			// end in a residual LayerNormalization, fused on the CPU, and
			// so does the embeddings'; the last layer computes [CLS] only
			// past its keys and values.
			wantFusion := "5 SkipLayerNorm (4 with bias), first token: 22 nodes (6 MatMul)"
			if tc.noFusion {
				wantFusion = "off"
			}
			if ce.Plan().Loaded.Fusion != wantFusion {
				t.Fatalf("fusion %q, want %q", ce.Plan().Loaded.Fusion, wantFusion)
			}
			_, maxLen, err := ce.Info()
			if err != nil {
				t.Fatal(err)
			}
			tok := tokenizer(t, g.dir)
			tokens := 0
			for i, d := range testDocs {
				e, err := tok.EncodePair(query, strings.ToValidUTF8(d, "\uFFFD"), maxLen, wordpiece.LongestFirst)
				if err != nil {
					t.Fatal(err)
				}
				tokens += e.Len()
				ref, err := bertgen.Reference(context.Background(), g.w, [][]int64{to64(e.IDs)}, [][]int64{ones(e.Len())}, [][]int64{to64(e.TypeIDs)})
				if err != nil {
					t.Fatal(err)
				}
				want := ref.Logits[0]
				if tc.sigmoid {
					want = 1 / (1 + math.Exp(-want))
				}
				if math.Abs(float64(got[i])-want) > 1e-4 {
					t.Errorf("doc %d: score %.6f, reference %.6f", i, got[i], want)
				}
			}
			if usage.Tokens != tokens || usage.Pairs != len(testDocs) || usage.Batches < 1 {
				t.Fatalf("usage %+v, want %d tokens", usage, tokens)
			}
		})
	}
}

func TestBiEncoderMatchesReference(t *testing.T) {
	g := generated(t, smallConfig(bertgen.BiEncoder))
	cfg := cpuConfig(g.dir, models.ProfileEmbed)
	cfg.MaxLength, cfg.MaxBatchTokens = 32, 64
	be, err := ort.NewBiEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	vecs, err := be.Embed(context.Background(), models.InputRaw, testDocs)
	if err != nil {
		t.Fatal(err)
	}
	if be.Dim() != 32 {
		t.Fatalf("Dim() = %d", be.Dim())
	}
	tok := tokenizer(t, g.dir)
	for i, d := range testDocs {
		e, err := tok.Encode(strings.ToValidUTF8(d, "\uFFFD"), 32)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := bertgen.Reference(context.Background(), g.w, [][]int64{to64(e.IDs)}, [][]int64{ones(e.Len())}, [][]int64{to64(e.TypeIDs)})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 32)
		for _, row := range ref.LastHiddenState[0] {
			for k, v := range row {
				want[k] += v / float64(e.Len())
			}
		}
		var norm float64
		for _, v := range want {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for k := range want {
			if math.Abs(float64(vecs[i][k])-want[k]/norm) > 1e-4 {
				t.Fatalf("text %d dim %d: %.6f, reference %.6f", i, k, vecs[i][k], want[k]/norm)
			}
		}
	}
}

// TestBiEncoderEmbedPooled checks that EmbedPooled returns the pooled
// vectors before normalisation: not unit length, and equal to Embed's
// vectors once normalised.
func TestBiEncoderEmbedPooled(t *testing.T) {
	g := generated(t, smallConfig(bertgen.BiEncoder))
	cfg := cpuConfig(g.dir, models.ProfileEmbed)
	cfg.MaxLength, cfg.MaxBatchTokens = 32, 64
	be, err := ort.NewBiEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	unit, _, err := be.EmbedWithUsage(ctx, models.InputRaw, testDocs)
	if err != nil {
		t.Fatal(err)
	}
	raw, usage, err := be.EmbedPooled(ctx, models.InputRaw, testDocs)
	if err != nil {
		t.Fatal(err)
	}
	if usage.Pairs != len(testDocs) || usage.Tokens == 0 {
		t.Fatalf("usage %+v", usage)
	}
	for i := range testDocs {
		var norm float64
		for _, v := range raw[i] {
			norm += float64(v) * float64(v)
		}
		norm = math.Sqrt(norm)
		if math.Abs(norm-1) < 1e-3 {
			t.Fatalf("text %d: pooled vector has norm %.6f, want the unnormalised vector", i, norm)
		}
		for k, v := range raw[i] {
			if math.Abs(float64(v)/norm-float64(unit[i][k])) > 1e-5 {
				t.Fatalf("text %d dim %d: pooled/|pooled| = %.6f, Embed %.6f", i, k, float64(v)/norm, unit[i][k])
			}
		}
	}
}

// fastDir generates the real fast-profile shape (TinyBERT-L-2).
func fastDir(t testing.TB) string {
	return generated(t, bertgen.TinyBERTL2CrossEncoder()).dir
}

func TestFastProfileBadInput(t *testing.T) {
	dir := fastDir(t)
	cfg := cpuConfig(dir, models.ProfileFast)
	cfg.Provider = "auto" // no GPU here: must report cpu
	cfg.IntraOpThreads = 0
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	ctx := context.Background()
	tests := []struct {
		name    string
		query   string
		docs    []string
		wantErr error
	}{
		{"empty query", "", []string{"x"}, models.ErrEmptyQuery},
		{"query the tokenizer drops", "\xff\xfe \u200b", []string{"x"}, models.ErrEmptyQuery},
		{"no docs", "q", nil, nil},
		{"empty docs", "q", []string{"", "", ""}, nil},
		{"invalid utf8", "q\xc3", []string{"\xff\xff\xff", "\xe2\x82"}, nil},
		{"1 MB document", "q", []string{strings.Repeat("megabyte document text ", 1<<20/23)}, nil},
		{"1 MB query", strings.Repeat("long query ", 1<<20/11), []string{"doc"}, nil},
		{"10,000 docs over cap", "q", make([]string, 10000), models.ErrTooManyDocs},
	}
	// In ScorePairs, whose pairs may come from many requests, such a query
	// fails nothing: it is scored with an empty query part.
	if s, _, err := ce.ScorePairs(ctx, []models.Pair{{Query: "what is a cat", Doc: "a cat is an animal"}, {Query: "\u200b", Doc: "x"}}); err != nil || len(s) != 2 {
		t.Errorf("ScorePairs with a query the tokenizer drops: %v, %v", s, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ce.Score(ctx, tt.query, tt.docs)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if len(got) != len(tt.docs) {
					t.Fatalf("%d scores for %d docs", len(got), len(tt.docs))
				}
				for i, s := range got {
					if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
						t.Fatalf("score %d = %v", i, s)
					}
				}
			}
		})
	}
	if ce.Provider() != "cpu" {
		t.Fatalf("auto provider reports %q here, want cpu", ce.Provider())
	}
	// Raising MaxDocs makes 10,000 documents work.
	cfg.MaxDocs = 10000
	big, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	docs := make([]string, 10000)
	for i := range docs {
		docs[i] = fmt.Sprintf("document number %d", i)
	}
	got, usage, err := big.ScoreWithUsage(ctx, "which document", docs)
	if err != nil || len(got) != len(docs) {
		t.Fatalf("10,000 docs: %d scores, %v", len(got), err)
	}
	if usage.PaddedTokens > usage.Batches*cfg.MaxBatchTokens {
		t.Fatalf("usage %+v exceeds batch cap", usage)
	}
}

// TestCUDAProvider runs on a machine with the CUDA execution provider (a
// GPU and `make runtime-gpu`) and skips with the reason elsewhere: provider
// auto picks CUDA, and every cross-encoder profile's shape and the
// embedder's give the CPU provider's scores and vectors within 1e-4
// relative on real-length pairs (scifact when present).
func TestCUDAProvider(t *testing.T) {
	probe, err := ort.NewCrossEncoder(cpuConfigWith(fastDir(t), models.ProfileFast, "cuda"))
	if err != nil {
		t.Fatal(err)
	}
	err = probe.Load()
	probe.Close()
	if errors.Is(err, onnx.ErrProviderUnavailable) {
		if os.Getenv("HYBRANK_REQUIRE_CUDA") != "" {
			// The GPU run (bench/gpu/device.sh): a broken CUDA setup
			// must fail the step that is there to show CUDA works.
			t.Fatalf("HYBRANK_REQUIRE_CUDA is set and the CUDA provider does not start: %v", err)
		}
		t.Skipf("no CUDA execution provider here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	queries, docs, source := realLengthPairs(t)
	if testing.Short() {
		queries, docs = queries[:2], docs[:2]
	}
	ctx := context.Background()
	for _, p := range []struct {
		name string
		cfg  bertgen.Config
	}{{models.ProfileFast, bertgen.TinyBERTL2CrossEncoder()}, {models.ProfileBalanced, bertgen.MiniLML6CrossEncoder()}, {models.ProfileAccurate, bertgen.MiniLML12CrossEncoder()}} {
		t.Run(p.name, func(t *testing.T) { // each profile closes its sessions when done
			dir := generated(t, p.cfg).dir
			gpu, err := ort.NewCrossEncoder(cpuConfigWith(dir, p.name, "auto"))
			if err != nil {
				t.Fatal(err)
			}
			defer gpu.Close()
			cpu, err := ort.NewCrossEncoder(cpuConfigWith(dir, p.name, "cpu"))
			if err != nil {
				t.Fatal(err)
			}
			defer cpu.Close()
			if err := gpu.Load(); err != nil || gpu.Provider() != "cuda" {
				t.Fatalf("%s: provider auto chose %q (%v) where cuda works", p.name, gpu.Provider(), err)
			}
			// The CUDA sessions run the last layer for [CLS] only too
			// (fuse.ForCUDA: no SkipLayerNorm there).
			if want := "first token: 26 nodes (6 MatMul)"; gpu.Plan().Loaded.Fusion != want {
				t.Fatalf("%s: CUDA fusion %q, want %q", p.name, gpu.Plan().Loaded.Fusion, want)
			}
			for i, q := range queries {
				a, err := gpu.Score(ctx, q, docs[i])
				if err != nil {
					t.Fatal(err)
				}
				b, err := cpu.Score(ctx, q, docs[i])
				if err != nil {
					t.Fatal(err)
				}
				if j, ok := closeRel(a, b, 1e-4); !ok {
					t.Fatalf("%s, %s query %d doc %d: cuda %v, cpu %v", p.name, source, i, j, a[j], b[j])
				}
			}
		})
	}
	dir := generated(t, bertgen.MiniLML6Embedder()).dir
	var vecs [2][][]float32
	for k, provider := range []string{"cuda", "cpu"} {
		be, err := ort.NewBiEncoder(cpuConfigWith(dir, models.ProfileEmbed, provider))
		if err != nil {
			t.Fatal(err)
		}
		vecs[k], err = be.Embed(ctx, models.InputDocument, docs[0])
		be.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range vecs[0] {
		// Unit vectors: relative to their length, 1.
		for j := range vecs[0][i] {
			if d := math.Abs(float64(vecs[0][i][j] - vecs[1][i][j])); d > 1e-4 {
				t.Fatalf("embed %s doc %d dim %d: cuda %v, cpu %v", source, i, j, vecs[0][i][j], vecs[1][i][j])
			}
		}
	}
}

// cpuConfigWith is cpuConfig on another provider.
func cpuConfigWith(dir, profile, provider string) models.Config {
	c := cpuConfig(dir, profile)
	c.Provider = provider
	return c
}

// closeRel reports whether a and b agree within rel of the larger
// magnitude (plus 1e-6 for values near zero), and else the first index
// where they do not.
func closeRel(a, b []float32, rel float64) (int, bool) {
	if len(a) != len(b) {
		return 0, false
	}
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		if math.Abs(x-y) > rel*max(math.Abs(x), math.Abs(y))+1e-6 {
			return i, false
		}
	}
	return 0, true
}

func TestCloseWhileScoring(t *testing.T) {
	ce, err := ort.NewCrossEncoder(cpuConfig(fastDir(t), models.ProfileFast))
	if err != nil {
		t.Fatal(err)
	}
	if err := ce.Load(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_, err := ce.Score(context.Background(), "q", []string{"some text", "more text here"})
				if err != nil && !errors.Is(err, models.ErrClosed) {
					t.Error(err)
					return
				}
			}
		})
	}
	if err := ce.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := ce.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestLongQueryKeepsHalf checks the truncation rule on the real tokenizer:
// a query longer than half the budget is cut to half, the same for every
// document, and documents get the rest.
func TestLongQueryKeepsHalf(t *testing.T) {
	g := generated(t, smallConfig(bertgen.CrossEncoder))
	cfg := cpuConfig(g.dir, models.ProfileFast)
	cfg.MaxLength, cfg.MaxBatchTokens = 64, 128
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	query := strings.Repeat("retrieval ", 300)
	docs := []string{"tiny doc", strings.Repeat("long document ", 100)}
	_, usage, err := ce.ScoreWithUsage(context.Background(), query, docs)
	if err != nil {
		t.Fatal(err)
	}
	// (64-3)/2 = 30 query pieces; "tiny doc" is 2; the long doc fills 64.
	if want := (3 + 30 + 2) + 64; usage.Tokens != want {
		t.Fatalf("tokens %d, want %d", usage.Tokens, want)
	}
}

func TestMissingDirReportedOnFirstUse(t *testing.T) {
	cfg := models.DefaultConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "absent")
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	if err := ce.Load(); !errors.Is(err, models.ErrModelDir) {
		t.Fatalf("Load() = %v, want ErrModelDir", err)
	}
	t.Setenv(models.ModelsEnv, "")
	cfg.Dir = ""
	ce2, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ce2.Load(); !errors.Is(err, models.ErrModelDir) {
		t.Fatalf("Load() without dir = %v, want ErrModelDir", err)
	}
}
