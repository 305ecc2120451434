//go:build linux && amd64

package onnx

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
)

// quantMatMulRef is ai.hybrank.QuantMatMul's definition in float64 (the
// quantization itself in float32, as defined): each row of a·aMul
// quantized to codes 0 … 2^aBits − 1 with its own scale and zero point,
// dequantized, and multiplied by the dequantized weights.
func quantMatMulRef(a []float32, b []int8, bScale, bias, aMul []float32, m, k, n, aBits int) []float64 {
	top := float32(int(1)<<aBits - 1)
	y := make([]float64, m*n)
	x := make([]float32, k)
	for r := range m {
		lo, hi := float32(0), float32(0)
		for i := range k {
			x[i] = a[r*k+i]
			if aMul != nil {
				x[i] *= aMul[i]
			}
			lo, hi = min(lo, x[i]), max(hi, x[i])
		}
		s := (hi - lo) / top
		if s == 0 {
			s = 1
		}
		inv := 1 / s
		z := min(max(float32(math.RoundToEven(float64(-lo*inv))), 0), top)
		for c := range n {
			acc := 0.0
			for i := range k {
				q := min(max(float32(math.RoundToEven(float64(x[i]*inv)))+z, 0), top)
				acc += float64(q-z) * float64(s) * float64(b[i*n+c]) * float64(bScale[c])
			}
			if bias != nil {
				acc += float64(bias[c])
			}
			y[r*n+c] = acc
		}
	}
	return y
}

type qmmCase struct {
	a, bScale, bias, aMul []float32
	b                     []int8
}

// newQMMCase draws activations with a few outlier channels and tokens (as a
// BERT layer's are), a row of zeros, and 7-bit weight codes.
func newQMMCase(m, k, n int, withBias, withMul bool, seed uint64) qmmCase {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := qmmCase{a: make([]float32, m*k), b: make([]int8, k*n), bScale: make([]float32, n)}
	for i := range c.a {
		c.a[i] = float32(rng.NormFloat64())
		if i%k == 7 || i%k == k-1 {
			c.a[i] *= 20 // outlier channels
		}
	}
	if m > 2 {
		clear(c.a[k : 2*k]) // an all-zero row
		for i := 2 * k; i < 3*k; i++ {
			c.a[i] = float32(rng.Float64()) // an all-positive row
		}
	}
	for i := range c.b {
		c.b[i] = int8(rng.IntN(127) - 63)
	}
	for i := range c.bScale {
		c.bScale[i] = float32(0.001 + 0.01*rng.Float64())
	}
	if withBias {
		c.bias = make([]float32, n)
		for i := range c.bias {
			c.bias[i] = float32(rng.NormFloat64())
		}
	}
	if withMul {
		c.aMul = make([]float32, k)
		for i := range c.aMul {
			c.aMul[i] = float32(0.25 + rng.Float64())
		}
	}
	return c
}

var qmmShapes = []struct{ m, k, n int }{
	{1, 64, 16},
	{3, 100, 40},   // K and N off the tiles' 64 and 16
	{17, 128, 48},  // one row past a half block; an odd number of column blocks
	{32, 384, 384}, // whole blocks
	{70, 384, 1536},
	{45, 1536, 384},
}

