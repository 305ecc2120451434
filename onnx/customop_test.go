//go:build linux && amd64

package onnx

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
)

// attentionRef is the float64 definition of ai.hybrank.Attention.
func attentionRef(q, k, v, mask []float32, batch, sq, sk, hidden, heads int, scale float64) []float64 {
	dh := hidden / heads
	out := make([]float64, batch*sq*hidden)
	s := make([]float64, sk)
	for b := range batch {
		for h := range heads {
			for i := range sq {
				mx := math.Inf(-1)
				for t := range sk {
					acc := 0.0
					for d := range dh {
						acc += float64(q[(b*sq+i)*hidden+h*dh+d]) * float64(k[(b*sk+t)*hidden+h*dh+d])
					}
					s[t] = acc*scale + float64(mask[b*sk+t])
					mx = max(mx, s[t])
				}
				sum := 0.0
				for t := range sk {
					s[t] = math.Exp(s[t] - mx)
					sum += s[t]
				}
				for t := range sk {
					for d := range dh {
						out[(b*sq+i)*hidden+h*dh+d] += s[t] / sum * float64(v[(b*sk+t)*hidden+h*dh+d])
					}
				}
			}
		}
	}
	return out
}

// attentionCase is random q, k, v of one shape and a mask that pads the
// second sequence's last keys with the exports' −MaxFloat32.
type attentionCase struct {
	batch, sq, sk, hidden, heads int
	q, k, v, mask                []float32
}

func newAttentionCase(batch, sq, sk, hidden, heads int, seed uint64) attentionCase {
	r := rand.New(rand.NewPCG(seed, 1))
	c := attentionCase{batch: batch, sq: sq, sk: sk, hidden: hidden, heads: heads}
	fill := func(n int, std float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * std)
		}
		return x
	}
	// Q and K of std 2: scores of std 4·√(d)·scale = 4, a peaked softmax
	// that puts the exponential far from 0.
	c.q, c.k, c.v = fill(batch*sq*hidden, 2), fill(batch*sk*hidden, 2), fill(batch*sk*hidden, 1)
	c.mask = make([]float32, batch*sk)
	if batch > 1 { // the second sequence padded
		for t := sk - sk/3; t < sk; t++ {
			c.mask[sk+t] = -math.MaxFloat32
		}
	}
	if batch > 2 { // the third all padding: uniform weights, as the definition's
		for t := range sk {
			c.mask[2*sk+t] = -math.MaxFloat32
		}
	}
	return c
}

// errors returns the largest |got − want|, the root mean square of the
// differences and that of want.
func errorsOf(got []float32, want []float64) (maxDiff, rmsDiff, rms float64) {
	for i := range want {
		d := float64(got[i]) - want[i]
		maxDiff = max(maxDiff, math.Abs(d))
		rmsDiff += d * d
		rms += want[i] * want[i]
	}
	n := float64(len(want))
	return maxDiff, math.Sqrt(rmsDiff / n), math.Sqrt(rms / n)
}

// closeTo holds got to want: the float32 path to 1e-5 of the outputs' rms
// at every value; the bfloat16 tiles (8-bit mantissas in both products,
// about 0.4 % a rounding, on scores of std 4) to 1 % of it in rms and
// 10 % at worst.
func closeTo(got []float32, want []float64, bf16 bool) (ok bool, detail string) {
	maxDiff, rmsDiff, rms := errorsOf(got, want)
	detail = fmt.Sprintf("max |Δ| %.3g, rms Δ %.3g, rms %.3g", maxDiff, rmsDiff, rms)
	if bf16 {
		return rmsDiff <= 0.01*rms && maxDiff <= 0.1*rms, detail
	}
	return maxDiff <= 1e-5*max(rms, 1), detail
}

var attentionShapes = []struct{ batch, sq, sk, hidden, heads int }{
	{1, 1, 1, 64, 2},
	{3, 5, 9, 128, 4},     // an all-padding sequence
	{2, 1, 17, 384, 12},   // a narrowed last layer: one query row
	{2, 16, 16, 384, 12},  // whole tiles
	{2, 33, 40, 384, 12},  // partial query and key blocks
	{3, 7, 100, 128, 2},   // head size 64
	{2, 130, 130, 128, 2}, // more than one block each way
	{1, 384, 384, 384, 12},
}

// TestAttentionKernel holds both paths of the kernel to the float64
// definition (closeTo), over shapes with partial tiles, one query row, head
// size 64 and an all-padding sequence.
func TestAttentionKernel(t *testing.T) {
	initRuntime(t)
	for _, sh := range attentionShapes {
		c := newAttentionCase(sh.batch, sh.sq, sh.sk, sh.hidden, sh.heads, uint64(sh.sq*1000+sh.sk))
		scale := 1 / math.Sqrt(float64(sh.hidden/sh.heads))
		want := attentionRef(c.q, c.k, c.v, c.mask, sh.batch, sh.sq, sh.sk, sh.hidden, sh.heads, scale)
		for _, bf16 := range []bool{false, true} {
			if bf16 && !AttentionBF16() {
				t.Logf("no AMX-BF16 here: bfloat16 path not run")
				continue
			}
			got := make([]float32, len(c.q))
			if err := attentionDirect(c.q, c.k, c.v, c.mask, got, sh.batch, sh.sq, sh.sk, sh.hidden, sh.heads, float32(scale), bf16); err != nil {
				t.Fatal(err)
			}
			if ok, detail := closeTo(got, want, bf16); !ok {
				t.Errorf("%+v bf16=%v: %s", sh, bf16, detail)
			}
		}
	}
}

