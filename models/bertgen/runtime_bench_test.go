package bertgen_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx"
)

// BenchmarkONNXRuntime runs generated models through package onnx on a full
// batch (no padding) and reports pairs/s and effective GFLOP/s from FLOPs.
// Provisional numbers only: speed targets are measured by cmd/bench.
func BenchmarkONNXRuntime(b *testing.B) {
	lib := testenv.NeedORT(b)
	vocab, tok := testenv.NeedVocabTxt(b), testenv.NeedTokenizerJSON(b)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		b.Fatal(err)
	}
	for _, cfg := range []bertgen.Config{bertgen.TinyBERTL2CrossEncoder(), bertgen.MiniLML6CrossEncoder(), bertgen.MiniLML6Embedder()} {
		for _, shape := range []struct{ batch, seq int }{{8, 128}} {
			b.Run(fmt.Sprintf("%s/b%d_s%d", cfg.Name, shape.batch, shape.seq), func(b *testing.B) {
				dir := b.TempDir()
				if err := bertgen.Write(dir, cfg, vocab, tok); err != nil {
					b.Fatal(err)
				}
				out := bertgen.Logits
				if cfg.Kind == bertgen.BiEncoder {
					out = bertgen.LastHiddenState
				}
				sc := onnx.DefaultSessionConfig()
				sc.Provider = onnx.ProviderCPU
				s, err := onnx.NewSession(filepath.Join(dir, bertgen.ModelFile),
					[]string{bertgen.InputIDs, bertgen.AttentionMask, bertgen.TokenTypeIDs}, []string{out}, sc)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				n := shape.batch * shape.seq
				ids, mask, types := make([]int64, n), make([]int64, n), make([]int64, n)
				for i := range ids {
					ids[i], mask[i] = int64(1000+i%20000), 1
				}
				dims := []int64{int64(shape.batch), int64(shape.seq)}
				in := []onnx.Input{
					{Name: bertgen.InputIDs, Shape: dims, Int64: ids},
					{Name: bertgen.AttentionMask, Shape: dims, Int64: mask},
					{Name: bertgen.TokenTypeIDs, Shape: dims, Int64: types},
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Run(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(shape.batch*b.N)/secs, "pairs/s")
				b.ReportMetric(bertgen.FLOPs(cfg, shape.seq)*float64(shape.batch*b.N)/secs/1e9, "GFLOP/s")
			})
		}
	}
}
