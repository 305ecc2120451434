package bench

import (
	"context"

	"github.com/hybrank/hybrank/models"
)

// DefaultEmbedConfig returns an embedder run: 64 texts of 128 tokens per
// call with the embed profile (all-MiniLM-L6-v2 shape). RerankConfig's
// Pairs is the number of texts per call and DocTokens their length;
// QueryTokens is unused.
func DefaultEmbedConfig() RerankConfig {
	c := DefaultRerankConfig()
	c.Profile = models.ProfileEmbed
	return c
}

// RunEmbed measures bi-encoder throughput and latency for cfg (texts/s is
// reported as pairs_per_s), plus peak GFLOP/s as RunRerank does.
func (mb *ModelBench) RunEmbed(ctx context.Context, cfg RerankConfig) (RerankResult, error) {
	return mb.run(ctx, cfg, models.KindEmbedder)
}
