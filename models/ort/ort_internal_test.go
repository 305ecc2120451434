package ort

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx/fuse"

	"github.com/hybrank/hybrank/onnx"
)

func TestPickIO(t *testing.T) {
	i64 := func(name string) onnx.IOInfo {
		return onnx.IOInfo{Name: name, Type: onnx.Int64, Shape: []int64{-1, -1}}
	}
	f32 := func(name string, shape ...int64) onnx.IOInfo {
		return onnx.IOInfo{Name: name, Type: onnx.Float32, Shape: shape}
	}
	std := []onnx.IOInfo{i64("input_ids"), i64("attention_mask"), i64("token_type_ids")}
	tests := []struct {
		name       string
		kind       models.Kind
		ins, outs  []onnx.IOInfo
		wantInputs []string
		wantOut    string
		wantPooled bool
		wantErr    bool
	}{
		{"cross-encoder", models.KindCrossEncoder, std, []onnx.IOInfo{f32("logits", -1, 1)},
			[]string{"input_ids", "attention_mask", "token_type_ids"}, "logits", false, false},
		{"no token_type_ids", models.KindCrossEncoder, std[:2], []onnx.IOInfo{f32("logits", -1, 1)},
			[]string{"input_ids", "attention_mask"}, "logits", false, false},
		{"multi-label logits", models.KindCrossEncoder, std, []onnx.IOInfo{f32("logits", -1, 3)}, nil, "", false, true},
		{"no logits", models.KindCrossEncoder, std, []onnx.IOInfo{f32("last_hidden_state", -1, -1, 8)}, nil, "", false, true},
		{"missing mask", models.KindCrossEncoder, std[:1], []onnx.IOInfo{f32("logits", -1, 1)}, nil, "", false, true},
		{"extra input", models.KindCrossEncoder, append(slices.Clone(std), i64("position_ids")), []onnx.IOInfo{f32("logits", -1, 1)}, nil, "", false, true},
		{"int32 ids", models.KindCrossEncoder, []onnx.IOInfo{{Name: "input_ids", Type: onnx.Int32}, i64("attention_mask")}, []onnx.IOInfo{f32("logits", -1, 1)}, nil, "", false, true},
		{"embedder hidden", models.KindEmbedder, std, []onnx.IOInfo{f32("last_hidden_state", -1, -1, 8)},
			[]string{"input_ids", "attention_mask", "token_type_ids"}, "last_hidden_state", false, false},
		{"embedder prefers sentence_embedding", models.KindEmbedder, std, []onnx.IOInfo{f32("token_embeddings", -1, -1, 8), f32("sentence_embedding", -1, 8)},
			[]string{"input_ids", "attention_mask", "token_type_ids"}, "sentence_embedding", true, false},
		{"embedder token_embeddings", models.KindEmbedder, std[:2], []onnx.IOInfo{f32("token_embeddings", -1, -1, 8)},
			[]string{"input_ids", "attention_mask"}, "token_embeddings", false, false},
		{"float16 output", models.KindEmbedder, std, []onnx.IOInfo{{Name: "last_hidden_state", Type: onnx.Float16}}, nil, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, out, pooled, err := pickIO("m.onnx", tt.kind, tt.ins, tt.outs)
			if tt.wantErr {
				if !errors.Is(err, models.ErrUnsupportedModel) {
					t.Fatalf("err %v, want models.ErrUnsupportedModel", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in, tt.wantInputs) || out != tt.wantOut || pooled != tt.wantPooled {
				t.Fatalf("got %v %q %v, want %v %q %v", in, out, pooled, tt.wantInputs, tt.wantOut, tt.wantPooled)
			}
		})
	}
}

func TestFusedCopyTempFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A stale copy (a process killed while loading) goes; a fresh one,
	// maybe another process's load in progress, stays.
	stale, fresh := filepath.Join(tmp, "hybrank-fused-1.onnx"), filepath.Join(tmp, "hybrank-fused-2.onnx")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	// Nothing to fuse in a file that is no model: an error, no copy left.
	src := filepath.Join(tmp, "src.onnx")
	if err := os.WriteFile(src, []byte("not a model"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, _, err := fusedCopy(src, fuse.ForCPU); err == nil || p != "" {
		t.Fatalf("fusedCopy of junk = %q, %v", p, err)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "hybrank-fused-*"))
	if len(left) != 1 || left[0] != fresh {
		t.Fatalf("left %v, want only %s", left, fresh)
	}
}