// gelu64 is GELU's erf form in float64.
func gelu64(y []float64) {
	for i, v := range y {
		y[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
	}
}

// TestQuantMatMulKernel holds the reference path to the definition (float64
// sums of the same codes: 1e-5 of the rms) and the AMX tile path to the
// reference: to the bit (same integers, same float epilogue), and with
// GELU to its polynomial erf's error (1.5e-7, here 1e-6 of max(1, |y|));
// with 8- and 16-bit activation codes.
func TestQuantMatMulKernel(t *testing.T) {
	initRuntime(t)
	for _, sh := range qmmShapes {
		for _, opt := range [][4]bool{{false, false, false, false}, {true, false, false, false}, {true, true, false, false}, {true, true, true, false},
			{false, false, false, true}, {true, true, false, true}, {true, true, true, true}} {
			c := newQMMCase(sh.m, sh.k, sh.n, opt[0], opt[1], uint64(sh.m*sh.k+sh.n))
			gelu, bits := opt[2], 8
			if opt[3] {
				bits = 16
			}
			want := quantMatMulRef(c.a, c.b, c.bScale, c.bias, c.aMul, sh.m, sh.k, sh.n, bits)
			if gelu {
				gelu64(want)
			}
			ref := make([]float32, sh.m*sh.n)
			if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, c.aMul, ref, sh.m, sh.k, sh.n, false, gelu, bits, 1); err != nil {
				t.Fatal(err)
			}
			if maxDiff, _, rms := errorsOf(ref, want); maxDiff > 1e-5*max(rms, 1) {
				t.Errorf("%+v bias %v a_mul %v gelu %v a_bits %d: reference max |Δ| %.3g, rms %.3g", sh, opt[0], opt[1], gelu, bits, maxDiff, rms)
			}
			if !QuantMatMulAMX() {
				continue
			}
			got := make([]float32, sh.m*sh.n)
			if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, c.aMul, got, sh.m, sh.k, sh.n, true, gelu, bits, 1); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if gelu && math.Abs(float64(got[i]-ref[i])) > 1e-6*max(1, math.Abs(float64(ref[i]))) ||
					!gelu && math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
					t.Errorf("%+v bias %v a_mul %v gelu %v a_bits %d: AMX y[%d] = %v, reference %v", sh, opt[0], opt[1], gelu, bits, i, got[i], ref[i])
					break
				}
			}
		}
	}
	if !QuantMatMulAMX() {
		t.Logf("no AMX-INT8 here: tile path not run")
	}
}

// TestQuantMatMulPerRow: a row's result does not depend on the other rows
// (per-token scales), unlike a per-tensor quantization's.
func TestQuantMatMulPerRow(t *testing.T) {
	initRuntime(t)
	c := newQMMCase(8, 128, 32, true, false, 3)
	all := make([]float32, 8*32)
	if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, nil, all, 8, 128, 32, false, false, 8, 1); err != nil {
		t.Fatal(err)
	}
	one := make([]float32, 32)
	if err := quantMatMulDirect(c.a[5*128:6*128], c.b, c.bScale, c.bias, nil, one, 1, 128, 32, false, false, 8, 1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one, all[5*32:6*32]) {
		t.Errorf("row 5 alone %v, in the batch %v", one[:4], all[5*32:5*32+4])
	}
}

// TestQuantMatMulWide: 16-bit activation codes take the product far closer
// to float32 activations (the same 8-bit weights) than 8-bit codes do: what
// a_bits = 16 is for.
func TestQuantMatMulWide(t *testing.T) {
	initRuntime(t)
	const m, k, n = 24, 1536, 384
	c := newQMMCase(m, k, n, true, true, 5)
	exact := make([]float64, m*n) // float activations, dequantized weights
	for r := range m {
		for j := range n {
			acc := float64(c.bias[j])
			for i := range k {
				acc += float64(c.a[r*k+i]*c.aMul[i]) * float64(c.b[i*n+j]) * float64(c.bScale[j])
			}
			exact[r*n+j] = acc
		}
	}
	rms := map[int]float64{}
	for _, bits := range []int{8, 16} {
		y := make([]float32, m*n)
		if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, c.aMul, y, m, k, n, false, false, bits, 1); err != nil {
			t.Fatal(err)
		}
		_, rms[bits], _ = errorsOf(y, exact)
	}
	if !(rms[16] < rms[8]/50) {
		t.Errorf("rms error against float activations: 16-bit codes %.3g, 8-bit %.3g (want under a fiftieth)", rms[16], rms[8])
	}
}

