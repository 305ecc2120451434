package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine/enginetest"
)

// TestGroupCommitEqualsReplay makes concurrent Commits queue behind the
// commit lock, so that one of them applies them all as a group, and checks
// that the published state is the one the log gives when it is replayed
// record by record on reopen: the same documents and the same search
// results, scores included. The groups mix additions, updates, identical
// re-adds, deletions, the same document in several batches of a group,
// and a batch that deletes every live document followed by additions (a
// batch into an index without live documents is built at its own
// statistics).
func TestGroupCommitEqualsReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	cfg := DefaultConfig()
	emb := enginetest.NewHashEmbedder(16)
	e, err := Open(dir, cfg, WithEmbedder(emb))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	ctx := context.Background()
	words := strings.Fields("red green blue apple car road tree river stone cloud light sound paper glass metal wood")
	rng := rand.New(rand.NewPCG(3, 3))
	text := func() string {
		ws := make([]string, 3+rng.IntN(12))
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	var ids []docKey // every ID ever added
	live := func() []docKey {
		var out []docKey
		for _, k := range ids {
			if _, ok := e.GetIn(k.Tenant, k.ID); ok {
				out = append(out, k)
			}
		}
		return out
	}
	const rounds, perGroup = 8, 12
	for round := range rounds {
		batches := make([]*Batch, perGroup)
		cur := live()
		for i := range batches {
			b := e.NewBatch()
			switch {
			case round == 5 && i < 3 && len(cur) > 0: // deletions only
				k := cur[rng.IntN(len(cur))]
				b.DeleteIn(k.Tenant, k.ID)
			case round == 5 && i == 3: // nothing live after this one
				for _, k := range cur {
					b.DeleteIn(k.Tenant, k.ID)
				}
			default:
				for j := range 1 + rng.IntN(4) {
					k := docKey{fmt.Sprint("t", rng.IntN(2)), fmt.Sprintf("r%d-b%d-%d", round, i, j)}
					if len(cur) > 0 && rng.IntN(3) == 0 {
						k = cur[rng.IntN(len(cur))] // update, or the same document as another batch
					}
					if len(cur) > 0 && rng.IntN(8) == 0 {
						k = docKey{"t0", "shared"} // in several batches of the group
					}
					b.Add(Document{ID: k.ID, Tenant: k.Tenant, Text: text()})
					ids = append(ids, k)
				}
				if len(cur) > 0 && rng.IntN(2) == 0 {
					k := cur[rng.IntN(len(cur))]
					b.DeleteIn(k.Tenant, k.ID)
				}
			}
			batches[i] = b
		}
		groups := e.Durability().CommitGroups
		e.commitMu.Lock()
		var wg sync.WaitGroup
		errs := make([]error, perGroup)
		for i, b := range batches {
			// One at a time, so that the queue holds them in order.
			wg.Go(func() { errs[i] = e.Commit(ctx, b) })
			for queued := 0; queued <= i; {
				time.Sleep(100 * time.Microsecond)
				e.queueMu.Lock()
				queued = len(e.queue)
				e.queueMu.Unlock()
			}
		}
		e.commitMu.Unlock()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, batch %d: %v", round, i, err)
			}
		}
		if g := e.Durability().CommitGroups - groups; g != 1 {
			t.Fatalf("round %d: %d groups for %d queued commits, want 1", round, g, perGroup)
		}
	}
	type view struct {
		Docs map[docKey]Document
		Hits map[string][]Hit
	}
	look := func(e *Engine) view {
		v := view{Docs: map[docKey]Document{}, Hits: map[string][]Hit{}}
		for _, k := range ids {
			if d, ok := e.GetIn(k.Tenant, k.ID); ok {
				v.Docs[k] = d
			}
		}
		for _, q := range append(words, "red apple", "river stone glass", "paper wood metal light") {
			for _, tenant := range []string{"t0", "t1"} {
				res, err := e.Search(ctx, Request{Query: q, Tenant: tenant, TopK: 20})
				if err != nil {
					t.Fatal(err)
				}
				v.Hits[tenant+"/"+q] = res.Hits
			}
		}
		return v
	}
	before := look(e)
	if len(before.Docs) == 0 {
		t.Fatal("nothing live at the end")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, cfg, WithEmbedder(emb))
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Durability().Recovery; r.Replayed != rounds*perGroup || r.Refused != 0 {
		t.Fatalf("recovery %+v, want %d records replayed", r, rounds*perGroup)
	}
	after := look(e)
	if !reflect.DeepEqual(before.Docs, after.Docs) {
		t.Fatalf("documents: %d live before reopen, %d after, or contents differ", len(before.Docs), len(after.Docs))
	}
	for q, h := range before.Hits {
		if !reflect.DeepEqual(h, after.Hits[q]) {
			t.Fatalf("%s: grouped %v\nreplayed %v", q, hitSummary(h), hitSummary(after.Hits[q]))
		}
	}
}

func hitSummary(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s/%s=%.6g", h.Document.Tenant, h.Document.ID, h.Score)
	}
	return out
}
