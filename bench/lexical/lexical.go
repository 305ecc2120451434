package lexical

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/postings"
)

// Config configures `bench lexical`: every corpus (the BEIR datasets, then
// the synthetic corpora) is indexed and queried once per BM25 variant.
// Safe to copy; Run does not modify it.
type Config struct {
	// Datasets are BEIR dataset folders. Each is indexed as
	// title + " " + text per document, in one batch.
	Datasets []string `json:"datasets,omitempty"`
	// Synthetic are generated corpora, indexed in batches of ChunkDocs and
	// queried with their generated queries.
	Synthetic []synth.CorpusConfig `json:"synthetic,omitempty"`
	// Variants are the BM25 variants to run; empty means Index.Variant.
	Variants []postings.Variant `json:"variants,omitempty"`
	// Index is the postings configuration (variant, k1, b, delta).
	Index postings.Config `json:"index"`
	// Analyzer is used for BEIR documents and all queries. Synthetic runs
	// use SyntheticAnalyzerConfig instead.
	Analyzer analysis.Config `json:"analyzer"`
	// K is the number of hits per query (100).
	K int `json:"k"`
	// Rounds is how many times all queries are run; QPS is the best round (3).
	Rounds int `json:"rounds"`
	// Exhaustive disables MaxScore pruning in the index.
	Exhaustive bool `json:"exhaustive"`
	// Eval selects the evaluation conventions (trec_eval's by default).
	Eval eval.Options `json:"eval"`
	// ChunkDocs is the number of documents per committed batch for
	// synthetic corpora; 0 commits the whole corpus as one batch (a bulk
	// build, like bm25s's). BEIR corpora are always committed in one batch.
	ChunkDocs int `json:"chunk_docs"`
	// Progress forces a progress bar even when stderr is not a terminal.
	Progress bool `json:"-"`
	// Log receives one line per row as it is measured (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig returns lucene k1=1.2 b=0.75, the bm25s analyzer, top-100,
// best of 3 rounds, and no corpus (give Datasets or Synthetic).
func DefaultConfig() Config {
	return Config{
		Index:    postings.DefaultConfig(),
		Analyzer: analysis.DefaultConfig(),
		K:        100,
		Rounds:   3,
	}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	if len(c.Datasets) == 0 && len(c.Synthetic) == 0 {
		return fmt.Errorf("%w: lexical: no dataset and no synthetic corpus", bench.ErrBadOption)
	}
	for _, v := range c.variants() {
		ic := c.Index
		ic.Variant = v
		if err := ic.Validate(); err != nil {
			return fmt.Errorf("%w: lexical: %w", bench.ErrBadOption, err)
		}
	}
	if err := c.Analyzer.Validate(); err != nil {
		return fmt.Errorf("%w: lexical: %w", bench.ErrBadOption, err)
	}
	for _, s := range c.Synthetic {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	if c.K < 1 || c.Rounds < 1 || c.ChunkDocs < 0 {
		return fmt.Errorf("%w: lexical k=%d rounds=%d chunk=%d", bench.ErrBadOption, c.K, c.Rounds, c.ChunkDocs)
	}
	return nil
}

func (c Config) variants() []postings.Variant {
	if len(c.Variants) == 0 {
		return []postings.Variant{c.Index.Variant}
	}
	return c.Variants
}

// Variants are every BM25 variant of the postings index.
var Variants = []postings.Variant{postings.Lucene, postings.Robertson, postings.ATIRE, postings.BM25L, postings.BM25Plus}

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

// Row is one corpus × variant: a line of lexical.md. Columns are tagged
// `table` (see package report).
type Row struct {
	// Impl is who ran it: "hybrank"; a peer (bm25s) adds rows of its own.
	Impl       string  `json:"impl"`
	Dataset    string  `json:"dataset" table:""`
	Docs       int     `json:"docs" table:""`
	Queries    int     `json:"queries" table:""`
	Variant    string  `json:"variant" table:""`
	K1         float64 `json:"k1" table:""`
	B          float64 `json:"b" table:""`
	Exhaustive bool    `json:"exhaustive"`
	// Quality, trec_eval conventions (identical query/doc ids kept unless
	// eval.Options.DropIdenticalIDs), and with the other convention.
	NDCG10           float64 `json:"ndcg@10" table:""`
	Recall100        float64 `json:"recall@100" table:""`
	MRR10            float64 `json:"mrr@10" table:""`
	NDCG10OtherID    float64 `json:"ndcg@10_other_id_convention"`
	Recall100OtherID float64 `json:"recall@100_other_id_convention"`
	// Build: analysis + commits (+ final Rebuild for chunked builds).
	IndexS    float64 `json:"index_s" table:""`
	DocsPerS  float64 `json:"docs_per_s" table:""`
	QPS       float64 `json:"qps" table:""`
	P50Ms     float64 `json:"p50_ms" table:""`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms" table:""`
	Postings  int     `json:"postings"`
	Terms     int     `json:"terms"`
	IndexMB   float64 `json:"index_mb"`
	BytesPerP float64 `json:"bytes_per_posting" table:""`
}

// Result is the rows of one Run, BEIR datasets first, in Config order.
type Result struct {
	Rows []Row `json:"rows"`
}

// Run indexes and queries every corpus of cfg with every variant.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	add := func(r Row) {
		res.Rows = append(res.Rows, r)
		report.Log(cfg.Log, r)
	}
	for _, dir := range cfg.Datasets {
		ds, err := eval.LoadBEIR(dir)
		if err != nil {
			return res, err
		}
		for _, v := range cfg.variants() {
			c := cfg
			c.Index.Variant = v
			r, err := runBEIR(ctx, ds, c)
			if err != nil {
				return res, err
			}
			add(r)
		}
	}
	for _, sc := range cfg.Synthetic {
		syn, err := synth.NewCorpus(sc)
		if err != nil {
			return res, err
		}
		for _, v := range cfg.variants() {
			c := cfg
			c.Index.Variant = v
			r, err := runSynthetic(ctx, syn, c)
			if err != nil {
				return res, err
			}
			add(r)
		}
	}
	return res, nil
}