// TestQuantMatMulOp runs ai.hybrank.QuantMatMul inside a session (3-D
// input, intra-op threads, both paths where AMX-INT8 is here, with GELU,
// with 16-bit activation codes) against the direct reference; b as a graph
// input instead of an initializer is refused when the session is built, as
// is an a_bits other than 8 or 16.
func TestQuantMatMulOp(t *testing.T) {
	initRuntime(t)
	const bt, s, k, n = 2, 37, 384, 1536
	c := newQMMCase(bt*s, k, n, true, true, 11)
	type variant struct{ gelu, bits int64 }
	variants := []variant{{0, 8}, {1, 8}, {1, 16}}
	want := map[variant][]float32{}
	for _, v := range variants {
		y := make([]float32, bt*s*n)
		if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, c.aMul, y, bt*s, k, n, false, v.gelu == 1, int(v.bits), 1); err != nil {
			t.Fatal(err)
		}
		want[v] = y
	}
	build := func(amx int64, bInput bool, v variant) string {
		return qmmGraphWith(t, c, k, n, []string{"y"}, []int64{n}, bInput, true,
			onnxpb.AttrInt("amx", amx), onnxpb.AttrInt("gelu", v.gelu), onnxpb.AttrInt("a_bits", v.bits))
	}
	cfg := DefaultSessionConfig()
	cfg.Provider, cfg.IntraOpThreads = ProviderCPU, 2
	for _, amx := range []int64{0, 1} {
		if amx == 1 && !QuantMatMulAMX() {
			continue
		}
		for _, v := range variants {
			sess, err := NewSession(build(amx, false, v), []string{"a"}, []string{"y"}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := sess.Run(context.Background(), []Input{{Name: "a", Shape: []int64{bt, s, k}, Float32: c.a}})
			sess.Close()
			if err != nil {
				t.Fatal(err)
			}
			ref, tol := want[v], 0.0
			if v.gelu == 1 {
				tol = 1e-6
			}
			if !slices.Equal(out[0].Shape, []int64{bt, s, n}) {
				t.Fatalf("amx=%d %+v: shape %v", amx, v, out[0].Shape)
			}
			for i, y := range out[0].Float32 {
				if math.Abs(float64(y-ref[i])) > tol*max(1, math.Abs(float64(ref[i]))) {
					t.Errorf("amx=%d %+v: y[%d] = %v, reference %v", amx, v, i, y, ref[i])
					break
				}
			}
		}
	}
	if sess, err := NewSession(build(0, false, variant{0, 12}), []string{"a"}, []string{"y"}, cfg); err == nil {
		sess.Close()
		t.Error("a_bits 12: session built")
	}
	if sess, err := NewSession(build(0, true, variant{0, 8}), []string{"a", "w"}, []string{"y"}, cfg); err == nil {
		sess.Close()
		t.Error("b as a graph input: session built")
	}
}

