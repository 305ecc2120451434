package postings

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// synthCorpus makes n docs whose terms follow a Zipf law over vocab terms
// (s=1.1), lengths uniform in [minLen, maxLen].
func synthCorpus(seed uint64, n, vocab, minLen, maxLen int) []Doc {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	names := make([]string, vocab)
	for i := range names {
		names[i] = fmt.Sprint("t", i)
	}
	docs := make([]Doc, n)
	for i := range docs {
		l := minLen + r.IntN(maxLen-minLen+1)
		terms := make([]string, l)
		for j := range terms {
			terms[j] = names[z.Uint64()]
		}
		docs[i] = Doc{ID: fmt.Sprint("doc", i), Terms: terms}
	}
	return docs
}

// synthQueries draws query terms from the same Zipf law (ranks ≥ 10, so
// queries are not only stopword-like terms), 5–15 terms each.
func synthQueries(seed uint64, n, vocab int) [][]string {
	r := rand.New(rand.NewPCG(seed, 2))
	z := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	qs := make([][]string, n)
	for i := range qs {
		l := 5 + r.IntN(11)
		for range l {
			qs[i] = append(qs[i], fmt.Sprint("t", 10+z.Uint64()%uint64(vocab-10)))
		}
	}
	return qs
}

var (
	bench100KOnce sync.Once
	bench100K     *Index
)

func index100K(b *testing.B) *Index {
	bench100KOnce.Do(func() {
		ix, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		bt := ix.NewBatch()
		for _, d := range synthCorpus(1, 100_000, 50_000, 20, 120) {
			bt.Add(d)
		}
		if err := ix.Commit(bt); err != nil {
			b.Fatal(err)
		}
		bench100K = ix
	})
	return bench100K
}

// BenchmarkSearch100K: top-100 over 100K synthetic docs, exhaustive vs
// MaxScore, one query per op.
func BenchmarkSearch100K(b *testing.B) {
	ix := index100K(b)
	qs := synthQueries(3, 256, 50_000)
	st := ix.Stats()
	for _, ex := range []bool{true, false} {
		name := "pruned"
		if ex {
			name = "exhaustive"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(ctx, Query{Terms: qs[i%len(qs)], K: 100, Exhaustive: ex}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			b.ReportMetric(float64(st.IndexBytes)/float64(st.Postings), "bytes/posting")
		})
	}
}

// BenchmarkCommit measures commit throughput: batches of 1000 new docs into
// an index that grows from 0 to b.N×1000 docs.
func BenchmarkCommit(b *testing.B) {
	docs := synthCorpus(4, 50_000, 30_000, 20, 120)
	b.ReportAllocs()
	var ix *Index
	n := 0
	for b.Loop() {
		if ix == nil || n+1000 > len(docs) {
			ix, _ = New(DefaultConfig())
			n = 0
		}
		bt := ix.NewBatch()
		for _, d := range docs[n : n+1000] {
			bt.Add(d)
		}
		if err := ix.Commit(bt); err != nil {
			b.Fatal(err)
		}
		n += 1000
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkBuild1M builds 1M synthetic docs once and reports the index size
// per posting (the ≤ 3 B/posting target) and pruned vs exhaustive query
// rates. Slow (tens of seconds): run it explicitly with -bench Build1M;
// under -short (make test's smoke run) it builds 20K docs.
func BenchmarkBuild1M(b *testing.B) {
	docs, chunk := 1_000_000, 100_000
	if testing.Short() {
		docs, chunk = 20_000, 10_000
	}
	for b.Loop() {
		ix, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for start := 0; start < docs; start += chunk {
			bt := ix.NewBatch()
			for _, d := range synthCorpus(uint64(10+start), chunk, 200_000, 20, 120) {
				d.ID = fmt.Sprint("doc", start, "-", d.ID)
				bt.Add(d)
			}
			if err := ix.Commit(bt); err != nil {
				b.Fatal(err)
			}
		}
		st := ix.Stats()
		b.ReportMetric(float64(st.IndexBytes)/float64(st.Postings), "bytes/posting")
		b.ReportMetric(float64(st.Postings), "postings")
		qs := synthQueries(5, 100, 200_000)
		for _, ex := range []bool{true, false} {
			b.StopTimer()
			ctx := context.Background()
			start := time.Now()
			for _, q := range qs {
				if _, err := ix.Search(ctx, Query{Terms: q, K: 100, Exhaustive: ex}); err != nil {
					b.Fatal(err)
				}
			}
			name := "pruned-µs/query"
			if ex {
				name = "exhaustive-µs/query"
			}
			b.ReportMetric(time.Since(start).Seconds()*1e6/float64(len(qs)), name)
			b.StartTimer()
		}
	}
}
