package fuse_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// TestFirstTokenRealExports: the real embedders' torch.onnx graphs (make
// models; opsets 11 and 14, layer normalisation spelled out, every
// Reshape target computed with Shape, Gather, Unsqueeze and Concat),
// given a cross-encoder's [CLS] read (a Gather of index 0 on
// last_hidden_state, as BertForSequenceClassification's pooler does),
// narrow their whole last layer past its keys and values, alone (CUDA's
// rewrite) and after SkipLayerNorm (the CPU's), and ONNX Runtime computes
// the same [CLS] vector on a padded batch. The int8 export
// (DynamicQuantizeLinear and MatMulInteger) is left as it is.
func TestFirstTokenRealExports(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	const seq = 24
	b := berttest.Padded(13, seq, []int{seq, 17, 5}, 1000, 30000) // word pieces of bert-base-uncased
	for s := range b.Batch {
		b.IDs[s*seq] = 101 // [CLS]
	}
	for _, tc := range []struct {
		name    string
		matmuls int
	}{{"all-minilm-l6-v2", 6}, {"bge-small-en-v1.5", 6}, {"e5-small-v2", 6}, {"all-minilm-l6-v2-q", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := onnxpb.ReadFile(filepath.Join(testenv.NeedRealModel(t, tc.name), "onnx", "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			g.AddNodeOutputs("cls", "Gather", []string{"last_hidden_state", g.AddInt64("cls_index", nil, []int64{0})}, []string{"cls"},
				onnxpb.AttrInt("axis", 1))
			g.Outputs = []onnxpb.ValueInfo{{Name: "cls", Type: onnxpb.Float32}}
			dir := t.TempDir()
			plain := filepath.Join(dir, "plain.onnx")
			if err := m.WriteFile(plain); err != nil {
				t.Fatal(err)
			}
			ref := berttest.Run(t, plain, "cls", "", b)
			for _, rw := range []struct {
				name string
				r    fuse.Rewrites
			}{{"cuda", fuse.ForCUDA}, {"cpu", fuse.ForCPU}} {
				path := filepath.Join(dir, rw.name+".onnx")
				rep, err := fuse.WriteFile(plain, path, rw.r)
				if err != nil {
					t.Fatal(err)
				}
				if rep.FirstToken.MatMuls != tc.matmuls || (tc.matmuls > 0) != rep.FirstToken.Attention {
					t.Fatalf("%s: %+v, want %d narrowed MatMuls", rw.name, rep, tc.matmuls)
				}
				t.Logf("%s: %s", rw.name, rep)
				if rep.FirstToken.Nodes == 0 {
					continue // the int8 export: SkipLayerNorm moves its codes (TestFusionRealModels)
				}
				got := berttest.Run(t, path, "cls", "", b)
				worst, scale := 0.0, 0.0
				for i := range ref {
					worst = max(worst, math.Abs(float64(got[i]-ref[i])))
					scale = max(scale, math.Abs(float64(ref[i])))
				}
				t.Logf("%s: max |Δ| %.3g of max |x| %.3g", rw.name, worst, scale)
				if worst > 1e-5*scale+1e-6 {
					t.Errorf("%s: [CLS] vectors differ by %g (max |x| %g)", rw.name, worst, scale)
				}
			}
		})
	}
}
