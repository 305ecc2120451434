package longdoc

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/simd"
)

// Config configures `bench longdoc`. Safe to copy.
type Config struct {
	// Data is the BEIR dataset the collection is built from (scifact).
	Data string `json:"data"`
	// Build says how (queries, distractors, lengths, seed).
	Build BuildConfig `json:"build"`
	// Embedder is the real bi-encoder directory that scores the quality
	// rows (cosine of query and window vectors); its tokenizer also
	// counts the collection's tokens.
	Embedder string `json:"embedder"`
	// Strides are the chunking strides of the quality rows, in tokens; a
	// stride at least the window gives adjacent windows.
	Strides []int `json:"strides"`
	// MaxChunks caps the windows per document (0 = models.DefaultMaxChunks).
	MaxChunks int `json:"max_chunks"`
	// TopK is the k of the mean_top_k rows.
	TopK int `json:"top_k"`
	// Batch is the documents per Embed / EmbedSpans call.
	Batch int `json:"batch"`
	// Rerank are the speed and cost rows of the cross-encoder.
	Rerank RerankConfig `json:"rerank"`
	// Provider and Threads are the models' ONNX Runtime provider and
	// intra-op threads (0 = one per core).
	Provider string `json:"provider"`
	Threads  int    `json:"threads,omitempty"`
	// Log receives a line per row.
	Log io.Writer `json:"-"`
}

// RerankConfig selects the cross-encoder rows: a generated cross-encoder
// (random weights: scores are meaningless, speed is real) scores the first
// Queries queries' relevant long documents and distractors, Docs
// candidates per query, truncated and chunked. Profile "" skips them.
type RerankConfig struct {
	Profile string `json:"profile,omitempty"`
	// ModelDir is the cross-encoder directory ("" = the profile's,
	// generated under Models.Root when missing).
	ModelDir string          `json:"model_dir,omitempty"`
	Models   modeldir.Source `json:"models"`
	Queries  int             `json:"queries"`
	Docs     int             `json:"docs"`
	// Chunkings are the chunked rows (the truncated row comes first).
	Chunkings []models.Chunking `json:"chunkings"`
}

// DefaultConfig is scifact (when present) and the DefaultBuildConfig
// collection; all-MiniLM-L6-v2 (256-token window) at strides 128 and 256
// (adjacent windows), max and mean of the top 3, 32 windows per document
// at most, 8 documents per call; the balanced cross-encoder on 3 queries ×
// 8 candidates, truncated and chunked at strides 256 (uncapped, and capped
// at 4 windows) and 512 (adjacent windows). About 10 minutes on two quiet
// cores.
func DefaultConfig() Config {
	return Config{
		Data:     artifacts.Dataset("scifact"),
		Build:    DefaultBuildConfig(),
		Embedder: filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2"),
		Strides:  []int{128, 256}, MaxChunks: models.DefaultMaxChunks, TopK: models.DefaultTopK, Batch: 8,
		Rerank: RerankConfig{
			Profile: models.ProfileBalanced, Models: modeldir.DefaultSource(), Queries: 3, Docs: 8,
			Chunkings: []models.Chunking{{Stride: 256}, {Stride: 256, MaxChunks: 4}, {Stride: 512}},
		},
		Provider: "auto",
	}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: longdoc: "+format, append([]any{bench.ErrBadOption}, args...)...)
	}
	if err := c.Build.Validate(); err != nil {
		return err
	}
	switch {
	case c.Data == "" || c.Embedder == "":
		return bad("need a dataset and an embedder")
	case c.TopK < 1:
		return bad("top_k %d", c.TopK)
	case c.Batch < 1 || c.Batch > models.DefaultMaxDocs:
		return bad("batch %d outside 1..%d", c.Batch, models.DefaultMaxDocs)
	case c.Threads < 0:
		return bad("threads %d", c.Threads)
	}
	for _, s := range c.Strides {
		if err := (models.Chunking{Stride: s, MaxChunks: c.MaxChunks}).Validate(); err != nil || s < 1 {
			return bad("stride %d, max chunks %d: %v", s, c.MaxChunks, err)
		}
	}
	if c.Rerank.Profile != "" {
		if c.Rerank.Queries < 1 || c.Rerank.Docs < 1 || c.Rerank.Docs > models.DefaultMaxDocs {
			return bad("rerank queries %d, docs %d", c.Rerank.Queries, c.Rerank.Docs)
		}
		for _, ch := range c.Rerank.Chunkings {
			if err := ch.Validate(); err != nil || !ch.Enabled() {
				return bad("rerank chunking %+v: %v", ch, err)
			}
		}
	}
	return nil
}

