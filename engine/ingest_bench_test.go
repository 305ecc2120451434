package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/internal/beir"
	"github.com/hybrank/hybrank/internal/testenv"
)

// Ingest benchmarks on real text: scifact's abstracts (cycled under new
// IDs where more documents are needed) and its queries. Run them alone on
// a quiet machine, e.g.
//
//	go test -run '^$' -bench 'IngestSync|SearchDuringIngest' -benchtime 1x ./engine

// scifact returns scifact's documents as engine documents (n of them,
// cycling the corpus with a round suffix on the ID) and its query texts.
func scifact(b *testing.B, n int) ([]engine.Document, []string) {
	dir := testenv.NeedDataset(b, "scifact")
	corpus, err := beir.ReadCorpus(dir)
	if err != nil {
		b.Fatal(err)
	}
	qs, err := beir.ReadQueries(dir)
	if err != nil {
		b.Fatal(err)
	}
	docs := make([]engine.Document, n)
	for i := range docs {
		d := corpus[i%len(corpus)]
		docs[i] = engine.Document{ID: fmt.Sprintf("%s-%d", d.ID, i/len(corpus)), Title: d.Title, Text: d.Text, Tenant: fmt.Sprintf("t%d", i%4)}
	}
	queries := make([]string, len(qs))
	for i, q := range qs {
		queries[i] = q.Text
	}
	return docs, queries
}

// BenchmarkIngestSync commits one document per Commit from 16 concurrent
// committers into an engine on disk (BM25 only: no embedding cost hides
// the log's), with an fsync per commit (group commit shares them) and with
// interval syncing, the no-fsync baseline. docs/s is the figure; syncs and
// commits/sync say how much group commit shared.
func BenchmarkIngestSync(b *testing.B) {
	docs, _ := scifact(b, 200_000)
	for _, policy := range []engine.SyncPolicy{engine.SyncInterval, engine.SyncEveryCommit} {
		b.Run(string(policy), func(b *testing.B) {
			cfg := engine.DefaultConfig()
			cfg.Durability.Sync = policy
			e, err := engine.Open(b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var next atomic.Int64
			b.SetParallelism(8) // 8 × GOMAXPROCS committers: 16 on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					bt := e.NewBatch()
					bt.Add(docs[int(next.Add(1)-1)%len(docs)])
					if err := e.Commit(ctx, bt); err != nil {
						b.Error(err)
						return
					}
				}
			})
			el := time.Since(start)
			d := e.Durability()
			b.ReportMetric(float64(b.N)/el.Seconds(), "docs/s")
			b.ReportMetric(float64(d.LogSyncs), "syncs")
			if d.LogSyncs > 0 {
				b.ReportMetric(float64(d.Commits)/float64(d.LogSyncs), "commits/sync")
			}
		})
	}
}

// BenchmarkSearchDuringIngest: one op ingests 100,000 documents (batches
// of 500, scifact abstracts cycled, hashing embedder so the HNSW inserts
// are real) into an engine on disk already holding scifact, while one
// goroutine searches scifact's queries back to back; the same searches
// run on the idle engine first. It reports p50 and p99 latency of both and
// the ratio busy-p99 / idle-p99 (target ≤ 1.5).
func BenchmarkSearchDuringIngest(b *testing.B) {
	const ingest, batch, idleSearches = 100_000, 500, 3000
	docs, queries := scifact(b, 5183+ingest)
	base, more := docs[:5183], docs[5183:]
	ctx := context.Background()
	pct := func(lat []time.Duration, p float64) float64 {
		slices.Sort(lat)
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds())
	}
	for b.Loop() {
		e, err := engine.Open(b.TempDir(), engine.DefaultConfig(), engine.WithEmbedder(enginetest.NewHashEmbedder(64)))
		if err != nil {
			b.Fatal(err)
		}
		commit(b, e, base...)
		search := func(i int) time.Duration {
			t0 := time.Now()
			if _, err := e.Search(ctx, engine.Request{Query: queries[i%len(queries)], Tenant: "t1"}); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		}
		idle := make([]time.Duration, idleSearches)
		for i := range idle {
			idle[i] = search(i)
		}
		var busy []time.Duration
		var wg sync.WaitGroup
		var done atomic.Bool
		wg.Add(1)
		t0 := time.Now()
		go func() {
			defer wg.Done()
			defer done.Store(true)
			for i := 0; i < len(more); i += batch {
				bt := e.NewBatch()
				bt.Add(more[i:min(i+batch, len(more))]...)
				if err := e.Commit(ctx, bt); err != nil {
					b.Error(err)
					return
				}
			}
		}()
		for i := 0; !done.Load(); i++ {
			busy = append(busy, search(i))
		}
		wg.Wait()
		ingestS := time.Since(t0).Seconds()
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		ip99, bp99 := pct(idle, 0.99), pct(busy, 0.99)
		b.ReportMetric(pct(idle, 0.5), "idle-p50-µs")
		b.ReportMetric(ip99, "idle-p99-µs")
		b.ReportMetric(pct(busy, 0.5), "ingest-p50-µs")
		b.ReportMetric(bp99, "ingest-p99-µs")
		b.ReportMetric(bp99/ip99, "p99-ratio")
		b.ReportMetric(float64(len(busy)), "searches")
		b.ReportMetric(float64(len(more))/ingestS, "ingest-docs/s")
	}
}
