package postings

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestStepwiseRebuild rebuilds in small steps while commits add, replace
// and delete documents (old ones and ones added during the rebuild) and
// searches run, then checks every query against refSearch at the avgdl of
// the rebuild's start: the rebuilt index holds exactly the live documents,
// with norms of the new build and the postings committed meanwhile.
func TestStepwiseRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	cfg := DefaultConfig()
	ix := mustNew(t, cfg)
	live := map[string]Doc{}
	apply := func(adds []Doc, dels []string) {
		t.Helper()
		b := ix.NewBatch()
		for _, id := range dels {
			b.Delete(id)
			delete(live, id)
		}
		for _, d := range adds {
			b.Add(d)
			live[d.ID] = d
		}
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	apply(randCorpus(r, 600, 200, 20, "a"), nil)
	// Longer documents and deletions: drift and dead doc nums.
	apply(randCorpus(r, 300, 200, 60, "b"), []string{"a1", "a2", "a3", "a5", "a8", "a13"})
	if st := ix.Summary(); st.Drift == 0 || st.DeletedDocs == 0 {
		t.Fatalf("setup: %+v", st)
	}
	avgdl := ix.Summary().AvgDL

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rq := rand.New(rand.NewPCG(5, 5))
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := ix.Search(context.Background(), Query{Terms: randQuery(rq, 200), K: 10, Allow: randAllow(rq)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	rb := ix.StartRebuild()
	steps := 0
	for i := 0; !rb.Step(500); i++ {
		steps++
		switch i % 4 {
		case 0: // new documents, some with new terms
			docs := randCorpus(r, 5, 260, 30, fmt.Sprintf("c%d-", i))
			apply(docs, nil)
		case 1: // replace an old document and delete another
			d := randCorpus(r, 1, 200, 10, "")[0]
			d.ID = fmt.Sprintf("a%d", 100+i)
			apply([]Doc{d}, []string{fmt.Sprintf("b%d", i)})
		case 2: // delete a document added during the rebuild
			apply(nil, []string{fmt.Sprintf("c%d-0", i-2)})
		case 3: // add then replace within the rebuild
			d := randCorpus(r, 1, 200, 10, "")[0]
			d.ID = fmt.Sprintf("c%d-1", i-3)
			apply([]Doc{d}, nil)
		}
	}
	if steps < 10 {
		t.Fatalf("only %d steps", steps)
	}
	if err := rb.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Finish(); !errors.Is(err, ErrRebuildStale) {
		t.Fatalf("second Finish: %v", err)
	}
	close(stop)
	wg.Wait()
	st := ix.Summary()
	if st.Docs != len(live) || st.BuildAvgDL != avgdl {
		t.Fatalf("after rebuild: %+v, want %d docs at build avgdl %v", st, len(live), avgdl)
	}
	for id := range live {
		if !ix.Has(id) {
			t.Fatalf("live %s missing", id)
		}
	}
	for _, id := range []string{"a1", "b1", "c0-0"} {
		if ix.Has(id) {
			t.Fatalf("deleted %s present", id)
		}
	}
	rq := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 300; i++ {
		q := Query{Terms: randQuery(rq, 260), K: 10, Allow: randAllow(rq), Exhaustive: i%2 == 0}
		got := search(t, ix, q)
		want := refSearch(cfg, live, avgdl, q)
		if err := sameScores(got, want); err != nil {
			t.Fatalf("query %v allow %v: %v\ngot  %v\nwant %v", q.Terms, q.Allow, err, got, want)
		}
	}
	// A plain Rebuild afterwards reaches drift 0 over the same documents.
	if err := ix.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Summary(); st.Docs != len(live) || st.Drift != 0 || st.DeletedDocs != 0 {
		t.Fatalf("after Rebuild: %+v", st)
	}
}

// TestStepwiseRebuildStale: a rebuild that another one overtook changes
// nothing.
func TestStepwiseRebuildStale(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	ix := mustNew(t, DefaultConfig())
	commitDocs(t, ix, randCorpus(r, 50, 30, 10, "a")...)
	rb := ix.StartRebuild()
	rb.Step(10)
	if err := ix.Rebuild(); err != nil {
		t.Fatal(err)
	}
	before := ix.cur.Load()
	if err := rb.Finish(); !errors.Is(err, ErrRebuildStale) {
		t.Fatalf("Finish after Rebuild: %v", err)
	}
	if ix.cur.Load() != before {
		t.Fatal("a stale rebuild published")
	}
}

// TestRebuildingAfterRenameIsStale: a Rebuilding copied the IDs of its
// start; renamed since, publishing it would bring the old IDs back, so
// Finish answers ErrRebuildStale and the renamed IDs stay.
func TestRebuildingAfterRenameIsStale(t *testing.T) {
	ix := mustNew(t, cfgFor(Lucene))
	commitDocs(t, ix, Doc{ID: "old", Terms: []string{"a", "b"}}, Doc{ID: "o2", Terms: []string{"a"}})
	rb := ix.StartRebuild()
	rb.Step(1)
	if err := ix.RenameIDs(map[string]string{"old": "new", "o2": "n2"}); err != nil {
		t.Fatal(err)
	}
	if err := rb.Finish(); !errors.Is(err, ErrRebuildStale) {
		t.Fatalf("Finish after RenameIDs: %v, want ErrRebuildStale", err)
	}
	if !ix.Has("new") || ix.Has("old") {
		t.Fatal("the renamed IDs were lost")
	}
	if err := ix.Rebuild(); err != nil || !ix.Has("new") {
		t.Fatalf("a rebuild started after the rename: %v, has new %v", err, ix.Has("new"))
	}
}
