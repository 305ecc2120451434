package fuse_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/models/fuse"
	"github.com/hybrank/hybrank/models/onnxpb"
)

// block builds x → LayerNorm (ln0) → MatMul → bias Add → residual Add →
// LayerNorm (ln1) → y, hidden 4, the shape of one BERT sublayer. edit may
// change the graph before the outputs are declared.
func block(t *testing.T, edit func(g *onnxpb.Graph)) *onnxpb.Model {
	t.Helper()
	g := onnxpb.NewGraph("block")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(4))
	vec := func(name string) string { return g.AddFloat32(name, []int64{4}, []float32{1, 2, 3, 4}) }
	g.AddNodeOutputs("ln0", "LayerNormalization", []string{"x", vec("g0"), vec("b0")}, []string{"r"},
		onnxpb.AttrInt("axis", -1), onnxpb.AttrFloat("epsilon", 1e-12))
	w := g.AddFloat32("w", []int64{4, 4}, make([]float32, 16))
	g.AddNodeOutputs("mm", "MatMul", []string{"r", w}, []string{"y"})
	g.AddNodeOutputs("bias", "Add", []string{vec("bias_vec"), "y"}, []string{"yb"})
	g.AddNodeOutputs("res", "Add", []string{"yb", "r"}, []string{"s"})
	g.AddNodeOutputs("ln1", "LayerNormalization", []string{"s", vec("g1"), vec("b1")}, []string{"out"},
		onnxpb.AttrInt("axis", -1), onnxpb.AttrFloat("epsilon", 1e-12))
	if edit != nil {
		edit(g)
	}
	g.AddOutput("out", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(4))
	return onnxpb.NewModel(g)
}

func ops(m *onnxpb.Model) []string {
	var s []string
	for _, n := range m.Graph.Nodes {
		s = append(s, n.OpType)
	}
	return s
}

func node(t *testing.T, m *onnxpb.Model, op string) onnxpb.Node {
	t.Helper()
	for _, n := range m.Graph.Nodes {
		if n.OpType == op {
			return n
		}
	}
	t.Fatalf("no %s node in %v", op, ops(m))
	return onnxpb.Node{}
}

func TestSkipLayerNormFoldsBias(t *testing.T) {
	m := block(t, nil)
	rep, err := fuse.SkipLayerNorm(m)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (fuse.Report{SkipLayerNorm: 1, BiasFolded: 1}) {
		t.Fatalf("report %+v", rep)
	}
	if got, want := ops(m), []string{"LayerNormalization", "MatMul", "SkipLayerNormalization"}; !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want %v", got, want)
	}
	n := node(t, m, "SkipLayerNormalization")
	if n.Domain != onnxpb.MSDomain || !slices.Equal(n.Inputs, []string{"y", "r", "g1", "b1", "bias_vec"}) || !slices.Equal(n.Outputs, []string{"out"}) {
		t.Fatalf("fused node %+v", n)
	}
	if a, ok := n.Attr("epsilon"); !ok {
		t.Fatal("no epsilon")
	} else if v, _ := a.Float(); v != 1e-12 {
		t.Fatalf("epsilon %g, want the LayerNormalization's 1e-12", v)
	}
	if !m.UsesOpset(onnxpb.MSDomain) {
		t.Fatal("com.microsoft opset not imported")
	}
	if err := m.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSkipLayerNormWithoutBias(t *testing.T) {
	// The residual Add reads the MatMul directly (int8 models fold the
	// bias into their MatMul), and LayerNormalization leaves epsilon unset.
	m := block(t, func(g *onnxpb.Graph) {
		for i := range g.Nodes {
			n := &g.Nodes[i]
			switch n.Name {
			case "res":
				n.Inputs = []string{"r", "y"}
			case "ln1":
				n.Attrs = []onnxpb.Attr{onnxpb.AttrInt("axis", -1)}
			}
		}
		g.Nodes = slices.DeleteFunc(g.Nodes, func(n onnxpb.Node) bool { return n.Name == "bias" })
	})
	rep, err := fuse.SkipLayerNorm(m)
	if err != nil || rep != (fuse.Report{SkipLayerNorm: 1}) {
		t.Fatalf("report %+v, %v", rep, err)
	}
	n := node(t, m, "SkipLayerNormalization")
	if !slices.Equal(n.Inputs, []string{"y", "r", "g1", "b1"}) {
		t.Fatalf("inputs %v", n.Inputs)
	}
	if a, _ := n.Attr("epsilon"); func() float32 { v, _ := a.Float(); return v }() != 1e-5 {
		t.Fatalf("epsilon %v, want LayerNormalization's default 1e-5", n.Attrs)
	}
}

