package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/report"
)

func TestRun(t *testing.T) {
	var docs []eval.Doc
	for i := range 50 {
		docs = append(docs, eval.Doc{ID: fmt.Sprint(i), Title: "t", Text: fmt.Sprintf("words about topic %d and more words", i%7)})
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := eval.WriteBEIR(dir, docs, []eval.Query{{ID: "q", Text: "topic 3"}}, eval.Qrels{"q": {"3": 1}}); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Data, cfg.Dir = dir, t.TempDir()
	cfg.Committers, cfg.SyncDocs, cfg.Ingest, cfg.Batch, cfg.IdleSearches, cfg.EmbedDim = 4, 40, 300, 50, 20, 8
	cfg.Rounds, cfg.SweepCommitters = 3, []int{8}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A row per policy and committer count: the median of 3 rounds.
	if len(res.Sync) != 4 {
		t.Fatalf("sync rows %+v", res.Sync)
	}
	for i, r := range res.Sync {
		wantPolicy, wantN := []string{"interval", "commit"}[i%2], []int{4, 8}[i/2]
		rates := slices.Sorted(slices.Values(r.RoundsDocsPerS))
		if r.Policy != wantPolicy || r.Committers != wantN || r.Docs != 40 || len(rates) != 3 || r.DocsPerS != rates[1] || r.Policy == "commit" && r.Syncs == 0 {
			t.Fatalf("sync row %d: %+v", i, r)
		}
	}
	// idle, ingest, the ingest's last fifth when a search started in it
	// (a 300-document ingest may be over before), idle after.
	n := len(res.Search)
	if n < 3 || n > 4 || res.Search[0].Phase != PhaseIdle || res.Search[0].Searches != 20 || res.Search[1].Phase != PhaseIngest ||
		res.Search[1].Searches < 1 || res.Search[1].Docs != 350 || res.Search[n-1].Phase != PhaseIdleAfter || res.Search[n-1].Searches != 20 || res.Search[n-1].Docs != 350 {
		t.Fatalf("search rows %+v", res.Search)
	}
	if n == 4 && (res.Search[2].Phase != PhaseIngestTail || res.Search[2].Searches > res.Search[1].Searches) {
		t.Fatalf("last-fifth row %+v", res.Search[2])
	}
	// The sync check at 4 committers, the 8-committer ratio as information,
	// and the search checks.
	if len(res.Checks) != n || res.Checks[1].Verdict != report.Info {
		t.Fatalf("checks %v", res.Checks)
	}
	rep := Report(cfg, res, "bench ingest")
	if len(rep.Rows) != 4+n {
		t.Fatalf("report rows %d", len(rep.Rows))
	}
	cs := cfg.Targets.Check(Result{Sync: []SyncRow{{Policy: "interval", Committers: 16, DocsPerS: 100}, {Policy: "commit", Committers: 16, DocsPerS: 70}},
		Search: []SearchRow{{Phase: PhaseIdle, Searches: 9, P99Ms: 1}, {Phase: PhaseIngest, Searches: 9, P99Ms: 3},
			{Phase: PhaseIngestTail, Searches: 3, P99Ms: 2.8}, {Phase: PhaseIdleAfter, Searches: 9, P99Ms: 2}}})
	// sync 0.7 < 0.8 fails; last fifth 2.8 / 2 = 1.4 ≤ 1.5 passes; the
	// whole ingest against the initial corpus (3×) is reported only.
	if len(cs) != 3 || cs[0].Verdict != report.Fail || cs[1].Verdict != report.Pass || cs[1].Value != 1.4 || cs[2].Verdict != report.Info || cs[2].Value != 3 {
		t.Fatalf("checks %v", cs)
	}
	bad := cfg
	bad.SyncDocs = 1
	if bad.Validate() == nil {
		t.Fatal("fewer sync docs than committers accepted")
	}
	bad = cfg
	bad.Rounds = 0
	if bad.Validate() == nil {
		t.Fatal("zero rounds accepted")
	}
	bad = cfg
	bad.SweepCommitters = []int{0}
	if bad.Validate() == nil {
		t.Fatal("a sweep of zero committers accepted")
	}
}
