package engine_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/lexical"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/postings"
)

// TestBM25ParityScifact checks that the engine's BM25-only configuration (no
// embedder) is the lexical index: on scifact every query returns the same
// top-100 IDs in the same order, with the same scores, as package postings
// fed with package analysis directly (title + " " + text, as bench lexical
// indexes), and the nDCG@10 / recall@100 figures equal bench lexical's.
func TestBM25ParityScifact(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes scifact twice (seconds); skipped under -short")
	}
	dir := testenv.NeedDataset(t, "scifact")
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const k = 100

	// The engine, BM25 only.
	e, err := engine.Open("", engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := e.NewBatch()
	for _, d := range ds.Docs {
		b.Add(engine.Document{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}

	// The lexical index directly, configured as bench lexical's default.
	lopt := lexical.DefaultConfig()
	an, err := analysis.New(lopt.Analyzer)
	if err != nil {
		t.Fatal(err)
	}
	icfg := lopt.Index
	icfg.AnalyzerVersion = an.Version()
	ix, err := postings.New(icfg)
	if err != nil {
		t.Fatal(err)
	}
	lb := ix.NewBatch()
	for _, d := range ds.Docs {
		lb.Add(postings.Doc{ID: d.ID, Terms: an.Analyze(d.IndexText())})
	}
	if err := ix.Commit(lb); err != nil {
		t.Fatal(err)
	}

	run := eval.Run{}
	mismatches := 0
	for _, q := range ds.Queries {
		res, err := e.Search(ctx, engine.Request{Query: q.Text, TopK: k, Candidates: k})
		if err != nil {
			t.Fatalf("query %s: %v", q.ID, err)
		}
		if !res.HasFallback(engine.FallbackNoEmbedder) || res.Reranked != 0 {
			t.Fatalf("query %s: not a BM25-only search: %+v", q.ID, res.Fallbacks)
		}
		hits, err := ix.Search(ctx, postings.Query{Terms: an.AnalyzeQuery(q.Text), K: k})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			got[i] = h.Document.ID
		}
		want := make([]string, len(hits))
		for i, h := range hits {
			want[i] = h.ID
		}
		if !slices.Equal(got, want) {
			if mismatches++; mismatches <= 5 {
				t.Errorf("query %s: engine ranking differs from postings\n engine   %v\n postings %v", q.ID, head(got), head(want))
			}
			continue
		}
		for i, h := range res.Hits {
			if h.Provenance.BM25Rank != i+1 || math.Abs(h.Provenance.BM25Score-float64(hits[i].Score)) > 1e-6*math.Max(1, math.Abs(h.Provenance.BM25Score)) {
				t.Fatalf("query %s rank %d: engine bm25 %v (rank %d), postings %v", q.ID, i+1, h.Provenance.BM25Score, h.Provenance.BM25Rank, hits[i].Score)
			}
		}
		// The engine's ranking in trec_eval order (as bench lexical
		// evaluates): BM25 score descending, ties by ID descending.
		run[q.ID] = eval.TrecOrder(res.Hits, func(h engine.Hit) string { return h.Document.ID },
			func(h engine.Hit) float64 { return h.Provenance.BM25Score })
	}
	if mismatches > 0 {
		t.Fatalf("%d of %d queries differ", mismatches, len(ds.Queries))
	}

	lopt.Rounds, lopt.Datasets = 1, []string{dir}
	lres, err := lexical.Run(ctx, lopt)
	if err != nil {
		t.Fatal(err)
	}
	lex := lres.Rows[0]
	sc := eval.Evaluate(ds.Qrels, run, lopt.Eval)
	// Both are eval.Evaluate over the same rankings: equal to the bit.
	if sc.NDCG10 != lex.NDCG10 || sc.Recall100 != lex.Recall100 {
		t.Fatalf("engine nDCG@10 %.5f recall@100 %.5f, bench lexical %.5f / %.5f", sc.NDCG10, sc.Recall100, lex.NDCG10, lex.Recall100)
	}
	t.Logf("scifact BM25: engine = lexical, nDCG@10 %.5f recall@100 %.5f over %d queries", lex.NDCG10, lex.Recall100, len(ds.Queries))
}

func head(ids []string) []string { return ids[:min(10, len(ids))] }
