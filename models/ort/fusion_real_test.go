package ort_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/simd"
)

// TestFusionRealModels embeds the same texts with each real embedder (make
// models; skips without them) as its file is and with the CPU graph
// fusion: every residual normalisation is fused, whether the export
// writes LayerNormalization (opset 17) or spells it out (opsets 11 and
// 14), and the vectors do not move.
func TestFusionRealModels(t *testing.T) {
	texts := []string{
		"what do cross encoders score",
		"Alterations of the architecture of cerebral white matter in the developing human brain can affect cortical development.",
		strings.Repeat("Vitamin D deficiency is associated with bone loss and fractures in older adults. ", 8),
		"0-dimensional biomaterials show inductive properties.",
	}
	cos := func(a, b []float32) float64 {
		return float64(simd.Dot(a, b)) / math.Sqrt(float64(simd.Dot(a, a))*float64(simd.Dot(b, b)))
	}
	for _, tc := range []struct {
		name   string
		layers int
		// float names the float32 export of an int8 one: there the
		// vectors are compared by their distance to float32's.
		float string
		// embeddings: the embeddings' normalisation fuses too (not where
		// the word table is int8, dequantized in the graph).
		embeddings bool
	}{
		{"all-minilm-l6-v2-st", 6, "", true}, // opset 17, LayerNormalization
		{"all-minilm-l6-v2", 6, "", true},    // opset 14, spelled out
		{"bge-small-en-v1.5", 12, "", true},  // opset 11, spelled out
		{"e5-small-v2", 12, "", true},
		{"e5-small-v2-q", 12, "e5-small-v2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			embed := func(name string, disable bool) ([][]float32, string) {
				t.Helper()
				cfg, err := models.ProfileConfig(models.ProfileEmbed)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Dir, cfg.Provider, cfg.IntraOpThreads, cfg.DisableFusion = testenv.NeedRealModel(t, name), "cpu", 2, disable
				be, err := ort.NewBiEncoder(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer be.Close()
				v, err := be.Embed(context.Background(), models.InputDocument, texts)
				if err != nil {
					t.Fatal(err)
				}
				return v, be.Plan().Loaded.Fusion
			}
			ref, off := embed(tc.name, true)
			got, on := embed(tc.name, false)
			// Every layer's two normalisations, with their biases, and the
			// embeddings'.
			fused := 2 * tc.layers
			if tc.embeddings {
				fused++
			}
			if want := fmt.Sprintf("%d SkipLayerNorm (%d with bias)", fused, 2*tc.layers); on != want || off != "off" {
				t.Fatalf("fusion %q / %q, want %q / off", on, off, want)
			}
			if tc.float == "" {
				for i := range ref {
					if c := cos(ref[i], got[i]); c < 0.99999 {
						t.Errorf("text %d: cosine fused vs file %.7f < 0.99999", i, c)
					}
				}
				return
			}
			// An int8 export quantizes every activation per tensor: the
			// fused normalisation's output, equal to float rounding,
			// moves some codes, and the vectors by up to 0.002 in
			// cosine — a new draw of the int8 rounding error, as large as
			// the file's own. The fused vector may be at most twice as
			// far from float32's as the file's (or 0.001 further, where
			// that is more): on an AMD EPYC (AVX-512 VNNI, 2026-12-02) one text
			// went from 0.99821 to 0.99718, 0.00103 down.
			f, _ := embed(tc.float, true)
			for i := range f {
				before, after := cos(ref[i], f[i]), cos(got[i], f[i])
				t.Logf("text %d: cosine to float32 %.5f file, %.5f fused", i, before, after)
				if bound := before - max(0.001, 1-before); after < bound {
					t.Errorf("text %d: cosine to float32 %.5f fused < %.5f (file %.5f)", i, after, bound, before)
				}
			}
		})
	}
}
