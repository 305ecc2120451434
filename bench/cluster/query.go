package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
)

// SearchRow is one setup at one client count, on Weaviate or on the
// engine: a line of cluster.md.
type SearchRow struct {
	// Impl is "weaviate" (the cluster, hybrank's sidecars embedding and
	// reranking) or "engine" (hybrank's engine in process).
	Impl string `json:"impl" table:""`
	// Setup is the bench hybrid setup reproduced (bm25, dense, the fusion,
	// the fusion + the reranker profile; "@N" when N hits are reranked).
	Setup string `json:"setup" table:""`
	// Search is what ran: the Weaviate search or the engine's setup.
	Search string `json:"search"`
	// Analysis is the BM25 side's analysis of a Weaviate row: hybrank's
	// terms (AnalysisHybrank) or Weaviate's word tokens.
	Analysis string `json:"analysis,omitempty" table:""`
	Clients  int    `json:"clients" table:""`
	Queries  int    `json:"queries" table:""`
	// Errors counts searches that failed (no retry); they score 0.
	Errors int `json:"errors" table:""`
	// Degraded counts reranked searches answered unreranked: a sidecar's
	// rerank budget ran out (unreranked).
	Degraded    int     `json:"degraded" table:""`
	FirstError  string  `json:"first_error,omitempty"`
	RealWeights bool    `json:"real_weights" table:""`
	NDCG10      float64 `json:"ndcg@10" table:""`
	Recall100   float64 `json:"recall@100" table:""`
	MRR10       float64 `json:"mrr@10" table:""`
	QPS         float64 `json:"qps" table:""`
	P50Ms       float64 `json:"p50_ms" table:""`
	P99Ms       float64 `json:"p99_ms" table:""`
	// EngineGap is this row's nDCG@10 − the engine's on the same setup;
	// Overlap10 the mean share of the engine's top 10 in this row's top
	// 10 (Weaviate rows with an engine row beside them).
	EngineGap Optional `json:"engine_gap" table:"Δ engine"`
	Overlap10 Optional `json:"overlap@10" table:"overlap@10"`
	// PlainGap is this row's nDCG@10 − the engine's on the same setup
	// with Weaviate's analysis (plainSetup), where the engine ran it.
	PlainGap Optional `json:"plain_gap" table:"Δ engine, no stemming"`
}

// searchSpec is one Weaviate setup: its row name and the search of a
// query.
type searchSpec struct {
	setup string
	real  bool
	make  func(q string) Search
	// trec orders hits as trec_eval does (BM25 ties by id), as bench
	// hybrid evaluates its bm25 row.
	trec bool
	// once runs the setup at the first client count only.
	once bool
}

// searchOutcome is one measured set of searches.
type searchOutcome struct {
	row SearchRow
	run eval.Run
}

// runSearches runs every query of c once, clients at a time, query i on
// node i mod len(nodes), after warm unrecorded ones, and evaluates them.
func runSearches(ctx context.Context, w *weaviate, nodes []Endpoint, c *corpus, spec searchSpec, clients, warm int, progress bool) (searchOutcome, error) {
	qs := c.ds.Queries
	for i := 0; i < warm && len(qs) > 0; i++ {
		q := qs[len(qs)-1-i%len(qs)]
		if _, err := w.search(ctx, nodes[i%len(nodes)], spec.make(q.Text)); err != nil && ctx.Err() == nil {
			// A warm-up failure is no measurement; the measured run
			// counts what keeps failing.
			continue
		}
	}
	s := spec.make("")
	row := SearchRow{Impl: "weaviate", Setup: spec.setup, Search: describe(s), Clients: clients, RealWeights: spec.real, Analysis: AnalysisWeaviate}
	if s.Analyzed {
		row.Analysis = AnalysisHybrank
	}
	run := make(eval.Run, len(qs))
	lat := make([]time.Duration, len(qs))
	var (
		mu   sync.Mutex // guards run, row.Errors, row.FirstError
		next atomic.Int64
		wg   sync.WaitGroup
	)
	bar := measure.NewProgress(fmt.Sprintf("%s ×%d", spec.setup, clients), len(qs), progress)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(qs) || ctx.Err() != nil {
					return
				}
				q := qs[i]
				t0 := time.Now()
				hits, err := w.search(ctx, nodes[i%len(nodes)], spec.make(q.Text))
				lat[i] = time.Since(t0)
				bar.Add(1)
				ids := c.ranked(hits, spec.trec)
				mu.Lock()
				if err == nil && s.Rerank && unreranked(hits) {
					row.Degraded++
				}
				if err != nil {
					row.Errors++
					if row.FirstError == "" {
						row.FirstError = clip(err.Error(), 300)
					}
				}
				run[q.ID] = ids
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	bar.Done()
	el := time.Since(start)
	if err := ctx.Err(); err != nil {
		return searchOutcome{}, err
	}
	fill(&row, c, run, lat, el)
	return searchOutcome{row: row, run: run}, nil
}

