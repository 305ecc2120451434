package fuse_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

const edgeS, edgeH, edgeB = 4, 8, 2

func edgeRand(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func edgeGraph(opset int64) (*onnxpb.Model, *onnxpb.Graph) {
	g := onnxpb.NewGraph("edge")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("B"), onnxpb.Symbolic("S"), onnxpb.Fixed(edgeH))
	m := onnxpb.NewModel(g)
	m.Opset = opset
	m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: onnxpb.MSDomain, Version: 1})
	return m, g
}

func edgeHead(g *onnxpb.Graph, v string, axis int64) {
	zero := g.AddInt64("zero", nil, []int64{0})
	c := g.AddNode("cls", "Gather", []string{v, zero}, onnxpb.AttrInt("axis", axis))
	w := g.AddFloat32("w_head", []int64{edgeH, 2}, edgeRand(edgeH*2, 9))
	g.AddNodeOutputs("head", "MatMul", []string{c, w}, []string{"y"})
	g.AddOutput("y", onnxpb.Float32)
}

func edgeRun(t *testing.T, path string, x []float32) ([]float32, error) {
	sc := onnx.DefaultSessionConfig()
	sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 1
	s, err := onnx.NewSession(path, []string{"x"}, []string{"y"}, sc)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	out, err := s.Run(context.Background(), []onnx.Input{{Name: "x", Shape: []int64{edgeB, edgeS, edgeH}, Float32: x}})
	if err != nil {
		return nil, err
	}
	return out[0].Float32, nil
}

func edgeCompare(t *testing.T, m *onnxpb.Model) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.onnx")
	if err := m.WriteFile(plain); err != nil {
		t.Fatal(err)
	}
	rep, err := fuse.FirstToken(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("narrowed %+v", rep)
	narrow := filepath.Join(dir, "narrow.onnx")
	if err := m.WriteFile(narrow); err != nil {
		t.Fatal(err)
	}
	x := edgeRand(edgeB*edgeS*edgeH, 3)
	ref, err := edgeRun(t, plain, x)
	if err != nil {
		t.Fatalf("plain: %v", err)
	}
	got, err := edgeRun(t, narrow, x)
	if err != nil {
		t.Fatalf("narrowed graph fails at run time: %v", err)
	}
	for i := range ref {
		if math.Abs(float64(got[i]-ref[i])) > 1e-5 {
			t.Errorf("y[%d]: narrowed %g, plain %g", i, got[i], ref[i])
		}
	}
}

// Token mixing (MLP-Mixer style): a constant left operand carries the
// positions, and constants are not sliced, so the MatMul must not be
// narrowed (it was, and SkipLayerNormalization, which does not broadcast,
// then failed at run time on a 4-row input and a 1-row skip).
func TestFirstTokenEdgeConstLeftSkipLN(t *testing.T) {
	m, g := edgeGraph(17)
	c := g.AddFloat32("mix", []int64{edgeS, edgeS}, edgeRand(edgeS*edgeS, 5))
	tm := g.AddNode("tokmix", "MatMul", []string{c, "x"})
	gm := g.AddFloat32("gamma", []int64{edgeH}, edgeRand(edgeH, 6))
	bt := g.AddFloat32("beta", []int64{edgeH}, edgeRand(edgeH, 7))
	g.Nodes = append(g.Nodes, onnxpb.Node{Name: "sln", OpType: "SkipLayerNormalization", Domain: onnxpb.MSDomain,
		Inputs: []string{tm, "x", gm, bt}, Outputs: []string{"sln"}, Attrs: []onnxpb.Attr{onnxpb.AttrFloat("epsilon", 1e-5)}})
	edgeHead(g, "sln", 1)
	edgeCompare(t, m)
}

// Same, with a plain Add + LayerNormalization.
func TestFirstTokenEdgeConstLeftAdd(t *testing.T) {
	m, g := edgeGraph(17)
	c := g.AddFloat32("mix", []int64{edgeS, edgeS}, edgeRand(edgeS*edgeS, 5))
	tm := g.AddNode("tokmix", "MatMul", []string{c, "x"})
	a := g.AddNode("res", "Add", []string{tm, "x"})
	gm := g.AddFloat32("gamma", []int64{edgeH}, edgeRand(edgeH, 6))
	ln := g.AddNode("ln", "LayerNormalization", []string{a, gm})
	edgeHead(g, ln, 1)
	edgeCompare(t, m)
}

