package ort

import (
	"context"
	"math"
	"testing"

	"github.com/hybrank/hybrank/models"
)

// TestPoolModes checks every pooling mode against a hand computation on a
// sequence whose padding rows hold values that would change any result that
// read them.
func TestPoolModes(t *testing.T) {
	h := []float32{
		1, -2, 3, // [CLS]
		4, 5, -6,
		-7, 8, 0.5,
		1e6, 1e6, -1e6, // padding
	}
	mask := []int64{1, 1, 1, 0}
	tests := []struct {
		mode models.Pooling
		want []float32
	}{
		{models.PoolingCLS, []float32{1, -2, 3}},
		{models.PoolingMean, []float32{-2.0 / 3, 11.0 / 3, -2.5 / 3}},
		{"", []float32{-2.0 / 3, 11.0 / 3, -2.5 / 3}},
		{models.PoolingMax, []float32{4, 8, 3}},
		{models.PoolingMeanSqrtLen, []float32{-2 / float32(math.Sqrt(3)), 11 / float32(math.Sqrt(3)), -2.5 / float32(math.Sqrt(3))}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			dst := make([]float32, 3)
			pool(tt.mode, dst, h, mask)
			for k := range dst {
				if math.Abs(float64(dst[k]-tt.want[k])) > 1e-5 {
					t.Fatalf("%s: %v, want %v", tt.mode, dst, tt.want)
				}
			}
		})
	}
	dst := []float32{9, 9, 9}
	pool(models.PoolingMax, dst, h, []int64{0, 0, 0, 0})
	if dst[0] != 0 || dst[1] != 0 || dst[2] != 0 {
		t.Fatalf("max over no tokens: %v, want zeros", dst)
	}
}

// TestEmbedInputPrefixes checks that query and document inputs are embedded
// with their prefix and raw inputs without one, and that Config prefixes
// win over the directory's prompts unless NoDirPrompts drops the latter.
func TestEmbedInputPrefixes(t *testing.T) {
	dirPrompts := models.SentenceConfig{Present: true, Pooling: models.PoolingMax, QueryPrompt: "query: ", DocumentPrompt: "passage: "}
	tests := []struct {
		name       string
		mod        func(*models.Config)
		query, doc string
	}{
		{"directory prompts", func(*models.Config) {}, "query: ", "passage: "},
		{"config wins", func(c *models.Config) { c.QueryPrefix = "Represent this: " }, "Represent this: ", "passage: "},
		{"no dir prompts", func(c *models.Config) { c.NoDirPrompts = true; c.DocumentPrefix = "doc: " }, "", "doc: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := models.DefaultEmbedderConfig()
			cfg.Dir, cfg.MaxLength, cfg.MaxBatchTokens = "unused", 32, 32
			tt.mod(&cfg)
			r := &fakeRunner{dim: 4}
			loader := func(cfg models.Config, kind models.Kind) (*loaded, error) {
				md := models.ModelDir{Config: models.HFConfig{HiddenSize: 4, MaxPositionEmbeddings: 512}, Sentence: dirPrompts}
				return &loaded{dir: md, enc: fakeEncoder{}, run: r, maxLen: 32, output: "fake", embedding: md.Embedding(cfg)}, nil
			}
			c, err := newCore(cfg, models.KindEmbedder, loader)
			if err != nil {
				t.Fatal(err)
			}
			be := &BiEncoder{c: c}
			defer be.Close()
			ctx := context.Background()
			text := "a bb ccc"
			for _, in := range []struct {
				kind   models.Input
				prefix string
			}{{models.InputQuery, tt.query}, {models.InputDocument, tt.doc}, {models.InputRaw, ""}} {
				got, _, err := be.EmbedWithUsage(ctx, in.kind, []string{text})
				if err != nil {
					t.Fatal(err)
				}
				want, err := be.Embed(ctx, models.InputRaw, []string{in.prefix + text})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := be.Embed(ctx, models.InputRaw, []string{text})
				if err != nil {
					t.Fatal(err)
				}
				same, sameRaw := true, true
				for k := range want[0] {
					same = same && got[0][k] == want[0][k]
					sameRaw = sameRaw && got[0][k] == raw[0][k]
				}
				if !same || sameRaw != (in.prefix == "") {
					t.Fatalf("%q input: %v, want the raw embedding of %q: %v (raw text: %v)", in.kind, got[0], in.prefix+text, want[0], raw[0])
				}
			}
			e, err := be.Embedding()
			if err != nil || e.Pooling != models.PoolingMax || e.QueryPrefix != tt.query || e.DocumentPrefix != tt.doc {
				t.Fatalf("Embedding() = %+v, %v", e, err)
			}
		})
	}
}
