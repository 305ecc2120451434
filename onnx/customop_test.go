package onnx

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/onnxpb"
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
	c.q, c.k, c.v = fill(batch*sq*hidden, 1), fill(batch*sk*hidden, 1), fill(batch*sk*hidden, 1)
	c.mask = make([]float32, batch*sk)
	if batch > 1 {
		for t := sk - sk/3; t < sk; t++ {
			c.mask[sk+t] = -math.MaxFloat32
		}
	}
	return c
}

// worst is the largest |got − want| and the largest |want|.
func worst(got []float32, want []float64) (diff, scale float64) {
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-want[i]))
		scale = max(scale, math.Abs(want[i]))
	}
	return diff, scale
}

var attentionShapes = []struct{ batch, sq, sk, hidden, heads int }{
	{1, 1, 1, 64, 2},
	{2, 1, 17, 384, 12},   // a narrowed last layer: one query row
	{2, 16, 16, 384, 12},  // whole tiles
	{2, 33, 40, 384, 12},  // partial query and key blocks
	{3, 7, 100, 128, 2},   // head size 64
	{2, 130, 130, 128, 2}, // more than one block each way
	{1, 384, 384, 384, 12},
}

// TestAttentionKernel holds both paths of the kernel to the float64
// definition: float32 to 1e-5 of the outputs' scale, the bfloat16 tiles to
// 3e-2 (8-bit mantissas in both products, float32 sums and softmax).
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
			diff, s := worst(got, want)
			tol := 1e-5
			if bf16 {
				tol = 3e-2
			}
			if diff > tol*max(s, 1) || math.IsNaN(diff) {
				t.Errorf("%+v bf16=%v: max |Δ| %.3g against outputs up to %.3g", sh, bf16, diff, s)
			}
		}
	}
}

func initRuntime(t *testing.T) {
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
		g.Nodes = append(g.Nodes, onnxpb.Node{Name: "att", OpType: "Attention", Domain: onnxpb.HybrankDomain, Inputs: []string{"q", "k", "v", "mask"}, Outputs: []string{"out"},
			Attrs: []onnxpb.Attr{onnxpb.AttrInt("num_heads", 12), onnxpb.AttrFloat("scale", float32(1/math.Sqrt(32))), onnxpb.AttrInt("bf16", bf16)}})
		g.AddOutput("out", onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic("qs"), onnxpb.Fixed(384))
		m := onnxpb.NewModel(g)
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: onnxpb.HybrankDomain, Version: 1})
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
		diff, sc := worst(out[0].Float32, want)
		tol := 1e-5
		if bf16 == 1 {
			tol = 3e-2
		}
		if diff > tol*max(sc, 1) {
			t.Errorf("bf16=%d: max |Δ| %.3g against outputs up to %.3g", bf16, diff, sc)
		}
		if _, err := s.Run(context.Background(), in(c.mask[:39], []int64{1, 1, 1, 39})); err == nil {
			t.Errorf("bf16=%d: a mask of 39 values for 2 × 40 keys ran", bf16)
		}
	}
}
