package hybrid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
)

// Replay replays a query log with repeats against one setup, with the
// models behind caches (package models/cache) of each size in CacheMB (0 =
// no cache), each row on a fresh engine and fresh caches: Searches
// searches draw the dataset's judged queries with Zipf-distributed
// frequencies (exponent Zipf > 1; a seeded shuffle picks which query is
// the most frequent). Searches 0 replays nothing.
type Replay struct {
	Setup    string  `json:"setup,omitempty"`
	Searches int     `json:"searches"`
	Zipf     float64 `json:"zipf"`
	CacheMB  []int   `json:"cache_mb,omitempty"`
	Seed     uint64  `json:"seed"`
}

// DefaultReplay is off (no searches); when on, rrf+balanced at Zipf 1.1
// without a cache and with 64 MB.
func DefaultReplay() Replay {
	return Replay{Setup: "rrf+" + models.ProfileBalanced, Zipf: 1.1, CacheMB: []int{0, 64}, Seed: 1}
}

// validate reports an unusable replay (setups are the run's matrix).
func (r Replay) validate(all []Setup) error {
	if r.Searches == 0 {
		return nil
	}
	switch {
	case r.Searches < 0 || !(r.Zipf > 1) || len(r.CacheMB) == 0:
		return fmt.Errorf("%w: hybrid: replay needs searches > 0, zipf > 1 and at least one cache size", bench.ErrBadOption)
	}
	for _, mb := range r.CacheMB {
		if mb < 0 {
			return fmt.Errorf("%w: hybrid: replay cache size %d MB", bench.ErrBadOption, mb)
		}
	}
	if _, ok := findSetup(all, r.Setup); !ok {
		return fmt.Errorf("%w: hybrid: replay setup %q is not in the matrix", bench.ErrBadOption, r.Setup)
	}
	return nil
}

func findSetup(all []Setup, name string) (Setup, bool) {
	for _, s := range all {
		if s.Name == name {
			return s, true
		}
	}
	return Setup{}, false
}

// ReplayRow is one replay: a line of the report's replay table.
type ReplayRow struct {
	Dataset     string `json:"dataset" table:""`
	Setup       string `json:"setup" table:""`
	RealWeights bool   `json:"real_weights" table:""`
	CacheMB     int    `json:"cache_mb" table:"cache MB"`
	Searches    int    `json:"searches" table:""`
	// Distinct is the number of different queries in the log.
	Distinct int     `json:"distinct" table:""`
	QPS      float64 `json:"qps" table:""`
	P50Ms    float64 `json:"p50_ms" table:""`
	P99Ms    float64 `json:"p99_ms" table:""`
	// EmbedHits and RerankHits are the caches' hit rates (hits / lookups).
	EmbedHits    float64 `json:"embed_hit_rate" table:"embed hits"`
	RerankHits   float64 `json:"rerank_hit_rate" table:"rerank hits"`
	RerankMB     float64 `json:"rerank_cache_mb,omitempty" table:"rerank cache MB"`
	MeanReranked float64 `json:"mean_reranked" table:""`
}

// replay runs cfg.Replay on h's dataset.
func (h *engines) replay(ctx context.Context, all []Setup) ([]ReplayRow, error) {
	rp := h.cfg.Replay
	c, _ := findSetup(all, rp.Setup)
	if c.Dense && h.embedder == nil {
		return nil, fmt.Errorf("hybrid: replay setup %s needs an embedder", c.Name)
	}
	qs := h.ds.Queries
	rng := rand.New(rand.NewPCG(rp.Seed, 7))
	order := rng.Perm(len(qs))
	z := rand.NewZipf(rng, rp.Zipf, 1, uint64(len(qs)-1))
	log := make([]string, rp.Searches)
	distinct := map[int]bool{}
	for i := range log {
		k := order[z.Uint64()]
		log[i], distinct[k] = qs[k].Text, true
	}
	var rows []ReplayRow
	for _, mb := range rp.CacheMB {
		r, err := h.replayOnce(ctx, c, log, mb)
		if err != nil {
			return nil, err
		}
		r.Distinct = len(distinct)
		rows = append(rows, r)
	}
	return rows, nil
}

// replayOnce runs log on a fresh engine whose models sit behind fresh
// caches of mb MB each (none for 0).
func (h *engines) replayOnce(ctx context.Context, c Setup, log []string, mb int) (_ ReplayRow, err error) {
	row := ReplayRow{Dataset: h.ds.Name, Setup: c.Name, CacheMB: mb, Searches: len(log), RealWeights: true}
	var opts []engine.Option
	var ec *cache.Embedder
	var rc *cache.Reranker
	if c.Dense {
		var emb models.Embedder = h.embedder
		if mb > 0 {
			if ec, err = cache.NewEmbedder(h.embedder, int64(mb)<<20); err != nil {
				return row, err
			}
			emb = ec
		}
		opts = append(opts, engine.WithEmbedder(emb))
		row.RealWeights = h.ms.real[models.ProfileEmbed]
	}
	if c.Rerank != "" {
		var rr models.Reranker = h.rerankers[c.Rerank]
		if mb > 0 {
			if rc, err = cache.NewReranker(rr, int64(mb)<<20); err != nil {
				return row, err
			}
			rr = rc
		}
		opts = append(opts, engine.WithReranker(c.Rerank, rr))
		row.RealWeights = row.RealWeights && h.ms.real[c.Rerank]
	}
	e, err := engine.Open("", h.cfg.Engine, opts...)
	if err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	if _, err := h.commit(ctx, e); err != nil {
		return row, err
	}
	var budget time.Duration
	if c.Rerank != "" {
		budget = h.cfg.Budget
	}
	var lat []time.Duration
	reranked := 0
	bar := measure.NewProgress(fmt.Sprintf("replay %s %s %d MB", h.ds.Name, c.Name, mb), len(log), h.cfg.Progress)
	wall := time.Now()
	for _, q := range log {
		t0 := time.Now()
		res, err := e.Search(ctx, h.request(c, q, budget))
		if err != nil && !(budget > 0 && retrievalTimeout(ctx, err)) {
			return row, fmt.Errorf("hybrid replay %s: %w", c.Name, err)
		}
		lat = append(lat, time.Since(t0))
		if res != nil {
			reranked += res.Reranked
		}
		bar.Add(1)
	}
	bar.Done()
	row.QPS = measure.Round(float64(len(log))/time.Since(wall).Seconds(), 1)
	l := measure.LatencyStats(lat)
	row.P50Ms, row.P99Ms = measure.Round(measure.Ms(l.P50), 3), measure.Round(measure.Ms(l.P99), 3)
	row.MeanReranked = measure.Round(float64(reranked)/float64(len(log)), 1)
	rate := func(s cache.Stats) float64 {
		if s.Hits+s.Misses == 0 {
			return 0
		}
		return measure.Round(float64(s.Hits)/float64(s.Hits+s.Misses), 3)
	}
	if ec != nil {
		row.EmbedHits = rate(ec.Stats())
	}
	if rc != nil {
		st := rc.Stats()
		row.RerankHits, row.RerankMB = rate(st), measure.Round(float64(st.Bytes)/(1<<20), 2)
	}
	return row, nil
}
