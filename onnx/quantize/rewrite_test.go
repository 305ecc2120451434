package quantize_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/onnxpb/onnxpbtest"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// tinyBERT is a 2-layer cross-encoder small enough to build in
// microseconds; it has the operator structure of a Hugging Face export.
func tinyBERT(t testing.TB) *onnxpb.Model {
	t.Helper()
	cfg := bertgen.TinyBERTL2CrossEncoder()
	cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = 32, 4, 64, 100, 64
	return berttest.Model(t, cfg)
}

func opCount(g *onnxpb.Graph) map[string]int {
	c := map[string]int{}
	for _, n := range g.Nodes {
		c[n.OpType]++
	}
	return c
}

func initializer(g *onnxpb.Graph, name string) *onnxpb.Tensor {
	for i := range g.Initializers {
		if g.Initializers[i].Name == name {
			return &g.Initializers[i]
		}
	}
	return nil
}

func TestRewriteFusedStructure(t *testing.T) {
	m := tinyBERT(t)
	before := opCount(m.Graph)
	inputs, outputs := append([]onnxpb.ValueInfo(nil), m.Graph.Inputs...), append([]onnxpb.ValueInfo(nil), m.Graph.Outputs...)
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	after := opCount(g)
	// 6 dense layers per encoder layer become DynamicQuantizeMatMul with
	// their bias Adds folded; pooler and classifier stay MatMul.
	if after["DynamicQuantizeMatMul"] != 12 || len(rep.Nodes) != 12 {
		t.Fatalf("%d DynamicQuantizeMatMul, %d reported; want 12", after["DynamicQuantizeMatMul"], len(rep.Nodes))
	}
	if after["MatMul"] != before["MatMul"]-12 || after["Add"] != before["Add"]-12 {
		t.Fatalf("MatMul %d→%d, Add %d→%d: want 12 fewer of each", before["MatMul"], after["MatMul"], before["Add"], after["Add"])
	}
	if len(rep.Skipped) != 2 || !strings.Contains(rep.Skipped[0].Reason, "pooler") || !strings.Contains(rep.Skipped[1].Reason, "classifier") {
		t.Fatalf("skipped %+v, want pooler and classifier", rep.Skipped)
	}
	if !m.UsesOpset(onnxpb.MSDomain) {
		t.Fatal("com.microsoft opset not imported")
	}
	if len(g.Inputs) != len(inputs) || len(g.Outputs) != len(outputs) || g.Outputs[0].Name != outputs[0].Name {
		t.Fatal("graph inputs or outputs changed")
	}
	for _, n := range g.Nodes {
		if n.OpType != "DynamicQuantizeMatMul" {
			continue
		}
		if n.Domain != onnxpb.MSDomain || len(n.Inputs) != 5 || n.Inputs[3] != "" || !strings.HasSuffix(n.Inputs[4], ".bias") {
			t.Fatalf("node %s: domain %q inputs %q; want com.microsoft, (A, B, scale, \"\", bias)", n.Name, n.Domain, n.Inputs)
		}
		q, s := initializer(g, n.Inputs[1]), initializer(g, n.Inputs[2])
		if q == nil || q.DataType() != onnxpb.Int8 || len(q.Dims) != 2 || s == nil || s.DataType() != onnxpb.Float32 || len(s.Dims) != 1 || s.Dims[0] != q.Dims[1] {
			t.Fatalf("node %s: weight %+v scale %+v", n.Name, q, s)
		}
		for _, b := range q.Raw {
			if v := int8(b); v < -63 || v > 63 {
				t.Fatalf("node %s: 7-bit code %d", n.Name, v)
			}
		}
	}
	// The float32 weights are gone, the biases stay (the fused nodes read
	// them), the head's weights stay.
	for _, name := range []string{"encoder.layer.0.attention.self.query.weight", "encoder.layer.1.output.dense.weight"} {
		if initializer(g, name) != nil {
			t.Fatalf("float32 weight %s still in the graph", name)
		}
	}
	for _, name := range []string{"encoder.layer.0.attention.self.query.bias", "pooler.dense.weight", "classifier.weight"} {
		if initializer(g, name) == nil {
			t.Fatalf("%s was removed", name)
		}
	}
	h, i := int64(32), int64(64)
	if want := 4 * 2 * (4*h*h + 2*h*i); rep.WeightBytesFP32 != want {
		t.Fatalf("WeightBytesFP32 = %d, want %d", rep.WeightBytesFP32, want)
	}
	if want := 2*(4*h*h+2*h*i) + 4*2*(4*h+h+i); rep.WeightBytesInt8 != want {
		t.Fatalf("WeightBytesInt8 = %d, want %d", rep.WeightBytesInt8, want)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := onnxpb.Unmarshal(b); err != nil {
		t.Fatalf("quantized model does not read back: %v", err)
	}
}

func TestRewriteStandardStructure(t *testing.T) {
	m := tinyBERT(t)
	before := opCount(m.Graph)
	cfg := quantize.DefaultConfig()
	cfg.Form = quantize.FormStandard
	if _, err := quantize.Rewrite(context.Background(), m, cfg); err != nil {
		t.Fatal(err)
	}
	after := opCount(m.Graph)
	// Per layer four distinct activations feed the dense layers (the
	// embedding or previous output for Q, K and V; the attention context;
	// the attention block's output; the GELU output): one
	// DynamicQuantizeLinear each.
	if after["DynamicQuantizeLinear"] != 8 || after["MatMulInteger"] != 12 || after["Cast"] != before["Cast"]+12 {
		t.Fatalf("ops %v", after)
	}
	if after["Add"] != before["Add"] || after["Mul"] != before["Mul"]+24 || after["MatMul"] != before["MatMul"]-12 {
		t.Fatalf("Add/Mul/MatMul counts %v, before %v", after, before)
	}
	if m.UsesOpset(onnxpb.MSDomain) {
		t.Fatal("standard form imported com.microsoft")
	}
}

// gemmModel is y = Gemm(x, W, c) with the given attributes; W is 3×2 as
// stored (2×3 used when transB is set).
func gemmModel(attrs ...onnxpb.Attr) *onnxpb.Model {
	g := onnxpb.NewGraph("gemm")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(2))
	g.AddFloat32("W", []int64{3, 2}, []float32{1.1, -2, 0.6, 4, -3, 0.25})
	g.AddFloat32("c", []int64{3}, []float32{0.1, 0.2, 0.3})
	g.AddNode("y", "Gemm", []string{"x", "W", "c"}, attrs...)
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(3))
	return onnxpb.NewModel(g)
}

