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
	"github.com/hybrank/hybrank/onnx/quantize"
)

// smallConfig is a three-layer BERT of the given kind, small enough for
// unit tests.
func smallConfig(kind bertgen.Kind) bertgen.Config {
	cfg := bertgen.MiniLML6CrossEncoder()
	cfg.Kind = kind
	cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 3, 64, 4, 256, 1000, 64
	return cfg
}

// readers returns the op types and names of the nodes reading v.
func readers(m *onnxpb.Model, v string) []string {
	var s []string
	for _, n := range m.Graph.Nodes {
		if slices.Contains(n.Inputs, v) {
			s = append(s, n.OpType+" "+n.Name)
		}
	}
	return s
}

// TestFirstTokenCrossEncoder: in a generated cross-encoder the last
// layer's query path, attention row, output projection, feed-forward
// block and normalisations are narrowed to [CLS]; its key and value
// projections and every earlier layer are not. Two Slices: the previous
// layer's output (read whole by K and V) and the attention mask (read by
// every layer).
func TestFirstTokenCrossEncoder(t *testing.T) {
	cfg := smallConfig(bertgen.CrossEncoder)
	m := berttest.Model(t, cfg)
	before := len(m.Graph.Nodes)
	rep, err := fuse.FirstToken(m)
	if err != nil {
		t.Fatal(err)
	}
	// Q MatMul+Add, Reshape, Transpose, Q·Kᵀ, Div, mask Add, Softmax, P·V,
	// Transpose, Reshape, output MatMul+Add, residual Add, LayerNorm, FFN
	// MatMul+Add, GELU's Div, Erf, Add, Mul, Mul, MatMul+Add, residual Add,
	// LayerNorm.
	if want := (fuse.Narrowed{Nodes: 26, MatMuls: 6, Slices: 2, Attention: true}); rep != want {
		t.Fatalf("narrowed %+v, want %+v", rep, want)
	}
	if got := len(m.Graph.Nodes); got != before+2 {
		t.Fatalf("%d nodes, want %d + 2 Slices", got, before)
	}
	last := "/encoder/layer." + itoa(cfg.Layers-1)
	prev := "/encoder/layer." + itoa(cfg.Layers-2) + "/output/LayerNorm/LayerNormalization"
	// The previous layer's output: K and V read it whole, its Slice feeds
	// the query and the residual.
	got := readers(m, prev)
	want := []string{"MatMul " + last + "/attention/self/key/MatMul", "MatMul " + last + "/attention/self/value/MatMul", "Slice " + prev + "/first_token"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("readers of %s: %v, want %v", prev, got, want)
	}
	sliced := readers(m, prev+"/first_token")
	if len(sliced) != 2 || !strings.Contains(sliced[0], "query/MatMul") || !strings.Contains(sliced[1], "attention/output/Add") {
		t.Fatalf("readers of the sliced stream: %v", sliced)
	}
	if r := readers(m, "/Mul/first_token"); len(r) != 1 || !strings.Contains(r[0], last+"/attention/self/Add") {
		t.Fatalf("readers of the sliced mask: %v", r)
	}
	// Applied again, nothing changes.
	n := len(m.Graph.Nodes)
	if rep, err := fuse.FirstToken(m); err != nil || rep != (fuse.Narrowed{}) || len(m.Graph.Nodes) != n {
		t.Fatalf("second FirstToken: %+v, %v, %d nodes (was %d)", rep, err, len(m.Graph.Nodes), n)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestFirstTokenLeavesOthers: graphs whose every position is read are
// left unchanged with a zero report: an embedder's last_hidden_state, and
// a cross-encoder that also outputs its last layer whole.
func TestFirstTokenLeavesOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    func(t *testing.T) *onnxpb.Model
	}{
		{"bi-encoder", func(t *testing.T) *onnxpb.Model { return berttest.Model(t, smallConfig(bertgen.BiEncoder)) }},
		{"hidden states output too", func(t *testing.T) *onnxpb.Model {
			m := berttest.Model(t, smallConfig(bertgen.CrossEncoder))
			m.Graph.AddOutput("/encoder/layer.2/output/LayerNorm/LayerNormalization", onnxpb.Float32)
			return m
		}},
		{"opset 9", func(t *testing.T) *onnxpb.Model {
			m := berttest.Model(t, smallConfig(bertgen.CrossEncoder))
			m.Opset = 9
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			before := slices.Clone(m.Graph.Nodes)
			rep, err := fuse.FirstToken(m)
			if err != nil || rep != (fuse.Narrowed{}) {
				t.Fatalf("report %+v, %v; want none", rep, err)
			}
			if len(m.Graph.Nodes) != len(before) {
				t.Fatalf("graph changed: %d nodes, was %d", len(m.Graph.Nodes), len(before))
			}
		})
	}
}

