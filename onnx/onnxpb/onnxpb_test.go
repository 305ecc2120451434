package onnxpb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *onnxpb.Graph)
	}{
		{"dangling input", func(g *onnxpb.Graph) {
			g.AddNode("y", "Relu", []string{"nope"})
		}},
		{"value defined twice", func(g *onnxpb.Graph) {
			g.AddNode("y", "Relu", []string{"x"})
			g.AddNode("y", "Relu", []string{"x"})
		}},
		{"node reads later output", func(g *onnxpb.Graph) {
			g.AddNode("a", "Relu", []string{"b"})
			g.AddNode("b", "Relu", []string{"x"})
		}},
		{"output never produced", func(g *onnxpb.Graph) {
			g.AddOutput("z", onnxpb.Float32, onnxpb.Fixed(1))
		}},
		{"initializer length mismatch", func(g *onnxpb.Graph) {
			g.AddFloat32("w", []int64{2, 3}, make([]float32, 5))
		}},
		// 2^62 × 4 wraps to 0 in int64: it had matched empty data.
		{"initializer dims overflow", func(g *onnxpb.Graph) {
			g.AddFloat32("w", []int64{1 << 62, 4}, []float32{})
		}},
		{"empty op type", func(g *onnxpb.Graph) {
			g.AddNode("y", "", []string{"x"})
		}},
		{"bad tensor attribute", func(g *onnxpb.Graph) {
			g.AddNode("y", "Constant", nil, onnxpb.AttrTensor("value", onnxpb.Tensor{Dims: []int64{2}, Float32: []float32{1}}))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := onnxpb.NewGraph("g")
			g.AddInput("x", onnxpb.Float32, onnxpb.Fixed(1))
			tc.build(g)
			if _, err := onnxpb.NewModel(g).Marshal(); !errors.Is(err, onnxpb.ErrInvalidGraph) {
				t.Fatalf("Marshal = %v, want ErrInvalidGraph", err)
			}
		})
	}
}

func TestMatMulModelArgs(t *testing.T) {
	for _, tc := range []struct{ n, depth int }{{0, 1}, {4, 0}, {-1, 3}} {
		if _, err := onnxpb.MatMulChainModel(tc.n, tc.depth, 1); !errors.Is(err, onnxpb.ErrInvalidGraph) {
			t.Errorf("MatMulChainModel(%d, %d) = %v, want ErrInvalidGraph", tc.n, tc.depth, err)
		}
	}
}

// TestTopLevelFields decodes the output with protowire and checks the
// ModelProto fields and the streamed graph length.
func TestTopLevelFields(t *testing.T) {
	m, err := onnxpb.MatMulModel(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Marshal()
	if !bytes.Equal(b, again) {
		t.Fatal("Marshal is not deterministic")
	}
	var seen []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		switch num {
		case 1:
			v, _ := protowire.ConsumeVarint(b)
			seen = append(seen, fmt.Sprintf("ir_version=%d", v))
		case 7:
			v, _ := protowire.ConsumeBytes(b)
			// raw weights (8·8·4 bytes) + nodes + inputs/outputs
			seen = append(seen, fmt.Sprintf("graph>%d", min(len(v), 256)))
		case 8:
			seen = append(seen, "opset_import")
		default:
			seen = append(seen, fmt.Sprint(num))
		}
		b = b[n:]
	}
	want := "[ir_version=8 2 3 opset_import graph>256]"
	if got := fmt.Sprint(seen); got != want {
		t.Fatalf("fields %s, want %s", got, want)
	}
}

// TestAttributesLoadInRuntime checks every attribute kind and both
// initializer types against ONNX Runtime's own parser.
func TestAttributesLoadInRuntime(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	g := onnxpb.NewGraph("attrs")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(3))
	// Constant (tensor attr) → [3] float
	c := g.AddNode("c", "Constant", nil, onnxpb.AttrTensor("value", onnxpb.Tensor{Dims: []int64{3}, Float32: []float32{10, 20, 30}}))
	sum := g.AddNode("sum", "Add", []string{"x", c})
	// Transpose (ints attr) twice → identity.
	tr := g.AddNode("tr", "Transpose", []string{sum}, onnxpb.AttrInts("perm", 1, 0))
	tr = g.AddNode("tr2", "Transpose", []string{tr}, onnxpb.AttrInts("perm", 1, 0))
	// LeakyRelu (float attr) with alpha 0.5.
	lr := g.AddNode("lr", "LeakyRelu", []string{tr}, onnxpb.AttrFloat("alpha", 0.5))
	// Int64 initializer as Reshape target, then Gather with int attr.
	shape := g.AddInt64("shape", []int64{2}, []int64{-1, 3})
	rs := g.AddNode("rs", "Reshape", []string{lr, shape})
	idx := g.AddInt64("idx", []int64{2}, []int64{2, 0})
	g.AddNode("y", "Gather", []string{rs, idx}, onnxpb.AttrInt("axis", 1))
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(2))
	path := filepath.Join(t.TempDir(), "attrs.onnx")
	if err := onnxpb.NewModel(g).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.ProviderCPU
	s, err := onnx.NewSession(path, []string{"x"}, []string{"y"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{2, 3}, Float32: []float32{-40, 0, 1, 2, 3, -100}}})
	if err != nil {
		t.Fatal(err)
	}
	// x + c = [[-30 20 31] [12 23 -70]]; leaky → [[-15 20 31] [12 23 -35]]; cols 2,0.
	if got := fmt.Sprint(out[0].Shape, out[0].Float32); got != "[2 2] [31 -15 -35 12]" {
		t.Fatalf("y = %s", got)
	}
}
