package onnxpb_test

import (
	"slices"
	"testing"

	"github.com/hybrank/hybrank/onnx/onnxpb"
)

func TestIndex(t *testing.T) {
	g := onnxpb.NewGraph("index")
	g.AddInput("x", onnxpb.Float32, onnxpb.Fixed(2))
	w := g.AddFloat32("w", []int64{2}, []float32{1, 2})
	g.AddNodeOutputs("mul", "Mul", []string{"x", w}, []string{"y"})
	g.AddNodeOutputs("sq", "Mul", []string{"y", "y"}, []string{"z"})
	g.AddNodeOutputs("add", "Add", []string{"z", "x"}, []string{"out"})
	g.AddOutput("out", onnxpb.Float32, onnxpb.Fixed(2))
	x := g.Index()
	if p, ok := x.Producer["z"]; !ok || p != 1 {
		t.Fatalf("producer of z: %d, %v", p, ok)
	}
	if _, ok := x.Producer["x"]; ok {
		t.Fatal("a graph input has a producer")
	}
	for v, want := range map[string][]int{"x": {0, 2}, "y": {1, 1}, "w": {0}, "out": nil} {
		if got := x.Consumers[v]; !slices.Equal(got, want) {
			t.Errorf("consumers of %s: %v, want %v", v, got, want)
		}
	}
	if !x.Inputs["x"] || !x.Outputs["out"] || x.Outputs["z"] {
		t.Fatalf("inputs %v, outputs %v", x.Inputs, x.Outputs)
	}
	if c := x.Constant("w"); c == nil || c != &g.Initializers[0] {
		t.Fatalf("Constant(w) = %v", c)
	}
	if x.Constant("x") != nil || x.Constant("y") != nil {
		t.Fatal("an input or a node output is not a constant")
	}
	// An initializer that a graph input of the same name can override
	// (IR version 3 style) is not a constant.
	g.AddInput("w", onnxpb.Float32, onnxpb.Fixed(2))
	if g.Index().Constant("w") != nil {
		t.Fatal("overridable initializer reported as a constant")
	}
}
