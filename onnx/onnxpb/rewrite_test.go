package onnxpb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// twoOutputs is x → Relu → "output_0" → Neg → "882", both graph outputs,
// like an export with an intermediate value that is also an output.
func twoOutputs(t *testing.T) []byte {
	t.Helper()
	g := onnxpb.NewGraph("g")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"))
	g.AddFloat32("unused_w", []int64{1}, []float32{2})
	g.AddNode("output_0", "Relu", []string{"x"})
	g.AddNode("882", "Neg", []string{"output_0"})
	g.AddOutput("output_0", onnxpb.Float32, onnxpb.Symbolic("n"))
	g.AddOutput("882", onnxpb.Float32, onnxpb.Symbolic("n"))
	b, err := onnxpb.NewModel(g).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGraphIO(t *testing.T) {
	in, out, err := onnxpb.GraphIO(twoOutputs(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(in, out); got != "[x] [output_0 882]" {
		t.Fatalf("GraphIO = %s", got)
	}
	if _, _, err := onnxpb.GraphIO([]byte{0xff, 0xff}); !errors.Is(err, onnxpb.ErrBadModel) {
		t.Fatalf("garbage: %v", err)
	}
	if _, _, err := onnxpb.GraphIO(nil); !errors.Is(err, onnxpb.ErrBadModel) {
		t.Fatalf("empty: %v", err)
	}
}

func TestRenameValues(t *testing.T) {
	model := twoOutputs(t)
	renamed, err := onnxpb.RenameValues(model, map[string]string{"output_0": "last_hidden_state", "882": "pooler_output", "x": "input_ids"})
	if err != nil {
		t.Fatal(err)
	}
	in, out, err := onnxpb.GraphIO(renamed)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(in, out); got != "[input_ids] [last_hidden_state pooler_output]" {
		t.Fatalf("GraphIO after rename = %s", got)
	}
	// output_0 occurs 3 times (Relu output, Neg input, graph output), 882
	// and x twice; no length prefix crosses a varint boundary here.
	if len(renamed) != len(model)+3*(len("last_hidden_state")-len("output_0"))+2*(len("pooler_output")-len("882"))+2*(len("input_ids")-len("x")) {
		t.Errorf("renamed model is %d bytes from %d: more changed than the names", len(renamed), len(model))
	}
	// A swap is allowed; a clash and an unknown name are not.
	if _, err := onnxpb.RenameValues(model, map[string]string{"output_0": "882", "882": "output_0"}); err != nil {
		t.Fatalf("swap: %v", err)
	}
	// Also refused: two values to one name, and an initializer (its
	// tensor keeps its name, so the nodes would read an undefined value).
	for _, bad := range []map[string]string{{"output_0": "882"}, {"nope": "y"}, {"x": ""}, {"output_0": "unused_w"},
		{"output_0": "z", "882": "z"}, {"unused_w": "w2"}} {
		if _, err := onnxpb.RenameValues(model, bad); !errors.Is(err, onnxpb.ErrBadModel) {
			t.Errorf("RenameValues(%v) = %v, want ErrBadModel", bad, err)
		}
	}

	// The runtime loads the renamed model and computes the same thing.
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := os.WriteFile(path, renamed, 0o644); err != nil {
		t.Fatal(err)
	}
	sc := onnx.DefaultSessionConfig()
	sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 1
	s, err := onnx.NewSession(path, []string{"input_ids"}, []string{"last_hidden_state", "pooler_output"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(context.Background(), []onnx.Input{{Name: "input_ids", Shape: []int64{3}, Float32: []float32{-1, 0, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res[0].Float32, []float32{0, 0, 2}) || !slices.Equal(res[1].Float32, []float32{0, 0, -2}) {
		t.Fatalf("outputs %v %v", res[0].Float32, res[1].Float32)
	}
}

func TestRenameValuesRefusesSubgraphs(t *testing.T) {
	g := onnxpb.NewGraph("g")
	g.AddInput("x", onnxpb.Float32, onnxpb.Fixed(1))
	g.AddNode("y", "Relu", []string{"x"})
	g.AddOutput("y", onnxpb.Float32, onnxpb.Fixed(1))
	b, err := onnxpb.NewModel(g).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Append a node whose attribute carries field 6 (AttributeProto.g) to
	// the graph (ModelProto field 7 → GraphProto field 1 → NodeProto
	// field 5): hand-encoded, since the builder has no graph attributes.
	attr := []byte{0x32, 0x00}                             // field 6, length 0: an empty subgraph
	node := append([]byte{0x2a, byte(len(attr))}, attr...) // NodeProto field 5
	graphField := append([]byte{0x0a, byte(len(node))}, node...)
	model := append(b, append([]byte{0x3a, byte(len(graphField))}, graphField...)...)
	// Protobuf merges repeated message fields, but graphBytes keeps the
	// last graph field; either way the node with the subgraph is seen.
	_, err = onnxpb.RenameValues(model, map[string]string{"y": "z"})
	if !errors.Is(err, onnxpb.ErrBadModel) || !strings.Contains(err.Error(), "subgraphs") {
		t.Fatalf("RenameValues with a subgraph = %v, want ErrBadModel about subgraphs", err)
	}
}
