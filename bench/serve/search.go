package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/loadgen"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// SearchConfig configures the search run of bench serve: the served
// composition of cmd/serve (backend.Open: the cross-encoder behind its
// queue, an in-memory engine registering the same queue) over a BEIR
// dataset, measured three ways at Config.Clients clients, each request on
// one judged query's first Config.Docs BM25 candidates:
//   - /v1/rerank with those candidates as documents;
//   - /search with rerank, which retrieves and reranks the same candidates
//     through the same queue;
//   - /search with rerank under a latency budget.
type SearchConfig struct {
	// Dataset is a BEIR directory (corpus.jsonl, queries.jsonl, qrels).
	Dataset string `json:"dataset"`
	// Budget is the budgeted run's latency budget; 0 takes half the p50
	// of the unbudgeted /search run (so that the budget binds).
	Budget time.Duration `json:"budget_ns"`
	// MinShare is the least /search pairs/s over /v1/rerank pairs/s, and
	// MaxBudgetOverrun the most p99 / budget of the budgeted run.
	MinShare         float64 `json:"min_share"`
	MaxBudgetOverrun float64 `json:"max_budget_overrun"`
}

// DefaultSearchConfig is the goals on dataset: /search at 0.9×
// the pairs/s of /v1/rerank, budgeted p99 within 1.1× the budget.
func DefaultSearchConfig(dataset string) SearchConfig {
	return SearchConfig{Dataset: dataset, MinShare: 0.9, MaxBudgetOverrun: 1.1}
}

// Validate reports the first unusable field.
func (c SearchConfig) Validate() error {
	if c.Dataset == "" || c.Budget < 0 || c.MinShare < 0 || c.MaxBudgetOverrun < 0 {
		return fmt.Errorf("%w: serve search %+v", bench.ErrBadOption, c)
	}
	return nil
}

// SearchRow is one run of the search run.
type SearchRow struct {
	Run          string         `json:"run" table:""` // "search"
	Route        string         `json:"route" table:""`
	Profile      string         `json:"profile" table:""`
	Clients      int            `json:"clients" table:""`
	Docs         int            `json:"docs" table:""`
	BudgetMs     float64        `json:"budget_ms" table:""`
	Requests     int            `json:"requests" table:""`
	RPS          float64        `json:"rps" table:""`
	PairsPerS    float64        `json:"pairs_per_s" table:""`
	P50Ms        float64        `json:"p50_ms" table:""`
	P99Ms        float64        `json:"p99_ms" table:""`
	PairsPerCall float64        `json:"pairs_per_call" table:""`
	Errors       map[string]int `json:"errors" table:""`
	RealWeights  bool           `json:"real_weights" table:""`
}

// harnessOwned is the counting cross-encoder as backend.Open's
// constructor returns it: the harness owns the model, so Close is a no-op.
type harnessOwned struct{ *countingScorer }

func (harnessOwned) Close() error { return nil }

