package main

import (
	"context"
	"errors"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
)

// TestIndexTenantIsolation runs the engine adapter over a real in-memory
// engine (BM25 only): scoped batches cannot overwrite or delete another
// tenant's IDs, and searches see only their tenant.
func TestIndexTenantIsolation(t *testing.T) {
	e, err := engine.Open("", engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ix := &index{e: e}
	ctx := context.Background()
	apply := func(tenant string, b server.DocumentBatch) (server.CommitResult, error) {
		b.Tenant, b.Scoped = tenant, true
		for i := range b.Upserts {
			b.Upserts[i].Tenant = tenant
		}
		return ix.Apply(ctx, b)
	}
	if _, err := apply("a", server.DocumentBatch{Upserts: []server.Document{{ID: "1", Text: "cats purr softly", Span: server.Span{Start: 1, End: 4}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply("b", server.DocumentBatch{Upserts: []server.Document{{ID: "2", Text: "cats of tenant b"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply("b", server.DocumentBatch{Upserts: []server.Document{{ID: "1", Text: "stolen"}}}); !errors.Is(err, server.ErrForbidden) {
		t.Fatalf("overwrite of another tenant's id: %v, want ErrForbidden", err)
	}
	res, err := apply("b", server.DocumentBatch{Deletes: []string{"1"}})
	if err != nil || res.Deleted != 0 {
		t.Fatalf("cross-tenant delete: %+v %v", res, err)
	}
	for _, tc := range []struct{ tenant, want string }{{"a", "1"}, {"b", "2"}} {
		r, err := ix.Search(ctx, server.SearchRequest{Query: "cats", Tenant: tc.tenant})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) != 1 || r.Hits[0].Document.ID != tc.want || r.Hits[0].Document.Tenant != tc.tenant || len(r.Hits[0].Provenance) == 0 {
			t.Fatalf("tenant %s: %+v", tc.tenant, r.Hits)
		}
		if _, ok := r.Timings["total"]; !ok {
			t.Fatalf("timings %v", r.Timings)
		}
	}
	if r, _ := ix.Search(ctx, server.SearchRequest{Query: "cats", Tenant: "a"}); r.Hits[0].Document.Span != (server.Span{Start: 1, End: 4}) {
		t.Fatalf("span lost: %+v", r.Hits[0].Document)
	}
	res, err = apply("a", server.DocumentBatch{Deletes: []string{"1"}})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("own delete: %+v %v", res, err)
	}
	if _, err := ix.Search(ctx, server.SearchRequest{Query: " ", Tenant: "a"}); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("blank query: %v, want ErrInvalid", err)
	}
	if _, err := ix.Apply(ctx, server.DocumentBatch{Upserts: []server.Document{{ID: "x", Span: server.Span{Start: 5, End: 1}}}}); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("bad span: %v, want ErrInvalid", err)
	}
}
