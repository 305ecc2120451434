package lexical

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/peers"
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
	// Peers runs bm25s (make peers) on every BEIR dataset × variant right
	// after hybrank, with the same k1, b, delta, K and rounds; its run
	// file is scored by package eval like hybrank's hits. Off by default.
	Peers peers.Config `json:"peers"`
	// Targets are the report's checks.
	Targets Targets `json:"targets"`
	// Progress forces a progress bar even when stderr is not a terminal.
	Progress bool `json:"-"`
	// Log receives one line per row as it is measured (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig returns lucene k1=1.2 b=0.75, the bm25s analyzer, top-100,
// best of 3 rounds, no peers, DefaultTargets, and no corpus (give
// Datasets or Synthetic).
func DefaultConfig() Config {
	return Config{
		Index:    postings.DefaultConfig(),
		Analyzer: analysis.DefaultConfig(),
		K:        100,
		Rounds:   3,
		Peers:    peers.DefaultConfig(),
		Targets:  DefaultTargets(),
	}
}

// Targets are what a lexical run is checked against.
type Targets struct {
	// PeerDecimals is how many decimals of nDCG@10 hybrank and bm25s must
	// share on every dataset × variant they both ran (4: the bm25s
	// anchors of ANCHORS.md, scifact 0.6802). 0 turns the check off.
	PeerDecimals int `json:"peer_decimals"`
}

// DefaultTargets is agreement with bm25s to 4 decimals.
func DefaultTargets() Targets { return Targets{PeerDecimals: 4} }

// Check compares each bm25s row with the hybrank row of the same dataset
// and variant before it: nDCG@10 equal at PeerDecimals (PASS/FAIL), and
// the QPS ratio (INFO). No peer rows, no checks.
func (t Targets) Check(rows []Row) []report.Check {
	var cs []report.Check
	ours := map[[2]string]Row{}
	for _, r := range rows {
		key := [2]string{r.Dataset, r.Variant}
		if r.Impl == implHybrank {
			ours[key] = r
			continue
		}
		h, ok := ours[key]
		if !ok {
			continue
		}
		name := r.Dataset + " " + r.Variant
		if t.PeerDecimals > 0 {
			// Agreement to d decimals is |Δ| ≤ ½·10^−d: rounding each side
			// first failed 0.68025 against 0.680249999 and passed figures
			// almost 10^−d apart.
			d := t.PeerDecimals
			cs = append(cs, report.AtMost(fmt.Sprintf("%s nDCG@10 |hybrank − %s|, agreement to %d decimals", name, r.Impl, d),
				math.Abs(h.NDCG10-r.NDCG10), 0.5*math.Pow(10, -float64(d)), fmt.Sprintf("hybrank %.5f, %s %.5f", h.NDCG10, r.Impl, r.NDCG10)))
		}
		if r.QPS > 0 {
			cs = append(cs, report.Inform(fmt.Sprintf("%s QPS hybrank / %s", name, r.Impl), measure.Round(h.QPS/r.QPS, 2),
				fmt.Sprintf("%.0f vs %.0f queries/s, one thread each, same run", h.QPS, r.QPS)))
		}
	}
	return cs
}

// implHybrank is the Impl of hybrank's own rows.
const implHybrank = "hybrank"

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
	if c.K < 1 || c.Rounds < 1 || c.ChunkDocs < 0 || c.Targets.PeerDecimals < 0 {
		return fmt.Errorf("%w: lexical k=%d rounds=%d chunk=%d peer decimals=%d", bench.ErrBadOption, c.K, c.Rounds, c.ChunkDocs, c.Targets.PeerDecimals)
	}
	if c.K < 100 {
		return fmt.Errorf("%w: lexical k=%d: the report's recall@100 needs at least 100 hits per query", bench.ErrBadOption, c.K)
	}
	return c.Peers.Validate()
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

// Row is one corpus × variant × implementation: a line of lexical.md.
// Columns are tagged `table` (see package report).
type Row struct {
	Dataset string `json:"dataset" table:""`
	Docs    int    `json:"docs" table:""`
	Queries int    `json:"queries" table:""`
	// Impl is who ran it: "hybrank", or the peer "bm25s" (Version says
	// which release) on the same corpus and queries in the same run.
	Impl       string  `json:"impl" table:""`
	Version    string  `json:"version,omitempty"`
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
	IndexS   float64 `json:"index_s" table:""`
	DocsPerS float64 `json:"docs_per_s" table:""`
	QPS      float64 `json:"qps" table:""`
	// HybrankSpeedup is on a peer's row: hybrank's QPS on the same corpus
	// and variant in the same run / this row's QPS.
	HybrankSpeedup float64 `json:"hybrank_speedup,omitempty" table:"hybrank ×"`
	// Latency percentiles and index figures are hybrank's only (the peer
	// reports its total time).
	P50Ms     float64 `json:"p50_ms,omitempty" table:""`
	P90Ms     float64 `json:"p90_ms,omitempty"`
	P99Ms     float64 `json:"p99_ms,omitempty" table:""`
	Postings  int     `json:"postings,omitempty"`
	Terms     int     `json:"terms,omitempty"`
	IndexMB   float64 `json:"index_mb,omitempty"`
	BytesPerP float64 `json:"bytes_per_posting,omitempty" table:""`
}

