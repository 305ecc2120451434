package quantize_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/safetensors"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// TestRewriteFP16Structure converts a small cross-encoder: every float32
// initializer becomes float16 (the mask constant clamped), the mask's Cast
// casts to float16, the logits get a Cast back to float32, and the graph's
// interface is unchanged.
func TestRewriteFP16Structure(t *testing.T) {
	m := tinyBERT(t)
	g := m.Graph
	floats := 0
	for _, in := range g.Initializers {
		if in.DataType() == onnxpb.Float32 {
			floats++
		}
	}
	inputs, outputs, nodes := g.Inputs, g.Outputs, len(g.Nodes)
	rep, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Converted != floats || rep.Clamped != 1 || rep.WeightBytesFP16*2 != rep.WeightBytesFP32 {
		t.Errorf("report %+v (float32 initializers %d)", rep, floats)
	}
	for _, in := range g.Initializers {
		if in.DataType() == onnxpb.Float32 {
			t.Errorf("initializer %s still float32", in.Name)
		}
	}
	mask := initializer(g, "const_mask_value")
	if mask == nil || safetensors.F16ToFloat32(uint16(mask.Raw[0])|uint16(mask.Raw[1])<<8) != -65504 {
		t.Errorf("mask constant %+v, want -65504", mask)
	}
	if len(g.Nodes) != nodes+1 || g.Nodes[len(g.Nodes)-1].OpType != "Cast" || g.Nodes[len(g.Nodes)-1].Outputs[0] != bertgen.Logits {
		t.Errorf("last node %+v, want the Cast to %s", g.Nodes[len(g.Nodes)-1], bertgen.Logits)
	}
	casts := 0
	for _, n := range g.Nodes {
		if n.OpType == "Cast" {
			to, _ := n.Attrs[0].Int()
			if n.Outputs[0] == bertgen.Logits && to != int64(onnxpb.Float32) || n.Outputs[0] != bertgen.Logits && to != int64(onnxpb.Float16) {
				t.Errorf("cast %s to %d", n.Name, to)
			}
			casts++
		}
	}
	if casts != 2 || len(g.Inputs) != len(inputs) || g.Outputs[0].Name != outputs[0].Name || g.Outputs[0].Type != onnxpb.Float32 {
		t.Errorf("%d casts, interface %v -> %v", casts, outputs, g.Outputs)
	}
}

func TestRewriteFP16Errors(t *testing.T) {
	m := tinyBERT(t)
	m.Graph.AddNode("odd", "Celu", []string{bertgen.Logits})
	before, _ := m.Marshal()
	if _, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config()); !errors.Is(err, onnxpb.ErrUnsupported) {
		t.Errorf("unknown operator: %v", err)
	}
	if after, _ := m.Marshal(); string(after) != string(before) {
		t.Error("a refused rewrite changed the model")
	}
	m = tinyBERT(t)
	m.Graph.Initializers[len(m.Graph.Initializers)-1].Float32[0] = float32(math.NaN())
	before, _ = m.Marshal()
	if _, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config()); !errors.Is(err, quantize.ErrNonFinite) {
		t.Errorf("NaN weight: %v", err)
	}
	if after, _ := m.Marshal(); string(after) != string(before) {
		t.Error("a failed rewrite changed the model")
	}
}

// TestFP16Runtime runs a small embedder converted to float16 on ONNX
// Runtime's CPU provider (which has float16 kernels for this graph's
// operators or falls back with casts): the hidden states stay within
// float16's precision of the float32 model's.
func TestFP16Runtime(t *testing.T) {
	initORT(t)
	cfg := bertgen.TinyBERTL2CrossEncoder()
	cfg.Kind, cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.VocabSize, cfg.MaxPositions = bertgen.BiEncoder, 64, 4, 128, 200, 64
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths [2]string
	for i, convert := range []bool{false, true} {
		m, err := bertgen.BuildModel(w)
		if err != nil {
			t.Fatal(err)
		}
		if convert {
			if _, err := quantize.Rewrite(context.Background(), m, quantize.FP16Config()); err != nil {
				t.Fatal(err)
			}
		}
		paths[i] = filepath.Join(dir, []string{"fp32.onnx", "fp16.onnx"}[i])
		if err := m.WriteFile(paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	ids := []int64{101, 7, 19, 3, 150, 42, 8, 102, 101, 9, 9, 9, 61, 77, 5, 102}
	ref := runHidden(t, paths[0], ids, 2, 8, "all")
	got := runHidden(t, paths[1], ids, 2, 8, "all")
	var worst float64
	for i := range ref {
		worst = max(worst, math.Abs(float64(got[i]-ref[i])))
	}
	// Layer-normalised hidden states are O(1): float16 keeps about three
	// decimal digits through two layers.
	if worst > 0.02 || math.IsNaN(worst) {
		t.Errorf("max |fp16 − fp32| = %v over %d values", worst, len(ref))
	}
	t.Logf("max |fp16 − fp32| hidden state = %.5f", worst)
}

// TestFP16RealEmbedder converts real all-MiniLM-L6-v2 weights (the
// safetensors import of `make models`; skipped without it or scifact) to
// float16 and embeds scifact queries and their BM25 candidates on the CPU
// with both: every float16 vector within cosine 0.999 of its float32 one,
// and each query's ranking of its candidates by cosine kept (Spearman ≥
// 0.99). The real-weights counterpart of the generated cross-encoders'
// fidelity rows in bench/results/gpu.md.
func TestFP16RealEmbedder(t *testing.T) {
	ls, cos, ref, got := realEmbedderFidelity(t, quantize.FP16Config())
	if cos < 0.999 {
		t.Errorf("min cosine %.6f < 0.999", cos)
	}
	checkSpearman(t, ls, ref, got, 0.99, 0.99)
}
