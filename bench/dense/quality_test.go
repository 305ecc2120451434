package dense

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx/quantize"
	"github.com/hybrank/hybrank/simd"
)

func TestQualityConfigValidate(t *testing.T) {
	base := DefaultQualityConfig()
	base.Models, base.Datasets = []string{"m"}, []string{"d"}
	configtest.Check(t, base,
		configtest.OK("default with a model and a dataset", func(*QualityConfig) {}),
		configtest.OK("no cache", func(c *QualityConfig) { c.CacheDir = "" }),
		configtest.Bad("no model", func(c *QualityConfig) { c.Models = nil }),
		configtest.Bad("no dataset", func(c *QualityConfig) { c.Datasets = nil }),
		configtest.Bad("empty model path", func(c *QualityConfig) { c.Models = []string{"m", ""} }),
		configtest.Bad("top k below 10", func(c *QualityConfig) { c.TopK = 9 }),
		configtest.Bad("zero batch", func(c *QualityConfig) { c.Batch = 0 }),
		configtest.Bad("batch above max docs", func(c *QualityConfig) { c.Batch = 101 }),
		configtest.Bad("negative threads", func(c *QualityConfig) { c.Threads = -1 }),
		configtest.Bad("negative delta", func(c *QualityConfig) { c.Targets.MaxDelta = -0.1 }),
		configtest.Bad("NaN int8 delta", func(c *QualityConfig) { c.Targets.MaxInt8Delta = nan() }),
		configtest.Bad("int8 cache without int8", func(c *QualityConfig) { c.Int8Cache = "x" }),
		configtest.OK("int8 with a cache", func(c *QualityConfig) { c.Int8, c.Int8Cache = true, "x" }),
		configtest.Bad("peers without python", func(c *QualityConfig) { c.Peers.Enabled, c.Peers.Python = true, "" }),
	)
}

func nan() float64 { z := 0.0; return z / z }

func TestQualityTargetsCheck(t *testing.T) {
	rows := []QualityRow{
		{Model: "all-minilm-l6-v2", Dataset: "scifact", Impl: implHybrank, Kind: kindFlat, NDCG10: 0.645},
		{Model: "all-minilm-l6-v2", Dataset: "scifact", Impl: implHybrank, Kind: kindHNSW, NDCG10: 0.5},
		{Model: "all-minilm-l6-v2-q", Dataset: "scifact", Impl: implHybrank, Kind: kindFlat, NDCG10: 0.635},
		{Model: "bge-small-en-v1.5", Dataset: "scifact", Impl: implHybrank, Kind: kindFlat, NDCG10: 0.69},
		{Model: "e5-small-v2-q", Dataset: "cisi", Impl: implHybrank, Kind: kindFlat, NDCG10: 0.2},
		{Model: "e5-small-v2", Dataset: "cisi", Impl: implHybrank, Kind: kindFlat, NDCG10: 0.2},
	}
	cs := DefaultQualityConfig().Targets.Check(rows)
	want := []string{report.Pass, report.Fail, report.Fail, report.Pass}
	if len(cs) != len(want) {
		t.Fatalf("%d checks: %v", len(cs), cs)
	}
	for i, c := range cs {
		if c.Verdict != want[i] {
			t.Errorf("check %d %s: verdict %s, want %s", i, c, c.Verdict, want[i])
		}
	}
	only := DefaultQualityConfig().Targets.Check(rows[2:3])
	if len(only) != 1 || only[0].Verdict != report.Info {
		t.Fatalf("int8 without its float32 original: %v", only)
	}
}

// tinyEmbedder writes a generated (random-weight) bi-encoder of the
// TinyBERT-L2 shape and returns its directory and configuration.
func tinyEmbedder(t *testing.T) (string, bertgen.Config) {
	t.Helper()
	testenv.NeedORT(t)
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	dir := filepath.Join(t.TempDir(), "embed")
	c := bertgen.TinyBERTL2CrossEncoder()
	c.Kind = bertgen.BiEncoder
	if err := bertgen.Write(dir, c, vocab, tok); err != nil {
		t.Fatal(err)
	}
	return dir, c
}