// computedMergeShape replaces the constant shape of every attention's
// merge-heads Reshape with one computed from the tensor, as torch.onnx
// exports write x.view(x.size()[:-2] + (hidden,)): Shape, Slice, Concat.
// With shared, the Slice of the last layer's Shape is also a graph output.
func computedMergeShape(m *onnxpb.Model, hidden int64, shared bool) {
	g := m.Graph
	nodes := make([]onnxpb.Node, 0, len(g.Nodes)+12)
	zero := g.AddInt64("cs_zero", []int64{1}, []int64{0})
	two := g.AddInt64("cs_two", []int64{1}, []int64{2})
	h := g.AddInt64("cs_hidden", []int64{1}, []int64{hidden})
	last := ""
	for _, n := range g.Nodes {
		if n.Is("Reshape") && strings.HasSuffix(n.Name, "Reshape_ctx") {
			p := n.Name + "/shape"
			nodes = append(nodes,
				onnxpb.Node{Name: p + "_of", OpType: "Shape", Inputs: []string{n.Inputs[0]}, Outputs: []string{p + "_of"}},
				onnxpb.Node{Name: p + "_lead", OpType: "Slice", Inputs: []string{p + "_of", zero, two}, Outputs: []string{p + "_lead"}},
				onnxpb.Node{Name: p, OpType: "Concat", Inputs: []string{p + "_lead", h}, Outputs: []string{p}, Attrs: []onnxpb.Attr{onnxpb.AttrInt("axis", 0)}})
			n.Inputs = []string{n.Inputs[0], p}
			last = p + "_lead"
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	if shared {
		g.AddOutput(last, onnxpb.Int64)
	}
}

// TestFirstTokenComputedReshape: where the heads are merged by a shape
// computed from the tensor's own Shape (real exports), the Reshape is
// narrowed with the constant shape that means the same ([0, 0, hidden])
// and the shape computation goes; where something else reads that
// computation too, the attention stays whole and the narrowing starts
// after it: the output projection and the feed-forward block.
func TestFirstTokenComputedReshape(t *testing.T) {
	cfg := smallConfig(bertgen.CrossEncoder)
	m := berttest.Model(t, cfg)
	computedMergeShape(m, int64(cfg.Hidden), false)
	before := len(m.Graph.Nodes)
	rep, err := fuse.FirstToken(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (fuse.Narrowed{Nodes: 26, MatMuls: 6, Slices: 2, Attention: true}); rep != want {
		t.Fatalf("narrowed %+v, want %+v", rep, want)
	}
	if got := len(m.Graph.Nodes); got != before+2-3 { // 2 Slices in, Shape, Slice, Concat out
		t.Fatalf("%d nodes, want %d", got, before-1)
	}

	m = berttest.Model(t, cfg)
	computedMergeShape(m, int64(cfg.Hidden), true)
	if rep, err = fuse.FirstToken(m); err != nil {
		t.Fatal(err)
	}
	// Output MatMul+Add, residual Add, LayerNorm, FFN MatMul+Add, GELU's
	// five, MatMul+Add, residual Add, LayerNorm; Slices of the merged
	// context and of the previous layer's output.
	if want := (fuse.Narrowed{Nodes: 15, MatMuls: 3, Slices: 2}); rep != want {
		t.Fatalf("shared shape: narrowed %+v, want %+v", rep, want)
	}
}

// TestFirstTokenRuntime: ONNX Runtime computes the same logits with the
// narrowed graph, on a batch with padding: float32 (alone, and after
// SkipLayerNorm, as models/ort loads it), the computed-shape variant, and
// the int8 copy (its narrowed products quantize their activations over the
// rows they compute, so a looser bound).
func TestFirstTokenRuntime(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig(bertgen.CrossEncoder)
	b := berttest.Padded(11, 40, []int{40, 29, 11, 2}, 1, cfg.VocabSize)
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		edit     func(t *testing.T, m *onnxpb.Model)
		matmuls  int
		tol, rel float64 // |Δ| ≤ tol + rel·span of the logits
	}{
		{"float32", nil, 6, 1e-6, 0},
		{"skip layer norm", func(t *testing.T, m *onnxpb.Model) {
			if _, err := fuse.SkipLayerNorm(m); err != nil {
				t.Fatal(err)
			}
		}, 6, 1e-6, 0},
		{"computed reshape", func(t *testing.T, m *onnxpb.Model) { computedMergeShape(m, int64(cfg.Hidden), false) }, 6, 1e-6, 0},
		{"computed reshape read elsewhere", func(t *testing.T, m *onnxpb.Model) { computedMergeShape(m, int64(cfg.Hidden), true) }, 3, 1e-6, 0},
		{"int8", func(t *testing.T, m *onnxpb.Model) {
			if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}, 6, 0, 0.01},
		{"float16", func(t *testing.T, m *onnxpb.Model) { // what the CUDA sessions run with --quantize fp16
			if _, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config()); err != nil {
				t.Fatal(err)
			}
		}, 6, 1e-4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := berttest.Model(t, cfg)
			if tc.edit != nil {
				tc.edit(t, m)
			}
			plain := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".onnx")
			if err := m.WriteFile(plain); err != nil {
				t.Fatal(err)
			}
			rep, err := fuse.FirstToken(m)
			if err != nil || rep.MatMuls != tc.matmuls {
				t.Fatalf("narrowed %+v, %v; want %d MatMuls", rep, err, tc.matmuls)
			}
			narrow := strings.TrimSuffix(plain, ".onnx") + "-narrow.onnx"
			if err := m.WriteFile(narrow); err != nil {
				t.Fatal(err)
			}
			got := berttest.Run(t, narrow, bertgen.Logits, "", b)
			ref := berttest.Run(t, plain, bertgen.Logits, "", b)
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range ref {
				lo, hi = min(lo, float64(v)), max(hi, float64(v))
			}
			span := hi - lo
			bound, worst := tc.tol+tc.rel*span, 0.0
			for i := range ref {
				d := math.Abs(float64(got[i] - ref[i]))
				worst = max(worst, d)
				if d > bound {
					t.Errorf("logit %d: narrowed %g, whole %g (|Δ| %g > %g)", i, got[i], ref[i], d, bound)
				}
			}
			t.Logf("logits span %g, max |Δ| %g, bound %g", span, worst, bound)
			if span < 10*bound {
				t.Errorf("logits span %g: the comparison is not sensitive", span)
			}
		})
	}
}