// Result is the rows of one Run, BEIR datasets first, in Config order,
// each peer row right after hybrank's, and Targets.Check of the rows.
type Result struct {
	Rows   []Row          `json:"rows"`
	Checks []report.Check `json:"checks,omitempty"`
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
	var peer *peers.Runner
	if cfg.Peers.Enabled && len(cfg.Datasets) > 0 {
		var err error
		if peer, err = peers.New(cfg.Peers); err != nil {
			return res, fmt.Errorf("lexical: %w", err)
		}
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
			if peer == nil {
				continue
			}
			pr, err := runBM25s(ctx, peer, dir, ds, c, r)
			if err != nil {
				return res, err
			}
			add(pr)
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
	res.Checks = cfg.Targets.Check(res.Rows)
	return res, nil
}

// runBM25s runs bm25s on the dataset in dir with cfg's variant and
// parameters and scores its run with the conventions of ours, hybrank's
// row on the same corpus.
func runBM25s(ctx context.Context, peer *peers.Runner, dir string, ds *eval.Dataset, cfg Config, ours Row) (Row, error) {
	out, err := peer.BM25s(ctx, peers.BM25sArgs{
		Data: dir, K: cfg.K, Method: ours.Variant, K1: cfg.Index.K1, B: cfg.Index.B, Delta: cfg.Index.Delta, Rounds: cfg.Rounds,
	})
	if err != nil {
		return Row{}, fmt.Errorf("lexical %s: bm25s: %w", ds.Name, err)
	}
	r := Row{
		Impl: "bm25s", Version: out.Version, Dataset: ds.Name, Docs: out.Docs, Queries: out.Queries, Variant: out.Method,
		K1: out.K1, B: out.B, IndexS: measure.Round(out.IndexS, 4), QPS: measure.Round(out.QPS, 0),
	}
	if out.IndexS > 0 {
		r.DocsPerS = measure.Round(float64(out.Docs)/out.IndexS, 0)
	}
	if out.QPS > 0 {
		r.HybrankSpeedup = measure.Round(ours.QPS/out.QPS, 2)
	}
	scoreRun(&r, ds.Qrels, out.Run, cfg.Eval)
	return r, nil
}

// scoreRun fills r's quality figures: run scored with opt, and with the
// other identical-ids convention.
func scoreRun(r *Row, qrels eval.Qrels, run eval.Run, opt eval.Options) {
	sc := eval.Evaluate(qrels, run, opt)
	other := opt
	other.DropIdenticalIDs = !other.DropIdenticalIDs
	// Unrounded: the checks round once, to the decimals they compare at
	// (rounding here first could split two figures that agree there).
	r.NDCG10, r.Recall100, r.MRR10 = sc.NDCG10, sc.Recall100, sc.MRR10
	osc := eval.Evaluate(qrels, run, other)
	r.NDCG10OtherID, r.Recall100OtherID = osc.NDCG10, osc.Recall100
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
	an, ix, build, err := indexBEIR(ctx, ds, cfg)
	if err != nil {
		return Row{}, err
	}
	qs := make([]query, len(ds.Queries))
	for i, q := range ds.Queries {
		qs[i] = query{q.ID, q.Text}
	}
	return finish(ctx, ds.Name, len(ds.Docs), ix, an, qs, ds.Qrels, build, cfg)
}

// indexBEIR indexes ds's documents (title + " " + text, one batch) and
// returns the analyzer, the index and the build time.
func indexBEIR(ctx context.Context, ds *eval.Dataset, cfg Config) (*analysis.Analyzer, *postings.Index, time.Duration, error) {
	an, ix, err := newIndex(cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	runtime.GC()
	bar := measure.NewProgress("index "+ds.Name, len(ds.Docs), cfg.Progress)
	start := time.Now()
	b := ix.NewBatch()
	for i := range ds.Docs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, 0, err
			}
			bar.Add(min(1024, len(ds.Docs)-i))
		}
		d := &ds.Docs[i]
		b.Add(postings.Doc{ID: d.ID, Terms: an.Analyze(d.IndexText())})
	}
	if err := ix.Commit(b); err != nil {
		return nil, nil, 0, fmt.Errorf("lexical %s: commit: %w", ds.Name, err)
	}
	build := time.Since(start)
	bar.Done()
	return an, ix, build, nil
}

// Candidates is one query and its BM25 hits, best first: what a reranker
// receives.
type Candidates struct {
	Query eval.Query
	Docs  []eval.Doc
}

// TopK returns the BM25 top-k documents (DefaultConfig: lucene, k1 1.2,
// b 0.75, the bm25s analyzer) of the first n judged queries of ds (all
// when n ≤ 0), in query order: the real candidate lists of `bench
// rerank`. A query with no matching document has none.
func TopK(ctx context.Context, ds *eval.Dataset, n, k int) ([]Candidates, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: lexical: top-k %d", bench.ErrBadOption, k)
	}
	an, ix, _, err := indexBEIR(ctx, ds, DefaultConfig())
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(ds.Docs))
	for i, d := range ds.Docs {
		byID[d.ID] = i
	}
	qs := ds.Queries
	if n > 0 && n < len(qs) {
		qs = qs[:n]
	}
	out := make([]Candidates, len(qs))
	for i, q := range qs {
		hits, err := ix.Search(ctx, postings.Query{Terms: an.AnalyzeQuery(q.Text), K: k})
		if err != nil {
			return nil, fmt.Errorf("lexical %s: query %s: %w", ds.Name, q.ID, err)
		}
		out[i].Query = q
		for _, h := range hits {
			out[i].Docs = append(out[i].Docs, ds.Docs[byID[h.ID]])
		}
	}
	return out, nil
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
		Impl: implHybrank, Dataset: name, Docs: docs, Queries: len(qs), Variant: string(cfg.Index.Variant),
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
	scoreRun(&res, qrels, run, cfg.Eval)

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