// runSearch is the search run (see SearchConfig).
func runSearch(ctx context.Context, cfg Config, sc SearchConfig, m *model) ([]SearchRow, []report.Check, error) {
	ds, err := eval.LoadBEIR(sc.Dataset)
	if err != nil {
		return nil, nil, err
	}
	counted := &countingScorer{CrossEncoder: m.ce}
	bcfg := backend.DefaultConfig()
	bcfg.Server.Rerank = cfg.Batch
	bcfg.Server.Rerank.Enabled = true
	bcfg.Server.Addr = "127.0.0.1:0"
	bcfg.Server.MaxIndexDocuments = max(bcfg.Server.MaxIndexDocuments, len(ds.Docs))
	bcfg.Embed, bcfg.MemoryIndex = false, true
	bcfg.RerankProfile, bcfg.RerankDir = m.mc.Profile, m.mc.Dir
	res, err := backend.Open(bcfg, func(models.Config) (harnessOwned, error) { return harnessOwned{counted}, nil },
		func(models.Config) (backend.BiEncoder, error) { return nil, fmt.Errorf("no embedder") })
	if err != nil {
		return nil, nil, err
	}
	defer res.Close()
	svc := res.Services()
	docs := make([]engine.Document, len(ds.Docs))
	text := make(map[string]string, len(ds.Docs))
	for i, d := range ds.Docs {
		docs[i] = engine.Document{ID: d.ID, Title: d.Title, Text: d.Text}
		text[d.ID] = d.IndexText()
	}
	if _, err := svc.Documents.Apply(ctx, server.DocumentBatch{Upserts: docs}); err != nil {
		return nil, nil, err
	}
	// Each query's candidates, as the reranked /search will see them.
	type query struct {
		text  string
		cands []string
	}
	var qs []query
	for _, q := range ds.Queries {
		r, err := svc.Searcher.Search(ctx, engine.Request{Query: q.Text, TopK: cfg.Docs, Candidates: cfg.Docs})
		if err != nil {
			return nil, nil, err
		}
		if len(r.Hits) == 0 {
			continue
		}
		var cands []string
		for _, h := range r.Hits {
			cands = append(cands, text[h.Document.ID])
		}
		qs = append(qs, query{q.Text, cands})
	}
	if len(qs) == 0 {
		return nil, nil, fmt.Errorf("serve search: no query of %s retrieves anything", sc.Dataset)
	}
	scfg := res.ServerConfig()
	srv, err := server.New(scfg, svc)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", scfg.Addr)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()
	base := "http://" + ln.Addr().String()
	name := scfg.RerankModel
	pick := func(c, seq int) query { return qs[(c*len(qs)/max(cfg.Clients, 1)+seq)%len(qs)] }
	marshal := func(v any) []byte { b, _ := json.Marshal(v); return b }
	rerankBody := func(c, seq int) []byte {
		q := pick(c, seq)
		return marshal(map[string]any{"model": name, "query": q.text, "documents": q.cands, "return_documents": false})
	}
	searchBody := func(budget time.Duration) func(c, seq int) []byte {
		return func(c, seq int) []byte {
			r := engine.Request{Query: pick(c, seq).text, TopK: cfg.Docs, Candidates: cfg.Docs, Rerank: name, Budget: budget}
			return marshal(r)
		}
	}
	run := func(route string, body func(c, seq int) []byte, budget time.Duration) (SearchRow, error) {
		var calls, pairs [2]int64
		lg, err := loadgen.Run(ctx, loadgen.Config{
			URL: base + route, Clients: cfg.Clients, Warmup: cfg.Warmup, Duration: cfg.Duration, Body: body,
			OnWindow: func(open bool) {
				i := 1
				if open {
					i = 0
				}
				calls[i], pairs[i] = counted.calls.Load(), counted.pairs.Load()
			},
		})
		if err != nil {
			return SearchRow{}, err
		}
		ok, el := lg.Count(http.StatusOK), cfg.Duration.Seconds()
		ls := measure.LatencyStats(lg.Latency(http.StatusOK))
		errs := failures(lg)
		row := SearchRow{Run: "search", Route: route, Profile: cfg.Model.Profile, Clients: cfg.Clients, Docs: cfg.Docs,
			BudgetMs: measure.Round(measure.Ms(budget), 1), Requests: ok, RPS: measure.Round(float64(ok)/el, 2),
			PairsPerS: measure.Round(float64(pairs[1]-pairs[0])/el, 1),
			P50Ms:     measure.Round(measure.Ms(ls.P50), 2), P99Ms: measure.Round(measure.Ms(ls.P99), 2),
			Errors: errs, RealWeights: m.real}
		if n := calls[1] - calls[0]; n > 0 {
			row.PairsPerCall = measure.Round(float64(pairs[1]-pairs[0])/float64(n), 1)
		}
		return row, nil
	}
	var rows []SearchRow
	rr, err := run("/v1/rerank", rerankBody, 0)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, rr)
	report.Log(cfg.Log, rr)
	sr, err := run("/search", searchBody(0), 0)
	if err != nil {
		return rows, nil, err
	}
	rows = append(rows, sr)
	report.Log(cfg.Log, sr)
	budget := sc.Budget
	if budget == 0 {
		budget = (time.Duration(sr.P50Ms*float64(time.Millisecond)) / 2).Round(time.Millisecond)
	}
	br, err := run("/search", searchBody(budget), budget)
	if err != nil {
		return rows, nil, err
	}
	rows = append(rows, br)
	report.Log(cfg.Log, br)
	var checks []report.Check
	if sc.MinShare > 0 && rr.PairsPerS > 0 {
		share := sr.PairsPerS / rr.PairsPerS
		checks = append(checks, report.AtLeast("/search pairs/s over /v1/rerank pairs/s, same candidates", measure.Round(share, 3), sc.MinShare,
			fmt.Sprintf("%.1f vs %.1f pairs/s at %d clients", sr.PairsPerS, rr.PairsPerS, cfg.Clients)))
	}
	if sc.MaxBudgetOverrun > 0 && budget > 0 {
		over := br.P99Ms / measure.Ms(budget)
		checks = append(checks, report.AtMost("budgeted /search p99 over its budget", measure.Round(over, 3), sc.MaxBudgetOverrun,
			fmt.Sprintf("p99 %.1f ms, budget %.0f ms, %.1f pairs/s", br.P99Ms, measure.Ms(budget), br.PairsPerS)))
	}
	return rows, checks, nil
}