// fill sets row's quality from run and its speed from the latencies and
// the wall time.
func fill(row *SearchRow, c *corpus, run eval.Run, lat []time.Duration, wall time.Duration) {
	sc := eval.Evaluate(c.ds.Qrels, run, eval.Options{})
	row.Queries = sc.Queries
	row.NDCG10, row.Recall100, row.MRR10 = sc.NDCG10, sc.Recall100, sc.MRR10
	l := measure.LatencyStats(lat)
	row.P50Ms, row.P99Ms = measure.Round(measure.Ms(l.P50), 2), measure.Round(measure.Ms(l.P99), 2)
	if wall > 0 {
		row.QPS = measure.Round(float64(len(lat))/wall.Seconds(), 2)
	}
}

// ranked maps hits to BEIR ids (an id the corpus does not know stays as
// it is: it matches no judgment), in Weaviate's order or trec_eval's.
func (c *corpus) ranked(hits []Hit, trec bool) []string {
	id := func(h Hit) string {
		if d, ok := c.docID[h.ID]; ok {
			return d
		}
		return h.ID
	}
	if trec {
		return eval.TrecOrder(hits, id, func(h Hit) float64 { return h.Score })
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = id(h)
	}
	return out
}

// describe names a Weaviate search for the report.
func describe(s Search) string {
	var d string
	switch {
	case s.BM25:
		d = fmt.Sprintf("bm25 limit %d", s.Limit)
	default:
		d = fmt.Sprintf("hybrid %s α %g limit %d", s.Fusion, s.Alpha, s.Limit)
	}
	if s.Rerank {
		d += ", reranked (reranker-transformers)"
	}
	return d + ", " + s.Consistency
}

// overlap10 is the mean over the queries of b of the share of b's top 10
// that a's top 10 holds.
func overlap10(a, b eval.Run) float64 {
	var sum float64
	n := 0
	for q, top := range b {
		top = top[:min(10, len(top))]
		if len(top) == 0 {
			continue
		}
		in := map[string]bool{}
		for _, id := range a[q][:min(10, len(a[q]))] {
			in[id] = true
		}
		k := 0
		for _, id := range top {
			if in[id] {
				k++
			}
		}
		sum += float64(k) / float64(len(top))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// errTransport reports whether err is a request that got no answer (as
// opposed to one Weaviate answered with an error).
func errTransport(err error) bool { return err != nil && !errors.Is(err, ErrWeaviate) }

// Optional is a figure that may be absent: "–" in a table, null in JSON.
type Optional struct{ v *float64 }

// Some is the figure v.
func Some(v float64) Optional { return Optional{&v} }

// Value is the figure and whether there is one.
func (o Optional) Value() (float64, bool) {
	if o.v == nil {
		return 0, false
	}
	return *o.v, true
}

// String prints the figure as a table cell.
func (o Optional) String() string {
	if o.v == nil {
		return "–"
	}
	return report.FormatValue(*o.v)
}

// MarshalJSON writes the figure or null.
func (o Optional) MarshalJSON() ([]byte, error) {
	if o.v == nil {
		return []byte("null"), nil
	}
	return json.Marshal(*o.v)
}

// UnmarshalJSON reads a figure or null.
func (o *Optional) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		o.v = nil
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.v = &v
	return nil
}