func TestRewriteGemm(t *testing.T) {
	m := gemmModel(onnxpb.AttrInt("transB", 1), onnxpb.AttrFloat("alpha", 1))
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	n := m.Graph.Nodes[0]
	if n.OpType != "DynamicQuantizeMatMul" || len(n.Inputs) != 5 || n.Inputs[4] != "c" || n.Outputs[0] != "y" {
		t.Fatalf("node %+v", n)
	}
	if r := rep.Nodes[0]; r.K != 2 || r.N != 3 {
		t.Fatalf("K, N = %d, %d; want 2, 3 (transposed)", r.K, r.N)
	}
	q := initializer(m.Graph, n.Inputs[1])
	// Transposed W is [[1.1 0.6 -3] [-2 4 0.25]]; per-column max |w| is
	// 2, 4, 3, so the codes are round(63·w/max).
	want := []int8{35, 9, -63, -63, 63, 5}
	for i, b := range q.Raw {
		if int8(b) != want[i] {
			t.Fatalf("codes %v, want %v", q.Raw, want)
		}
	}
	if initializer(m.Graph, "W") != nil {
		t.Fatal("float32 W kept")
	}

	for _, tc := range []struct {
		name  string
		attrs []onnxpb.Attr
	}{
		{"alpha", []onnxpb.Attr{onnxpb.AttrFloat("alpha", 2)}},
		{"transA", []onnxpb.Attr{onnxpb.AttrInt("transA", 1)}},
		{"bias of the wrong length", nil}, // W not transposed: N = 2, c has 3
	} {
		_, err := quantize.Rewrite(context.Background(), gemmModel(tc.attrs...), quantize.DefaultConfig())
		if !errors.Is(err, quantize.ErrNothingToQuantize) {
			t.Errorf("%s: err = %v, want ErrNothingToQuantize", tc.name, err)
		}
	}
}

// matmulGraph is y = (x·W1 + b) and z = (x·W2) with W2 possibly W1.
func matmulGraph(w2 string, w []float32) *onnxpb.Model {
	g := onnxpb.NewGraph("mm")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(2))
	g.AddFloat32("W1", []int64{2, 2}, w)
	g.AddFloat32("W2", []int64{2, 2}, []float32{1, 2, 3, 4})
	g.AddFloat32("b", []int64{2}, []float32{1, 1})
	h := g.AddNode("h", "MatMul", []string{"x", "W1"})
	g.AddNode("y", "Add", []string{"b", h})
	g.AddNode("z", "MatMul", []string{"x", w2})
	g.AddNode("h2", "Identity", []string{h}) // h has two readers: no fold
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(2))
	g.AddOutput("z", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(2))
	g.AddOutput("h2", onnxpb.Float32, onnxpb.Symbolic("m"), onnxpb.Fixed(2))
	g.ValueInfo = []onnxpb.ValueInfo{{Name: "h", Type: onnxpb.Float32}}
	return onnxpb.NewModel(g)
}

