package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// HybridOptions configures a run of the hybrid engine over a BEIR dataset.
type HybridOptions struct {
	// Engine is the engine configuration (analysis, postings, dense,
	// rerank batching).
	Engine engine.Config
	// Fusions are the fusion methods to run, one result row each.
	Fusions []engine.Fusion
	// Alpha is the dense weight of weighted fusion.
	Alpha float64
	// Rerank is the reranker profile ("" = none); it must be loaded, see
	// RerankModel.
	Rerank string
	// Budget is the per-query latency budget (0 = none).
	Budget time.Duration
	// Candidates per retriever and hits per query (K, 100 by default so
	// recall@100 is meaningful).
	Candidates, K int
	// EmbedModel and RerankModel are models.Config for the bi-encoder and
	// the cross-encoder; a zero Profile means "do not load" (BM25 only, or
	// no reranking).
	EmbedModel, RerankModel models.Config
	// Eval selects evaluation conventions.
	Eval EvalOptions
	// Progress forces a progress bar.
	Progress bool
}

// DefaultHybridOptions returns the engine defaults, all three fusions,
// alpha 0.5, 100 candidates and hits, no models.
func DefaultHybridOptions() HybridOptions {
	return HybridOptions{
		Engine:     engine.DefaultConfig(),
		Fusions:    []engine.Fusion{engine.FusionRRF, engine.FusionWeighted, engine.FusionRelative},
		Alpha:      0.5,
		Candidates: 100,
		K:          100,
	}
}

// Validate reports whether the options can be used.
func (o HybridOptions) Validate() error {
	if err := o.Engine.Validate(); err != nil {
		return err
	}
	if len(o.Fusions) == 0 || o.K <= 0 || o.Candidates <= 0 || !(o.Alpha >= 0 && o.Alpha <= 1) || o.Budget < 0 {
		return errors.New("bench hybrid: need fusions, K > 0, candidates > 0, alpha in [0,1], budget ≥ 0")
	}
	if o.Rerank != "" && o.RerankModel.Profile == "" {
		return errors.New("bench hybrid: --rerank needs a reranker model")
	}
	return nil
}

// HybridColumns are the table columns of the hybrid report.
var HybridColumns = []string{"dataset", "docs", "queries", "fusion", "alpha", "dense", "rerank", "budget_ms",
	"ndcg@10", "recall@100", "mrr@10", "commit_s", "qps", "p50_ms", "p99_ms",
	"degraded_frac", "mean_reranked", "bm25_ms", "dense_ms", "fusion_ms", "rerank_ms", "packing_ms", "fallbacks"}

// HybridResult is one row: one fusion method over one dataset.
type HybridResult struct {
	Dataset      string        `json:"dataset"`
	Docs         int           `json:"docs"`
	Fusion       engine.Fusion `json:"fusion"`
	Alpha        float64       `json:"alpha"`
	Dense        bool          `json:"dense"`
	Rerank       string        `json:"rerank"`
	Budget       time.Duration `json:"budget_ns"`
	Scores       Scores        `json:"scores"`
	Commit       time.Duration `json:"commit_ns"`
	QPS          float64       `json:"qps"`
	Latency      Latency       `json:"latency"`
	DegradedFrac float64       `json:"degraded_frac"`
	MeanReranked float64       `json:"mean_reranked"`
	// MeanStages are mean per-stage times over the queries.
	MeanStages engine.Timings `json:"mean_stages"`
	// Fallbacks counts fallback codes over the queries.
	Fallbacks map[engine.FallbackCode]int `json:"fallbacks"`
}

// Row renders r for the report table.
func (r HybridResult) Row() map[string]any {
	fb := ""
	codes := make([]string, 0, len(r.Fallbacks))
	for c := range r.Fallbacks {
		codes = append(codes, string(c))
	}
	sort.Strings(codes)
	for _, c := range codes {
		fb += fmt.Sprintf("%s:%d ", c, r.Fallbacks[engine.FallbackCode(c)])
	}
	rr := r.Rerank
	if rr == "" {
		rr = "none"
	}
	return map[string]any{
		"dataset": r.Dataset, "docs": r.Docs, "queries": r.Scores.Queries, "fusion": string(r.Fusion),
		"alpha": r.Alpha, "dense": r.Dense, "rerank": rr, "budget_ms": Ms(r.Budget),
		"ndcg@10": Round(r.Scores.NDCG10, 4), "recall@100": Round(r.Scores.Recall100, 4), "mrr@10": Round(r.Scores.MRR10, 4),
		"commit_s": Round(r.Commit.Seconds(), 2), "qps": Round(r.QPS, 1),
		"p50_ms": Round(Ms(r.Latency.P50), 3), "p99_ms": Round(Ms(r.Latency.P99), 3),
		"degraded_frac": Round(r.DegradedFrac, 3), "mean_reranked": Round(r.MeanReranked, 1),
		"bm25_ms": Round(Ms(r.MeanStages.BM25), 3), "dense_ms": Round(Ms(r.MeanStages.Dense), 3),
		"fusion_ms": Round(Ms(r.MeanStages.Fusion), 3), "rerank_ms": Round(Ms(r.MeanStages.Rerank), 3),
		"packing_ms": Round(Ms(r.MeanStages.Packing), 3), "fallbacks": fb,
	}
}