// query is a query as the timing loop sees it.
type query struct {
	id, text string
}

// newIndex builds the analyzer of cfg and an empty index that records its
// version.
func newIndex(cfg Config) (*analysis.Analyzer, *postings.Index, error) {
	an, err := analysis.New(cfg.Analyzer)
	if err != nil {
		return nil, nil, err
	}
	icfg := cfg.Index
	icfg.AnalyzerVersion = an.Version()
	ix, err := postings.New(icfg)
	if err != nil {
		return nil, nil, err
	}
	return an, ix, nil
}

// runBEIR indexes ds (title + " " + text per document, one batch) and runs
// every judged query.
func runBEIR(ctx context.Context, ds *eval.Dataset, cfg Config) (Row, error) {
	an, ix, err := newIndex(cfg)
	if err != nil {
		return Row{}, err
	}
	runtime.GC()
	bar := measure.NewProgress("index "+ds.Name, len(ds.Docs), cfg.Progress)
	start := time.Now()
	b := ix.NewBatch()
	for i := range ds.Docs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return Row{}, err
			}
			bar.Add(min(1024, len(ds.Docs)-i))
		}
		d := &ds.Docs[i]
		b.Add(postings.Doc{ID: d.ID, Terms: an.Analyze(d.IndexText())})
	}
	if err := ix.Commit(b); err != nil {
		return Row{}, fmt.Errorf("lexical %s: commit: %w", ds.Name, err)
	}
	build := time.Since(start)
	bar.Done()
	qs := make([]query, len(ds.Queries))
	for i, q := range ds.Queries {
		qs[i] = query{q.ID, q.Text}
	}
	return finish(ctx, ds.Name, len(ds.Docs), ix, an, qs, ds.Qrels, build, cfg)
}

