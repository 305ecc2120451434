package postings

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"lukechampine.com/blake3"
)

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func TestIncremental(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	commitDocs(t, ix,
		Doc{ID: "a", Terms: []string{"red", "apple"}},
		Doc{ID: "b", Terms: []string{"green", "apple"}},
		Doc{ID: "c", Terms: []string{"red", "car"}},
	)
	q := Query{Terms: []string{"red"}, K: 10}
	if got := ids(search(t, ix, q)); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Fatalf("initial red: %v", got)
	}
	before := ix.Stats()

	t.Run("identical re-add is a no-op", func(t *testing.T) {
		commitDocs(t, ix, Doc{ID: "a", Terms: []string{"red", "apple"}})
		if st := ix.Stats(); !reflect.DeepEqual(st, before) {
			t.Fatalf("stats changed: %+v → %+v", before, st)
		}
	})
	t.Run("update replaces content", func(t *testing.T) {
		commitDocs(t, ix, Doc{ID: "a", Terms: []string{"blue", "apple"}})
		if got := ids(search(t, ix, q)); !reflect.DeepEqual(got, []string{"c"}) {
			t.Fatalf("red after update: %v", got)
		}
		if got := ids(search(t, ix, Query{Terms: []string{"blue"}, K: 10})); !reflect.DeepEqual(got, []string{"a"}) {
			t.Fatalf("blue after update: %v", got)
		}
		if st := ix.Stats(); st.Docs != 3 || st.DeletedDocs != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("Ref change is an update", func(t *testing.T) {
		commitDocs(t, ix, Doc{ID: "c", Terms: []string{"red", "car"}, Ref: 7})
		if got := ids(search(t, ix, Query{Terms: []string{"red"}, K: 10, Allow: roaring.BitmapOf(7)})); !reflect.DeepEqual(got, []string{"c"}) {
			t.Fatalf("ref 7: %v", got)
		}
	})
	t.Run("delete", func(t *testing.T) {
		b := ix.NewBatch()
		b.Delete("c")
		b.Delete("never-existed")
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
		if got := search(t, ix, q); len(got) != 0 {
			t.Fatalf("red after delete: %v", got)
		}
		if ix.Has("c") || !ix.Has("a") {
			t.Fatal("Has")
		}
	})
	t.Run("rebuild compacts and equals a fresh index", func(t *testing.T) {
		if err := ix.Rebuild(); err != nil {
			t.Fatal(err)
		}
		st := ix.Stats()
		if st.DeletedDocs != 0 || st.Docs != 2 || st.Drift != 0 {
			t.Fatalf("after rebuild %+v", st)
		}
		fresh := mustNew(t, DefaultConfig())
		commitDocs(t, fresh,
			Doc{ID: "a", Terms: []string{"blue", "apple"}},
			Doc{ID: "b", Terms: []string{"green", "apple"}})
		for _, terms := range [][]string{{"apple"}, {"blue", "apple"}, {"green"}, {"red"}} {
			qq := Query{Terms: terms, K: 10}
			if a, b := search(t, ix, qq), search(t, fresh, qq); !reflect.DeepEqual(a, b) {
				t.Fatalf("%v: rebuilt %v fresh %v", terms, a, b)
			}
		}
		if st.Terms != fresh.Stats().Terms {
			t.Fatalf("terms %d vs fresh %d", st.Terms, fresh.Stats().Terms)
		}
	})
}

// TestDriftAndRebuild: avgdl drift since the build is reported and cleared by Rebuild.
func TestDriftAndRebuild(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	var docs []Doc
	for i := range 100 {
		docs = append(docs, Doc{ID: fmt.Sprint(i), Terms: []string{"a", "b", "c", "d"}})
	}
	commitDocs(t, ix, docs...)
	if st := ix.Stats(); st.Drift != 0 || st.NeedsRebuild || st.AvgDL != 4 {
		t.Fatalf("fresh %+v", st)
	}
	long := make([]string, 100)
	for i := range long {
		long[i] = fmt.Sprint("w", i%7)
	}
	commitDocs(t, ix, Doc{ID: "long", Terms: long})
	st := ix.Stats()
	want := (500.0/101 - 4) / 4
	if st.Drift < want-1e-12 || st.Drift > want+1e-12 || !st.NeedsRebuild {
		t.Fatalf("after long doc: %+v, want drift %v", st, want)
	}
	if err := ix.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Drift != 0 || st.NeedsRebuild || st.BuildAvgDL != st.AvgDL {
		t.Fatalf("after rebuild %+v", st)
	}
}

func TestBatchErrors(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	commitDocs(t, ix, Doc{ID: "a", Terms: []string{"x"}})
	before := ix.Stats()
	b := ix.NewBatch()
	b.Add(Doc{ID: "b", Terms: []string{"x"}})
	b.Add(Doc{ID: "", Terms: []string{"y"}})
	if err := ix.Commit(b); !errors.Is(err, ErrBadDoc) {
		t.Fatalf("empty id: %v", err)
	}
	if st := ix.Stats(); !reflect.DeepEqual(st, before) || ix.Has("b") {
		t.Fatalf("failed batch changed the index: %+v", st)
	}
	ok := ix.NewBatch()
	ok.Add(Doc{ID: "c", Terms: []string{"x"}})
	if err := ix.Commit(ok); err != nil {
		t.Fatal(err)
	}
	if err := ix.Commit(ok); !errors.Is(err, ErrBatchUsed) {
		t.Fatalf("recommit: %v", err)
	}
	other := mustNew(t, DefaultConfig())
	if err := other.Commit(ix.NewBatch()); !errors.Is(err, ErrBatchUsed) {
		t.Fatalf("foreign batch: %v", err)
	}
}

// TestAtomicBatchVisibility: readers racing with commits see each batch
// entirely or not at all.
func TestAtomicBatchVisibility(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	commitDocs(t, ix, Doc{ID: "seed", Terms: []string{"other"}})
	const batches, size = 30, 20
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 3 {
		wg.Go(func() {
			for !done.Load() {
				hits, err := ix.Search(context.Background(), Query{Terms: []string{"common"}, K: batches*size + 10})
				if err != nil {
					errc <- err
					return
				}
				if len(hits)%size != 0 {
					errc <- fmt.Errorf("saw %d docs, not a multiple of the batch size %d", len(hits), size)
					return
				}
			}
		})
	}
	for i := range batches {
		b := ix.NewBatch()
		for j := range size {
			b.Add(Doc{ID: fmt.Sprintf("%d-%d", i, j), Terms: []string{"common", fmt.Sprint("u", i, j)}})
		}
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// TestConcurrentSearchCommit is meant for -race: searches, stats and saves
// run while batches with updates and deletes commit.
func TestConcurrentSearchCommit(t *testing.T) {
	ix := mustNew(t, cfgFor(BM25Plus))
	r := rand.New(rand.NewPCG(5, 5))
	commitDocs(t, ix, randCorpus(r, 200, 100, 30, "d")...)
	var done atomic.Bool
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			rr := rand.New(rand.NewPCG(uint64(g), 1))
			for !done.Load() {
				q := Query{Terms: randQuery(rr, 100), K: 1 + rr.IntN(50), Allow: randAllow(rr), Exhaustive: rr.IntN(2) == 0}
				if _, err := ix.Search(context.Background(), q); err != nil {
					t.Error(err)
					return
				}
				_ = ix.Stats()
			}
		})
	}
	dir := t.TempDir()
	for i := range 20 {
		b := ix.NewBatch()
		for _, d := range randCorpus(r, 20, 100, 30, "d") {
			b.Add(d)
		}
		b.Delete(fmt.Sprintf("d%d", r.IntN(200)))
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := ix.Rebuild(); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 0 {
			if err := ix.Save(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
}

// TestContentHashChunked checks that hashing in chunk-sized writes gives
// the digest of the whole serialization: snapshots store these digests, so
// they must not change with how the hasher is fed.
func TestContentHashChunked(t *testing.T) {
	d := &Doc{ID: "x", Ref: 3, Terms: strings.Fields(strings.Repeat("alpha beta gamma ", 400))}
	var buf []byte
	got := contentHash(blake3.New(32, nil), &buf, d)
	if len(buf) < 4*blake3ChunkSize {
		t.Fatalf("serialization of %d bytes is too short for the test", len(buf))
	}
	want := blake3.Sum256(buf)
	if !bytes.Equal(got[:], want[:16]) {
		t.Fatalf("contentHash = %x, want %x", got, want[:16])
	}
}

// TestViewsKeepTheirPostings checks the copy-on-write posting lists: views
// published before later commits (which share containers with them and
// append to the same terms, across a container boundary at 65,536 doc
// nums) keep returning exactly what they returned when published.
func TestViewsKeepTheirPostings(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	const batches, size = 15, 5000
	queries := []Query{
		{Terms: []string{"common"}, K: batches * size, Exhaustive: true},
		{Terms: []string{"odd"}, K: batches * size, Exhaustive: true},
		{Terms: []string{"b3"}, K: batches * size, Exhaustive: true},
	}
	type seen struct {
		v    *View
		hits [][]Hit
	}
	var views []seen
	for i := range batches {
		b := ix.NewBatch()
		for j := range size {
			terms := []string{"common", fmt.Sprint("b", i)}
			if j%2 == 1 {
				terms = append(terms, "odd")
			}
			b.Add(Doc{ID: fmt.Sprintf("%d-%d", i, j), Terms: terms})
		}
		if i == 9 {
			b.Delete("3-7") // a delete among the appends
		}
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
		s := seen{v: ix.View()}
		for _, q := range queries {
			h, err := s.v.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			s.hits = append(s.hits, h)
		}
		views = append(views, s)
	}
	for i, s := range views {
		for k, q := range queries {
			h, err := s.v.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, s.hits[k]) {
				t.Fatalf("view after batch %d, query %v: %d hits now, %d when published", i, q.Terms, len(h), len(s.hits[k]))
			}
		}
	}
	if n := len(views[batches-1].hits[0]); n != batches*size-1 {
		t.Fatalf("common: %d hits, want %d", n, batches*size-1)
	}
}

// TestCommitGroupEqualsOneByOne checks that a group commit gives exactly
// what committing its batches one after another gives (scores, stats,
// stored content), including the cases that change how a batch is built:
// the first batch of an empty index, a batch after one that deleted every
// live document, identical re-adds, updates and deletes across batches.
func TestCommitGroupEqualsOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	one, group := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	var live []string
	mkBatches := func(ix *Index, ops [][]func(*Batch)) []*Batch {
		bs := make([]*Batch, len(ops))
		for i, o := range ops {
			bs[i] = ix.NewBatch()
			for _, f := range o {
				f(bs[i])
			}
		}
		return bs
	}
	for round := range 40 {
		var ops [][]func(*Batch)
		for range 1 + r.IntN(6) {
			var o []func(*Batch)
			switch k := r.IntN(10); {
			case k == 0 || round == 7 && len(ops) == 0: // delete everything live
				for _, id := range live {
					o = append(o, func(b *Batch) { b.Delete(id) })
				}
				live = nil
			default:
				for _, d := range randCorpus(r, 1+r.IntN(30), 60, 20, fmt.Sprint("r", round, "-")) {
					if r.IntN(4) == 0 && len(live) > 0 {
						d.ID = live[r.IntN(len(live))] // update (or identical re-add)
					}
					o = append(o, func(b *Batch) { b.Add(d) })
					live = append(live, d.ID)
				}
				if r.IntN(3) == 0 && len(live) > 0 {
					id := live[r.IntN(len(live))]
					o = append(o, func(b *Batch) { b.Delete(id) })
				}
			}
			ops = append(ops, o)
		}
		for _, b := range mkBatches(one, ops) {
			if err := one.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := group.CommitGroup(mkBatches(group, ops)...); err != nil {
			t.Fatal(err)
		}
		// IndexBytes may differ: a group run-compresses posting lists
		// that gained many documents at once, one by one does not.
		a, b := one.Stats(), group.Stats()
		a.IndexBytes, b.IndexBytes = 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round %d: stats one by one %+v, grouped %+v", round, a, b)
		}
		for range 20 {
			q := Query{Terms: randQuery(r, 60), K: 1 + r.IntN(40), Allow: randAllow(r)}
			if a, b := search(t, one, q), search(t, group, q); !reflect.DeepEqual(a, b) {
				t.Fatalf("round %d, %v: one by one %v, grouped %v", round, q.Terms, a, b)
			}
		}
	}
	t.Run("an invalid batch fails the group", func(t *testing.T) {
		before := group.Stats()
		ok, bad := group.NewBatch(), group.NewBatch()
		ok.Add(Doc{ID: "fine", Terms: []string{"x"}})
		bad.Add(Doc{Terms: []string{"x"}})
		if err := group.CommitGroup(ok, bad); !errors.Is(err, ErrBadDoc) || !strings.Contains(err.Error(), "batch 1") {
			t.Fatalf("err = %v, want ErrBadDoc naming batch 1", err)
		}
		if !reflect.DeepEqual(group.Stats(), before) || group.Has("fine") {
			t.Fatal("a refused group changed the index")
		}
	})
}

// TestTailsSearchLikeBitmaps checks posting lists with tails against the
// same lists as bitmaps: an index grown by small commits (most postings in
// tails, frequent terms merged into their bitmaps several times, deletes
// among them) answers every query exactly like the same index saved and
// reopened (bitmaps only, same statistics), pruned and exhaustive, with
// and without filters, and with small k (which probes lists by position).
func TestTailsSearchLikeBitmaps(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	ix := mustNew(t, DefaultConfig())
	docs := randCorpus(r, 4000, 300, 40, "d")
	for i := range docs {
		if i%97 == 0 {
			docs[i].Terms = append(docs[i].Terms, "rare", "rare2")
		}
		if i%2 == 0 {
			docs[i].Terms = append(docs[i].Terms, "half")
		}
	}
	for i := 0; i < len(docs); {
		n := 1 + r.IntN(8)
		b := ix.NewBatch()
		for _, d := range docs[i:min(i+n, len(docs))] {
			b.Add(d)
		}
		if r.IntN(3) == 0 {
			b.Delete(fmt.Sprint("d", r.IntN(i+1)))
		}
		if err := ix.Commit(b); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	var tails, merged int
	v := ix.View()
	for _, tp := range v.s.terms.all {
		if tp != nil && len(tp.tail) > 0 {
			tails++
		}
		if tp != nil && !tp.docs.IsEmpty() {
			merged++
		}
	}
	if tails == 0 || merged == 0 {
		t.Fatalf("%d lists with a tail, %d with a non-empty bitmap: the test needs both", tails, merged)
	}
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Probing: long lists (half, mostly in tails) against few candidates.
	ix.pruneGate, re.pruneGate = 0, 0
	probed := 0
	for _, q := range [][]string{{"rare", "half"}, {"rare", "rare2", "half", "t3"}, {"rare2", "t2", "t5", "half"}} {
		for _, k := range []int{1, 5, 20} {
			sc := &searchScratch{}
			s := ix.cur.Load()
			s.prepare(sc, q)
			sc.top.reset(k, s.docIDs)
			if err := s.search(context.Background(), sc, nil, k, true); err != nil {
				t.Fatal(err)
			}
			probed += sc.probed
			qq := Query{Terms: q, K: k}
			if a, b := search(t, ix, qq), search(t, re, qq); !reflect.DeepEqual(a, b) {
				t.Fatalf("query %+v:\ntails   %v\nbitmaps %v", qq, a, b)
			}
		}
	}
	if probed == 0 {
		t.Fatal("no list was probed")
	}
	for i := range 300 {
		q := Query{Terms: randQuery(r, 300), K: 1 + r.IntN(30), Exhaustive: i%3 == 0}
		if i%2 == 0 {
			q.Allow = randAllow(r)
		}
		if a, b := search(t, ix, q), search(t, re, q); !reflect.DeepEqual(a, b) {
			t.Fatalf("query %+v:\ntails   %v\nbitmaps %v", q, a, b)
		}
	}
}