func TestSkipLayerNormLeavesOthers(t *testing.T) {
	cases := map[string]func(g *onnxpb.Graph){
		// The sum is read by another node too: it must survive.
		"sum read twice": func(g *onnxpb.Graph) {
			g.AddNodeOutputs("relu", "Relu", []string{"s"}, []string{"s2"})
			g.AddOutput("s2", onnxpb.Float32)
		},
		// Neither summand is a normalised stream (as in the embeddings).
		"no residual stream": func(g *onnxpb.Graph) {
			for i := range g.Nodes {
				if g.Nodes[i].Name == "res" {
					g.Nodes[i].Inputs = []string{"yb", "x"}
				}
			}
		},
		// Normalising another axis is not SkipLayerNormalization.
		"axis 1": func(g *onnxpb.Graph) {
			for i := range g.Nodes {
				if g.Nodes[i].Name == "ln1" {
					g.Nodes[i].Attrs = []onnxpb.Attr{onnxpb.AttrInt("axis", 1)}
				}
			}
		},
		// Mean and inverse standard deviation outputs are requested.
		"extra outputs": func(g *onnxpb.Graph) {
			for i := range g.Nodes {
				if g.Nodes[i].Name == "ln1" {
					g.Nodes[i].Outputs = []string{"out", "mean"}
				}
			}
			g.AddOutput("mean", onnxpb.Float32)
		},
		// A scale that is not a vector of the hidden size.
		"gamma not a vector": func(g *onnxpb.Graph) {
			for i := range g.Initializers {
				if g.Initializers[i].Name == "g1" {
					g.Initializers[i].Dims = []int64{1, 4}
				}
			}
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			m := block(t, edit)
			before := ops(m)
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Changed() || !slices.Equal(ops(m), before) {
				t.Fatalf("fused: %+v, nodes %v", rep, ops(m))
			}
		})
	}
}

