package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/postings"
)

// LexicalOptions configures a lexical (BM25) benchmark run.
type LexicalOptions struct {
	// Index is the postings configuration (variant, k1, b, delta).
	Index postings.Config
	// Analyzer is used for BEIR documents and all queries. Synthetic runs
	// override it with SyntheticAnalyzerConfig.
	Analyzer analysis.Config
	// K is the number of hits per query (100).
	K int
	// Rounds is how many times all queries are run; QPS is the best round (3).
	Rounds int
	// Exhaustive disables MaxScore pruning in the index.
	Exhaustive bool
	// Eval selects the evaluation conventions (BEIR's by default).
	Eval eval.Options
	// ChunkDocs is the number of documents per committed batch for
	// synthetic corpora; 0 commits the whole corpus as one batch (a bulk
	// build, like bm25s's). BEIR corpora are always committed in one batch.
	ChunkDocs int
	// Progress forces a progress bar even when stderr is not a terminal.
	Progress bool
}

// DefaultLexicalOptions returns lucene k1=1.2 b=0.75, the bm25s analyzer,
// top-100, best of 3 rounds.
func DefaultLexicalOptions() LexicalOptions {
	return LexicalOptions{
		Index:    postings.DefaultConfig(),
		Analyzer: analysis.DefaultConfig(),
		K:        100,
		Rounds:   3,
	}
}

// Validate reports whether the options can be used.
func (o LexicalOptions) Validate() error {
	if err := o.Index.Validate(); err != nil {
		return err
	}
	if err := o.Analyzer.Validate(); err != nil {
		return err
	}
	if o.K < 1 || o.Rounds < 1 || o.ChunkDocs < 0 {
		return fmt.Errorf("%w: lexical k=%d rounds=%d chunk=%d", ErrBadOption, o.K, o.Rounds, o.ChunkDocs)
	}
	return nil
}

// SyntheticAnalyzerConfig is the analyzer for synthetic queries: the
// generated terms are lowercase letters, so only splitting applies; no
// stopwords or stemming would change them anyway, and skipping both keeps
// the cost comparable to a real query's analysis minus the stemmer.
func SyntheticAnalyzerConfig() analysis.Config {
	c := analysis.DefaultConfig()
	c.Stopwords = analysis.StopwordsNone
	c.Stemmer = analysis.StemmerNone
	return c
}

