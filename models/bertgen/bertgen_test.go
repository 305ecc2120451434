package bertgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*bertgen.Config)
		ok   bool
	}{
		{"preset", func(*bertgen.Config) {}, true},
		{"bad kind", func(c *bertgen.Config) { c.Kind = "decoder" }, false},
		{"zero layers", func(c *bertgen.Config) { c.Layers = 0 }, false},
		{"heads do not divide hidden", func(c *bertgen.Config) { c.Heads = 5 }, false},
		{"negative vocab", func(c *bertgen.Config) { c.VocabSize = -1 }, false},
		{"zero eps", func(c *bertgen.Config) { c.LayerNormEps = 0 }, false},
		{"NaN std", func(c *bertgen.Config) { c.InitStd = math.NaN() }, false},
		{"too big for one file", func(c *bertgen.Config) { c.Hidden, c.Intermediate, c.Heads, c.Layers = 8192, 32768, 64, 12 }, false},
		// 1.7e9 parameters: under 2e9, but 7 GB of float32.
		{"2 GB of bytes, not of parameters", func(c *bertgen.Config) { c.Hidden, c.Intermediate, c.Heads, c.Layers = 4096, 16384, 32, 8 }, false},
		{"just under 2 GB", func(c *bertgen.Config) { c.Hidden, c.Intermediate, c.Heads, c.Layers = 1024, 4096, 16, 32 }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := bertgen.MiniLML6CrossEncoder()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, bertgen.ErrBadConfig) {
				t.Fatalf("%v does not wrap ErrBadConfig", err)
			}
		})
	}
}

