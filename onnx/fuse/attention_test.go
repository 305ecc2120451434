package fuse_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// attentionConfig is a small cross-encoder with a head size of hidden /
// heads.
func attentionConfig(hidden, heads int) bertgen.Config {
	cfg := bertgen.MiniLML6CrossEncoder()
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 3, hidden, heads, 4*hidden, 1000, 128
	return cfg
}

// spreadWeights are generated weights for cfg with the classifier scaled
// up: a logit spread the comparisons can see.
func spreadWeights(t *testing.T, cfg bertgen.Config) *bertgen.Weights {
	t.Helper()
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.ClsW {
		w.ClsW[i] *= 50
	}
	return w
}

// spanDiff returns the span of want (max − min) and the largest |got −
// want|.
func spanDiff(want, got []float32) (span, diff float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range want {
		lo, hi = min(lo, float64(want[i])), max(hi, float64(want[i]))
		diff = max(diff, math.Abs(float64(got[i]-want[i])))
	}
	return hi - lo, diff
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
	if countOps(m, "Softmax") != 0 || countOps(m, "Attention") != cfg.Layers || !m.UsesOpset(ops.Domain) {
		t.Fatalf("%d Softmax and %d Attention nodes left, domain imported %v", countOps(m, "Softmax"), countOps(m, "Attention"), m.UsesOpset(ops.Domain))
	}
	idx := m.Graph.Index()
	for _, init := range m.Graph.Initializers {
		if len(idx.Consumers[init.Name]) == 0 {
			t.Errorf("initializer %s is read by no node after the rewrite", init.Name)
		}
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
		m, err := bertgen.BuildModel(spreadWeights(t, cfg))
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
		span, diff := spanDiff(berttest.Run(t, ref, bertgen.Logits, "", batch), berttest.Run(t, bf, bertgen.Logits, "", batch))
		t.Logf("%+v: logits span %.4g, max |Δ| %.3g", sh, span, diff)
		if diff > 0.01*span || math.IsNaN(diff) {
			t.Errorf("%+v: bfloat16 attention moves a logit by %.3g, over 1 %% of their span %.3g", sh, diff, span)
		}
	}
}

// TestAttentionWiring checks what the rewrite passes the operator, on any
// CPU with the custom operators: the attention rewritten with bf16 = 0
// (the operator's float32 path) gives the unrewritten graph's logits to
// float32 rounding, and the node has q, k, v and the mask in that order,
// the heads and 1/√d. Variants an export may present: the scale as a Mul,
// the scores as the Add's second operand, one layer (whose mask Mul then
// has one reader, like the scores' Div).
func TestAttentionWiring(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if err := onnx.CustomOps(); err != nil {
		t.Skipf("no custom operators here: %v", err)
	}
	layer := func(n onnxpb.Node, suffix string) bool { return strings.HasSuffix(n.Name, "/attention/self/"+suffix) }
	for _, tc := range []struct {
		name   string
		layers int
		edit   func(g *onnxpb.Graph)
	}{
		{"as exported", 3, nil},
		{"scale as Mul", 3, func(g *onnxpb.Graph) {
			inv := g.AddFloat32("inv_sqrt_d", nil, []float32{float32(1 / math.Sqrt(32))})
			for i := range g.Nodes {
				if layer(g.Nodes[i], "Div") {
					g.Nodes[i].OpType, g.Nodes[i].Inputs = "Mul", []string{inv, g.Nodes[i].Inputs[0]}
				}
			}
		}},
		{"scores second", 3, func(g *onnxpb.Graph) {
			for i := range g.Nodes {
				if layer(g.Nodes[i], "Add") {
					in := g.Nodes[i].Inputs
					in[0], in[1] = in[1], in[0]
				}
			}
		}},
		{"one layer", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := attentionConfig(128, 4)
			cfg.Layers = tc.layers
			w := spreadWeights(t, cfg)
			build := func(fused bool) string {
				m, err := bertgen.BuildModel(w)
				if err != nil {
					t.Fatal(err)
				}
				if tc.edit != nil {
					tc.edit(m.Graph)
				}
				if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
					t.Fatal(err)
				}
				if _, err := fuse.SkipLayerNorm(m); err != nil {
					t.Fatal(err)
				}
				if _, err := fuse.FirstToken(m); err != nil {
					t.Fatal(err)
				}
				if fused {
					n, err := fuse.AttentionWith(m, 0)
					if err != nil || n != cfg.Layers {
						t.Fatalf("rewrote %d attentions (%v), want %d", n, err, cfg.Layers)
					}
					checkAttentionNodes(t, m, cfg)
				}
				p := filepath.Join(t.TempDir(), "m.onnx")
				if err := m.WriteFile(p); err != nil {
					t.Fatal(err)
				}
				return p
			}
			batch := berttest.Padded(11, 60, []int{60, 41, 7}, 1, cfg.VocabSize)
			span, diff := spanDiff(berttest.Run(t, build(false), bertgen.Logits, "", batch), berttest.Run(t, build(true), bertgen.Logits, "", batch))
			if diff > 1e-4*max(span, 1) || math.IsNaN(diff) || span < 0.1 {
				t.Errorf("logits span %.4g, max |Δ| %.3g: want the float32 path to match", span, diff)
			}
		})
	}
}

// checkAttentionNodes checks every ai.hybrank.Attention node of m: its
// inputs are the query, key and value projections and the mask, its
// attributes the config's heads and 1/√d.
func checkAttentionNodes(t *testing.T, m *onnxpb.Model, cfg bertgen.Config) {
	t.Helper()
	idx := m.Graph.Index()
	for _, n := range m.Graph.Nodes {
		if n.OpType != "Attention" || n.Domain != ops.Domain {
			continue
		}
		for k, part := range []string{"/query/", "/key/", "/value/"} {
			if p, ok := idx.Producer[n.Inputs[k]]; !ok || !strings.Contains(m.Graph.Nodes[p].Name, part) {
				t.Errorf("%s: input %d is %q, want the %s projection", n.Name, k, n.Inputs[k], strings.Trim(part, "/"))
			}
		}
		// bertgen's extended mask, or in the last layer FirstToken's Slice of
		// it (of the axis that is 1 already).
		if p, ok := idx.Producer[n.Inputs[3]]; !ok || m.Graph.Nodes[p].Name != "/Mul" && m.Graph.Nodes[p].Name != "/Mul/first_token" {
			t.Errorf("%s: mask input %q, want the extended attention mask", n.Name, n.Inputs[3])
		}
		heads, _ := attr(t, n, "num_heads").Int()
		scale, _ := attr(t, n, "scale").Float()
		if heads != int64(cfg.Heads) || math.Abs(float64(scale)-1/math.Sqrt(float64(cfg.HeadDim()))) > 1e-6 {
			t.Errorf("%s: num_heads %d, scale %g; want %d and 1/√%d", n.Name, heads, scale, cfg.Heads, cfg.HeadDim())
		}
	}
}

func attr(t *testing.T, n onnxpb.Node, name string) onnxpb.Attr {
	t.Helper()
	a, ok := n.Attr(name)
	if !ok {
		t.Fatalf("%s has no attribute %s", n.Name, name)
	}
	return a
}
