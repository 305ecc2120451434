package engine_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// BenchmarkSearch measures the engine's own overhead on a small in-memory
// corpus with fake models (no ONNX): BM25 + dense + fusion, with and without
// rerank/MMR/expansion/packing.
func BenchmarkSearch(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	docs := randomCorpus(rng, 5000, 4)
	e := open(b, "", engine.WithEmbedder(enginetest.NewHashEmbedder(64)), engine.WithReranker("fast", &enginetest.OverlapReranker{}))
	commit(b, e, docs...)
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"rrf", engine.Request{Query: "w1 w7", Tenant: "t0"}},
		{"weighted+mmr", engine.Request{Query: "w1 w7", Tenant: "t0", Fusion: engine.FusionWeighted, MMRLambda: 0.7}},
		{"full", engine.Request{Query: "w1 w7", Tenant: "t0", Rerank: "fast", Expand: engine.Expansion{Hops: 1}, MMRLambda: 0.7, TokenBudget: 200}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.Search(ctx, c.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
