package ort_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// BenchmarkScoreFast scores 32 documents of ~64 tokens per op with the
// generated fast profile; pairs/s is reported as a metric.
func BenchmarkScoreFast(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			cfg := cpuConfig(fastDir(b), models.ProfileFast)
			cfg.IntraOpThreads = threads
			ce, err := ort.NewCrossEncoder(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer ce.Close()
			docs := make([]string, 32)
			for i := range docs {
				docs[i] = strings.Repeat(fmt.Sprintf("document %d talks about retrieval ", i), 12)
			}
			ctx := context.Background()
			if _, err := ce.Score(ctx, "how do rerankers work", docs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := ce.Score(ctx, "how do rerankers work", docs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(docs))/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