// Row is one way of scoring the collection: a line of longdoc.md.
type Row struct {
	// Model is the scorer's directory name; RealWeights false marks a
	// generated model (its nDCG is not reported).
	Model       string `json:"model" table:""`
	RealWeights bool   `json:"real_weights" table:""`
	// Scorer is "cosine" (bi-encoder: query · window vectors) or
	// "cross-encoder".
	Scorer string `json:"scorer" table:""`
	// Mode is "truncate" (today's behaviour: the first window only) or
	// "chunk".
	Mode      string `json:"mode" table:""`
	Stride    int    `json:"stride,omitempty" table:""`
	MaxChunks int    `json:"max_chunks,omitempty" table:""`
	Aggregate string `json:"aggregate,omitempty" table:""`
	// Window is the model's window in tokens, special tokens included.
	Window  int `json:"window" table:""`
	Queries int `json:"queries" table:""`
	// Docs is the long documents scored; Pairs the model inputs they
	// became (windows, or one per document when truncating).
	Docs        int     `json:"docs" table:""`
	Pairs       int     `json:"pairs" table:""`
	PairsPerDoc float64 `json:"pairs_per_doc" table:"pairs/doc"`
	// Seconds is the wall time of scoring (tokenizing, windowing and the
	// model; not loading). Rows of one stride with another aggregate
	// share it: one embedding pass serves both.
	Seconds   float64 `json:"seconds" table:"s"`
	PairsPerS float64 `json:"pairs_per_s" table:"pairs/s"`
	// NDCG10 is nDCG@10 over the queries' candidates (real weights only).
	NDCG10 float64 `json:"ndcg_at_10,omitempty" table:"nDCG@10"`
	// SpanHit is the fraction of relevant long documents whose best
	// window overlaps the buried relevant text (chunked rows, real weights).
	SpanHit float64 `json:"span_hit,omitempty" table:"span hit"`
}

// Result is Run's rows and the collection's shape.
type Result struct {
	Rows []Row `json:"rows"`
	// Docs, Relevant and MeanTokens describe the collection.
	Docs       int     `json:"docs"`
	Relevant   int     `json:"relevant"`
	MeanTokens float64 `json:"mean_tokens"`
}

// Run builds the collection from cfg.Data and scores it: the quality rows
// with the real bi-encoder, then the cross-encoder's speed rows.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	ds, err := eval.LoadBEIR(cfg.Data)
	if err != nil {
		return Result{}, err
	}
	md, err := models.OpenModelDir(cfg.Embedder)
	if err != nil {
		return Result{}, err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return Result{}, err
	}
	set, err := Build(ds, cfg.Build, tok.CountTokens)
	if err != nil {
		return Result{}, err
	}
	res := describe(set)
	ecfg := models.DefaultEmbedderConfig()
	ecfg.Dir, ecfg.Provider, ecfg.IntraOpThreads = cfg.Embedder, cfg.Provider, cfg.Threads
	be, err := ort.NewBiEncoder(ecfg)
	if err != nil {
		return res, err
	}
	defer be.Close()
	if err := be.Load(); err != nil {
		return res, err
	}
	_, window, err := be.Info()
	if err != nil {
		return res, err
	}
	rows, err := Quality(ctx, cfg, set, be, Model{Name: filepath.Base(cfg.Embedder), Real: modeldir.RealWeights(cfg.Embedder), Window: window})
	if err != nil {
		return res, err
	}
	res.Rows = append(res.Rows, rows...)
	if cfg.Rerank.Profile == "" {
		return res, nil
	}
	rows, err = runRerank(ctx, cfg, set)
	res.Rows = append(res.Rows, rows...)
	return res, err
}

