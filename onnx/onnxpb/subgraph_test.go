package onnxpb_test

import (
	"testing"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/onnxpb/onnxpbtest"
)

func TestHasSubgraphs(t *testing.T) {
	g := onnxpb.NewGraph("g")
	g.AddInput("cond", onnxpb.Bool, onnxpb.Fixed(1))
	g.AddInput("x", onnxpb.Float32, onnxpb.Fixed(1))
	g.AddNode("y", "Relu", []string{"x"})
	g.AddOutput("y", onnxpb.Float32, onnxpb.Fixed(1))
	m := onnxpb.NewModel(g)
	if m.Graph.HasSubgraphs() {
		t.Fatal("a graph without subgraphs has some")
	}
	got, err := onnxpb.Unmarshal(onnxpbtest.WithIfNode(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Graph.Validate(); err != nil || len(got.Graph.Nodes) != 2 {
		t.Fatalf("%d nodes, %v", len(got.Graph.Nodes), err)
	}
	if !got.Graph.HasSubgraphs() {
		t.Fatal("the If node's subgraph is not seen")
	}
}

// TestValidateOptionalOutputsAndInputDefaults: valid ONNX that Validate
// refused: a node leaving optional outputs out (empty names, as
// LayerNormalization's mean and inverse deviation usually are), and an
// initializer that is also a graph input (IR < 4 lists every weight so;
// later IRs take it as the input's default). The index sees no value
// named "".
func TestValidateOptionalOutputsAndInputDefaults(t *testing.T) {
	g := onnxpb.NewGraph("g")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(4))
	g.AddInput("scale", onnxpb.Float32, onnxpb.Fixed(4))
	s := g.AddFloat32("scale", []int64{4}, []float32{1, 1, 1, 1})
	g.AddNodeOutputs("ln", "LayerNormalization", []string{"x", s}, []string{"y", "", ""}, onnxpb.AttrInt("axis", -1))
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(4))
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	ix := g.Index()
	if _, ok := ix.Producer[""]; ok {
		t.Error(`the index has a producer of ""`)
	}
	if ix.Constant("scale") != nil {
		t.Error("an initializer a graph input can override is taken as a constant")
	}
	// Still refused: a value produced twice.
	g.AddNodeOutputs("again", "Relu", []string{"x"}, []string{"y"})
	if err := g.Validate(); err == nil {
		t.Error("a value produced twice was accepted")
	}
}
