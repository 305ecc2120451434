package ort

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// TestRewriteThatDoesNotRun: a rewritten copy that loads but fails when
// run (here the last layer's merge-heads Reshape given a shape that the
// next MatMul rejects at run time) is caught by the load's probe batch: the model loads
// the file as it is, reports fusion "none", and scores as with the
// rewrites off.
func TestRewriteThatDoesNotRun(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	cfg := bertgen.TinyBERTL2CrossEncoder()
	cfg.Hidden, cfg.Heads, cfg.Intermediate = 32, 4, 64
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "model")
	if err := bertgen.WriteWeights(dir, w, testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)); err != nil {
		t.Fatal(err)
	}
	broken := 0
	defer func(f func(string, string, fuse.Rewrites) (fuse.Report, error)) { writeRewritten = f }(writeRewritten)
	writeRewritten = func(src, dst string, r fuse.Rewrites) (fuse.Report, error) {
		rep, err := fuse.WriteFile(src, dst, r)
		if err != nil || !rep.Changed() {
			return rep, err
		}
		m, err := onnxpb.ReadFile(dst)
		if err != nil {
			return rep, err
		}
		for i, n := range m.Graph.Nodes {
			if n.Is("Reshape") && strings.HasSuffix(n.Name, "layer.1/attention/self/Reshape_ctx") {
				// Two rows of half the width: fine for the runtime's
				// shape inference (-1 is unknown at load), wrong for the
				// output projection's MatMul when run.
				m.Graph.Nodes[i].Inputs = []string{n.Inputs[0], m.Graph.AddInt64("broken_shape", []int64{3}, []int64{0, 2, -1})}
				broken++
			}
		}
		return rep, m.WriteFile(dst)
	}
	score := func(disable bool) ([]float32, string) {
		c, err := models.ProfileConfig(models.ProfileFast)
		if err != nil {
			t.Fatal(err)
		}
		c.Dir, c.Provider, c.IntraOpThreads, c.DisableFusion = dir, "cpu", 1, disable
		ce, err := NewCrossEncoder(c)
		if err != nil {
			t.Fatal(err)
		}
		defer ce.Close()
		s, err := ce.Score(context.Background(), "what narrows a cross-encoder", []string{"the last layer for the first token", "a shape that does not run", "x"})
		if err != nil {
			t.Fatal(err)
		}
		return s, ce.Plan().Loaded.Fusion
	}
	want, _ := score(true)
	got, fusion := score(false)
	if broken != 1 || fusion != "none" {
		t.Fatalf("broken %d reshapes, fusion %q; want 1 and none", broken, fusion)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scores %v, want the file's %v", got, want)
	}
}