func TestSkipLayerNormKeepsBiasAdd(t *testing.T) {
	// The bias Add stays, and the fused node adds its result instead of
	// folding the bias, when the biased output is read elsewhere too or
	// the bias is not a vector of the hidden size.
	for name, edit := range map[string]func(g *onnxpb.Graph){
		"read elsewhere": func(g *onnxpb.Graph) { g.AddOutput("yb", onnxpb.Float32) },
		"bias 2-D": func(g *onnxpb.Graph) {
			for i := range g.Initializers {
				if g.Initializers[i].Name == "bias_vec" {
					g.Initializers[i].Dims = []int64{1, 4}
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := block(t, edit)
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil || rep != (fuse.Report{SkipLayerNorm: 1}) {
				t.Fatalf("report %+v, %v", rep, err)
			}
			if n := node(t, m, "SkipLayerNormalization"); !slices.Equal(n.Inputs, []string{"yb", "r", "g1", "b1"}) {
				t.Fatalf("inputs %v", n.Inputs)
			}
			if !slices.Contains(ops(m), "Add") {
				t.Fatal("bias Add removed")
			}
		})
	}
}

func TestSkipLayerNormRefusesInvalidGraph(t *testing.T) {
	m := block(t, func(g *onnxpb.Graph) {
		g.AddNodeOutputs("dangling", "Relu", []string{"nowhere"}, []string{"z"})
	})
	before := ops(m)
	if _, err := fuse.SkipLayerNorm(m); !errors.Is(err, onnxpb.ErrInvalidGraph) {
		t.Fatalf("err %v, want ErrInvalidGraph", err)
	}
	if !slices.Equal(ops(m), before) {
		t.Fatal("invalid graph modified")
	}
	if _, err := fuse.SkipLayerNorm(nil); !errors.Is(err, onnxpb.ErrInvalidGraph) {
		t.Fatalf("nil model: %v", err)
	}
}

// spelledLN adds the operators an export of opset < 17 writes for a layer
// normalisation of x over its last axis (hidden h) and returns its output:
// Pow's exponent and ε come from Constant nodes, as torch exports them;
// dupSub writes the Sub twice (older exports).
func spelledLN(g *onnxpb.Graph, p, x string, h int, dupSub bool) string {
	vec := func(name string, base float32) string {
		v := make([]float32, h)
		for i := range v {
			v[i] = base + float32(i)/float32(h)
		}
		return g.AddFloat32(name, []int64{int64(h)}, v)
	}
	konst := func(name string, v float32) string {
		g.AddNodeOutputs(name, "Constant", nil, []string{name}, onnxpb.AttrTensor("value", onnxpb.Tensor{Name: name, Float32: []float32{v}}))
		return name
	}
	axes := onnxpb.AttrInts("axes", -1)
	m := g.AddNode(p+"mean", "ReduceMean", []string{x}, axes)
	d := g.AddNode(p+"sub", "Sub", []string{x, m})
	d2 := d
	if dupSub {
		d2 = g.AddNode(p+"sub2", "Sub", []string{x, m})
	}
	v := g.AddNode(p+"var", "ReduceMean", []string{g.AddNode(p+"pow", "Pow", []string{d2, konst(p+"two", 2)})}, axes)
	s := g.AddNode(p+"sqrt", "Sqrt", []string{g.AddNode(p+"addeps", "Add", []string{v, konst(p+"eps", 1e-12)})})
	y := g.AddNode(p+"mul", "Mul", []string{g.AddNode(p+"div", "Div", []string{d, s}), vec(p+"gamma", 0.5)})
	return g.AddNode(p+"out", "Add", []string{vec(p+"beta", -0.25), y})
}

// spelledBlock is block with spelled-out normalisations, hidden h, random
// weights from seed.
func spelledBlock(h int, dupSub bool) *onnxpb.Model {
	g := onnxpb.NewGraph("spelled")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(int64(h)))
	r := spelledLN(g, "ln0_", "x", h, false)
	w := make([]float32, h*h)
	for i := range w {
		w[i] = float32((i*7)%11-5) / 10
	}
	bias := make([]float32, h)
	for i := range bias {
		bias[i] = float32(i%3) - 1
	}
	y := g.AddNode("mm", "MatMul", []string{r, g.AddFloat32("w", []int64{int64(h), int64(h)}, w)})
	yb := g.AddNode("bias", "Add", []string{g.AddFloat32("bias_vec", []int64{int64(h)}, bias), y})
	sum := g.AddNode("res", "Add", []string{yb, r})
	out := spelledLN(g, "ln1_", sum, h, dupSub)
	g.AddNodeOutputs("final", "Identity", []string{out}, []string{"out"})
	g.AddOutput("out", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(int64(h)))
	return onnxpb.NewModel(g)
}

func TestSkipLayerNormSpelledOut(t *testing.T) {
	for _, dup := range []bool{false, true} {
		m := spelledBlock(4, dup)
		rep, err := fuse.SkipLayerNorm(m)
		if err != nil || rep != (fuse.Report{SkipLayerNorm: 1, BiasFolded: 1}) {
			t.Fatalf("dup %v: report %+v, %v", dup, rep, err)
		}
		n := node(t, m, "SkipLayerNormalization")
		if !slices.Equal(n.Inputs, []string{"mm", "ln0_out", "ln1_gamma", "ln1_beta", "bias_vec"}) || n.Outputs[0] != "ln1_out" {
			t.Fatalf("dup %v: fused node %+v", dup, n)
		}
		if a, _ := n.Attr("epsilon"); func() float32 { v, _ := a.Float(); return v }() != 1e-12 {
			t.Fatalf("epsilon %v, want the Constant's 1e-12", n.Attrs)
		}
		// ln0's operators stay (its input is no residual sum); ln1's and
		// its two Constants are gone.
		want := []string{"ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add", "MatMul", "SkipLayerNormalization", "Identity"}
		if got := ops(m); !slices.Equal(got, want) {
			t.Fatalf("dup %v: nodes %v, want %v", dup, got, want)
		}
	}
	// An exponent other than 2 is not a variance.
	m := spelledBlock(4, false)
	for i := range m.Graph.Nodes {
		if m.Graph.Nodes[i].Name == "ln1_two" {
			m.Graph.Nodes[i].Attrs = []onnxpb.Attr{onnxpb.AttrTensor("value", onnxpb.Tensor{Name: "ln1_two", Float32: []float32{3}})}
		}
	}
	if rep, err := fuse.SkipLayerNorm(m); err != nil || rep.Changed() {
		t.Fatalf("Pow 3 fused: %+v, %v", rep, err)
	}
}