// describe counts the collection.
func describe(set *Set) Result {
	res := Result{Docs: len(set.Docs)}
	tokens := 0
	for _, d := range set.Docs {
		tokens += d.Tokens
		if d.Source != "" {
			res.Relevant++
		}
	}
	if len(set.Docs) > 0 {
		res.MeanTokens = float64(tokens) / float64(len(set.Docs))
	}
	return res
}

// Model names a scorer in the rows.
type Model struct {
	Name   string
	Real   bool
	Window int
}

// Embedder is what the quality rows need of a bi-encoder: models.Embed
// truncates, EmbedSpans chunks (*ort.BiEncoder does both).
type Embedder = models.Embedder

// Quality scores set with the bi-encoder e: one truncated row, then per
// stride one chunked embedding pass aggregated by max and by the mean of
// the top TopK window cosines. Vectors must be normalised (cosine).
func Quality(ctx context.Context, cfg Config, set *Set, e Embedder, m Model) ([]Row, error) {
	qtexts := make([]string, len(set.Queries))
	for i, q := range set.Queries {
		qtexts[i] = q.Text
	}
	qvecs, err := inBatches(ctx, qtexts, cfg.Batch, func(ctx context.Context, b []string) ([][]float32, error) {
		v, _, err := models.Embed(ctx, e, models.InputQuery, b)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("longdoc: embed queries: %w", err)
	}
	texts := make([]string, len(set.Docs))
	for i, d := range set.Docs {
		texts[i] = d.Text
	}
	base := Row{Model: m.Name, RealWeights: m.Real, Scorer: "cosine", Window: m.Window, Queries: len(set.Queries), Docs: len(set.Docs)}

	start := time.Now()
	dvecs, err := inBatches(ctx, texts, cfg.Batch, func(ctx context.Context, b []string) ([][]float32, error) {
		v, _, err := models.Embed(ctx, e, models.InputDocument, b)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("longdoc: embed documents: %w", err)
	}
	row := base
	row.Mode, row.Pairs = "truncate", len(texts)
	row.timed(time.Since(start))
	ranked := rank(set, func(qi, k int) (float32, models.Span) {
		return simd.Dot(qvecs[qi], dvecs[set.Candidates[qi][k]]), models.Span{}
	})
	row.score(set, ranked, false)
	rows := []Row{row}
	logRow(cfg.Log, row)

	for _, stride := range cfg.Strides {
		ch := models.Chunking{Stride: stride, MaxChunks: cfg.MaxChunks}
		start := time.Now()
		svs := make([]models.SpanVectors, 0, len(texts))
		pairs := 0
		for i := 0; i < len(texts); i += cfg.Batch {
			sv, u, err := e.EmbedSpans(ctx, models.InputDocument, texts[i:min(i+cfg.Batch, len(texts))], ch)
			if err != nil {
				return rows, fmt.Errorf("longdoc: embed windows (stride %d): %w", stride, err)
			}
			svs, pairs = append(svs, sv...), pairs+u.Pairs
		}
		elapsed := time.Since(start)
		for _, agg := range []models.Chunking{ch, {Stride: stride, MaxChunks: cfg.MaxChunks, Aggregate: models.AggregateMeanTopK, TopK: cfg.TopK}} {
			row := base
			row.Mode, row.Stride, row.MaxChunks, row.Aggregate, row.Pairs = "chunk", stride, ch.Cap(), aggName(agg), pairs
			row.timed(elapsed)
			ranked := rank(set, func(qi, k int) (float32, models.Span) { return svs[set.Candidates[qi][k]].Best(agg, qvecs[qi]) })
			row.score(set, ranked, true)
			rows = append(rows, row)
			logRow(cfg.Log, row)
		}
	}
	return rows, nil
}

// aggName is a row's aggregate column.
func aggName(ch models.Chunking) string {
	if ch.Aggregate == models.AggregateMeanTopK {
		return fmt.Sprintf("%s k=%d", models.AggregateMeanTopK, ch.K())
	}
	return models.AggregateMax
}

// ranking is one query's candidates by score, best first, with the best
// window of each.
type ranking struct {
	ids   []string
	spans map[string]models.Span
}

// rank orders every query's candidates by score(query, k), k the index
// in the query's candidates.
func rank(set *Set, score func(qi, k int) (float32, models.Span)) []ranking {
	out := make([]ranking, len(set.Queries))
	for qi, cands := range set.Candidates {
		type scored struct {
			id    string
			score float64
		}
		items := make([]scored, len(cands))
		spans := make(map[string]models.Span, len(cands))
		for k, di := range cands {
			s, sp := score(qi, k)
			items[k] = scored{set.Docs[di].ID, float64(s)}
			spans[set.Docs[di].ID] = sp
		}
		out[qi] = ranking{ids: eval.TrecOrder(items, func(s scored) string { return s.id }, func(s scored) float64 { return s.score }), spans: spans}
	}
	return out
}

// score fills the row's nDCG@10 and, for chunked rows, the share of
// relevant long documents whose best window overlaps the buried text
// (real weights only: a generated model's scores mean nothing).
func (r *Row) score(set *Set, ranked []ranking, chunked bool) {
	if !r.RealWeights {
		return
	}
	var sum float64
	hits, relevant := 0, 0
	byID := make(map[string]*Doc, len(set.Docs))
	for i := range set.Docs {
		byID[set.Docs[i].ID] = &set.Docs[i]
	}
	for qi, q := range set.Queries {
		sum += eval.NDCG(ranked[qi].ids, set.Qrels[q.ID], 10)
		if !chunked {
			continue
		}
		for id := range set.Qrels[q.ID] {
			d, ok := byID[id]
			sp, scored := ranked[qi].spans[id]
			if !ok || !scored {
				continue
			}
			relevant++
			if sp.Start < d.Span.End && d.Span.Start < sp.End {
				hits++
			}
		}
	}
	if len(set.Queries) > 0 {
		r.NDCG10 = sum / float64(len(set.Queries))
	}
	if relevant > 0 {
		r.SpanHit = float64(hits) / float64(relevant)
	}
}

// timed sets the row's time and rates.
func (r *Row) timed(d time.Duration) {
	r.Seconds = d.Seconds()
	if r.Docs > 0 {
		r.PairsPerDoc = float64(r.Pairs) / float64(r.Docs)
	}
	if r.Seconds > 0 {
		r.PairsPerS = float64(r.Pairs) / r.Seconds
	}
}

// runRerank runs the cross-encoder rows: the first Rerank.Queries queries,
// each with its relevant long documents and distractors up to Rerank.Docs
// candidates.
func runRerank(ctx context.Context, cfg Config, set *Set) ([]Row, error) {
	res := modeldir.NewResolver(cfg.Rerank.Models)
	defer res.Close()
	dir, err := res.Dir(cfg.Rerank.Profile, cfg.Rerank.ModelDir)
	if err != nil {
		return nil, err
	}
	ccfg, err := models.ProfileConfig(cfg.Rerank.Profile)
	if err != nil {
		return nil, err
	}
	ccfg.Dir, ccfg.Provider, ccfg.IntraOpThreads = dir, cfg.Provider, cfg.Threads
	ce, err := ort.NewCrossEncoder(ccfg)
	if err != nil {
		return nil, err
	}
	defer ce.Close()
	if err := ce.Load(); err != nil { // loading (and calibrating) is not timed
		return nil, err
	}
	_, window, err := ce.Info()
	if err != nil {
		return nil, err
	}
	return Rerank(ctx, cfg, set, ce, Model{Name: filepath.Base(dir), Real: modeldir.RealWeights(dir), Window: window})
}

// Reranker is what the cross-encoder rows need: models.Score truncates,
// ScoreSpans chunks (*ort.CrossEncoder does both).
type Reranker = models.Reranker

// Rerank times the cross-encoder r on the first Rerank.Queries queries'
// first Rerank.Docs candidates: truncated, then each of Rerank.Chunkings.
func Rerank(ctx context.Context, cfg Config, set *Set, r Reranker, m Model) ([]Row, error) {
	nq := min(cfg.Rerank.Queries, len(set.Queries))
	sub := &Set{Queries: set.Queries[:nq], Docs: set.Docs, Qrels: set.Qrels, Candidates: make([][]int, nq)}
	docs := 0
	for qi := range nq {
		sub.Candidates[qi] = set.Candidates[qi][:min(cfg.Rerank.Docs, len(set.Candidates[qi]))]
		docs += len(sub.Candidates[qi])
	}
	texts := func(qi int) []string {
		out := make([]string, len(sub.Candidates[qi]))
		for k, di := range sub.Candidates[qi] {
			out[k] = set.Docs[di].Text
		}
		return out
	}
	base := Row{Model: m.Name, RealWeights: m.Real, Scorer: "cross-encoder", Window: m.Window, Queries: nq, Docs: docs}
	var rows []Row
	scores := make([][]float32, nq)
	spans := make([][]models.Span, nq)
	for _, ch := range append([]models.Chunking{{}}, cfg.Rerank.Chunkings...) {
		row := base
		row.Mode = "truncate"
		start := time.Now()
		for qi, q := range sub.Queries {
			if !ch.Enabled() {
				s, _, err := models.Score(ctx, r, q.Text, texts(qi))
				if err != nil {
					return rows, fmt.Errorf("longdoc: rerank: %w", err)
				}
				scores[qi], spans[qi] = s, nil
				row.Pairs += len(s)
				continue
			}
			res, u, err := r.ScoreSpans(ctx, q.Text, texts(qi), ch)
			if err != nil {
				return rows, fmt.Errorf("longdoc: rerank (%s): %w", ch, err)
			}
			scores[qi], spans[qi] = make([]float32, len(res)), make([]models.Span, len(res))
			for k, s := range res {
				scores[qi][k], spans[qi][k] = s.Score, s.Span
			}
			row.Pairs += u.Pairs
		}
		row.timed(time.Since(start))
		if ch.Enabled() {
			row.Mode, row.Stride, row.MaxChunks, row.Aggregate = "chunk", ch.Stride, ch.Cap(), aggName(ch)
		}
		ranked := rank(sub, func(qi, k int) (float32, models.Span) {
			if spans[qi] == nil {
				return scores[qi][k], models.Span{}
			}
			return scores[qi][k], spans[qi][k]
		})
		row.score(sub, ranked, ch.Enabled())
		rows = append(rows, row)
		logRow(cfg.Log, row)
	}
	return rows, nil
}

// inBatches calls fn on texts in batches of n and concatenates the results.
func inBatches(ctx context.Context, texts []string, n int, fn func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += n {
		v, err := fn(ctx, texts[i:min(i+n, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

func logRow(w io.Writer, r Row) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "longdoc: %s %s %s stride=%d %s: %d pairs in %.1fs, nDCG@10 %.4f, span hit %.3f\n",
		r.Model, r.Scorer, r.Mode, r.Stride, r.Aggregate, r.Pairs, r.Seconds, r.NDCG10, r.SpanHit)
}
