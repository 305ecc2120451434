package ort_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/beir"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
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

// realLengthPairs returns queries with documents to rerank at real lengths:
// scifact's first queries, each with 32 corpus documents (title and text),
// when the dataset is present; else synthetic texts whose token lengths
// mimic scifact pairs (about 375 ± 150 tokens).
func realLengthPairs(b testing.TB) (queries []string, docs [][]string, source string) {
	const nq, perQuery = 8, 32
	dir := artifacts.Dataset("scifact")
	if qs, err := beir.ReadQueriesN(dir, nq); err == nil && len(qs) == nq {
		ds, err := beir.ReadCorpusN(dir, nq*perQuery)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) < nq*perQuery {
			b.Fatalf("%s: %d documents, want %d", dir, len(ds), nq*perQuery)
		}
		for i, q := range qs {
			queries = append(queries, strings.TrimSpace(q.Text))
			var texts []string
			for _, d := range ds[i*perQuery : (i+1)*perQuery] {
				texts = append(texts, strings.TrimSpace(d.IndexText()))
			}
			docs = append(docs, texts)
		}
		return queries, docs, "scifact"
	}
	rng := rand.New(rand.NewPCG(3, 75))
	words := strings.Fields("the cell protein gene study results show that in patients with cancer risk blood brain human model data")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	for range nq {
		queries = append(queries, text(12))
		var ds []string
		for range perQuery {
			ds = append(ds, text(min(max(int(375+150*rng.NormFloat64()), 32), 500)))
		}
		docs = append(docs, ds)
	}
	return queries, docs, "synthetic"
}

// BenchmarkScoreRealLengths reranks real-length pairs (one query and its 32
// documents per Score call) with tokens mode at several caps and with cost
// mode, 2 threads. Cost mode calibrates at load, outside the timer (or reads
// its cache beside the generated model). pairs/s, padded tokens per pair and
// runtime calls per op are reported. With -short only the fast profile runs.
func BenchmarkScoreRealLengths(b *testing.B) {
	queries, docs, source := realLengthPairs(b)
	profiles := []struct {
		name string
		cfg  bertgen.Config
	}{{models.ProfileFast, bertgen.TinyBERTL2CrossEncoder()}, {models.ProfileBalanced, bertgen.MiniLML6CrossEncoder()}}
	if testing.Short() {
		profiles = profiles[:1]
	}
	modes := []struct {
		name     string
		batching string
		tokens   int
	}{
		{"tokens=512", models.BatchingTokens, 512},
		{"tokens=2048", models.BatchingTokens, 2048},
		{"tokens=8192", models.BatchingTokens, 8192},
		{"tokens=16384", models.BatchingTokens, 16384},
		{"cost", models.BatchingCost, models.DefaultMaxBatchTokens},
	}
	for _, p := range profiles {
		for _, mode := range modes {
			b.Run(fmt.Sprintf("%s/%s/%s", source, p.name, mode.name), func(b *testing.B) {
				cfg := cpuConfig(generated(b, p.cfg).dir, p.name)
				cfg.IntraOpThreads = 2
				cfg.Batching, cfg.MaxBatchTokens = mode.batching, mode.tokens
				ce := loaded(b, cfg)
				defer ce.Close()
				ctx := context.Background()
				var pairs, padded, batches int
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					q := i % len(queries)
					_, u, err := ce.ScoreWithUsage(ctx, queries[q], docs[q])
					if err != nil {
						b.Fatal(err)
					}
					pairs, padded, batches = pairs+u.Pairs, padded+u.PaddedTokens, batches+u.Batches
				}
				b.ReportMetric(float64(pairs)/b.Elapsed().Seconds(), "pairs/s")
				b.ReportMetric(float64(padded)/float64(max(pairs, 1)), "padded-tokens/pair")
				b.ReportMetric(float64(batches)/float64(b.N), "calls/op")
			})
		}
	}
}
