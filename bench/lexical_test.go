package bench

import (
	"context"
	"math"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/internal/testenv"
)

// TestLexicalSynthetic runs the whole driver on a small generated corpus:
// planted documents must be found, every figure must be filled in, and
// exhaustive scoring must give the same quality.
func TestLexicalSynthetic(t *testing.T) {
	cfg := DefaultSyntheticConfig(1500)
	cfg.Vocab, cfg.Queries, cfg.MedianLen = 5_000, 30, 60
	syn, err := NewSynthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opt := DefaultLexicalOptions()
	opt.Rounds, opt.ChunkDocs = 1, 400 // several commits, then a Rebuild
	r, err := RunLexicalSynthetic(context.Background(), syn, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.Docs != 1500 || r.Queries != 30 || r.Variant != "lucene" || r.Postings == 0 || r.QPS <= 0 || r.BytesPerP <= 0 || r.DocsPerS <= 0 {
		t.Errorf("incomplete result %+v", r)
	}
	if r.NDCG10 < 0.5 || r.Recall100 < 0.8 {
		t.Errorf("planted documents not found: ndcg %.3f recall %.3f", r.NDCG10, r.Recall100)
	}
	opt.Exhaustive = true
	e, err := RunLexicalSynthetic(context.Background(), syn, opt)
	if err != nil {
		t.Fatal(err)
	}
	if e.NDCG10 != r.NDCG10 || e.Recall100 != r.Recall100 {
		t.Errorf("exhaustive differs: %+v vs %+v", e, r)
	}
}

// TestLexicalBEIRAnchors checks parity with bm25s (lucene, k1=1.2, b=0.75)
// on the anchor datasets of ../shared/ANCHORS.md. The anchors match when
// retrieved documents whose id equals the query id are kept, so that is
// how they are checked; the BEIR convention (the default) is reported too.
func TestLexicalBEIRAnchors(t *testing.T) {
	tests := []struct {
		name         string
		ndcg, recall float64
		tol          float64
		docs, qs     int
	}{
		{"scifact", 0.6802, 0.9127, 0.002, 5183, 300},
		{"cisi", 0.3796, 0.4351, 0.005, 1460, 76},
		{"cran", 0.3697, 0.7354, 0.005, 1400, 225},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testenv.NeedDataset(t, tt.name)
			if (testing.Short() || raceEnabled) && tt.name == "scifact" {
				t.Skip("indexes 5K documents; skipped with -short and -race")
			}
			ds, err := eval.LoadBEIR(dir)
			if err != nil {
				t.Fatal(err)
			}
			opt := DefaultLexicalOptions()
			opt.Rounds = 1
			r, err := RunLexicalBEIR(context.Background(), ds, opt)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.NDCG10-tt.ndcg) > tt.tol || math.Abs(r.Recall100-tt.recall) > tt.tol {
				t.Errorf("ndcg@10 %.4f recall@100 %.4f, want %.4f and %.4f ± %.3f", r.NDCG10, r.Recall100, tt.ndcg, tt.recall, tt.tol)
			}
			if r.Docs != tt.docs || r.Queries != tt.qs {
				t.Errorf("docs %d queries %d, want %d and %d", r.Docs, r.Queries, tt.docs, tt.qs)
			}
			t.Logf("%s: keep-ids ndcg@10 %.5f recall@100 %.5f; BEIR drop-ids ndcg@10 %.5f recall@100 %.5f",
				tt.name, r.NDCG10, r.Recall100, r.NDCG10OtherID, r.Recall100OtherID)
		})
	}
}