// TestRunQuality ranks a tiny generated BEIR collection with a generated
// (random-weight) embedder twice: the second run reads every vector from
// the cache and scores the same.
func TestRunQuality(t *testing.T) {
	mdir, _ := tinyEmbedder(t)
	var docs []eval.Doc
	var queries []eval.Query
	qrels := eval.Qrels{}
	for i := range 30 {
		docs = append(docs, eval.Doc{ID: fmt.Sprintf("d%d", i), Title: fmt.Sprintf("topic %d", i),
			Text: fmt.Sprintf("alpha%d beta%d words about retrieval number %d", i, i, i)})
		if i < 6 {
			q := fmt.Sprintf("q%d", i)
			queries = append(queries, eval.Query{ID: q, Text: fmt.Sprintf("alpha%d beta%d", i, i)})
			qrels[q] = map[string]int{fmt.Sprintf("d%d", i): 1}
		}
	}
	ds := filepath.Join(t.TempDir(), "tiny")
	if err := eval.WriteBEIR(ds, docs, queries, qrels); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultQualityConfig()
	cfg.Models, cfg.Datasets, cfg.CacheDir = []string{mdir}, []string{ds}, t.TempDir()
	cfg.Provider, cfg.Threads, cfg.TopK, cfg.Batch = "cpu", 1, 10, 7
	first, err := RunQuality(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := RunQuality(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Rows) != 2 || len(second.Rows) != 2 {
		t.Fatalf("rows %d and %d, want flat and hnsw", len(first.Rows), len(second.Rows))
	}
	for i, r := range first.Rows {
		s := second.Rows[i]
		if r.Model != "embed" || r.Dataset != "tiny" || r.Docs != 30 || r.Queries != 6 || r.RealWeights {
			t.Fatalf("row %+v", r)
		}
		if r.Cached || !s.Cached || s.EmbedS != 0 {
			t.Fatalf("cache: first %v, second %v (%v s)", r.Cached, s.Cached, s.EmbedS)
		}
		if r.NDCG10 != s.NDCG10 || r.Recall100 != s.Recall100 || r.MRR10 != s.MRR10 {
			t.Fatalf("cached vectors score differently: %+v vs %+v", r, s)
		}
		if r.NDCG10 < 0 || r.NDCG10 > 1 || r.Recall100 <= 0 || r.Recall100 > 1 {
			t.Fatalf("scores out of range: %+v", r)
		}
	}
	// 30 documents fit in the graph's beam: HNSW finds the exact ranking.
	if f, h := first.Rows[0], first.Rows[1]; f.Kind != kindFlat || h.Kind != kindHNSW || f.NDCG10 != h.NDCG10 {
		t.Fatalf("flat %+v, hnsw %+v", f, h)
	}
	files, err := filepath.Glob(filepath.Join(cfg.CacheDir, "embed-*.vec"))
	if err != nil || len(files) != 2 {
		t.Fatalf("cache files %v (%v), want documents and queries", files, err)
	}
	if len(first.Checks) != 0 {
		t.Fatalf("checks for a model without published figures: %v", first.Checks)
	}

	// Two models of one name would mix their rows (and their vectors).
	dup := cfg
	dup.Models = []string{mdir, mdir}
	if _, err := RunQuality(context.Background(), dup); !errors.Is(err, bench.ErrBadOption) {
		t.Fatalf("two models named alike: %v", err)
	}

	// Int8: the model again, quantized by onnx/quantize, named
	// embed-int8 and checked against its float32 rows.
	cfg.Int8, cfg.Int8Cache = true, t.TempDir()
	q, err := RunQuality(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Rows) != 4 || q.Rows[0].Model != "embed" || q.Rows[0].NDCG10 != first.Rows[0].NDCG10 || q.Rows[2].Model != "embed-int8" || q.Rows[2].Kind != kindFlat || q.Rows[2].Cached {
		t.Fatalf("int8 rows %+v", q.Rows)
	}
	if r := q.Rows[2]; !(r.SpearmanMean > 0 && r.SpearmanMean <= 1 && r.SpearmanWorst <= r.SpearmanMean) || q.Rows[3].SpearmanMean != 0 || q.Rows[0].SpearmanMean != 0 {
		t.Fatalf("Spearman on the int8 flat row only: %+v", q.Rows)
	}
	if len(q.Checks) != 2 || !strings.Contains(q.Checks[0].Name, "embed-int8 tiny |nDCG@10 − embed|") || q.Checks[1].Verdict != report.Info {
		t.Fatalf("int8 checks %+v", q.Checks)
	}
	if marks, _ := filepath.Glob(filepath.Join(cfg.Int8Cache, "*", quantize.MarkerFile)); len(marks) != 1 {
		t.Fatalf("quantized copies in the int8 cache: %v", marks)
	}
}

func TestScoreAgreement(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, 16)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var a vectors
	for range 50 {
		a.docs = append(a.docs, vec())
	}
	for range 5 {
		a.queries = append(a.queries, vec())
	}
	if mean, worst := scoreAgreement(a, a, 10); mean != 1 || worst != 1 {
		t.Fatalf("identical vectors: %v %v", mean, worst)
	}
	// Negated documents reverse every ranking.
	neg := vectors{queries: a.queries}
	for _, d := range a.docs {
		n := make([]float32, len(d))
		for i, x := range d {
			n[i] = -x
		}
		neg.docs = append(neg.docs, n)
	}
	if mean, worst := scoreAgreement(a, neg, 10); mean != -1 || worst != -1 {
		t.Fatalf("reversed rankings: %v %v", mean, worst)
	}
	// Only a's top 10 of each query counts: b agrees there and is
	// scrambled (negated) everywhere else. A one-query collection keeps
	// "a's top 10" a single set of documents.
	one := vectors{docs: a.docs, queries: a.queries[:1]}
	top := map[int]bool{}
	for range 10 {
		best := -1
		for d, v := range one.docs {
			if !top[d] && (best < 0 || simd.Cosine(one.queries[0], v) > simd.Cosine(one.queries[0], one.docs[best])) {
				best = d
			}
		}
		top[best] = true
	}
	mixed := vectors{queries: one.queries}
	for d, v := range one.docs {
		if !top[d] {
			v = neg.docs[d]
		}
		mixed.docs = append(mixed.docs, v)
	}
	if mean, worst := scoreAgreement(one, mixed, 10); mean != 1 || worst != 1 {
		t.Fatalf("agreement on a's top 10: %v %v", mean, worst)
	}
	// b's own top 10 (the negated others) is not the list compared.
	if mean, _ := scoreAgreement(mixed, one, 10); mean == 1 {
		t.Fatal("the list compared follows b's ranking")
	}
}
