package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/hybrid"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/models"
)

// Setup names of the rows beside the fused ones.
const (
	setupBM25  = "bm25"
	setupDense = "dense"
	// setupBM25Plain is the engine's BM25 with Weaviate's analysis as far
	// as the engine has it (plainSetup).
	setupBM25Plain = "bm25" + plainSuffix
	plainSuffix    = " (no stemming, 1-char tokens)"
)

// plainSetup names the engine's row of setup with Weaviate's analysis as
// far as the engine has it: no stemming, tokens of one character kept
// (Weaviate's word tokenization), the same stopword list.
func plainSetup(setup string) string { return setup + plainSuffix }

// rerankSetup names the reranked setup at depth n.
func rerankSetup(f fusion, n int) string { return fmt.Sprintf("%s@%d", f.Rerank.Name, n) }

// engineSide is the engine's rows and runs by setup.
type engineSide struct {
	rows []SearchRow
	runs map[string]eval.Run
	// rerankGap is the largest |sidecar − engine| rerank score over a
	// sample of pairs and rerankRho their scores' Spearman correlation
	// (the sidecar may map the model's logits, monotonically); rerankErr
	// says why they were not compared ("" = compared).
	rerankGap, rerankRho float64
	rerankErr            string
}

// hybridConfig is bench hybrid's configuration for the engine beside the
// cluster: every query of the corpus, Limit candidates per retriever and
// hits, no latency budget.
func hybridConfig(cfg Config, f fusion, setups []string) hybrid.Config {
	h := hybrid.DefaultConfig()
	e := cfg.Engine
	h.Engine, h.Models, h.EmbedDir, h.RerankDir, h.Provider, h.Threads = e.Engine, e.Models, e.EmbedDir, e.RerankDir, e.Provider, e.Threads
	h.MaxDocTokens, h.CacheDir = e.MaxDocTokens, e.CacheDir
	h.Profiles, h.Setups = []string{cfg.Profile}, setups
	h.Budget, h.Candidates, h.K, h.Queries, h.Warmup = 0, cfg.Limit, cfg.Limit, 0, cfg.Warmup
	h.Progress, h.Log = cfg.Progress, nil
	return h
}

// runEngine runs the engine's bm25, dense and fused setups over the
// corpus, the fused list's best RerankLimit reranked by the same
// reranker (Weaviate's pipeline: rerank the hits of the fused search),
// and BM25 and the fused setup again with Weaviate-like analysis (the
// document vectors come from the first engine's cache when it has one).
//
// It also reranks a sample through the sidecar at inference and through
// the engine's reranker: the same model must give the same scores.
func runEngine(ctx context.Context, cfg Config, c *corpus, f fusion, w *weaviate, inference string) (side engineSide, err error) {
	side.runs = map[string]eval.Run{}
	hc := hybridConfig(cfg, f, []string{setupBM25, setupDense, f.Setup.Name, f.Rerank.Name})
	en, err := hybrid.Open(ctx, hc, c.ds)
	if err != nil {
		return side, fmt.Errorf("cluster: engine: %w", err)
	}
	defer func() { err = errors.Join(err, en.Close()) }()
	for _, s := range []hybrid.Setup{matrixSetup(setupBM25), matrixSetup(setupDense), f.Setup} {
		row, run, err := en.Run(ctx, s)
		if err != nil {
			return side, fmt.Errorf("cluster: engine %s: %w", s.Name, err)
		}
		side.add(engineRow(s.Name, fmt.Sprintf("engine setup %s, %d candidates per retriever", s.Name, cfg.Limit), row), run)
	}
	rr, ok := en.Reranker(cfg.Profile)
	if !ok {
		return side, fmt.Errorf("cluster: engine: no %s reranker loaded", cfg.Profile)
	}
	if side.rerankGap, side.rerankRho, err = sidecarAgreement(ctx, w, inference, rr, c); err != nil {
		side.rerankErr, err = err.Error(), nil
	}
	row, run, err := rerankTop(ctx, en, rr, c, f.Setup, cfg.RerankLimit)
	if err != nil {
		return side, err
	}
	row.Setup, row.RealWeights = rerankSetup(f, cfg.RerankLimit), en.RealWeights(models.ProfileEmbed) && en.RealWeights(cfg.Profile)
	side.add(row, run)

	plain := hybridConfig(cfg, f, []string{setupBM25, f.Setup.Name})
	plain.Engine.Analysis.Stemmer, plain.Engine.Analysis.MinTokenLen = analysis.StemmerNone, 1
	pe, err := hybrid.Open(ctx, plain, c.ds)
	if err != nil {
		return side, fmt.Errorf("cluster: engine (plain analysis): %w", err)
	}
	defer func() { err = errors.Join(err, pe.Close()) }()
	for _, s := range []hybrid.Setup{matrixSetup(setupBM25), f.Setup} {
		prow, prun, err := pe.Run(ctx, s)
		if err != nil {
			return side, fmt.Errorf("cluster: engine %s: %w", plainSetup(s.Name), err)
		}
		side.add(engineRow(plainSetup(s.Name), fmt.Sprintf("engine setup %s, stemmer none, min token length 1", s.Name), prow), prun)
	}
	return side, nil
}

