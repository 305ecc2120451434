package engine_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// TestTenantScopedIDs: the same ID in two tenants is two documents, for
// commits, lookups, deletions, searches, links and the write-ahead log.
func TestTenantScopedIDs(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(enginetest.NewHashEmbedder(16)))
	commit(t, e,
		engine.Document{ID: "readme.md", Tenant: "a", Text: "alpha project readme", Links: []string{"notes"}},
		engine.Document{ID: "readme.md", Tenant: "b", Text: "beta project readme", Links: []string{"notes", "only-a"}},
		engine.Document{ID: "notes", Tenant: "a", Text: "alpha notes"},
		engine.Document{ID: "notes", Tenant: "b", Text: "beta notes"},
		engine.Document{ID: "only-a", Tenant: "a", Text: "alpha only"},
	)
	if e.Len() != 5 || e.Stats().Tenants != 2 {
		t.Fatalf("%d documents, stats %+v", e.Len(), e.Stats())
	}
	for _, tenant := range []string{"a", "b"} {
		d, ok := e.GetIn(tenant, "readme.md")
		if !ok || d.Tenant != tenant {
			t.Fatalf("GetIn(%s) = %+v %v", tenant, d, ok)
		}
		res, err := e.Search(ctx, engine.Request{Query: "project readme", Tenant: tenant, Expand: engine.Expansion{Hops: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if h.Document.Tenant != tenant {
				t.Fatalf("tenant %s got %s/%s", tenant, h.Document.Tenant, h.Document.ID)
			}
		}
		// Links resolve within the tenant: b's readme links only-a, which
		// only a has.
		ids := hitIDs(res)
		if !slices.Contains(ids, "notes") || tenant == "b" && slices.Contains(ids, "only-a") {
			t.Fatalf("tenant %s expanded to %v", tenant, ids)
		}
	}
	// Replacing one tenant's document leaves the other's.
	commit(t, e, engine.Document{ID: "notes", Tenant: "b", Text: "beta notes rewritten"})
	if d, _ := e.GetIn("a", "notes"); d.Text != "alpha notes" {
		t.Fatalf("a's notes = %q", d.Text)
	}
	b := e.NewBatch()
	b.DeleteIn("b", "readme.md")
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.GetIn("a", "readme.md"); !ok {
		t.Fatal("DeleteIn(b) deleted a's readme")
	}
	state := func(e *engine.Engine) map[string]string {
		m := map[string]string{}
		for _, tenant := range []string{"a", "b"} {
			for _, id := range []string{"readme.md", "notes", "only-a"} {
				if d, ok := e.GetIn(tenant, id); ok {
					m[tenant+"/"+id] = d.Text
				}
			}
		}
		return m
	}
	want := map[string]string{
		"a/readme.md": "alpha project readme", "a/notes": "alpha notes", "b/notes": "beta notes rewritten",
		"a/only-a": "alpha only",
	}
	if got := state(e); !maps.Equal(got, want) {
		t.Fatalf("state %v, want %v", got, want)
	}
	// The log replays the same (no snapshot was taken).
	e.Close()
	e2 := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(enginetest.NewHashEmbedder(16)))
	if got := state(e2); !maps.Equal(got, want) || e2.Durability().Recovery.Replayed != 3 {
		t.Fatalf("after replay %v (recovery %+v), want %v", got, e2.Durability().Recovery, want)
	}
}

// TestMetadataKeyWithNUL: a metadata or filter key holding a NUL byte is
// refused. The lexical index keys its filter bitmaps "key NUL value", so
// {"a\x00b": "c"} and {"a": "b\x00c"} shared one: the retriever's top-k
// held a document outside the filter, the engine dropped it and lost the
// one that matched.
func TestMetadataKeyWithNUL(t *testing.T) {
	e := openCfg(t, "", engine.DefaultConfig())
	b := e.NewBatch()
	b.Add(engine.Document{ID: "wrong", Text: "apple apple apple", Metadata: map[string]string{"a\x00b": "c"}})
	if err := e.Commit(context.Background(), b); !errors.Is(err, engine.ErrInvalidDocument) {
		t.Fatalf("metadata key with NUL: %v, want ErrInvalidDocument", err)
	}
	commit(t, e, engine.Document{ID: "right", Text: "apple pie", Metadata: map[string]string{"a": "b\x00c"}})
	res, err := e.Search(context.Background(), engine.Request{Query: "apple", Candidates: 1, Filter: map[string]string{"a": "b\x00c"}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Document.ID != "right" {
		t.Fatalf("filter on a value with NUL: %+v %v", res, err)
	}
	_, err = e.Search(context.Background(), engine.Request{Query: "apple", Filter: map[string]string{"a\x00b": "c"}})
	if !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("filter key with NUL: %v, want ErrInvalidRequest", err)
	}
}

// TestBatchLastOperationWins: a batch's operations on one document apply
// in order and the last wins (the batch rule), in every tenant on its own;
// Batch.Validate names the first bad operation.
func TestBatchLastOperationWins(t *testing.T) {
	ctx := context.Background()
	e := openCfg(t, "", engine.DefaultConfig())
	commit(t, e, engine.Document{ID: "gone", Tenant: "a", Text: "to be deleted"})
	b := e.NewBatch()
	b.Add(engine.Document{ID: "twice", Tenant: "a", Text: "first"}, engine.Document{ID: "twice", Tenant: "a", Text: "second"})
	b.Add(engine.Document{ID: "added-deleted", Tenant: "a", Text: "never visible"})
	b.DeleteIn("a", "added-deleted", "gone")
	b.DeleteIn("b", "back")
	b.Add(engine.Document{ID: "back", Tenant: "b", Text: "deleted then added"}, engine.Document{ID: "gone", Tenant: "b", Text: "other tenant"})
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tenant, id, text string // "" text: absent
	}{
		{"a", "twice", "second"}, {"a", "added-deleted", ""}, {"a", "gone", ""},
		{"b", "back", "deleted then added"}, {"b", "gone", "other tenant"},
	} {
		d, ok := e.GetIn(tc.tenant, tc.id)
		if ok != (tc.text != "") || d.Text != tc.text {
			t.Errorf("%s/%s = %q %v, want %q", tc.tenant, tc.id, d.Text, ok, tc.text)
		}
	}
	if res, err := e.Search(ctx, engine.Request{Query: "visible first", Tenant: "a"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("replaced or deleted text found: %v %v", err, res)
	}
	bad := e.NewBatch()
	bad.Add(engine.Document{ID: "ok", Text: "fine"})
	bad.DeleteIn("a", "x", "")
	var oe *engine.OpError
	if err := bad.Validate(); !errors.As(err, &oe) || oe.Op != 2 || !errors.Is(err, engine.ErrInvalidDocument) {
		t.Fatalf("Validate = %v, want op 2 refused", err)
	}
	if err := e.Commit(ctx, bad); !errors.Is(err, engine.ErrInvalidDocument) {
		t.Fatalf("Commit = %v, want ErrInvalidDocument", err)
	}
}