// runSynthetic indexes the generated corpus (in one batch, or in batches
// of cfg.ChunkDocs followed by one Rebuild so every norm uses the final
// average length) and runs the generated queries.
func runSynthetic(ctx context.Context, syn *synth.Corpus, cfg Config) (Row, error) {
	cfg.Analyzer = SyntheticAnalyzerConfig()
	an, ix, err := newIndex(cfg)
	if err != nil {
		return Row{}, err
	}
	n := syn.Config().Docs
	name := fmt.Sprintf("synthetic-%d", n)
	runtime.GC()
	bar := measure.NewProgress("index "+name, n, cfg.Progress)
	start := time.Now()
	chunk := cfg.ChunkDocs
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
			b.Add(postings.Doc{ID: synth.DocID(i), Terms: arena[s:len(arena):len(arena)]})
			return nil
		})
		if err != nil {
			return Row{}, err
		}
		if err := ix.Commit(b); err != nil {
			return Row{}, fmt.Errorf("lexical %s: commit: %w", name, err)
		}
		bar.Add(to - from)
	}
	if chunk < n {
		if err := ix.Rebuild(); err != nil {
			return Row{}, fmt.Errorf("lexical %s: rebuild: %w", name, err)
		}
	}
	build := time.Since(start)
	bar.Done()
	qs := make([]query, len(syn.Queries()))
	for i, q := range syn.Queries() {
		qs[i] = query{q.ID, q.Text}
	}
	return finish(ctx, name, n, ix, an, qs, syn.Qrels(), build, cfg)
}

// finish times the queries and evaluates the first round's results.
func finish(ctx context.Context, name string, docs int, ix *postings.Index, an *analysis.Analyzer,
	qs []query, qrels eval.Qrels, build time.Duration, cfg Config) (Row, error) {
	res := Row{
		Impl: "hybrank", Dataset: name, Docs: docs, Queries: len(qs), Variant: string(cfg.Index.Variant),
		K1: cfg.Index.K1, B: cfg.Index.B, Exhaustive: cfg.Exhaustive,
		IndexS: measure.Round(build.Seconds(), 4),
	}
	if res.Variant == "" {
		res.Variant = string(postings.Lucene)
	}
	if build > 0 {
		res.DocsPerS = measure.Round(float64(docs)/build.Seconds(), 0)
	}
	first, lat, err := timeQueries(ctx, name, ix, an, qs, cfg)
	if err != nil {
		return res, err
	}
	res.QPS = measure.Round(float64(len(qs))/lat.wall.Seconds(), 0)
	l := measure.LatencyStats(lat.each)
	res.P50Ms, res.P90Ms, res.P99Ms = measure.Round(measure.Ms(l.P50), 4), measure.Round(measure.Ms(l.P90), 4), measure.Round(measure.Ms(l.P99), 4)

	run := make(eval.Run, len(qs))
	for i, q := range qs {
		run[q.id] = eval.TrecOrder(first[i], func(h postings.Hit) string { return h.ID }, func(h postings.Hit) float64 { return float64(h.Score) })
	}
	sc := eval.Evaluate(qrels, run, cfg.Eval)
	other := cfg.Eval
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

// rounds is the fastest round of the timed queries.
type rounds struct {
	wall time.Duration
	each []time.Duration
}

// timeQueries runs every query cfg.Rounds times on one goroutine and
// returns the first round's hits and the fastest round's timings.
func timeQueries(ctx context.Context, name string, ix *postings.Index, an *analysis.Analyzer, qs []query, cfg Config) ([][]postings.Hit, rounds, error) {
	first := make([][]postings.Hit, len(qs))
	lat := make([]time.Duration, len(qs))
	var best rounds
	var terms []string
	for round := 0; round < cfg.Rounds; round++ {
		runtime.GC()
		t0 := time.Now()
		for i, q := range qs {
			if i&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, best, err
				}
			}
			s := time.Now()
			terms = an.AppendAnalyzeQuery(terms[:0], q.text)
			hits, err := ix.Search(ctx, postings.Query{Terms: terms, K: cfg.K, Exhaustive: cfg.Exhaustive})
			lat[i] = time.Since(s)
			if err != nil {
				return nil, best, fmt.Errorf("lexical %s: query %s: %w", name, q.id, err)
			}
			if round == 0 {
				first[i] = hits
			}
		}
		if wall := time.Since(t0); round == 0 || wall < best.wall {
			best = rounds{wall: wall, each: slices.Clone(lat)}
		}
	}
	return first, best, nil
}
