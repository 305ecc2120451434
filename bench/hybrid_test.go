package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
)

func TestHybridMatrixAndSelect(t *testing.T) {
	all := HybridMatrix([]string{"fast", "balanced"})
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	want := "bm25 dense rrf weighted-0.3 weighted-0.5 weighted-0.7 relative " +
		"rrf+fast rrf+balanced weighted-0.3+fast weighted-0.3+balanced weighted-0.5+fast weighted-0.5+balanced " +
		"weighted-0.7+fast weighted-0.7+balanced relative+fast relative+balanced rrf+mmr-0.7"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("matrix:\n%s\nwant\n%s", got, want)
	}
	if all[0].Dense || !all[1].Dense || all[1].Alpha != 1 || all[8].Rerank != "balanced" || all[len(all)-1].MMRLambda != 0.7 {
		t.Fatalf("matrix fields: %+v", all)
	}
	tests := []struct {
		name     string
		patterns []string
		want     string
		err      bool
	}{
		{"all", nil, strings.Join(names, " "), false},
		{"exact", []string{"bm25", "relative"}, "bm25 relative", false},
		{"glob keeps matrix order", []string{"*+balanced", "bm25"}, "bm25 rrf+balanced weighted-0.3+balanced weighted-0.5+balanced weighted-0.7+balanced relative+balanced", false},
		{"unknown", []string{"bm26"}, "", true},
		{"bad pattern", []string{"["}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := SelectHybridConfigs(all, tt.patterns)
			if (err != nil) != tt.err {
				t.Fatalf("err %v", err)
			}
			var got []string
			for _, c := range sel {
				got = append(got, c.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestParseDurations(t *testing.T) {
	got, err := ParseDurations([]string{"25ms", "0.5s", "40"})
	if err != nil || len(got) != 3 || got[0] != 25*time.Millisecond || got[1] != 500*time.Millisecond || got[2] != 40*time.Millisecond {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"x", "0ms", "-5ms"} {
		if _, err := ParseDurations([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBudgetPlot(t *testing.T) {
	pts := []BudgetPoint{
		{Profile: "balanced", Budget: 50 * time.Millisecond, Latency: measure.Latency{P50: 40 * time.Millisecond, P99: 49 * time.Millisecond}, MeanReranked: 8},
		{Profile: "balanced", Budget: 100 * time.Millisecond, Latency: measure.Latency{P50: 90 * time.Millisecond, P99: 99 * time.Millisecond}, MeanReranked: 17},
	}
	pts = append(pts, BudgetPoint{Profile: "fast", Budget: 50 * time.Millisecond, MeanReranked: 60})
	ps := BudgetPlot(pts)
	if len(ps) != 2 || len(ps[0].Series) != 5 || ps[0].Series[4].Y[1] != 100 || ps[0].Series[0].Name != "balanced p99" ||
		ps[1].Series[0].Y[1] != 17 || ps[1].Series[1].Name != "fast" || ps[1].Series[1].Y[0] != 60 {
		t.Fatalf("plots %+v", ps)
	}
	var b bytes.Buffer
	report.RenderSVG(&b, ps...)
	if !strings.Contains(b.String(), "y = x") {
		t.Fatal("no y = x line")
	}
}

// hybridDataset is a small BEIR collection where each query's words appear
// in its relevant document only.
func hybridDataset(t *testing.T) *eval.Dataset {
	var docs []eval.Doc
	var queries []eval.Query
	qrels := eval.Qrels{}
	for i := range 40 {
		docs = append(docs, eval.Doc{ID: fmt.Sprintf("d%d", i), Title: fmt.Sprintf("topic %d", i),
			Text: fmt.Sprintf("alpha%d beta%d common words about retrieval number %d", i, i, i)})
		if i < 10 {
			q := fmt.Sprintf("q%d", i)
			queries = append(queries, eval.Query{ID: q, Text: fmt.Sprintf("alpha%d beta%d", i, i)})
			qrels[q] = map[string]int{fmt.Sprintf("d%d", i): 1}
		}
	}
	dir := t.TempDir()
	if err := eval.WriteBEIR(dir, docs, queries, qrels); err != nil {
		t.Fatal(err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestHybridBM25Only(t *testing.T) {
	ds := hybridDataset(t)
	opt := DefaultHybridOptions()
	opt.Queries = 5
	h, err := OpenHybridBench(context.Background(), ds, opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := h.Run(context.Background(), HybridMatrix(nil)[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Scores.Queries != 5 || r.Scores.NDCG10 != 1 || !r.RealWeights || r.DegradedFrac != 0 || r.Latency.N != 5 {
		t.Fatalf("bm25 result %+v", r)
	}
	if _, err := h.Run(context.Background(), HybridMatrix(nil)[1]); err == nil {
		t.Fatal("dense config ran without an embedder")
	}
	if _, err := h.BudgetSweep(context.Background(), "fast", []time.Duration{time.Second}, 3); err == nil {
		t.Fatal("sweep ran without a reranker")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHybridWithModels runs dense, fused, reranked and MMR configurations
// and a budget sweep with small generated (random-weight) models.
func TestHybridWithModels(t *testing.T) {
	testenv.NeedORT(t)
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	small := bertgen.TinyBERTL2CrossEncoder()
	if err := bertgen.Write(filepath.Join(root, "fast"), small, vocab, tok); err != nil {
		t.Fatal(err)
	}
	small.Kind = bertgen.BiEncoder
	if err := bertgen.Write(filepath.Join(root, "embed"), small, vocab, tok); err != nil {
		t.Fatal(err)
	}
	ec, _ := models.ProfileConfig(models.ProfileEmbed)
	ec.Dir, ec.Provider, ec.IntraOpThreads = filepath.Join(root, "embed"), "cpu", 1
	rc, _ := models.ProfileConfig(models.ProfileFast)
	rc.Dir, rc.Provider, rc.IntraOpThreads = filepath.Join(root, "fast"), "cpu", 1

	opt := DefaultHybridOptions()
	opt.EmbedModel, opt.RerankModels = ec, map[string]models.Config{"fast": rc}
	opt.Budget, opt.Candidates, opt.K, opt.Warmup = 0, 20, 20, 1
	real := map[string]bool{"embed": modeldir.RealWeights(ec.Dir), "fast": modeldir.RealWeights(rc.Dir)}
	ctx := context.Background()
	h, err := OpenHybridBench(ctx, hybridDataset(t), opt, real)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sel, err := SelectHybridConfigs(HybridMatrix([]string{"fast"}), []string{"bm25", "dense", "rrf", "rrf+fast", "rrf+mmr-0.7"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sel {
		r, err := h.Run(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if r.Scores.Queries != 10 || r.Latency.N != 10 {
			t.Fatalf("%s: %+v", c.Name, r)
		}
		if r.RealWeights != (c.Name == "bm25") {
			t.Errorf("%s: real_weights %v with generated models", c.Name, r.RealWeights)
		}
		if c.Rerank != "" && (r.MeanReranked != 20 || r.DegradedFrac != 0) {
			t.Errorf("%s unbudgeted: reranked %.1f degraded %.2f", c.Name, r.MeanReranked, r.DegradedFrac)
		}
		if c.Rerank == "" && r.MeanReranked != 0 {
			t.Errorf("%s reranked %v", c.Name, r.MeanReranked)
		}
	}
	// A generous budget reranks everything; 12 searches cycle the 10
	// queries. (Cut-short searches are covered by the engine's tests: how
	// many fit in a tight budget depends on the machine.)
	pts, err := h.BudgetSweep(ctx, "fast", []time.Duration{time.Minute}, 12)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || pts[0].DegradedFrac != 0 || pts[0].MeanReranked != 20 || pts[0].Searches != 12 ||
		pts[0].DegradedUnmarked != 0 || pts[0].MaxOverrun >= 0 || pts[0].Latency.N != 12 {
		t.Fatalf("sweep %+v", pts)
	}
}