func (s *engineSide) add(row SearchRow, run eval.Run) {
	s.rows = append(s.rows, row)
	s.runs[row.Setup] = run
}

// engineRow is a bench hybrid row as a row of cluster.md (one client:
// bench hybrid searches sequentially).
func engineRow(setup, search string, r hybrid.Row) SearchRow {
	return SearchRow{Impl: "engine", Setup: setup, Search: search, Clients: 1, Queries: r.Queries, RealWeights: r.RealWeights,
		NDCG10: r.NDCG10, Recall100: r.Recall100, MRR10: r.MRR10, QPS: r.QPS, P50Ms: r.P50Ms, P99Ms: r.P99Ms}
}

// rerankTop runs setup s for every query and reranks its best n hits with
// rr, as Weaviate reranks the hits of a search: the reranked n in score
// order (ties in fused order). Latency is the search and the rerank.
func rerankTop(ctx context.Context, en *hybrid.Engines, rr models.Reranker, c *corpus, s hybrid.Setup, n int) (SearchRow, eval.Run, error) {
	row := SearchRow{Impl: "engine", Search: fmt.Sprintf("engine setup %s, its best %d hits reranked", s.Name, n), Clients: 1}
	qs := c.ds.Queries
	run := make(eval.Run, len(qs))
	lat := make([]time.Duration, len(qs))
	bar := measure.NewProgress("engine rerank", len(qs), false)
	start := time.Now()
	for i, q := range qs {
		t0 := time.Now()
		res, err := en.Search(ctx, s, q.Text)
		if err != nil {
			return row, nil, fmt.Errorf("cluster: engine %s: query %s: %w", s.Name, q.ID, err)
		}
		hits := res.Hits[:min(n, len(res.Hits))]
		texts := make([]string, len(hits))
		for j, h := range hits {
			texts[j] = eval.Doc{Title: h.Document.Title, Text: h.Document.Text}.IndexText()
		}
		scores, _, err := models.Score(ctx, rr, q.Text, texts)
		if err != nil {
			return row, nil, fmt.Errorf("cluster: engine rerank: query %s: %w", q.ID, err)
		}
		order := make([]int, len(hits))
		for j := range order {
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
		ids := make([]string, len(order))
		for j, k := range order {
			ids[j] = hits[k].Document.ID
		}
		run[q.ID] = ids
		lat[i] = time.Since(t0)
		bar.Add(1)
	}
	bar.Done()
	fill(&row, c, run, lat, time.Since(start))
	return row, run, nil
}

// matrixSetup is bench hybrid's setup of that name (bm25, dense: one
// definition of each).
func matrixSetup(name string) hybrid.Setup {
	for _, s := range hybrid.Matrix(nil) {
		if s.Name == name {
			return s
		}
	}
	panic("cluster: bench hybrid has no setup " + name)
}

// sidecarAgreement reranks the first query's first rerankChunk documents
// through the sidecar's rerank protocol and through rr, and returns the
// largest score difference and the scores' Spearman correlation.
func sidecarAgreement(ctx context.Context, w *weaviate, inference string, rr models.Reranker, c *corpus) (gap, rho float64, err error) {
	if inference == "" || len(c.ds.Queries) == 0 {
		return 0, 0, errors.New("no sidecar or no query")
	}
	q := c.ds.Queries[0].Text
	docs := make([]string, 0, rerankChunk)
	for _, o := range c.objects[:min(rerankChunk, len(c.objects))] {
		docs = append(docs, o.Text)
	}
	got, err := w.rerank(ctx, inference, q, docs)
	if err != nil {
		return 0, 0, err
	}
	want, _, err := models.Score(ctx, rr, q, docs)
	if err != nil {
		return 0, 0, err
	}
	g := make([]float32, len(got))
	for i := range want {
		g[i] = float32(got[i])
		gap = max(gap, math.Abs(got[i]-float64(want[i])))
	}
	return gap, measure.Spearman(g, want), nil
}
