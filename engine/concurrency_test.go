package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// TestSearchesSeeWholeBatches runs searches concurrently with commits
// (under -race in CI) and checks that every search sees each batch
// entirely or not at all, in the lexical index, the dense index and the
// document store alike. Batch i adds size documents sharing the term tagI
// and deletes batch i−keep, so at most keep batches are live and the dense
// list (Candidates above every live document) holds all of them: each
// search must find a multiple of size documents through each retriever,
// every batch's documents as a whole in both lists, and never a document
// of a batch deleted from the state it read.
func TestSearchesSeeWholeBatches(t *testing.T) {
	const size, keep, batches = 24, 3, 30
	e := open(t, "", engine.WithEmbedder(enginetest.NewHashEmbedder(16)))
	batchOf := func(id string) int {
		var b, j int
		fmt.Sscanf(id, "b%d-%d", &b, &j)
		return b
	}
	var published atomic.Int64 // batches committed so far
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(int(published.Load()) + 1)
				res, err := e.Search(ctx, engine.Request{Query: fmt.Sprintf("tag%d shared", i), TopK: 200, Candidates: 200})
				if err != nil {
					errc <- err
					return
				}
				bm, dn := map[int]int{}, map[int]int{}
				for _, h := range res.Hits {
					b := batchOf(h.Document.ID)
					if h.Provenance.BM25Rank > 0 {
						bm[b]++
					}
					if h.Provenance.DenseRank > 0 {
						dn[b]++
					}
				}
				for b, n := range bm {
					if n != size || dn[b] != size {
						errc <- fmt.Errorf("batch %d: %d documents through BM25, %d through dense, want 0 or %d in both", b, n, dn[b], size)
						return
					}
				}
				if len(dn) != len(bm) {
					errc <- fmt.Errorf("batches %v through dense, %v through BM25", dn, bm)
					return
				}
				if len(bm) > keep {
					errc <- fmt.Errorf("%d batches live, at most %d expected: %v", len(bm), keep, bm)
					return
				}
			}
		}(r)
	}
	for i := 0; i < batches; i++ {
		b := e.NewBatch()
		for j := 0; j < size; j++ {
			b.Add(engine.Document{ID: fmt.Sprintf("b%d-%d", i, j), Text: fmt.Sprintf("tag%d shared filler%d", i, j%5)})
		}
		if i >= keep {
			for j := 0; j < size; j++ {
				b.DeleteIn("", fmt.Sprintf("b%d-%d", i-keep, j))
			}
		}
		if err := e.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
		published.Store(int64(i))
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if e.Len() != keep*size {
		t.Fatalf("Len %d, want %d", e.Len(), keep*size)
	}
}

// BenchmarkSearchDuringCommit measures search latency while large batches
// commit (embedding, analysis and HNSW inserts of batch documents each), and
// idle for comparison; it reports p50 and p99 in microseconds. Run it
// alone on a quiet machine:
//
//	go test -run '^$' -bench SearchDuringCommit ./engine
func BenchmarkSearchDuringCommit(b *testing.B) {
	const base, batch = 20000, 2000
	rng := rand.New(rand.NewPCG(5, 5))
	docs := randomCorpus(rng, base+20*batch, 4)
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "committing"
		}
		b.Run(name, func(b *testing.B) {
			e := open(b, "", engine.WithEmbedder(enginetest.NewHashEmbedder(64)))
			commit(b, e, docs[:base]...)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var commits atomic.Int64
			if busy {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i = (i + 1) % 20 {
						select {
						case <-stop:
							return
						default:
						}
						bt := e.NewBatch()
						bt.Add(docs[base+i*batch : base+(i+1)*batch]...)
						if err := e.Commit(context.Background(), bt); err != nil {
							b.Error(err)
							return
						}
						commits.Add(1)
					}
				}()
			}
			req := engine.Request{Query: "w1 w7", Tenant: "t0"}
			var lat []time.Duration
			ctx := context.Background()
			for b.Loop() {
				t0 := time.Now()
				if _, err := e.Search(ctx, req); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			if busy {
				b.ReportMetric(float64(commits.Load()), "commits")
			}
		})
	}
}
