package fuse_test

import (
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx/fuse"
)

// BenchmarkWriteFile is what a CPU load pays before ONNX Runtime reads the
// model (models/ort's rewritten copy): read, SkipLayerNorm, FirstToken,
// write, for a generated MiniLM-L12 cross-encoder (accurate, 133 MB; a
// three-layer one with -short).
func BenchmarkWriteFile(b *testing.B) {
	cfg := bertgen.MiniLML12CrossEncoder()
	if testing.Short() {
		cfg = smallConfig(bertgen.CrossEncoder)
	}
	dir := b.TempDir()
	src, dst := filepath.Join(dir, "model.onnx"), filepath.Join(dir, "rewritten.onnx")
	if err := berttest.Model(b, cfg).WriteFile(src); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    fuse.Rewrites
	}{{"cpu", fuse.ForCPU}, {"cuda", fuse.ForCUDA}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if rep, err := fuse.WriteFile(src, dst, tc.r); err != nil || !rep.Changed() {
					b.Fatalf("%+v, %v", rep, err)
				}
			}
		})
	}
}
