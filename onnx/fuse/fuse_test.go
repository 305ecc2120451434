package fuse_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
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

func opTypes(m *onnxpb.Model) []string {
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
	t.Fatalf("no %s node in %v", op, opTypes(m))
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
	if got, want := opTypes(m), []string{"LayerNormalization", "MatMul", "SkipLayerNormalization"}; !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want %v", got, want)
	}
	n := node(t, m, "SkipLayerNormalization")
	if n.Domain != onnxpb.MSDomain || !slices.Equal(n.Inputs, []string{"r", "y", "g1", "b1", "bias_vec"}) || !slices.Equal(n.Outputs, []string{"out"}) {
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
	if !slices.Equal(n.Inputs, []string{"r", "y", "g1", "b1"}) {
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
			before := opTypes(m)
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Changed() || !slices.Equal(opTypes(m), before) {
				t.Fatalf("fused: %+v, nodes %v", rep, opTypes(m))
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
			if n := node(t, m, "SkipLayerNormalization"); !slices.Equal(n.Inputs, []string{"r", "yb", "g1", "b1"}) {
				t.Fatalf("inputs %v", n.Inputs)
			}
			if !slices.Contains(opTypes(m), "Add") {
				t.Fatal("bias Add removed")
			}
		})
	}
}

func TestSkipLayerNormRefusesInvalidGraph(t *testing.T) {
	m := block(t, func(g *onnxpb.Graph) {
		g.AddNodeOutputs("dangling", "Relu", []string{"nowhere"}, []string{"z"})
	})
	before := opTypes(m)
	if _, err := fuse.SkipLayerNorm(m); !errors.Is(err, onnxpb.ErrInvalidGraph) {
		t.Fatalf("err %v, want ErrInvalidGraph", err)
	}
	if !slices.Equal(opTypes(m), before) {
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
	for name, dup := range map[string]bool{"one Sub": false, "Sub written twice": true} {
		t.Run(name, func(t *testing.T) {
			m := spelledBlock(4, dup)
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil || rep != (fuse.Report{SkipLayerNorm: 1, BiasFolded: 1}) {
				t.Fatalf("report %+v, %v", rep, err)
			}
			n := node(t, m, "SkipLayerNormalization")
			if !slices.Equal(n.Inputs, []string{"ln0_out", "mm", "ln1_gamma", "ln1_beta", "bias_vec"}) || n.Outputs[0] != "ln1_out" {
				t.Fatalf("fused node %+v", n)
			}
			if a, _ := n.Attr("epsilon"); func() float32 { v, _ := a.Float(); return v }() != 1e-12 {
				t.Fatalf("epsilon %v, want the Constant's 1e-12", n.Attrs)
			}
			// ln0's operators stay (its input is no residual sum); ln1's
			// and its two Constants are gone.
			want := []string{"ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add", "MatMul", "SkipLayerNormalization", "Identity"}
			if got := opTypes(m); !slices.Equal(got, want) {
				t.Fatalf("nodes %v, want %v", got, want)
			}
		})
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

// edited returns spelledBlock(4, false) after edit changed the node called
// name.
func edited(name string, edit func(n *onnxpb.Node)) *onnxpb.Model {
	m := spelledBlock(4, false)
	for i := range m.Graph.Nodes {
		if m.Graph.Nodes[i].Name == name {
			edit(&m.Graph.Nodes[i])
		}
	}
	return m
}

func TestSkipLayerNormSpelledOutLeavesOthers(t *testing.T) {
	for name, m := range map[string]*onnxpb.Model{
		"keepdims 0": edited("ln1_var", func(n *onnxpb.Node) {
			n.Attrs = append(n.Attrs, onnxpb.AttrInt("keepdims", 0))
		}),
		"mean over axis 1":     edited("ln1_mean", func(n *onnxpb.Node) { n.Attrs = []onnxpb.Attr{onnxpb.AttrInts("axes", 1)} }),
		"Sub operands swapped": edited("ln1_sub", func(n *onnxpb.Node) { n.Inputs[0], n.Inputs[1] = n.Inputs[1], n.Inputs[0] }),
		"Div operands swapped": edited("ln1_div", func(n *onnxpb.Node) { n.Inputs[0], n.Inputs[1] = n.Inputs[1], n.Inputs[0] }),
		// The variance is read outside the pattern too.
		"intermediate read elsewhere": func() *onnxpb.Model {
			m := spelledBlock(4, false)
			m.Graph.AddOutput("ln1_var", onnxpb.Float32)
			return m
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			before := opTypes(m)
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil || rep.Changed() || !slices.Equal(opTypes(m), before) {
				t.Fatalf("fused: %+v, %v, nodes %v", rep, err, opTypes(m))
			}
		})
	}
}

func TestSkipLayerNormOpset18Axes(t *testing.T) {
	// From opset 18 ReduceMean takes its axes as an input.
	m := spelledBlock(4, false)
	g := m.Graph
	axes := g.AddInt64("axes_last", []int64{1}, []int64{-1})
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.OpType == "ReduceMean" {
			n.Attrs, n.Inputs = nil, append(n.Inputs, axes)
		}
	}
	m.Opset = 18
	if rep, err := fuse.SkipLayerNorm(m); err != nil || rep != (fuse.Report{SkipLayerNorm: 1, BiasFolded: 1}) {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

func TestSkipLayerNormKeepsSharedConstant(t *testing.T) {
	// ln0 reads ln1's ε Constant too: it must survive ln1's fusion.
	m := edited("ln0_addeps", func(n *onnxpb.Node) { n.Inputs[1] = "ln1_eps" })
	m.Graph.Nodes = slices.DeleteFunc(m.Graph.Nodes, func(n onnxpb.Node) bool { return n.Name == "ln0_eps" })
	// ln1_eps is defined after ln0 reads it: move it to the front.
	for i, n := range m.Graph.Nodes {
		if n.Name == "ln1_eps" {
			m.Graph.Nodes = append([]onnxpb.Node{n}, slices.Delete(m.Graph.Nodes, i, i+1)...)
			break
		}
	}
	if rep, err := fuse.SkipLayerNorm(m); err != nil || !rep.Changed() {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if err := m.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range m.Graph.Nodes {
		if x.OpType == "Constant" {
			n++
		}
	}
	if n != 2 { // ln0's exponent and the shared ε
		t.Fatalf("%d Constant nodes left, want 2: %v", n, opTypes(m))
	}
}

// TestSkipLayerNormConsecutive: two layers, the second's residual the
// first's fused output; a value_info hint of a fused-away value goes.
func TestSkipLayerNormConsecutive(t *testing.T) {
	for name, spelled := range map[string]bool{"LayerNormalization": false, "spelled out": true} {
		t.Run(name, func(t *testing.T) {
			var m *onnxpb.Model
			if spelled {
				m = spelledBlock(4, false)
			} else {
				m = block(t, nil)
			}
			g := m.Graph
			// Append a second sublayer: out → MatMul → Add(·, out) → norm.
			last := g.Nodes[len(g.Nodes)-1]
			in := last.Outputs[0]
			if spelled {
				in = last.Inputs[0] // Identity's input
				g.Nodes = g.Nodes[:len(g.Nodes)-1]
			} else {
				last.Outputs[0] = "mid"
				g.Nodes[len(g.Nodes)-1] = last
				in = "mid"
			}
			y := g.AddNode("mm2", "MatMul", []string{in, "w"})
			sum := g.AddNode("res2", "Add", []string{y, in})
			if spelled {
				g.AddNodeOutputs("final", "Identity", []string{spelledLN(g, "ln2_", sum, 4, false)}, []string{"out"})
			} else {
				g.AddNodeOutputs("ln2", "LayerNormalization", []string{sum, "g1", "b1"}, []string{"out"}, onnxpb.AttrInt("axis", -1))
			}
			g.ValueInfo = append(g.ValueInfo, onnxpb.ValueInfo{Name: "res2", Type: onnxpb.Float32})
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			rep, err := fuse.SkipLayerNorm(m)
			if err != nil || rep != (fuse.Report{SkipLayerNorm: 2, BiasFolded: 1}) {
				t.Fatalf("report %+v, %v", rep, err)
			}
			var fused []onnxpb.Node
			for _, n := range g.Nodes {
				if n.OpType == "SkipLayerNormalization" {
					fused = append(fused, n)
				}
			}
			if len(fused) != 2 || fused[1].Inputs[0] != fused[0].Outputs[0] || fused[1].Inputs[1] != "mm2" {
				t.Fatalf("second layer's fused node %+v, first's output %q", fused[1], fused[0].Outputs[0])
			}
			for _, v := range g.ValueInfo {
				if v.Name == "res2" {
					t.Fatal("value_info of the fused-away sum kept")
				}
			}
		})
	}
}

// TestSkipLayerNormBiasNotAFusedNorm: the sum of a spelled-out
// normalisation fused earlier and a residual stream. That normalisation's
// last Add looks like a bias Add; folding it would drop the earlier fused
// node. (A residual sum of two normalised streams is fused, with no bias.)
func TestSkipLayerNormBiasNotAFusedNorm(t *testing.T) {
	m := spelledBlock(4, false)
	g := m.Graph
	g.Nodes = g.Nodes[:len(g.Nodes)-1] // Identity
	s2 := g.AddNode("res2", "Add", []string{"ln1_out", "ln0_out"})
	g.AddNodeOutputs("ln2", "LayerNormalization", []string{s2, "ln1_gamma", "ln1_beta"}, []string{"out"}, onnxpb.AttrInt("axis", -1))
	// ln0_out is read by mm, res and res2 now; ln1_out by res2 only.
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := fuse.SkipLayerNorm(m)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (fuse.Report{SkipLayerNorm: 2, BiasFolded: 1}) {
		t.Fatalf("report %+v", rep)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
}