// RunHybridBEIR loads the requested models, commits ds into an in-memory
// engine (title and text as separate fields, one batch, embedded in
// Engine.EmbedBatch batches when an embedder is loaded) and runs every
// judged query once per fusion method, sequentially, recording quality,
// latency, per-stage times, degradation and fallbacks.
func RunHybridBEIR(ctx context.Context, ds *Dataset, opt HybridOptions) (_ []HybridResult, err error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	var eopts []engine.Option
	if opt.EmbedModel.Profile != "" {
		be, err := models.NewBiEncoder(opt.EmbedModel)
		if err != nil {
			return nil, fmt.Errorf("bench hybrid: embedder: %w", err)
		}
		defer func() { err = errors.Join(err, be.Close()) }()
		eopts = append(eopts, engine.WithEmbedder(be))
	}
	if opt.RerankModel.Profile != "" {
		ce, err := models.NewCrossEncoder(opt.RerankModel)
		if err != nil {
			return nil, fmt.Errorf("bench hybrid: reranker: %w", err)
		}
		defer func() { err = errors.Join(err, ce.Close()) }()
		eopts = append(eopts, engine.WithReranker(opt.Rerank, ce))
	}
	e, err := engine.Open("", opt.Engine, eopts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, e.Close()) }()

	runtime.GC()
	b := e.NewBatch()
	for _, d := range ds.Docs {
		b.Add(engine.Document{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	start := time.Now()
	if err := e.Commit(ctx, b); err != nil {
		return nil, fmt.Errorf("bench hybrid %s: commit: %w", ds.Name, err)
	}
	commit := time.Since(start)

	var out []HybridResult
	for _, f := range opt.Fusions {
		res := HybridResult{
			Dataset: ds.Name, Docs: len(ds.Docs), Fusion: f, Alpha: opt.Alpha,
			Dense: opt.EmbedModel.Profile != "", Rerank: opt.Rerank, Budget: opt.Budget,
			Commit: commit, Fallbacks: map[engine.FallbackCode]int{},
		}
		run := Run{}
		lat := make([]time.Duration, 0, len(ds.Queries))
		var stages engine.Timings
		degraded, reranked := 0, 0
		bar := NewProgress(fmt.Sprintf("hybrid %s %s", ds.Name, f), len(ds.Queries), opt.Progress)
		wall := time.Now()
		for _, q := range ds.Queries {
			r, err := e.Search(ctx, engine.Request{
				Query: q.Text, TopK: opt.K, Candidates: opt.Candidates, Fusion: f,
				Alpha: engine.Float(opt.Alpha), Rerank: opt.Rerank, Budget: opt.Budget,
			})
			if err != nil {
				return nil, fmt.Errorf("bench hybrid %s: query %s: %w", ds.Name, q.ID, err)
			}
			ids := make([]string, len(r.Hits))
			for i, h := range r.Hits {
				ids[i] = h.Document.ID
			}
			run[q.ID] = ids
			lat = append(lat, r.Timings.Total)
			stages.BM25 += r.Timings.BM25
			stages.Dense += r.Timings.Dense
			stages.Fusion += r.Timings.Fusion
			stages.Rerank += r.Timings.Rerank
			stages.Packing += r.Timings.Packing
			if r.Degraded {
				degraded++
			}
			reranked += r.Reranked
			for _, fb := range r.Fallbacks {
				res.Fallbacks[fb.Code]++
			}
			bar.Add(1)
		}
		bar.Done()
		n := len(ds.Queries)
		if n > 0 {
			res.QPS = float64(n) / time.Since(wall).Seconds()
			d := time.Duration(n)
			res.MeanStages = engine.Timings{BM25: stages.BM25 / d, Dense: stages.Dense / d, Fusion: stages.Fusion / d,
				Rerank: stages.Rerank / d, Packing: stages.Packing / d}
			res.DegradedFrac = float64(degraded) / float64(n)
			res.MeanReranked = float64(reranked) / float64(n)
		}
		res.Scores = Evaluate(ds.Qrels, run, opt.Eval)
		res.Latency = LatencyStats(lat)
		out = append(out, res)
	}
	return out, nil
}