// Opset 11 Softmax, default axis 1 (the input flattened from there) on
// [B,S,S]: mixes positions along axis 1, so it is not narrowed.
func TestFirstTokenEdgeSoftmaxOpset11(t *testing.T) {
	m, g := edgeGraph(11)
	xt := g.AddNode("xt", "Transpose", []string{"x"}, onnxpb.AttrInts("perm", 0, 2, 1))
	s := g.AddNode("scores", "MatMul", []string{"x", xt})
	p := g.AddNode("p", "Softmax", []string{s})
	c := g.AddNode("ctx", "MatMul", []string{p, "x"})
	edgeHead(g, c, 1)
	edgeCompare(t, m)
}

// Transpose without perm (reversed axes) twice and a negative Gather axis.
func TestFirstTokenEdgeTransposeNoPerm(t *testing.T) {
	m, g := edgeGraph(17)
	a := g.AddNode("t1", "Transpose", []string{"x"})
	w := g.AddFloat32("w1", []int64{edgeH, edgeH}, edgeRand(edgeH*edgeH, 8))
	// [H,S,B] -> relu -> back
	r := g.AddNode("r", "Relu", []string{a})
	b := g.AddNode("t2", "Transpose", []string{r})
	mm := g.AddNode("mm", "MatMul", []string{b, w})
	edgeHead(g, mm, -2)
	edgeCompare(t, m)
}

// A malformed node (Reshape with one input, which Validate does not
// catch) is no reason to panic.
func TestFirstTokenEdgeArity(t *testing.T) {
	m, g := edgeGraph(17)
	w := g.AddFloat32("w1", []int64{edgeH, edgeH}, edgeRand(edgeH*edgeH, 8))
	mm := g.AddNode("mm", "MatMul", []string{"x", w})
	g.AddNode("bad", "Reshape", []string{mm})
	edgeHead(g, mm, 1)
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("FirstToken panicked: %v", r)
		}
	}()
	_, err := fuse.FirstToken(m)
	t.Logf("err %v", err)
}

// Reshapes with -1 after the copied dimensions, softmax over a later axis.
func TestFirstTokenEdgeReshapeMinusOne(t *testing.T) {
	m, g := edgeGraph(17)
	w := g.AddFloat32("w1", []int64{edgeH, edgeH}, edgeRand(edgeH*edgeH, 8))
	mm := g.AddNode("mm", "MatMul", []string{"x", w})
	sh := g.AddInt64("sh", []int64{4}, []int64{0, 0, -1, 2})
	r := g.AddNode("rs", "Reshape", []string{mm, sh})
	sm := g.AddNode("sm", "Softmax", []string{r}, onnxpb.AttrInt("axis", 2))
	sh2 := g.AddInt64("sh2", []int64{3}, []int64{0, 0, -1})
	r2 := g.AddNode("rs2", "Reshape", []string{sm, sh2})
	gm := g.AddFloat32("gamma", []int64{edgeH}, edgeRand(edgeH, 6))
	ln := g.AddNode("ln", "LayerNormalization", []string{r2, gm}, onnxpb.AttrInt("axis", -1))
	edgeHead(g, ln, 1)
	edgeCompare(t, m)
}

// An empty axes attribute (opsets before 18) reduces over every axis,
// the narrowed one too: not narrowed.
func TestFirstTokenEdgeReduceEmptyAxes(t *testing.T) {
	m, g := edgeGraph(13)
	w := g.AddFloat32("w1", []int64{edgeH, edgeH}, edgeRand(edgeH*edgeH, 8))
	mm := g.AddNode("mm", "MatMul", []string{"x", w})
	mean := g.AddNode("mean", "ReduceMean", []string{mm}, onnxpb.AttrInts("axes"))
	d := g.AddNode("d", "Sub", []string{mm, mean})
	edgeHead(g, d, 1)
	edgeCompare(t, m)
}
