package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// Config configures `bench ingest`. Safe to copy.
type Config struct {
	// Data is the BEIR dataset whose corpus and queries are used.
	Data string `json:"data"`
	// Dir is where the temporary index directories are made ("" = the
	// system's temporary directory); it should be on the disk to measure.
	Dir string `json:"dir,omitempty"`
	// Committers and SyncDocs: the sync measurement, Rounds times each
	// policy, alternating (the check compares medians: on a small shared
	// machine one run of each swings by ±15 %). SweepCommitters repeats it
	// at other committer counts, reported beside the check.
	Committers      int   `json:"committers"`
	SyncDocs        int   `json:"sync_docs"`
	Rounds          int   `json:"rounds"`
	SweepCommitters []int `json:"sweep_committers,omitempty"`
	// Ingest documents in batches of Batch while searching; IdleSearches
	// searches on the idle engine first.
	Ingest       int `json:"ingest"`
	Batch        int `json:"batch"`
	IdleSearches int `json:"idle_searches"`
	// EmbedDim is the hashing embedder's dimension.
	EmbedDim int     `json:"embed_dim"`
	Targets  Targets `json:"targets"`
	// Log receives a line per row (nil = none).
	Log io.Writer `json:"-"`
}

// Targets are the write path's bars.
type Targets struct {
	MinSyncRatio float64 `json:"min_sync_ratio"`
	MaxP99Ratio  float64 `json:"max_p99_ratio"`
}

// DefaultConfig is 16 committers × 20,000 documents in 3 rounds (and a
// sweep over 32 and 64 committers), a 100,000-document ingest in batches
// of 500 with 3,000 idle searches first, 384-dimensional hashing vectors,
// and the durability issue's targets.
func DefaultConfig() Config {
	return Config{Committers: 16, SyncDocs: 20_000, Rounds: 3, SweepCommitters: []int{32, 64},
		Ingest: 100_000, Batch: 500, IdleSearches: 3000, EmbedDim: 384,
		Targets: Targets{MinSyncRatio: 0.8, MaxP99Ratio: 1.5}}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	switch {
	case c.Data == "":
		return fmt.Errorf("%w: ingest: no dataset", bench.ErrBadOption)
	case c.Committers < 1 || c.SyncDocs < c.Committers || c.Rounds < 1 || c.Ingest < 1 || c.Batch < 1 || c.IdleSearches < 1 || c.EmbedDim < 1:
		return fmt.Errorf("%w: ingest: committers, sync_docs (≥ committers), rounds, ingest, batch, idle_searches and embed_dim must be positive", bench.ErrBadOption)
	case slices.ContainsFunc(c.SweepCommitters, func(n int) bool { return n < 1 || n > c.SyncDocs }):
		return fmt.Errorf("%w: ingest: sweep committers %v must be positive and at most sync_docs", bench.ErrBadOption, c.SweepCommitters)
	case !(c.Targets.MinSyncRatio >= 0) || !(c.Targets.MaxP99Ratio > 0):
		return fmt.Errorf("%w: ingest: targets %+v", bench.ErrBadOption, c.Targets)
	}
	return nil
}

// SyncRow is one sync policy's ingest at one committer count: the median
// of its rounds (docs/s; syncs, commits/sync and commits/group of that
// round) and every round's docs/s.
type SyncRow struct {
	Policy         string    `json:"policy" table:""`
	Committers     int       `json:"committers" table:""`
	Docs           int       `json:"docs" table:""`
	DocsPerS       float64   `json:"docs_per_s" table:"docs/s"`
	RoundsDocsPerS []float64 `json:"rounds_docs_per_s,omitempty" table:"docs/s of each round"`
	Syncs          uint64    `json:"syncs" table:""`
	CommitsPerSync float64   `json:"commits_per_sync,omitempty" table:"commits/sync"`
	// CommitsPerGroup is commits per apply group (engine group commit).
	CommitsPerGroup float64 `json:"commits_per_group,omitempty" table:"commits/group"`
}

// Phases of the search rows.
const (
	// PhaseIdle: before the ingest, on the initial corpus.
	PhaseIdle = "idle"
	// PhaseIngest: every search during the ingest (the index grows from
	// the initial corpus to the final size).
	PhaseIngest = "ingest"
	// PhaseIngestTail: the searches of the ingest's last fifth (the index
	// within a fifth of the ingest of its final size).
	PhaseIngestTail = "ingest, last fifth"
	// PhaseIdleAfter: after the ingest, on the final index.
	PhaseIdleAfter = "idle after"
)