// BenchmarkQuantMatMulKernel times the AMX path on one thread outside a
// session (no runtime dispatch): fast's shapes (hidden 128) over 4 × 376
// tokens, 8- and 16-bit activation codes.
func BenchmarkQuantMatMulKernel(b *testing.B) {
	initRuntime(b)
	if !QuantMatMulAMX() {
		b.Skip("no AMX-INT8 here")
	}
	for _, sh := range []struct{ m, k, n int }{{1504, 128, 128}, {1504, 128, 384}, {1504, 128, 512}, {1504, 512, 128}, {1504, 384, 384}, {1504, 384, 1152}, {1504, 1536, 384}} {
		for _, bits := range []int{8, 16} {
			c := newQMMCase(sh.m, sh.k, sh.n, true, true, 1)
			y := make([]float32, sh.m*sh.n)
			b.Run(fmt.Sprintf("%dx%dx%d/a%d", sh.m, sh.k, sh.n, bits), func(b *testing.B) {
				// The weights packed once (a session does it when it builds
				// the kernel), the product b.N times.
				if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, c.aMul, y, sh.m, sh.k, sh.n, true, false, bits, b.N); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// TestQuantMatMulSplit: with split, one product hands its columns out as
// several outputs, each equal to the same columns of the one-output
// product (both paths, both code widths, a last output whose width is no
// multiple of 16); a split that does not sum to N, whose first width is
// not a multiple of 16, with four widths (the runtime's schema check), or
// with fewer outputs than widths is refused when the session is built,
// saying so.
func TestQuantMatMulSplit(t *testing.T) {
	initRuntime(t)
	const m, k, n = 45, 128, 376
	c := newQMMCase(m, k, n, true, false, 13)
	build := func(amx, bits int64, split []int64, outputs int) string {
		var outs []string
		for i := range outputs {
			outs = append(outs, fmt.Sprintf("y%d", i))
		}
		return qmmGraph(t, c, k, n, outs, split, onnxpb.AttrInt("amx", amx), onnxpb.AttrInt("a_bits", bits), onnxpb.AttrInts("split", split...))
	}
	cfg := DefaultSessionConfig()
	cfg.Provider, cfg.IntraOpThreads = ProviderCPU, 2
	split := []int64{128, 64, 184}
	for _, bits := range []int64{8, 16} {
		want := make([]float32, m*n)
		if err := quantMatMulDirect(c.a, c.b, c.bScale, c.bias, nil, want, m, k, n, false, false, int(bits), 1); err != nil {
			t.Fatal(err)
		}
		for _, amx := range []int64{0, 1} {
			if amx == 1 && !QuantMatMulAMX() {
				continue
			}
			sess, err := NewSession(build(amx, bits, split, 3), []string{"a"}, []string{"y0", "y1", "y2"}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := sess.Run(context.Background(), []Input{{Name: "a", Shape: []int64{m, k}, Float32: c.a}})
			sess.Close()
			if err != nil {
				t.Fatal(err)
			}
			off := 0
			for o, w := range split {
				if !slices.Equal(out[o].Shape, []int64{m, w}) {
					t.Fatalf("amx=%d a_bits=%d: output %d shape %v", amx, bits, o, out[o].Shape)
				}
				for r := range m {
					if got, ref := out[o].Float32[r*int(w):(r+1)*int(w)], want[r*n+off:r*n+off+int(w)]; !slices.Equal(got, ref) {
						t.Fatalf("amx=%d a_bits=%d: output %d row %d: %v…, want %v…", amx, bits, o, r, got[:2], ref[:2])
					}
				}
				off += int(w)
			}
		}
	}
	for _, bad := range []struct {
		split   []int64
		outputs int
	}{{[]int64{128, 64, 100}, 3}, {[]int64{120, 256}, 2}, {[]int64{128, 64, 64, 120}, 4}, {split, 2}} {
		outs := []string{"y0", "y1", "y2", "y3"}[:bad.outputs]
		if sess, err := NewSession(build(0, 16, bad.split, bad.outputs), []string{"a"}, outs, cfg); err == nil {
			sess.Close()
			t.Errorf("split %v, %d outputs: session built", bad.split, bad.outputs)
		} else if !strings.Contains(err.Error(), "split") && !strings.Contains(err.Error(), "output size") {
			t.Errorf("split %v, %d outputs: %v, want it to name the split", bad.split, bad.outputs, err)
		}
	}
}

// qmmGraph writes a model of one QuantMatMul over case c's weights (an
// initializer), scales and bias, input a [m, K] ([b, s, K] for the op
// test's 3-D input), with the given outputs (widths per output) and
// attributes, and returns its path.
func qmmGraph(t *testing.T, c qmmCase, k, n int64, outs []string, widths []int64, attrs ...onnxpb.Attr) string {
	return qmmGraphWith(t, c, k, n, outs, widths, false, false, attrs...)
}

// qmmGraphWith is qmmGraph with the weights as a graph input (bInput) and
// a 3-D input with a_mul (threeD).
func qmmGraphWith(t *testing.T, c qmmCase, k, n int64, outs []string, widths []int64, bInput, threeD bool, attrs ...onnxpb.Attr) string {
	t.Helper()
	g := onnxpb.NewGraph("qmm")
	lead := []onnxpb.Dim{onnxpb.Symbolic("m")}
	if threeD {
		lead = []onnxpb.Dim{onnxpb.Symbolic("b"), onnxpb.Symbolic("s")}
	}
	g.AddInput("a", onnxpb.Float32, append(slices.Clone(lead), onnxpb.Fixed(k))...)
	raw := make([]byte, len(c.b))
	for i, v := range c.b {
		raw[i] = byte(v)
	}
	if bInput {
		g.AddInput("w", onnxpb.Int8, onnxpb.Fixed(k), onnxpb.Fixed(n))
	} else {
		g.AddRaw("w", onnxpb.Int8, []int64{k, n}, raw)
	}
	g.AddFloat32("w_scale", []int64{n}, c.bScale)
	g.AddFloat32("bias", []int64{n}, c.bias)
	inputs := []string{"a", "w", "w_scale", "bias"}
	if threeD {
		g.AddFloat32("a_mul", []int64{k}, c.aMul)
		inputs = append(inputs, "a_mul")
	}
	g.Nodes = append(g.Nodes, onnxpb.Node{Name: "qmm", OpType: "QuantMatMul", Domain: ops.Domain, Inputs: inputs, Outputs: outs, Attrs: attrs})
	for i, o := range outs {
		w := widths[min(i, len(widths)-1)]
		g.AddOutput(o, onnxpb.Float32, append(slices.Clone(lead), onnxpb.Fixed(w))...)
	}
	m := onnxpb.NewModel(g)
	m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: ops.Domain, Version: 1})
	path := filepath.Join(t.TempDir(), "qmm.onnx")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}