// Parameter counts of the Hugging Face models the presets copy (BertModel
// without pooler for the embedder, since its export does not use it).
func TestPresetParams(t *testing.T) {
	tests := []struct {
		cfg  bertgen.Config
		want int64
	}{
		{bertgen.TinyBERTL2CrossEncoder(), 4_386_049},
		{bertgen.MiniLML6CrossEncoder(), 22_713_601},
		{bertgen.MiniLML12CrossEncoder(), 33_360_385},
		{bertgen.MiniLML6Embedder(), 22_565_376},
	}
	for _, tc := range tests {
		t.Run(tc.cfg.Name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tc.cfg.Params(); got != tc.want {
				t.Fatalf("Params() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFLOPs(t *testing.T) {
	cfg := bertgen.MiniLML12CrossEncoder()
	const s = 128
	h, i := float64(cfg.Hidden), float64(cfg.Intermediate)
	// Non-embedding dense parameters per layer (weights only).
	dense := 4*h*h + 2*h*i
	want := float64(cfg.Layers)*(2*dense*s+4*s*s*h) + 2*(h*h+h)
	if got := bertgen.FLOPs(cfg, s); got != want {
		t.Fatalf("FLOPs = %g, want %g", got, want)
	}
	// ≈ 2 × non-embedding params × seq + attention.
	nonEmb := float64(cfg.Params()) - float64((cfg.VocabSize+cfg.MaxPositions+cfg.TypeVocab)*cfg.Hidden)
	approx := 2*nonEmb*s + float64(cfg.Layers)*4*s*s*h
	if r := bertgen.FLOPs(cfg, s) / approx; r < 0.99 || r > 1.01 {
		t.Fatalf("FLOPs/approx = %g", r)
	}
	emb := bertgen.MiniLML6Embedder()
	if bertgen.FLOPs(emb, 64) >= bertgen.FLOPs(bertgen.MiniLML6CrossEncoder(), 64) {
		t.Fatal("bi-encoder should cost less than cross-encoder of the same shape (no head)")
	}
}

// TestNarrowedFLOPs: the last layer at [CLS] only costs its keys and
// values for every token and the rest for one.
func TestNarrowedFLOPs(t *testing.T) {
	cfg := bertgen.MiniLML6CrossEncoder()
	const s = 300
	h, i := float64(cfg.Hidden), float64(cfg.Intermediate)
	full := bertgen.FLOPs(cfg, s)
	perLayer := 2*s*(4*h*h+2*h*i) + 4*s*s*h
	last := 2*s*2*h*h + 2*(2*h*h+2*h*i) + 4*s*h
	if got, want := bertgen.NarrowedFLOPs(cfg, s, bertgen.NarrowAttention), full-perLayer+last; got != want {
		t.Fatalf("NarrowAttention %g, want %g", got, want)
	}
	ffn := bertgen.NarrowedFLOPs(cfg, s, bertgen.NarrowFeedForward)
	if want := full - 2*(s-1)*(h*h+2*h*i); ffn != want {
		t.Fatalf("NarrowFeedForward %g, want %g", ffn, want)
	}
	if bertgen.NarrowedFLOPs(cfg, s, bertgen.NarrowNone) != full {
		t.Fatal("NarrowNone differs from FLOPs")
	}
	// An embedder whose graph pools [CLS] narrows the same layer (it has
	// no head).
	emb := bertgen.MiniLML6Embedder()
	if got, want := bertgen.NarrowedFLOPs(emb, s, bertgen.NarrowAttention), bertgen.FLOPs(emb, s)-perLayer+last; got != want {
		t.Fatalf("embedder NarrowAttention %g, want %g", got, want)
	}
}

func smallConfig(kind bertgen.Kind) bertgen.Config {
	c := bertgen.MiniLML6CrossEncoder()
	c.Name, c.Kind = "small-"+string(kind), kind
	c.Layers, c.Hidden, c.Heads, c.Intermediate = 2, 32, 4, 64
	c.MaxPositions = 64
	c.Seed = 42
	return c
}

func writeDir(t *testing.T, w *bertgen.Weights) string {
	t.Helper()
	dir := t.TempDir()
	if err := bertgen.WriteWeights(dir, w, testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteLayout(t *testing.T) {
	for _, kind := range []bertgen.Kind{bertgen.CrossEncoder, bertgen.BiEncoder} {
		t.Run(string(kind), func(t *testing.T) {
			cfg := smallConfig(kind)
			dir := t.TempDir()
			if err := bertgen.Write(dir, cfg, testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", bertgen.ModelFile, bertgen.MarkerFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("missing %s: %v", f, err)
				}
			}
			var hf map[string]any
			b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			if err := json.Unmarshal(b, &hf); err != nil {
				t.Fatal(err)
			}
			wantArch := map[bertgen.Kind]string{bertgen.CrossEncoder: "BertForSequenceClassification", bertgen.BiEncoder: "BertModel"}[kind]
			got := fmt.Sprintln(hf["architectures"], hf["hidden_size"], hf["num_hidden_layers"], hf["num_attention_heads"],
				hf["intermediate_size"], hf["vocab_size"], hf["max_position_embeddings"], hf["type_vocab_size"], hf["hidden_act"], hf["model_type"], hf["layer_norm_eps"])
			want := fmt.Sprintf("[%s] 32 2 4 64 30522 64 2 gelu bert 1e-12\n", wantArch)
			if got != want {
				t.Fatalf("config.json: %s, want %s", got, want)
			}
			if (hf["num_labels"] == 1.0) != (kind == bertgen.CrossEncoder) {
				t.Fatalf("num_labels = %v for %s", hf["num_labels"], kind)
			}
			m, ok, err := bertgen.ReadMarker(dir)
			if err != nil || !ok || m.RealWeights || m.Config != cfg {
				t.Fatalf("marker = %+v ok=%v err=%v", m, ok, err)
			}
			tok, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
			orig, _ := os.ReadFile(artifacts.TokenizerJSON())
			if !bytes.Equal(tok, orig) {
				t.Fatal("tokenizer.json is not a byte copy")
			}
		})
	}
}

func TestReadMarkerAbsent(t *testing.T) {
	_, ok, err := bertgen.ReadMarker(t.TempDir())
	if ok || err != nil {
		t.Fatalf("ReadMarker(empty dir) ok=%v err=%v", ok, err)
	}
}

func TestWriteAssetErrors(t *testing.T) {
	vocab := testenv.NeedVocabTxt(t)
	tok := testenv.NeedTokenizerJSON(t)
	small := smallConfig(bertgen.CrossEncoder)
	small.VocabSize = 1000
	tests := []struct {
		name       string
		cfg        bertgen.Config
		vocab, tok string
	}{
		{"missing vocab", smallConfig(bertgen.CrossEncoder), filepath.Join(t.TempDir(), "v.txt"), tok},
		{"missing tokenizer", smallConfig(bertgen.CrossEncoder), vocab, filepath.Join(t.TempDir(), "t.json")},
		{"tokenizer not json", smallConfig(bertgen.CrossEncoder), vocab, vocab},
		{"vocab larger than model", small, vocab, tok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := bertgen.Write(t.TempDir(), tc.cfg, tc.vocab, tc.tok)
			if !errors.Is(err, bertgen.ErrAssets) {
				t.Fatalf("Write = %v, want ErrAssets", err)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	read := func(cfg bertgen.Config) []byte {
		dir := t.TempDir()
		if err := bertgen.Write(dir, cfg, vocab, tok); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, bertgen.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cfg := smallConfig(bertgen.CrossEncoder)
	a, b := read(cfg), read(cfg)
	if !bytes.Equal(a, b) {
		t.Fatal("same config and seed gave different model bytes")
	}
	cfg.Seed++
	if bytes.Equal(a, read(cfg)) {
		t.Fatal("different seeds gave identical model bytes")
	}
}

// batch returns 3 sequences of length 9 with different amounts of padding
// and both token types, like a tokenizer's padded pair batch.
func batch(vocab int) (ids, mask, types [][]int64) {
	r := rand.New(rand.NewPCG(3, 4))
	lengths := []int{9, 5, 2}
	for _, n := range lengths {
		id, m, ty := make([]int64, 9), make([]int64, 9), make([]int64, 9)
		for t := range n {
			id[t] = int64(r.IntN(vocab))
			m[t] = 1
			if t >= n/2 {
				ty[t] = 1
			}
		}
		id[0] = 101 // [CLS]
		ids, mask, types = append(ids, id), append(mask, m), append(types, ty)
	}
	return
}

func flat(rows [][]int64) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// perturb makes the test sensitive to every tensor: layer-norm gammas and
// betas away from 1 and 0, and larger weights so attention is not uniform.
func perturb(w *bertgen.Weights) {
	r := rand.New(rand.NewPCG(5, 6))
	jitter := func(xs []float32, center, std float64) {
		for i := range xs {
			xs[i] = float32(center + std*r.NormFloat64())
		}
	}
	scale := func(xs []float32, f float32) {
		for i := range xs {
			xs[i] *= f
		}
	}
	jitter(w.EmbLNG, 1, 0.2)
	jitter(w.EmbLNB, 0, 0.2)
	for l := range w.Layers {
		L := &w.Layers[l]
		jitter(L.AttnLNG, 1, 0.2)
		jitter(L.AttnLNB, 0, 0.2)
		jitter(L.OutLNG, 1, 0.2)
		jitter(L.OutLNB, 0, 0.2)
		for _, m := range [][]float32{L.QueryW, L.KeyW, L.ValueW, L.AttnOutW, L.InterW, L.OutW} {
			scale(m, 5)
		}
	}
	scale(w.PoolerW, 5)
	scale(w.ClsW, 5)
}

func closeEnough(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-4*math.Max(1, math.Abs(want))
}

// runBatch runs a model file on the test batch (see batch) on one CPU
// thread at graph optimisation level opt, and returns its output (logits or
// last_hidden_state, by cfg.Kind) with the batch.
func runBatch(t *testing.T, modelPath string, cfg bertgen.Config, opt string) (got onnx.Output, ids, mask, types [][]int64) {
	t.Helper()
	sc := onnx.DefaultSessionConfig()
	sc.Provider, sc.IntraOpThreads, sc.GraphOptimization = onnx.ProviderCPU, 1, opt
	out := bertgen.Logits
	if cfg.Kind == bertgen.BiEncoder {
		out = bertgen.LastHiddenState
	}
	s, err := onnx.NewSession(modelPath, []string{bertgen.InputIDs, bertgen.AttentionMask, bertgen.TokenTypeIDs}, []string{out}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, mask, types = batch(cfg.VocabSize)
	shape := []int64{int64(len(ids)), int64(len(ids[0]))}
	res, err := s.Run(context.Background(), []onnx.Input{
		{Name: bertgen.InputIDs, Shape: shape, Int64: flat(ids)},
		{Name: bertgen.AttentionMask, Shape: shape, Int64: flat(mask)},
		{Name: bertgen.TokenTypeIDs, Shape: shape, Int64: flat(types)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res[0], ids, mask, types
}

func TestReferenceMatchesONNXRuntime(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []bertgen.Kind{bertgen.CrossEncoder, bertgen.BiEncoder} {
		for _, opt := range []string{"disable", "all"} {
			t.Run(string(kind)+"/optimization="+opt, func(t *testing.T) {
				cfg := smallConfig(kind)
				w, err := bertgen.GenerateWeights(cfg)
				if err != nil {
					t.Fatal(err)
				}
				perturb(w)
				dir := writeDir(t, w)
				got, ids, mask, types := runBatch(t, filepath.Join(dir, bertgen.ModelFile), cfg, opt)
				ref, err := bertgen.Reference(context.Background(), w, ids, mask, types)
				if err != nil {
					t.Fatal(err)
				}
				switch kind {
				case bertgen.CrossEncoder:
					if fmt.Sprint(got.Shape) != "[3 1]" {
						t.Fatalf("logits shape %v", got.Shape)
					}
					t.Logf("logits onnx %v, reference %v", got.Float32, ref.Logits)
					for b, want := range ref.Logits {
						if !closeEnough(got.Float32[b], want) {
							t.Errorf("logit %d: onnx %.7g, reference %.7g", b, got.Float32[b], want)
						}
					}
					if math.Abs(ref.Logits[0]-ref.Logits[1]) < 1e-3 {
						t.Errorf("logits barely differ across inputs (%v): test is not sensitive", ref.Logits)
					}
				case bertgen.BiEncoder:
					if fmt.Sprint(got.Shape) != fmt.Sprintf("[3 9 %d]", cfg.Hidden) {
						t.Fatalf("last_hidden_state shape %v", got.Shape)
					}
					bad, maxDiff := 0, 0.0
					for b := range ref.LastHiddenState {
						for tk := range ref.LastHiddenState[b] {
							if mask[b][tk] == 0 {
								continue // padded rows are never read by pooling
							}
							for j, want := range ref.LastHiddenState[b][tk] {
								g := got.Float32[(b*9+tk)*cfg.Hidden+j]
								maxDiff = math.Max(maxDiff, math.Abs(float64(g)-want))
								if !closeEnough(g, want) && bad < 5 {
									bad++
									t.Errorf("h[%d,%d,%d]: onnx %.7g, reference %.7g", b, tk, j, g, want)
								}
							}
						}
					}
					t.Logf("max |onnx - reference| over unpadded positions: %.3g", maxDiff)
				}
			})
		}
	}
}

func TestReferenceBadInput(t *testing.T) {
	w, err := bertgen.GenerateWeights(smallConfig(bertgen.CrossEncoder))
	if err != nil {
		t.Fatal(err)
	}
	ok := [][]int64{{101, 5, 102}}
	tests := []struct {
		name             string
		ids, mask, types [][]int64
	}{
		{"empty batch", nil, nil, nil},
		{"ragged", [][]int64{{1, 2, 3}, {1, 2}}, [][]int64{{1, 1, 1}, {1, 1}}, [][]int64{{0, 0, 0}, {0, 0}}},
		{"id out of range", [][]int64{{101, 40000, 102}}, [][]int64{{1, 1, 1}}, [][]int64{{0, 0, 0}}},
		{"type out of range", ok, [][]int64{{1, 1, 1}}, [][]int64{{0, 2, 0}}},
		{"mask not 0/1", ok, [][]int64{{1, 2, 1}}, [][]int64{{0, 0, 0}}},
		{"too long", [][]int64{make([]int64, 65)}, [][]int64{make([]int64, 65)}, [][]int64{make([]int64, 65)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := bertgen.Reference(context.Background(), w, tc.ids, tc.mask, tc.types); !errors.Is(err, bertgen.ErrBadInput) {
				t.Fatalf("Reference = %v, want ErrBadInput", err)
			}
		})
	}
}

// TestWriteMiniLML12 generates the largest preset, checks its size and runs
// it once through ONNX Runtime.
func TestWriteMiniLML12(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes a 133 MB model (skipped with -short and -race; smaller configs cover the same code)")
	}
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	cfg := bertgen.MiniLML12CrossEncoder()
	dir := t.TempDir()
	start := time.Now()
	if err := bertgen.Write(dir, cfg, vocab, tok); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %s (%d params) in %v", cfg.Name, cfg.Params(), time.Since(start))
	st, err := os.Stat(filepath.Join(dir, bertgen.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if min := 4 * cfg.Params(); st.Size() < min || st.Size() > min+min/100 {
		t.Fatalf("model.onnx is %d bytes, want ≈ %d (4 bytes per parameter)", st.Size(), min)
	}
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	ins, outs, err := onnx.ModelIO(filepath.Join(dir, bertgen.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ins, outs)
	want := "[{input_ids int64 [-1 -1]} {attention_mask int64 [-1 -1]} {token_type_ids int64 [-1 -1]}] [{logits float32 [-1 1]}]"
	if got != want {
		t.Fatalf("ModelIO = %s, want %s", got, want)
	}
}

func BenchmarkGenerateMiniLML12(b *testing.B) {
	vocab, tok := testenv.NeedVocabTxt(b), testenv.NeedTokenizerJSON(b)
	cfg := bertgen.MiniLML12CrossEncoder()
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if err := bertgen.Write(dir, cfg, vocab, tok); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cfg.Params())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mparams/s")
}
