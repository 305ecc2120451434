package lexical

import (
	"context"
	"testing"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/postings"
)

// BenchmarkLexicalSciFact measures one query (analysis + top-100 search) on
// SciFact, cycling through the judged queries; the figure behind the QPS of
// `bench lexical`, in a form `go test -cpuprofile` can profile.
func BenchmarkLexicalSciFact(b *testing.B) {
	ds, err := eval.LoadBEIR(testenv.NeedDataset(b, "scifact"))
	if err != nil {
		b.Fatal(err)
	}
	an := analysis.MustNew(analysis.DefaultConfig())
	for _, mode := range []struct {
		name       string
		exhaustive bool
	}{{"maxscore", false}, {"exhaustive", true}} {
		b.Run(mode.name, func(b *testing.B) {
			ix, err := postings.New(postings.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			batch := ix.NewBatch()
			for _, d := range ds.Docs {
				batch.Add(postings.Doc{ID: d.ID, Terms: an.Analyze(d.IndexText())})
			}
			if err := ix.Commit(batch); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var terms []string
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := ds.Queries[i%len(ds.Queries)]
				terms = an.AppendAnalyzeQuery(terms[:0], q.Text)
				if _, err := ix.Search(ctx, postings.Query{Terms: terms, K: 100, Exhaustive: mode.exhaustive}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "qps")
		})
	}
}

// BenchmarkLexicalBuildSynthetic measures a bulk index build of generated
// documents (no analysis: the terms come from the generator).
func BenchmarkLexicalBuildSynthetic(b *testing.B) {
	const n = 10_000
	syn, err := synth.NewCorpus(synth.DefaultCorpusConfig(n))
	if err != nil {
		b.Fatal(err)
	}
	var docs []postings.Doc
	if err := syn.Each(context.Background(), 0, n, func(i int, terms []string) error {
		docs = append(docs, postings.Doc{ID: synth.DocID(i), Terms: append([]string(nil), terms...)})
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix, err := postings.New(postings.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		batch := ix.NewBatch()
		for _, d := range docs {
			batch.Add(d)
		}
		if err := ix.Commit(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "docs/s")
}
