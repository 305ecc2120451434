package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// TestIndexTenantIsolation runs the Index over a real in-memory engine
// (BM25 only): document IDs are scoped to a tenant, so a batch of one
// tenant cannot overwrite or delete another tenant's document with the same
// ID, and searches see only their tenant.
func TestIndexTenantIsolation(t *testing.T) {
	e, ix := memoryIndex(t)
	ctx := context.Background()
	apply := func(tenant string, b server.DocumentBatch) (server.CommitResult, error) {
		b.Tenant = tenant
		for i := range b.Upserts {
			b.Upserts[i].Tenant = tenant
		}
		return ix.Apply(ctx, b)
	}
	if _, err := apply("a", server.DocumentBatch{Upserts: []engine.Document{{ID: "1", Text: "cats purr softly", Span: engine.Span{Start: 1, End: 4}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply("b", server.DocumentBatch{Upserts: []engine.Document{{ID: "2", Text: "cats of tenant b"}}}); err != nil {
		t.Fatal(err)
	}
	// Tenant b's "1" is its own document: writing and deleting it leaves
	// tenant a's "1" alone.
	if _, err := apply("b", server.DocumentBatch{Upserts: []engine.Document{{ID: "1", Text: "not a's"}}}); err != nil {
		t.Fatalf("same id in another tenant: %v", err)
	}
	if d, ok := e.GetIn("a", "1"); !ok || d.Text != "cats purr softly" {
		t.Fatalf("tenant a's document after b wrote the same id: %+v %v", d, ok)
	}
	res, err := apply("b", server.DocumentBatch{Deletes: []string{"1"}})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("delete of b's own id 1: %+v %v", res, err)
	}
	if _, ok := e.GetIn("a", "1"); !ok {
		t.Fatal("tenant b's delete removed tenant a's document")
	}
	for _, tc := range []struct{ tenant, want string }{{"a", "1"}, {"b", "2"}} {
		r, err := ix.Search(ctx, engine.Request{Query: "cats", Tenant: tc.tenant})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) != 1 || r.Hits[0].Document.ID != tc.want || r.Hits[0].Document.Tenant != tc.tenant {
			t.Fatalf("tenant %s: %+v", tc.tenant, r.Hits)
		}
		// On the wire the result carries provenance and the total time.
		wire, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(wire), `"provenance":{"bm25_score":`) || !strings.Contains(string(wire), `"total":`) {
			t.Fatalf("tenant %s wire form: %s", tc.tenant, wire)
		}
	}
	if r, _ := ix.Search(ctx, engine.Request{Query: "cats", Tenant: "a"}); r.Hits[0].Document.Span != (engine.Span{Start: 1, End: 4}) {
		t.Fatalf("span lost: %+v", r.Hits[0].Document)
	}
	res, err = apply("a", server.DocumentBatch{Deletes: []string{"1"}})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("own delete: %+v %v", res, err)
	}
	if _, err := ix.Search(ctx, engine.Request{Query: " ", Tenant: "a"}); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("blank query: %v, want ErrInvalid", err)
	}
	if _, err := ix.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "x", Span: engine.Span{Start: 5, End: 1}}}}); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("bad span: %v, want ErrInvalid", err)
	}
}

// TestIndexBatchRule: a batch is the engine's, upserts in order then
// deletes, the last operation on a document winning (an upsert and a
// delete of one document deletes it; of two upserts the second stays); an
// ID deleted twice in a batch counts once; the same ID upserted in two
// tenants is two documents; a bad document is refused with the engine's
// message.
func TestIndexBatchRule(t *testing.T) {
	e, ix := memoryIndex(t)
	ctx := context.Background()
	res, err := ix.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "a", Text: "x"}, {ID: "a", Tenant: "t", Text: "y"}}})
	if err != nil || res.Upserted != 2 {
		t.Fatalf("same id in two tenants: %+v %v", res, err)
	}
	_, err = ix.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "n", Text: "new"}, {ID: "twice", Text: "first"}, {ID: "twice", Text: "second"}}, Deletes: []string{"n"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.GetIn("", "n"); ok {
		t.Fatal("a document upserted and deleted by one batch is stored")
	}
	if d, _ := e.GetIn("", "twice"); d.Text != "second" {
		t.Fatalf("a document upserted twice: %q, want the second", d.Text)
	}
	_, err = ix.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "ok", Text: "fine"}, {ID: "bad", Span: engine.Span{Start: 2, End: 1}}}})
	if !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), `engine: invalid document: document "bad": span [2,1) is not a range`) {
		t.Fatalf("bad span: %v, want ErrInvalid with the engine's message", err)
	}
	if _, ok := e.GetIn("", "ok"); ok {
		t.Fatal("a refused batch was applied")
	}
	res, err = ix.Apply(ctx, server.DocumentBatch{Deletes: []string{"a", "a", "missing"}})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("one existing id deleted twice: %+v %v, want deleted 1", res, err)
	}
	if _, ok := e.GetIn("t", "a"); !ok {
		t.Fatal("the delete in the default tenant removed tenant t's document")
	}
}

// memoryIndex is an Index over an in-memory engine (BM25 only), closed
// when the test ends.
func memoryIndex(t *testing.T) (*engine.Engine, *backend.Index) {
	t.Helper()
	e, err := engine.Open("", engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, backend.NewIndex(e)
}