// SearchRow is search latency in one phase (Phase*).
type SearchRow struct {
	Phase    string  `json:"phase" table:""`
	Docs     int     `json:"docs" table:""`
	Searches int     `json:"searches" table:""`
	P50Ms    float64 `json:"p50_ms" table:""`
	P99Ms    float64 `json:"p99_ms" table:""`
	// IngestDocsPerS is the ingest's rate (ingest phase only).
	IngestDocsPerS float64 `json:"ingest_docs_per_s,omitempty" table:"ingest docs/s"`
}

// Result is Run's rows and their checks.
type Result struct {
	Sync   []SyncRow      `json:"sync"`
	Search []SearchRow    `json:"search"`
	Checks []report.Check `json:"checks,omitempty"`
}

// Run measures the sync policies, then search during ingest.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	ds, err := eval.LoadBEIR(cfg.Data)
	if err != nil {
		return res, err
	}
	docs := func(n int) []engine.Document {
		out := make([]engine.Document, n)
		for i := range out {
			d := ds.Docs[i%len(ds.Docs)]
			out[i] = engine.Document{ID: fmt.Sprintf("%s-%d", d.ID, i/len(ds.Docs)), Title: d.Title, Text: d.Text, Tenant: fmt.Sprintf("t%d", i%4)}
		}
		return out
	}
	syncDocs := docs(cfg.SyncDocs)
	for _, n := range append([]int{cfg.Committers}, cfg.SweepCommitters...) {
		rows, err := syncRounds(ctx, cfg, n, syncDocs)
		if err != nil {
			return res, err
		}
		res.Sync = append(res.Sync, rows...)
	}
	queries := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		queries[i] = q.Text
	}
	rows, err := searchRun(ctx, cfg, docs(len(ds.Docs)+cfg.Ingest), len(ds.Docs), queries)
	if err != nil {
		return res, err
	}
	for _, r := range rows {
		report.Log(cfg.Log, r)
	}
	res.Search = rows
	res.Checks = cfg.Targets.Check(res)
	return res, nil
}

// tempEngine opens an engine in a fresh directory under cfg.Dir; close
// removes it.
func tempEngine(cfg Config, ec engine.Config, opts ...engine.Option) (*engine.Engine, func() error, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "hybrank-ingest-")
	if err != nil {
		return nil, nil, err
	}
	e, err := engine.Open(dir, ec, opts...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return e, func() error { return errors.Join(e.Close(), os.RemoveAll(dir)) }, nil
}

// syncPolicies are the sync measurement's policies, in the order each
// round runs them.
var syncPolicies = []engine.SyncPolicy{engine.SyncInterval, engine.SyncEveryCommit}

// syncRounds measures each sync policy cfg.Rounds times with n committers,
// alternating the policies (so a slow spell of the machine hits both),
// and returns a row per policy: the median round, with every round's
// docs/s.
func syncRounds(ctx context.Context, cfg Config, n int, docs []engine.Document) ([]SyncRow, error) {
	runs := make([][]SyncRow, len(syncPolicies))
	for range cfg.Rounds {
		for i, p := range syncPolicies {
			row, err := syncRun(ctx, cfg, n, p, docs)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], row)
		}
	}
	out := make([]SyncRow, len(syncPolicies))
	for i, rs := range runs {
		rates := make([]float64, len(rs))
		for j, r := range rs {
			rates[j] = r.DocsPerS
		}
		slices.SortFunc(rs, func(a, b SyncRow) int { return cmp.Compare(a.DocsPerS, b.DocsPerS) })
		out[i] = rs[(len(rs)-1)/2] // the median (the lower one of an even count)
		out[i].RoundsDocsPerS = rates
		report.Log(cfg.Log, out[i])
	}
	return out, nil
}

