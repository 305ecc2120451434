package quantize_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// modelDir writes a small Hugging Face style directory with m as its ONNX
// model at rel.
func modelDir(t *testing.T, m *onnxpb.Model, rel string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"config.json":             `{"hidden_size": 32, "max_position_embeddings": 64}`,
		"tokenizer.json":          `{}`,
		"vocab.txt":               "[PAD]\n",
		"model.safetensors":       "weights",
		quantize.MarkerFile:       "stale",
		"onnx/model_fp16.onnx":    "other export",
		"1_Pooling/config.json":   `{}`,
		".cache/huggingface/x":    "download state",
		"special_tokens_map.json": `{}`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.WriteFile(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDir(t *testing.T) {
	for _, rel := range []string{"onnx/model.onnx", "model.onnx"} {
		t.Run(rel, func(t *testing.T) {
			src := modelDir(t, tinyBERT(t), rel)
			dst := filepath.Join(t.TempDir(), "int8")
			rep, err := quantize.Dir(context.Background(), src, dst, quantize.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Nodes) != 12 || rep.ModelBytesIn == 0 || rep.ModelBytesOut == 0 || rep.ModelBytesOut >= rep.ModelBytesIn {
				t.Fatalf("report: %d nodes, %d → %d bytes", len(rep.Nodes), rep.ModelBytesIn, rep.ModelBytesOut)
			}
			for _, name := range []string{"config.json", "tokenizer.json", "vocab.txt", "special_tokens_map.json", "1_Pooling/config.json", rel} {
				if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
					t.Errorf("%s not written: %v", name, err)
				}
			}
			for _, name := range []string{"model.safetensors", "onnx/model_fp16.onnx", ".cache"} {
				if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
					t.Errorf("%s was copied", name)
				}
			}
			m, err := onnxpb.ReadFile(filepath.Join(dst, rel))
			if err != nil {
				t.Fatal(err)
			}
			if opCount(m.Graph)["DynamicQuantizeMatMul"] != 12 {
				t.Fatal("written model is not quantized")
			}
			mk, ok, err := quantize.ReadMarker(dst)
			if err != nil || !ok {
				t.Fatalf("ReadMarker = %v, %v", ok, err)
			}
			if mk.Layout != quantize.MarkerLayout || mk.Source != src || len(mk.SourceModelSHA256) != 64 || len(mk.Report.Nodes) != 12 || mk.Report.Config.WeightBits != 7 {
				t.Fatalf("marker %+v", mk)
			}
			if _, ok, err := quantize.ReadMarker(src); ok || err == nil {
				// src has a stale, unparsable marker: an error, not a marker
				t.Fatalf("ReadMarker(src) = %v, %v; want a parse error", ok, err)
			}
			// Quantizing the quantized directory finds nothing to do.
			if _, err := quantize.Dir(context.Background(), dst, t.TempDir(), quantize.DefaultConfig()); !errors.Is(err, quantize.ErrNothingToQuantize) {
				t.Fatalf("second quantization: %v", err)
			}
		})
	}
}

// A symbolic link to a model folder is followed, and a destination inside
// the source is not copied into itself.
func TestDirLinkedSourceAndNestedDestination(t *testing.T) {
	src := modelDir(t, tinyBERT(t), "onnx/model.onnx")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "int8")
	if _, err := quantize.Dir(context.Background(), link, dst, quantize.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "1_Pooling/config.json"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("through a link: %s not written: %v", name, err)
		}
	}
	nested := filepath.Join(src, "int8")
	for range 2 { // a second run must not copy the first copy either
		if _, err := quantize.Dir(context.Background(), src, nested, quantize.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(nested, "int8")); err == nil {
		t.Fatal("the destination was copied into itself")
	}
	if _, err := os.Stat(filepath.Join(nested, "1_Pooling", "config.json")); err != nil {
		t.Fatal(err)
	}
}

func TestDirErrors(t *testing.T) {
	src := modelDir(t, tinyBERT(t), "onnx/model.onnx")
	empty := t.TempDir()
	garbage := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbage, "model.onnx"), []byte{0xff, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := quantize.DefaultConfig()
	bad.WeightBits = 9
	tests := []struct {
		name     string
		src, dst string
		cfg      quantize.Config
		want     error
	}{
		{"same dir", src, src, quantize.DefaultConfig(), quantize.ErrModelDir},
		{"same dir, other spelling", src, src + "/./", quantize.DefaultConfig(), quantize.ErrModelDir},
		{"no model", empty, t.TempDir(), quantize.DefaultConfig(), quantize.ErrModelDir},
		{"missing source", filepath.Join(empty, "nope"), t.TempDir(), quantize.DefaultConfig(), quantize.ErrModelDir},
		{"empty destination", src, "", quantize.DefaultConfig(), quantize.ErrModelDir},
		{"bad config", src, t.TempDir(), bad, quantize.ErrBadConfig},
		{"not a model", garbage, t.TempDir(), quantize.DefaultConfig(), onnxpb.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := tc.dst
			if _, err := quantize.Dir(context.Background(), tc.src, dst, tc.cfg); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if dst != "" && dst != tc.src && tc.want != quantize.ErrModelDir {
				if entries, _ := os.ReadDir(dst); len(entries) != 0 {
					t.Fatalf("a failed quantization wrote %d files", len(entries))
				}
			}
		})
	}
	if _, ok, err := quantize.ReadMarker(empty); ok || err != nil {
		t.Fatalf("ReadMarker(no marker) = %v, %v", ok, err)
	}
}
