package quantize_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// runHidden runs the model file at path on ids (batch × seq, all attended)
// and returns last_hidden_state.
func runHidden(t *testing.T, path string, ids []int64, batch, seq int, opt string) []float32 {
	t.Helper()
	return berttest.Run(t, path, bertgen.LastHiddenState, opt, berttest.Attended(ids, batch, seq))
}

func initORT(t testing.TB) {
	t.Helper()
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeForms runs a small generated embedder through ONNX Runtime in
// both int8 forms: they must compute the same numbers, at the default
// optimisation level (where the runtime fuses the standard form) and at
// "basic" (where it runs it node by node).
func TestRuntimeForms(t *testing.T) {
	initORT(t)
	cfg := bertgen.MiniLML6Embedder()
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 2, 64, 4, 256, 1000, 64
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, qc quantize.Config) string {
		m, err := bertgen.BuildModel(w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := quantize.Rewrite(context.Background(), m, qc); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name+".onnx")
		if err := m.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	std := quantize.DefaultConfig()
	std.Form = quantize.FormStandard
	fused, standard := write("fused", quantize.DefaultConfig()), write("standard", std)

	const batch, seq = 4, 24
	r := rand.New(rand.NewPCG(3, 4))
	ids := make([]int64, batch*seq)
	for i := range ids {
		ids[i] = int64(r.IntN(cfg.VocabSize))
	}
	for _, opt := range []string{"all", "basic"} {
		f := runHidden(t, fused, ids, batch, seq, opt)
		s := runHidden(t, standard, ids, batch, seq, opt)
		var diff float64
		for i := range f {
			diff = max(diff, math.Abs(float64(f[i]-s[i])))
		}
		if diff > 1e-5 {
			t.Errorf("optimisation %s: fused and standard forms differ by %g", opt, diff)
		}
	}
}

// emulate computes what ONNX Runtime's dynamic int8 MatMul computes for
// y = x·B + bias with B quantized as m: x quantized per tensor to uint8
// (range widened to include 0, scale (max−min)/255, zero point rounded
// half to even), exact integer products, then acc·(x_scale·B_scale[n]) +
// bias[n] in float32.
func emulate(x []float32, rows int, m quantize.Matrix, bias []float32) []float32 {
	lo, hi := float32(0), float32(0)
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := float32(1)
	if hi != lo {
		scale = (hi - lo) / 255
	}
	zp := int32(math.RoundToEven(float64(max(0, min(255, 0-lo/scale)))))
	xq := make([]int32, len(x))
	for i, v := range x {
		xq[i] = max(0, min(255, int32(math.RoundToEven(float64(v/scale)))+zp)) - zp
	}
	y := make([]float32, rows*m.N)
	for r := range rows {
		for n := range m.N {
			var acc int32
			for k := range m.K {
				acc += xq[r*m.K+k] * int32(m.Q[k*m.N+n])
			}
			y[r*m.N+n] = float32(acc)*(scale*m.Scale[n]) + bias[n]
		}
	}
	return y
}

// TestKernelExact checks ONNX Runtime's int8 MatMul against emulate, for
// both forms: the same codes, scales and bias must give the same numbers
// to float32 rounding. This is what 7-bit weights buy on x86 CPUs without
// VNNI, whose u8×s8 kernels add pairs of products in saturating 16-bit
// lanes: with 7-bit codes no pair can overflow. 8-bit weights are run too
// and how many outputs leave exact arithmetic is logged (not asserted: it
// depends on the CPU).
func TestKernelExact(t *testing.T) {
	initORT(t)
	const rows, k, n = 40, 96, 48
	r := rand.New(rand.NewPCG(5, 6))
	x, w, bias := make([]float32, rows*k), make([]float32, k*n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64()) + 0.5 // skewed, like GELU outputs
	}
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	for i := range bias {
		bias[i] = float32(r.NormFloat64() * 0.01)
	}
	for _, bits := range []int{7, 8} {
		for _, form := range []quantize.Form{quantize.FormFused, quantize.FormStandard} {
			g := onnxpb.NewGraph("dense")
			g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("rows"), onnxpb.Fixed(k))
			g.AddFloat32("W", []int64{k, n}, w)
			g.AddFloat32("b", []int64{n}, bias)
			mm := g.AddNode("mm", "MatMul", []string{"x", "W"})
			g.AddNode("y", "Add", []string{"b", mm})
			g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("rows"), onnxpb.Fixed(n))
			model := onnxpb.NewModel(g)
			cfg := quantize.DefaultConfig()
			cfg.WeightBits, cfg.Form = bits, form
			if _, err := quantize.Rewrite(context.Background(), model, cfg); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "dense.onnx")
			if err := model.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			sc := onnx.DefaultSessionConfig()
			sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 1
			s, err := onnx.NewSession(path, []string{"x"}, []string{"y"}, sc)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{rows, k}, Float32: x}})
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			m, err := quantize.QuantizeMatrix(w, k, n, bits)
			if err != nil {
				t.Fatal(err)
			}
			want := emulate(x, rows, m, bias)
			off, worst := 0, 0.0
			for i, v := range out[0].Float32 {
				d := math.Abs(float64(v - want[i]))
				worst = max(worst, d)
				if d > 1e-5*(1+math.Abs(float64(want[i]))) {
					off++
				}
			}
			if bits == 7 && off > 0 {
				t.Errorf("%d-bit %s: %d of %d outputs differ from exact int8 arithmetic (worst %g)", bits, form, off, len(want), worst)
			}
			t.Logf("%d-bit %s: %d of %d outputs differ from exact integer arithmetic (worst %g)", bits, form, off, len(want), worst)
		}
	}
}