// syncRun commits docs one per Commit from n goroutines under policy p.
func syncRun(ctx context.Context, cfg Config, n int, p engine.SyncPolicy, docs []engine.Document) (_ SyncRow, err error) {
	ec := engine.DefaultConfig()
	ec.Durability.Sync = p
	e, closeFn, err := tempEngine(cfg, ec)
	if err != nil {
		return SyncRow{}, err
	}
	defer func() { err = errors.Join(err, closeFn()) }()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(docs) {
					return
				}
				b := e.NewBatch()
				b.Add(docs[i])
				if err := e.Commit(ctx, b); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return SyncRow{}, err
	}
	d := e.Durability()
	row := SyncRow{Policy: string(p), Committers: n, Docs: len(docs),
		DocsPerS: measure.Round(float64(len(docs))/el.Seconds(), 0), Syncs: d.LogSyncs}
	if d.LogSyncs > 0 {
		row.CommitsPerSync = measure.Round(float64(d.Commits)/float64(d.LogSyncs), 2)
	}
	if d.CommitGroups > 0 {
		row.CommitsPerGroup = measure.Round(float64(d.Commits)/float64(d.CommitGroups), 2)
	}
	return row, nil
}

// searchRun commits docs[:base], searches idle, then searches while
// committing docs[base:].
func searchRun(ctx context.Context, cfg Config, docs []engine.Document, base int, queries []string) (_ []SearchRow, err error) {
	e, closeFn, err := tempEngine(cfg, engine.DefaultConfig(), engine.WithEmbedder(enginetest.NewHashEmbedder(cfg.EmbedDim)))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeFn()) }()
	b := e.NewBatch()
	b.Add(docs[:base]...)
	if err := e.Commit(ctx, b); err != nil {
		return nil, err
	}
	search := func(i int) (time.Duration, error) {
		t0 := time.Now()
		_, err := e.Search(ctx, engine.Request{Query: queries[i%len(queries)], Tenant: "t1"})
		return time.Since(t0), err
	}
	idle := make([]time.Duration, cfg.IdleSearches)
	for i := range idle {
		if idle[i], err = search(i); err != nil {
			return nil, err
		}
	}
	// busy[i] ran while size[i] documents were committed (its index is
	// at least that large).
	var busy []time.Duration
	var size []int
	var done atomic.Bool
	var committed atomic.Int64
	committed.Store(int64(base))
	ingestErr := make(chan error, 1)
	t0 := time.Now()
	go func() {
		defer done.Store(true)
		for i := base; i < len(docs); i += cfg.Batch {
			hi := min(i+cfg.Batch, len(docs))
			b := e.NewBatch()
			b.Add(docs[i:hi]...)
			if err := e.Commit(ctx, b); err != nil {
				ingestErr <- err
				return
			}
			committed.Store(int64(hi))
		}
		ingestErr <- nil
	}()
	for i := 0; !done.Load(); i++ {
		n := int(committed.Load())
		d, err := search(i)
		if err != nil {
			return nil, err
		}
		busy, size = append(busy, d), append(size, n)
	}
	if err := <-ingestErr; err != nil {
		return nil, err
	}
	ingestS := time.Since(t0).Seconds()
	// Idle again on the final index: a search's cost grows with the
	// index (postings lists, graph depth), so the like-for-like baseline
	// of the ingest's last fifth is the index at its final size.
	idleAfter := make([]time.Duration, cfg.IdleSearches)
	for i := range idleAfter {
		if idleAfter[i], err = search(i); err != nil {
			return nil, err
		}
	}
	row := func(phase string, lat []time.Duration, n int) SearchRow {
		l := measure.LatencyStats(lat)
		return SearchRow{Phase: phase, Docs: n, Searches: len(lat),
			P50Ms: measure.Round(measure.Ms(l.P50), 3), P99Ms: measure.Round(measure.Ms(l.P99), 3)}
	}
	rate := measure.Round(float64(len(docs)-base)/ingestS, 0)
	ing := row(PhaseIngest, busy, len(docs))
	ing.IngestDocsPerS = rate
	var tail []time.Duration
	for i, n := range size {
		if n >= len(docs)-(len(docs)-base)/5 {
			tail = append(tail, busy[i])
		}
	}
	rows := []SearchRow{row(PhaseIdle, idle, base), ing}
	if len(tail) > 0 {
		last := row(PhaseIngestTail, tail, len(docs))
		last.IngestDocsPerS = rate
		rows = append(rows, last)
	}
	return append(rows, row(PhaseIdleAfter, idleAfter, len(docs))), nil
}