func TestRewriteSharedWeightAndNoFold(t *testing.T) {
	m := matmulGraph("W1", []float32{1, 0, 0, 1})
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	if len(rep.Nodes) != 2 || rep.Nodes[0].BiasFolded || rep.WeightBytesFP32 != 16 || rep.WeightBytesInt8 != 4+8 {
		t.Fatalf("report %+v", rep)
	}
	if g.Nodes[0].Inputs[1] != g.Nodes[2].Inputs[1] {
		t.Fatal("a weight read by two MatMuls was quantized twice")
	}
	if ops := opCount(g); ops["Add"] != 1 || ops["DynamicQuantizeMatMul"] != 2 {
		t.Fatalf("ops %v: the Add must stay when the MatMul output has two readers", ops)
	}
	if initializer(g, "W1") != nil || initializer(g, "W2") == nil {
		t.Fatal("W1 must be dropped, the unused W2 kept as it was")
	}
	if len(g.ValueInfo) != 1 {
		t.Fatal("value_info of a value that still exists was dropped")
	}
}

func TestRewriteFoldDropsValueInfo(t *testing.T) {
	m := matmulGraph("W2", []float32{1, 0, 0, 1})
	g := m.Graph
	g.Nodes = g.Nodes[:3] // no second reader of h
	g.Outputs = g.Outputs[:2]
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Nodes[0].BiasFolded || len(g.ValueInfo) != 0 || opCount(g)["Add"] != 0 {
		t.Fatalf("fold: report %+v, value_info %v, ops %v", rep.Nodes[0], g.ValueInfo, opCount(g))
	}
	if n := g.Nodes[0]; n.Outputs[0] != "y" || n.Inputs[4] != "b" {
		t.Fatalf("folded node %+v", n)
	}
}

