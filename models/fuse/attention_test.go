package fuse_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/berttest"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/fuse"
	"github.com/hybrank/hybrank/models/onnxpb"
	"github.com/hybrank/hybrank/models/quantize"
	"github.com/hybrank/hybrank/onnx"
)

// attentionConfig is a small cross-encoder with a head size of hidden /
// heads.
func attentionConfig(hidden, heads int) bertgen.Config {
	cfg := bertgen.MiniLML6CrossEncoder()
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 3, hidden, heads, 4*hidden, 1000, 128
	return cfg
}

// countOps counts the nodes of op type in m.
func countOps(m *onnxpb.Model, op string) int {
	n := 0
	for _, nd := range m.Graph.Nodes {
		if nd.OpType == op {
			n++
		}
	}
	return n
}

// TestAttentionBF16Graph: every layer's attention of an int8 graph becomes
// one ai.hybrank.Attention node (after SkipLayerNorm and FirstToken too,
// as models/ort applies them), none of a float32 graph's does, and head
// sizes the tile kernel lacks, or a chain value read elsewhere, are left
// alone.
func TestAttentionBF16Graph(t *testing.T) {
	build := func(cfg bertgen.Config, int8 bool) *onnxpb.Model {
		m := berttest.Model(t, cfg)
		if int8 {
			if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	cfg := attentionConfig(128, 4) // head size 32
	m := build(cfg, true)
	if _, err := fuse.SkipLayerNorm(m); err != nil {
		t.Fatal(err)
	}
	if _, err := fuse.FirstToken(m); err != nil {
		t.Fatal(err)
	}
	n, err := fuse.AttentionBF16(m)
	if err != nil || n != cfg.Layers {
		t.Fatalf("AttentionBF16 = %d, %v; want every one of %d layers", n, err, cfg.Layers)
	}
	if countOps(m, "Softmax") != 0 || countOps(m, "Attention") != cfg.Layers || !m.UsesOpset(onnxpb.HybrankDomain) {
		t.Fatalf("%d Softmax and %d Attention nodes left, domain imported %v", countOps(m, "Softmax"), countOps(m, "Attention"), m.UsesOpset(onnxpb.HybrankDomain))
	}

	if n, err := fuse.AttentionBF16(build(cfg, false)); n != 0 || err != nil {
		t.Errorf("float32 graph: AttentionBF16 = %d, %v; want it left alone", n, err)
	}
	if n, err := fuse.AttentionBF16(build(attentionConfig(96, 6), true)); n != 0 || err != nil { // head size 16
		t.Errorf("head size 16: AttentionBF16 = %d, %v; want none", n, err)
	}
	// A graph that also reads a layer's probabilities keeps that layer.
	m = build(cfg, true)
	sm := slices.IndexFunc(m.Graph.Nodes, func(n onnxpb.Node) bool { return n.OpType == "Softmax" })
	m.Graph.AddOutput(m.Graph.Nodes[sm].Outputs[0], onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic("h"), onnxpb.Symbolic("s"), onnxpb.Symbolic("t"))
	if n, err := fuse.AttentionBF16(m); n != cfg.Layers-1 || err != nil {
		t.Errorf("probabilities of one layer read: AttentionBF16 = %d, %v; want %d", n, err, cfg.Layers-1)
	}
}

// TestAttentionBF16Runtime runs an int8 cross-encoder rewritten by
// WriteFile with and without RewriteAttentionBF16 on a padded batch: the
// logits agree to bfloat16's precision, for head sizes 32 and 64.
func TestAttentionBF16Runtime(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if !onnx.AttentionBF16() {
		t.Skip("no AMX-BF16 on this CPU (or the kernel withholds the tile state): the rewrite is not applied here")
	}
	for _, sh := range []struct{ hidden, heads int }{{128, 4}, {128, 2}} {
		cfg := attentionConfig(sh.hidden, sh.heads)
		w, err := bertgen.GenerateWeights(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w.ClsW {
			w.ClsW[i] *= 50 // a score spread the comparison can see
		}
		m, err := bertgen.BuildModel(w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		plain := filepath.Join(dir, "int8.onnx")
		if err := m.WriteFile(plain); err != nil {
			t.Fatal(err)
		}
		ref, bf := filepath.Join(dir, "cpu.onnx"), filepath.Join(dir, "bf16.onnx")
		if _, err := fuse.WriteFile(plain, ref, fuse.ForCPU); err != nil {
			t.Fatal(err)
		}
		rep, err := fuse.WriteFile(plain, bf, fuse.ForCPU|fuse.RewriteAttentionBF16)
		if err != nil || rep.AttentionBF16 != cfg.Layers {
			t.Fatalf("%+v: report %+v, %v; want %d attentions", sh, rep, err, cfg.Layers)
		}
		batch := berttest.Padded(3, 100, []int{100, 77, 40, 9}, 1, cfg.VocabSize)
		want, got := berttest.Run(t, ref, bertgen.Logits, "", batch), berttest.Run(t, bf, bertgen.Logits, "", batch)
		lo, hi, diff := math.Inf(1), math.Inf(-1), 0.0
		for i := range want {
			lo, hi = min(lo, float64(want[i])), max(hi, float64(want[i]))
			diff = max(diff, math.Abs(float64(got[i]-want[i])))
		}
		t.Logf("%+v: logits span %.4g, max |Δ| %.3g", sh, hi-lo, diff)
		if diff > 0.01*(hi-lo) || math.IsNaN(diff) {
			t.Errorf("%+v: bfloat16 attention moves a logit by %.3g, over 1 %% of their span %.3g", sh, diff, hi-lo)
		}
	}
}
