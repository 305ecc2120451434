package dense_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/dense"
)

// TestViewAtomicity checks that searches running during Adds see each Add
// call entirely or not at all, and that a View keeps its state. Every Add
// puts batch vectors under a tenant of their own (a range of Refs); a
// concurrent search allowing that range with k = batch must find 0 or
// batch of them.
func TestViewAtomicity(t *testing.T) {
	const dim, batch, batches = 8, 12, 40
	r := rand.New(rand.NewPCG(11, 11))
	vecs := clustered(r, batch*batches, dim, 6)
	cfg := dense.DefaultConfig(dim)
	cfg.FlatThreshold = 4 // keep the graph path in play for filtered searches
	ix := mustNew(t, cfg)
	ctx := context.Background()
	before := ix.View()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 4)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := (i*7 + w) % batches
				v := ix.View()
				allow := roaring.New()
				allow.AddRange(uint64(b*batch+1), uint64((b+1)*batch+1))
				hits, err := v.Search(ctx, vecs[b*batch], batch, allow)
				if err != nil {
					errc <- err
					return
				}
				if n := len(hits); n != 0 && n != batch {
					errc <- fmt.Errorf("batch %d: a search saw %d of %d vectors", b, n, batch)
					return
				}
				if i%5 == 0 {
					if _, err := v.Search(ctx, vecs[i%len(vecs)], 5, nil); err != nil {
						errc <- err
						return
					}
				}
			}
		}(w)
	}
	for b := 0; b < batches; b++ {
		items := make([]dense.Item, batch)
		for j := range items {
			items[j] = dense.Item{ID: fmt.Sprint(b, "/", j), Vector: vecs[b*batch+j], Ref: uint32(b*batch + j + 1)} // 0 is NoRef
		}
		if err := ix.Add(items...); err != nil {
			t.Fatal(err)
		}
		if b%4 == 3 { // replace a whole earlier batch: still all or nothing
			if err := ix.Add(items...); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if before.Len() != 0 {
		t.Fatalf("a view taken before the Adds holds %d vectors", before.Len())
	}
	if h, err := before.Search(ctx, vecs[0], 3, nil); err != nil || len(h) != 0 {
		t.Fatalf("old view search: %v %v", h, err)
	}
	if ix.Len() != batch*batches {
		t.Fatalf("Len %d, want %d", ix.Len(), batch*batches)
	}
}

// TestCompactionSteps runs a stepwise compaction while items are added and
// deleted and searches run, then checks that the tombstones of before the
// start are gone, the live items are all found, and nothing else is.
func TestCompactionSteps(t *testing.T) {
	const dim = 12
	r := rand.New(rand.NewPCG(12, 12))
	vecs := clustered(r, 1500, dim, 8)
	cfg := dense.DefaultConfig(dim)
	cfg.FlatThreshold = 0
	ix := mustNew(t, cfg)
	ctx := context.Background()
	live := map[string][]float32{}
	add := func(i int) {
		t.Helper()
		id := fmt.Sprint(i)
		if err := ix.Add(dense.Item{ID: id, Vector: vecs[i]}); err != nil {
			t.Fatal(err)
		}
		live[id] = vecs[i]
	}
	del := func(i int) {
		t.Helper()
		id := fmt.Sprint(i)
		if err := ix.Delete(id); err != nil {
			t.Fatal(err)
		}
		delete(live, id)
	}
	for i := 0; i < 1000; i++ {
		add(i)
	}
	for i := 0; i < 1000; i += 2 {
		del(i) // half tombstones
	}
	if ix.Tombstones() != 500 {
		t.Fatalf("tombstones %d", ix.Tombstones())
	}
	c, err := ix.StartCompaction()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := ix.Search(ctx, vecs[i%len(vecs)], 10, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	steps, next := 0, 1000
	for !c.Step(64) {
		steps++
		// Writers carry on between steps.
		add(next)
		next++
		del(steps*2 + 1) // an odd, live one of the first thousand
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if steps < 5 {
		t.Fatalf("only %d steps", steps)
	}
	// Deleted during the compaction: still tombstones; those of before: gone.
	if got := ix.Tombstones(); got != steps {
		t.Fatalf("tombstones after compaction %d, want %d (deleted while it ran)", got, steps)
	}
	if ix.Len() != len(live) {
		t.Fatalf("Len %d, want %d", ix.Len(), len(live))
	}
	// Every live vector finds itself through the graph; no deleted one
	// comes back.
	for id, v := range live {
		hits, err := ix.Search(ctx, v, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != id {
			t.Fatalf("live %s: got %v", id, hits)
		}
	}
	hits, err := ix.Search(ctx, vecs[0], 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if _, ok := live[h.ID]; !ok {
			t.Fatalf("deleted %s returned", h.ID)
		}
	}
	// A compaction that finishes after Close reports it.
	c, err = ix.StartCompaction()
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if err := c.Finish(); err == nil {
		t.Fatal("Finish after Close succeeded")
	}
}