func TestRewriteErrors(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name string
		m    *onnxpb.Model
		cfg  func(*quantize.Config)
		want error
	}{
		{"NaN weight", matmulGraph("W2", []float32{1, nan, 0, 1}), nil, quantize.ErrNonFinite},
		{"Inf weight", matmulGraph("W2", []float32{1, float32(math.Inf(1)), 0, 1}), nil, quantize.ErrNonFinite},
		{"everything excluded", matmulGraph("W2", []float32{1, 0, 0, 1}), func(c *quantize.Config) { c.Exclude = []string{"."} }, quantize.ErrNothingToQuantize},
		{"bad pattern", matmulGraph("W2", []float32{1, 0, 0, 1}), func(c *quantize.Config) { c.Exclude = []string{"("} }, quantize.ErrBadConfig},
		{"no graph", &onnxpb.Model{}, nil, onnxpb.ErrInvalidGraph},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := quantize.DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var before []byte
			if tc.m.Graph != nil {
				before, _ = tc.m.Marshal()
			}
			_, err := quantize.Rewrite(context.Background(), tc.m, cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.m.Graph != nil {
				after, _ := tc.m.Marshal()
				if !bytes.Equal(before, after) {
					t.Fatal("a failed rewrite modified the model")
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := quantize.Rewrite(ctx, tinyBERT(t), quantize.DefaultConfig()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRewriteZeroColumn(t *testing.T) {
	m := matmulGraph("W2", []float32{0, 1, 0, -1})
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := initializer(m.Graph, m.Graph.Nodes[0].Inputs[2])
	q := initializer(m.Graph, m.Graph.Nodes[0].Inputs[1])
	if s.Float32[0] != 1 || q.Raw[0] != 0 || q.Raw[2] != 0 || rep.Nodes[0].MaxAbsError > 1e-6 {
		t.Fatalf("zero column: scales %v, codes %v, max error %v", s.Float32, q.Raw, rep.Nodes[0].MaxAbsError)
	}
}

// TestExcludeFFN checks the patterns against the names of a generated
// export: FFN layers match, attention output does not.
func TestExcludeFFN(t *testing.T) {
	m := tinyBERT(t)
	var res []*regexp.Regexp
	for _, p := range quantize.ExcludeFFN() {
		res = append(res, regexp.MustCompile(p))
	}
	matched := map[string]bool{}
	for _, n := range m.Graph.Nodes {
		if n.OpType != "MatMul" {
			continue
		}
		for _, re := range res {
			if re.MatchString(n.Name) || re.MatchString(n.Inputs[1]) {
				matched[n.Name] = true
			}
		}
	}
	want := map[string]bool{
		"/encoder/layer.0/intermediate/dense/MatMul": true, "/encoder/layer.0/output/dense/MatMul": true,
		"/encoder/layer.1/intermediate/dense/MatMul": true, "/encoder/layer.1/output/dense/MatMul": true,
	}
	if len(matched) != len(want) {
		t.Fatalf("matched %v, want %v", matched, want)
	}
	for k := range want {
		if !matched[k] {
			t.Fatalf("matched %v, want %v", matched, want)
		}
	}
	cfg := quantize.DefaultConfig()
	cfg.Exclude = append(cfg.Exclude, quantize.ExcludeFFN()...)
	rep, err := quantize.Rewrite(context.Background(), m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 8 || len(rep.Skipped) != 6 {
		t.Fatalf("%d quantized, %d skipped; want 8 and 6", len(rep.Nodes), len(rep.Skipped))
	}
}

// TestRewriteRefusesSubgraphs: a branch of an If may read a weight or a
// biased MatMul's output by name, which the rewrite removes without
// seeing the read (the model then does not load): such graphs are
// refused, in both types.
func TestRewriteRefusesSubgraphs(t *testing.T) {
	g := onnxpb.NewGraph("g")
	g.AddInput("cond", onnxpb.Bool, onnxpb.Fixed(1))
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(4))
	w := g.AddFloat32("w", []int64{4, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	g.AddNodeOutputs("mm", "MatMul", []string{"x", w}, []string{"y"})
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(4))
	m, err := onnxpb.Unmarshal(onnxpbtest.WithIfNode(t, onnxpb.NewModel(g)))
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []quantize.Config{quantize.DefaultConfig(), quantize.FP16Config()} {
		if _, err := quantize.Rewrite(context.Background(), m, cfg); !errors.Is(err, onnxpb.ErrUnsupported) || !strings.Contains(err.Error(), "subgraphs") {
			t.Errorf("%s: %v, want ErrUnsupported about subgraphs", cfg.Type, err)
		}
	}
}

// TestRewriteLeavesOverridableWeights: an initializer that is also a graph
// input (IR < 4 lists every weight so; later IRs take it as a default the
// caller may override) is no constant: its MatMul stays float32, the
// others are quantized.
func TestRewriteLeavesOverridableWeights(t *testing.T) {
	m := matmulGraph("W2", []float32{1, 0, 0, 1})
	m.Graph.AddInput("W1", onnxpb.Float32, onnxpb.Fixed(2), onnxpb.Fixed(2))
	rep, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range m.Graph.Nodes {
		if n.Name == "h" && n.OpType != "MatMul" {
			t.Errorf("the MatMul of an overridable weight became %s", n.OpType)
		}
	}
	if len(rep.Nodes) != 1 {
		t.Errorf("quantized %v, want the MatMul of W2 alone", rep.Nodes)
	}
	// float16 would turn the default float16 under a float32 input.
	m = matmulGraph("W2", []float32{1, 0, 0, 1})
	m.Graph.AddInput("W1", onnxpb.Float32, onnxpb.Fixed(2), onnxpb.Fixed(2))
	if _, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config()); !errors.Is(err, onnxpb.ErrUnsupported) {
		t.Errorf("fp16 of a graph with an input's default: %v, want ErrUnsupported", err)
	}
}

// TestRewriteAlreadyInt8: nothing left to quantize in an int8 model is
// ErrAlreadyInt8 (the loader then serves it as its own int8 copy); in a
// float32 model whose weights are all inputs' defaults it is not (the
// loader must not serve float32 as int8).
func TestRewriteAlreadyInt8(t *testing.T) {
	m := matmulGraph("W2", []float32{1, 0, 0, 1})
	if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); !errors.Is(err, quantize.ErrNothingToQuantize) || !errors.Is(err, quantize.ErrAlreadyInt8) {
		t.Errorf("an int8 model again: %v, want ErrNothingToQuantize and ErrAlreadyInt8", err)
	}
	f := matmulGraph("W2", []float32{1, 0, 0, 1})
	f.Graph.AddInput("W1", onnxpb.Float32, onnxpb.Fixed(2), onnxpb.Fixed(2))
	f.Graph.AddInput("W2", onnxpb.Float32, onnxpb.Fixed(2), onnxpb.Fixed(2))
	if _, err := quantize.Rewrite(context.Background(), f, quantize.DefaultConfig()); !errors.Is(err, quantize.ErrNothingToQuantize) || errors.Is(err, quantize.ErrAlreadyInt8) {
		t.Errorf("a float32 model of input defaults: %v, want ErrNothingToQuantize alone", err)
	}
}