// LexicalResult is one row of `bench lexical`.
type LexicalResult struct {
	Dataset    string  `json:"dataset"`
	Docs       int     `json:"docs"`
	Queries    int     `json:"queries"`
	Variant    string  `json:"variant"`
	K1         float64 `json:"k1"`
	B          float64 `json:"b"`
	Exhaustive bool    `json:"exhaustive"`
	// Quality, trec_eval conventions (identical query/doc ids kept unless
	// EvalOptions.DropIdenticalIDs), and nDCG@10 with the other convention.
	NDCG10           float64 `json:"ndcg@10"`
	Recall100        float64 `json:"recall@100"`
	MRR10            float64 `json:"mrr@10"`
	NDCG10OtherID    float64 `json:"ndcg@10_other_id_convention"`
	Recall100OtherID float64 `json:"recall@100_other_id_convention"`
	// Build: analysis + commits (+ final Rebuild for chunked builds).
	IndexS    float64 `json:"index_s"`
	DocsPerS  float64 `json:"docs_per_s"`
	QPS       float64 `json:"qps"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	Postings  int     `json:"postings"`
	Terms     int     `json:"terms"`
	IndexMB   float64 `json:"index_mb"`
	BytesPerP float64 `json:"bytes_per_posting"`
}

// Row returns r as a report row (the JSON field names as keys).
func (r LexicalResult) Row() map[string]any {
	return map[string]any{
		"dataset":                        r.Dataset,
		"docs":                           r.Docs,
		"queries":                        r.Queries,
		"variant":                        r.Variant,
		"k1":                             r.K1,
		"b":                              r.B,
		"exhaustive":                     r.Exhaustive,
		"ndcg@10":                        r.NDCG10,
		"recall@100":                     r.Recall100,
		"mrr@10":                         r.MRR10,
		"ndcg@10_other_id_convention":    r.NDCG10OtherID,
		"recall@100_other_id_convention": r.Recall100OtherID,
		"index_s":                        r.IndexS,
		"docs_per_s":                     r.DocsPerS,
		"qps":                            r.QPS,
		"p50_ms":                         r.P50Ms,
		"p90_ms":                         r.P90Ms,
		"p99_ms":                         r.P99Ms,
		"postings":                       r.Postings,
		"terms":                          r.Terms,
		"index_mb":                       r.IndexMB,
		"bytes_per_posting":              r.BytesPerP,
	}
}

// LexicalColumns are the table columns of the lexical report.
var LexicalColumns = []string{"dataset", "docs", "queries", "variant", "k1", "b", "ndcg@10", "recall@100", "mrr@10",
	"index_s", "docs_per_s", "qps", "p50_ms", "p99_ms", "bytes_per_posting"}

// lexQuery is a query as the timing loop sees it.
type lexQuery struct {
	id, text string
}

// newLexicalIndex builds the analyzer of opt and an empty index that
// records its version.
func newLexicalIndex(opt LexicalOptions) (*analysis.Analyzer, *postings.Index, error) {
	an, err := analysis.New(opt.Analyzer)
	if err != nil {
		return nil, nil, err
	}
	icfg := opt.Index
	icfg.AnalyzerVersion = an.Version()
	ix, err := postings.New(icfg)
	if err != nil {
		return nil, nil, err
	}
	return an, ix, nil
}

// RunLexicalBEIR indexes ds (title + " " + text per document, one batch)
// and runs every judged query.
func RunLexicalBEIR(ctx context.Context, ds *eval.Dataset, opt LexicalOptions) (LexicalResult, error) {
	if err := opt.Validate(); err != nil {
		return LexicalResult{}, err
	}
	an, ix, err := newLexicalIndex(opt)
	if err != nil {
		return LexicalResult{}, err
	}
	runtime.GC()
	bar := measure.NewProgress("index "+ds.Name, len(ds.Docs), opt.Progress)
	start := time.Now()
	b := ix.NewBatch()
	for i := range ds.Docs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return LexicalResult{}, err
			}
			bar.Add(min(1024, len(ds.Docs)-i))
		}
		d := &ds.Docs[i]
		b.Add(postings.Doc{ID: d.ID, Terms: an.Analyze(d.IndexText())})
	}
	if err := ix.Commit(b); err != nil {
		return LexicalResult{}, fmt.Errorf("lexical %s: commit: %w", ds.Name, err)
	}
	build := time.Since(start)
	bar.Done()
	qs := make([]lexQuery, len(ds.Queries))
	for i, q := range ds.Queries {
		qs[i] = lexQuery{q.ID, q.Text}
	}
	return finishLexical(ctx, ds.Name, len(ds.Docs), ix, an, qs, ds.Qrels, build, opt)
}

// RunLexicalSynthetic indexes the generated corpus (in one batch, or in
// batches of opt.ChunkDocs followed by one Rebuild so every norm uses the
// final average length) and runs the generated queries.
func RunLexicalSynthetic(ctx context.Context, syn *Synthetic, opt LexicalOptions) (LexicalResult, error) {
	opt.Analyzer = SyntheticAnalyzerConfig()
	if err := opt.Validate(); err != nil {
		return LexicalResult{}, err
	}
	an, ix, err := newLexicalIndex(opt)
	if err != nil {
		return LexicalResult{}, err
	}
	n := syn.Config().Docs
	name := fmt.Sprintf("synthetic-%d", n)
	runtime.GC()
	bar := measure.NewProgress("index "+name, n, opt.Progress)
	start := time.Now()
	chunk := opt.ChunkDocs
	if chunk == 0 {
		chunk = n
	}
	for from := 0; from < n; from += chunk {
		to := min(n, from+chunk)
		b := ix.NewBatch()
		arena := make([]string, 0, (to-from)*int(syn.Config().MedianLen*1.3))
		err := syn.Each(ctx, from, to, func(i int, terms []string) error {
			// The batch keeps the slices until Commit; carve them from
			// one arena per chunk instead of one allocation per doc.
			if cap(arena)-len(arena) < len(terms) {
				arena = make([]string, 0, max(len(terms), cap(arena)))
			}
			s := len(arena)
			arena = append(arena, terms...)
			b.Add(postings.Doc{ID: DocID(i), Terms: arena[s:len(arena):len(arena)]})
			return nil
		})
		if err != nil {
			return LexicalResult{}, err
		}
		if err := ix.Commit(b); err != nil {
			return LexicalResult{}, fmt.Errorf("lexical %s: commit: %w", name, err)
		}
		bar.Add(to - from)
	}
	if chunk < n {
		if err := ix.Rebuild(); err != nil {
			return LexicalResult{}, fmt.Errorf("lexical %s: rebuild: %w", name, err)
		}
	}
	build := time.Since(start)
	bar.Done()
	qs := make([]lexQuery, len(syn.Queries()))
	for i, q := range syn.Queries() {
		qs[i] = lexQuery{q.ID, q.Text}
	}
	return finishLexical(ctx, name, n, ix, an, qs, syn.Qrels(), build, opt)
}

// finishLexical times the queries and evaluates the first round's results.
func finishLexical(ctx context.Context, name string, docs int, ix *postings.Index, an *analysis.Analyzer,
	qs []lexQuery, qrels eval.Qrels, build time.Duration, opt LexicalOptions) (LexicalResult, error) {
	res := LexicalResult{
		Dataset: name, Docs: docs, Queries: len(qs), Variant: string(opt.Index.Variant),
		K1: opt.Index.K1, B: opt.Index.B, Exhaustive: opt.Exhaustive,
		IndexS: measure.Round(build.Seconds(), 4),
	}
	if res.Variant == "" {
		res.Variant = string(postings.Lucene)
	}
	if build > 0 {
		res.DocsPerS = measure.Round(float64(docs)/build.Seconds(), 0)
	}
	first := make([][]postings.Hit, len(qs))
	lat := make([]time.Duration, len(qs))
	var best time.Duration
	var bestLat []time.Duration
	var terms []string
	for round := 0; round < opt.Rounds; round++ {
		runtime.GC()
		t0 := time.Now()
		for i, q := range qs {
			if i&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return res, err
				}
			}
			s := time.Now()
			terms = an.AppendAnalyzeQuery(terms[:0], q.text)
			hits, err := ix.Search(ctx, postings.Query{Terms: terms, K: opt.K, Exhaustive: opt.Exhaustive})
			lat[i] = time.Since(s)
			if err != nil {
				return res, fmt.Errorf("lexical %s: query %s: %w", name, q.id, err)
			}
			if round == 0 {
				first[i] = hits
			}
		}
		wall := time.Since(t0)
		if round == 0 || wall < best {
			best = wall
			bestLat = slices.Clone(lat)
		}
	}
	res.QPS = measure.Round(float64(len(qs))/best.Seconds(), 0)
	l := measure.LatencyStats(bestLat)
	res.P50Ms, res.P90Ms, res.P99Ms = measure.Round(measure.Ms(l.P50), 4), measure.Round(measure.Ms(l.P90), 4), measure.Round(measure.Ms(l.P99), 4)

	run := make(eval.Run, len(qs))
	for i, q := range qs {
		run[q.id] = eval.TrecOrder(first[i], func(h postings.Hit) string { return h.ID }, func(h postings.Hit) float64 { return float64(h.Score) })
	}
	sc := eval.Evaluate(qrels, run, opt.Eval)
	other := opt.Eval
	other.DropIdenticalIDs = !other.DropIdenticalIDs
	res.NDCG10, res.Recall100, res.MRR10 = measure.Round(sc.NDCG10, 5), measure.Round(sc.Recall100, 5), measure.Round(sc.MRR10, 5)
	osc := eval.Evaluate(qrels, run, other)
	res.NDCG10OtherID, res.Recall100OtherID = measure.Round(osc.NDCG10, 5), measure.Round(osc.Recall100, 5)

	st := ix.Stats()
	res.Postings, res.Terms = st.Postings, st.Terms
	res.IndexMB = measure.Round(float64(st.IndexBytes)/(1<<20), 2)
	if st.Postings > 0 {
		res.BytesPerP = measure.Round(float64(st.IndexBytes)/float64(st.Postings), 3)
	}
	return res, nil
}