func initRuntime(t testing.TB) {
	t.Helper()
	lib := testenv.NeedORT(t)
	if err := Init(RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if err := CustomOps(); err != nil {
		t.Fatalf("custom operators unavailable: %v", err)
	}
}

// TestAttentionOp runs ai.hybrank.Attention inside a session, on the
// intra-op threads, against the float64 definition; a mask of the wrong
// size is an error, not a crash.
func TestAttentionOp(t *testing.T) {
	initRuntime(t)
	for _, bf16 := range []int64{0, 1} {
		if bf16 == 1 && !AttentionBF16() {
			continue
		}
		g := onnxpb.NewGraph("attention")
		for _, n := range []string{"q", "k", "v"} {
			g.AddInput(n, onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic(n+"s"), onnxpb.Fixed(384))
		}
		g.AddInput("mask", onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Fixed(1), onnxpb.Fixed(1), onnxpb.Symbolic("ks"))
		g.Nodes = append(g.Nodes, onnxpb.Node{Name: "att", OpType: "Attention", Domain: ops.Domain, Inputs: []string{"q", "k", "v", "mask"}, Outputs: []string{"out"},
			Attrs: []onnxpb.Attr{onnxpb.AttrInt("num_heads", 12), onnxpb.AttrFloat("scale", float32(1/math.Sqrt(32))), onnxpb.AttrInt("bf16", bf16)}})
		g.AddOutput("out", onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic("qs"), onnxpb.Fixed(384))
		m := onnxpb.NewModel(g)
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: ops.Domain, Version: 1})
		path := filepath.Join(t.TempDir(), "att.onnx")
		if err := m.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultSessionConfig()
		cfg.Provider, cfg.IntraOpThreads = ProviderCPU, 2
		s, err := NewSession(path, []string{"q", "k", "v", "mask"}, []string{"out"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c := newAttentionCase(2, 33, 40, 384, 12, 7)
		in := func(mask []float32, maskShape []int64) []Input {
			return []Input{
				{Name: "q", Shape: []int64{2, 33, 384}, Float32: c.q}, {Name: "k", Shape: []int64{2, 40, 384}, Float32: c.k},
				{Name: "v", Shape: []int64{2, 40, 384}, Float32: c.v}, {Name: "mask", Shape: maskShape, Float32: mask},
			}
		}
		out, err := s.Run(context.Background(), in(c.mask, []int64{2, 1, 1, 40}))
		if err != nil {
			t.Fatal(err)
		}
		want := attentionRef(c.q, c.k, c.v, c.mask, 2, 33, 40, 384, 12, 1/math.Sqrt(32))
		if ok, detail := closeTo(out[0].Float32, want, bf16 == 1); !ok {
			t.Errorf("bf16=%d: %s", bf16, detail)
		}
		if _, err := s.Run(context.Background(), in(c.mask[:39], []int64{1, 1, 1, 39})); err == nil {
			t.Errorf("bf16=%d: a mask of 39 values for 2 × 40 keys ran", bf16)
		}
		// 80 values, but not [batch, 1, 1, keys]: refused, not read wrong.
		if _, err := s.Run(context.Background(), in(c.mask, []int64{1, 1, 2, 40})); err == nil {
			t.Errorf("bf16=%d: a [1, 1, 2, 40] mask ran", bf16)
		}
	}
}

// BenchmarkAttentionKernel times the tile path on one thread outside a
// session: balanced's heads (12 × 32) and fast's (2 × 64) over 4 × 376
// tokens, and a narrowed last layer's one query row.
func BenchmarkAttentionKernel(b *testing.B) {
	initRuntime(b)
	if !AttentionBF16() {
		b.Skip("no AMX-BF16 here")
	}
	for _, sh := range []struct{ sq, hidden, heads int }{{376, 384, 12}, {376, 128, 2}, {1, 384, 12}, {1, 128, 2}} {
		c := newAttentionCase(4, sh.sq, 376, sh.hidden, sh.heads, 1)
		out := make([]float32, len(c.q))
		scale := float32(1 / math.Sqrt(float64(sh.hidden/sh.heads)))
		b.Run(fmt.Sprintf("4x%dx376/%dx%d", sh.sq, sh.heads, sh.hidden/sh.heads), func(b *testing.B) {
			for b.Loop() {
				if err := attentionDirect(c.q, c.k, c.v, c.mask, out, 4, sh.sq, 376, sh.hidden, sh.heads, scale, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