// Check turns res into the targets' PASS/FAIL lines.
func (t Targets) Check(res Result) []report.Check {
	var cs []report.Check
	type key struct {
		policy     string
		committers int
	}
	by := map[key]SyncRow{}
	var counts []int // committer counts in row order; the first is the target's
	for _, r := range res.Sync {
		by[key{r.Policy, r.Committers}] = r
		if !slices.Contains(counts, r.Committers) {
			counts = append(counts, r.Committers)
		}
	}
	for i, n := range counts {
		every, iv := by[key{string(engine.SyncEveryCommit), n}], by[key{string(engine.SyncInterval), n}]
		if every.DocsPerS <= 0 || iv.DocsPerS <= 0 {
			continue
		}
		ratio := measure.Round(every.DocsPerS/iv.DocsPerS, 3)
		detail := fmt.Sprintf("medians of %d rounds: %.0f vs %.0f docs/s, %d committers, %.1f commits per fsync", len(every.RoundsDocsPerS), every.DocsPerS, iv.DocsPerS, n, every.CommitsPerSync)
		if i == 0 {
			cs = append(cs, report.AtLeast("ingest docs/s, fsync per commit / interval syncing", ratio, t.MinSyncRatio, detail))
		} else {
			cs = append(cs, report.Inform(fmt.Sprintf("ingest docs/s, fsync per commit / interval syncing at %d committers", n), ratio, detail))
		}
	}
	phase := map[string]SearchRow{}
	for _, r := range res.Search {
		phase[r.Phase] = r
	}
	if tail, idle := phase[PhaseIngestTail], phase[PhaseIdleAfter]; tail.Searches > 0 && idle.P99Ms > 0 {
		cs = append(cs, report.AtMost("search p99 during the ingest's last fifth / idle p99 on the final index", measure.Round(tail.P99Ms/idle.P99Ms, 3), t.MaxP99Ratio,
			fmt.Sprintf("%.3f vs %.3f ms (%d and %d searches, index of %d documents at the end); ingest at %.0f docs/s",
				tail.P99Ms, idle.P99Ms, tail.Searches, idle.Searches, idle.Docs, tail.IngestDocsPerS)))
	}
	if ing, idle := phase[PhaseIngest], phase[PhaseIdle]; ing.Searches > 0 && idle.P99Ms > 0 {
		cs = append(cs, report.Inform("search p99 during the whole ingest / idle p99 on the initial corpus", measure.Round(ing.P99Ms/idle.P99Ms, 3),
			fmt.Sprintf("%.3f vs %.3f ms; the index grows from %d to %d documents meanwhile, so this ratio also counts the larger index", ing.P99Ms, idle.P99Ms, idle.Docs, ing.Docs)))
	}
	return cs
}

// Report renders res for bench/results/ingest.md.
func Report(cfg Config, res Result, command string) report.Report {
	return report.Report{
		Title:   "Engine write path: durable ingest and search during ingest",
		Command: command,
		Checks:  res.Checks,
		Notes: []string{
			fmt.Sprintf("Data: %s's abstracts (title and text), cycled under new IDs, 4 tenants; queries: its queries, tenant t1. Index directories on disk under %q (\"\" = the system temporary directory).", cfg.Data, cfg.Dir),
			fmt.Sprintf("Sync rows: %d goroutines (and %v in the sweep rows) commit one document per Commit, BM25 only, until %d documents, %d rounds alternating the two policies; each row is the policy's median round, with every round's docs/s; policy commit = an fsync covers every acknowledged commit (concurrent commits share one: commits/sync), interval = commits return after the write and the log is fsynced every 100 ms (the no-fsync baseline); commits/group = commits per apply group (commits that queue while one applies are applied and published together).", cfg.Committers, cfg.SweepCommitters, cfg.SyncDocs, cfg.Rounds),
			fmt.Sprintf("Search rows: engine with a %d-dimensional hashing embedder (so every commit also inserts into the HNSW graph), default search (rrf over BM25 and dense, top 10); idle = %d searches back to back on the initial corpus; ingest = searches back to back while one goroutine commits %d documents in batches of %d (commits build the next state beside the published one and swap it in); ingest, last fifth = those of its searches that started once four fifths of it were committed; idle after = %[2]d searches on the final index. A search's cost grows with the index, so the check compares the ingest's last fifth with the idle searches on the final index (like for like); the whole ingest against the initial corpus is reported beside it.", cfg.EmbedDim, cfg.IdleSearches, cfg.Ingest, cfg.Batch),
		},
		Config:  cfg,
		Columns: report.Columns(SyncRow{}, SearchRow{}),
		Rows:    append(report.Rows(res.Sync), report.Rows(res.Search)...),
	}
}
