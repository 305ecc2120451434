package fuse_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// TestRuntimeEquivalence runs a generated cross-encoder (float32, and its
// int8 copy) through ONNX Runtime's CPU provider before and after
// SkipLayerNorm, on a batch with padding: every layer's two
// LayerNormalizations are fused (the embeddings' one is not), and the
// logits agree.
func TestRuntimeEquivalence(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	cfg := bertgen.MiniLML6CrossEncoder()
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 3, 64, 4, 256, 1000, 64
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch := berttest.Padded(5, 40, []int{40, 31, 12, 3}, 1, cfg.VocabSize)
	run := func(path string) []float32 {
		t.Helper()
		return berttest.Run(t, path, bertgen.Logits, "", batch)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		int8 bool
		// float32: the fused kernel sums in another order; int8: the
		// activations it passes on round to other int8 codes now and then.
		tol float64
	}{{"float32", false, 1e-5}, {"int8", true, 1e-3}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := bertgen.BuildModel(w)
			if err != nil {
				t.Fatal(err)
			}
			if tc.int8 {
				if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
					t.Fatal(err)
				}
			}
			plain := filepath.Join(dir, tc.name+".onnx")
			if err := m.WriteFile(plain); err != nil {
				t.Fatal(err)
			}
			fused := filepath.Join(dir, tc.name+"-fused.onnx")
			rep, err := fuse.WriteFile(plain, fused, fuse.ForCPU)
			if err != nil {
				t.Fatal(err)
			}
			// Every layer's two normalisations and the embeddings' (no
			// bias), and the last layer narrowed to [CLS]
			// (TestFirstTokenCrossEncoder): 26 nodes less the 4 Adds fused
			// into SkipLayerNormalization.
			want := fuse.Report{SkipLayerNorm: 2*cfg.Layers + 1, BiasFolded: 2 * cfg.Layers,
				FirstToken: fuse.Narrowed{Nodes: 22, MatMuls: 6, Slices: 2, Attention: true}}
			if tc.int8 {
				want.BiasFolded = 0        // folded into DynamicQuantizeMatMul already
				want.FirstToken.Nodes -= 2 // and the bias Adds of Q and the first feed-forward MatMul
			}
			if rep != want {
				t.Fatalf("report %+v, want %+v", rep, want)
			}
			fm, err := onnxpb.ReadFile(fused)
			if err != nil {
				t.Fatal(err)
			}
			lns := 0
			for _, n := range fm.Graph.Nodes {
				if n.OpType == "LayerNormalization" {
					lns++
				}
			}
			if lns != 0 {
				t.Fatalf("%d LayerNormalization nodes left, want none (the embeddings' fused too)", lns)
			}
			got, ref := run(fused), run(plain)
			lo, hi := math.Inf(1), math.Inf(-1)
			for i := range ref {
				lo, hi = min(lo, float64(ref[i])), max(hi, float64(ref[i]))
				if d := math.Abs(float64(got[i] - ref[i])); d > tc.tol {
					t.Errorf("logit %d: fused %g, unfused %g (|Δ| %g > %g)", i, got[i], ref[i], d, tc.tol)
				}
			}
			t.Logf("logits span %g", hi-lo)
			if hi-lo < 10*tc.tol {
				t.Errorf("logits span %g: the comparison is not sensitive", hi-lo)
			}
		})
	}
}

// TestRuntimeSpelledOut: the spelled-out normalisations of older exports
// (read back from a file, so the Constants' tensors are decoded from
// their bytes) fuse into a graph ONNX Runtime computes as before.
func TestRuntimeSpelledOut(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	const h, batch, seq = 16, 2, 5
	dir := t.TempDir()
	for _, dup := range []bool{false, true} {
		plain, fused := filepath.Join(dir, "plain.onnx"), filepath.Join(dir, "fused.onnx")
		m := spelledBlock(h, dup)
		m.Opset = 13 // ReduceMean's axes an attribute, as such exports write it
		if err := m.WriteFile(plain); err != nil {
			t.Fatal(err)
		}
		rep, err := fuse.WriteFile(plain, fused, fuse.ForCPU)
		if err != nil || rep != (fuse.Report{SkipLayerNorm: 1, BiasFolded: 1}) {
			t.Fatalf("dup %v: report %+v, %v", dup, rep, err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		x := make([]float32, batch*seq*h)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		run := func(path string) []float32 {
			out, _ := runX(t, path, []int64{batch, seq, h}, x)
			return out
		}
		got, ref := run(fused), run(plain)
		for i := range ref {
			if d := math.Abs(float64(got[i] - ref[i])); d > 1e-5 {
				t.Fatalf("dup %v: output %d: fused %g, unfused %g", dup, i, got[i], ref[i])
			}
		}
	}
}

// TestRuntimeBroadcastSummand: a residual Add whose other summand
// broadcasts ([1, S, H], a position table) fuses into a node whose input is
// the normalised stream, so the output keeps the stream's [B, S, H] shape
// (with the summand as input the runtime returned [1, S, H], dropping the
// other batch rows without an error).
func TestRuntimeBroadcastSummand(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	const batch, seq, h = 2, 3, 8
	r := rand.New(rand.NewPCG(9, 10))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	g := onnxpb.NewGraph("broadcast")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Fixed(seq), onnxpb.Fixed(h))
	g.AddNodeOutputs("ln0", "LayerNormalization", []string{"x", g.AddFloat32("g0", []int64{h}, vals(h)), g.AddFloat32("b0", []int64{h}, vals(h))}, []string{"hs"},
		onnxpb.AttrInt("axis", -1))
	g.AddNodeOutputs("pos", "Identity", []string{g.AddFloat32("P", []int64{1, seq, h}, vals(seq*h))}, []string{"p"})
	g.AddNodeOutputs("res", "Add", []string{"p", "hs"}, []string{"s"})
	g.AddNodeOutputs("ln1", "LayerNormalization", []string{"s", g.AddFloat32("g1", []int64{h}, vals(h)), g.AddFloat32("b1", []int64{h}, vals(h))}, []string{"out"},
		onnxpb.AttrInt("axis", -1))
	g.AddOutput("out", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Fixed(seq), onnxpb.Fixed(h))
	dir := t.TempDir()
	plain, fused := filepath.Join(dir, "plain.onnx"), filepath.Join(dir, "fused.onnx")
	if err := onnxpb.NewModel(g).WriteFile(plain); err != nil {
		t.Fatal(err)
	}
	if rep, err := fuse.WriteFile(plain, fused, fuse.ForCPU); err != nil || rep.SkipLayerNorm != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	x := vals(batch * seq * h)
	got, gs := runX(t, fused, []int64{batch, seq, h}, x)
	ref, rs := runX(t, plain, []int64{batch, seq, h}, x)
	if !slices.Equal(gs, rs) {
		t.Fatalf("fused output shape %v, unfused %v", gs, rs)
	}
	for i := range ref {
		if d := math.Abs(float64(got[i] - ref[i])); d > 1e-5 {
			t.Fatalf("output %d: fused %g, unfused %g", i, got[i], ref[i])
		}
	}
}

// runX runs the model at path, input "x" of shape and values x, on one CPU
// thread, and returns output "out" and its shape.
func runX(t *testing.T, path string, shape []int64, x []float32) ([]float32, []int64) {
	t.Helper()
	sc := onnx.DefaultSessionConfig()
	sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 1
	s, err := onnx.NewSession(path, []string{"x"}, []string{"out"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: shape, Float32: x}})
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Float32, out[0].Shape
}
