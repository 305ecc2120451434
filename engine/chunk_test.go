package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
)

// filler is n words that share nothing with the test queries.
func filler(word string, n int) string {
	return strings.TrimSpace(strings.Repeat(word+" ", n))
}

// TestChunkedRerankProvenance checks the rerank stage with chunking: the
// long document's relevant passage, far past the reranker's window, is
// found, and Provenance.RerankSpan locates it in Document.Text (the
// reranker read the title too).
func TestChunkedRerankProvenance(t *testing.T) {
	wr := &enginetest.WindowReranker{Window: 8}
	plain := &enginetest.OverlapReranker{}
	cached, err := cache.NewReranker(plain, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	e := open(t, "", engine.WithReranker("windows", wr), engine.WithReranker("plain", plain), engine.WithReranker("cached", cached))
	long := filler("lorem", 40) + " the zebra eats striped grass quickly " + filler("ipsum", 40)
	commit(t, e,
		engine.Document{ID: "long", Title: "Savanna notes", Text: long},
		engine.Document{ID: "short", Text: "a zebra"},
		engine.Document{ID: "other", Text: "grass " + filler("dolor", 30)},
	)
	ch := models.Chunking{Stride: 4}
	res, err := e.Search(context.Background(), engine.Request{Query: "zebra striped grass", Rerank: "windows", Chunking: ch})
	if err != nil {
		t.Fatal(err)
	}
	if res.HasFallback(engine.FallbackNoChunking) || res.Reranked != 3 {
		t.Fatalf("fallbacks %v, reranked %d", res.Fallbacks, res.Reranked)
	}
	top := res.Hits[0]
	if top.Document.ID != "long" || top.Score != 1 {
		t.Fatalf("top hit %s score %v, want long with every query word in one window", top.Document.ID, top.Score)
	}
	sp := top.Provenance.RerankSpan
	if sp == nil {
		t.Fatal("no rerank span on a chunked hit")
	}
	got := top.Document.Text[sp.Start:sp.End]
	if !strings.Contains(got, "zebra eats striped grass") || len(strings.Fields(got)) > wr.Window {
		t.Fatalf("span %v is %q", *sp, got)
	}
	for _, h := range res.Hits {
		if h.Provenance.RerankSpan == nil || h.Provenance.RerankSpan.End > len(h.Document.Text) {
			t.Fatalf("hit %s: span %v", h.Document.ID, h.Provenance.RerankSpan)
		}
	}
	// A document within one window is that window, whole.
	for _, h := range res.Hits {
		if sp := h.Provenance.RerankSpan; h.Document.ID == "short" && *sp != (engine.Span{Start: 0, End: 7}) {
			t.Fatalf("short: span %v", *sp)
		}
	}
	// The same hit's provenance in JSON.
	b, err := json.Marshal(top.Provenance)
	if err != nil || !strings.Contains(string(b), `"rerank_span":{"start":`) {
		t.Fatalf("provenance JSON %s (%v)", b, err)
	}

	// Without chunking the same reranker truncates nothing here but names
	// no span.
	res, err = e.Search(context.Background(), engine.Request{Query: "zebra striped grass", Rerank: "windows"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hits[0].Provenance.RerankSpan != nil {
		t.Fatalf("span without chunking: %v", res.Hits[0].Provenance.RerankSpan)
	}

	// Rerankers that do not chunk (directly or behind the cache) truncate
	// and say so.
	for _, name := range []string{"plain", "cached"} {
		res, err = e.Search(context.Background(), engine.Request{Query: "zebra striped grass", Rerank: name, Chunking: ch})
		if err != nil {
			t.Fatal(err)
		}
		if !res.HasFallback(engine.FallbackNoChunking) || res.Reranked != 3 || res.Hits[0].Provenance.RerankSpan != nil {
			t.Fatalf("%s: fallbacks %v, reranked %d, span %v", name, res.Fallbacks, res.Reranked, res.Hits[0].Provenance.RerankSpan)
		}
	}

	// A cascade chunks both stages; the span is the second stage's.
	res, err = e.Search(context.Background(), engine.Request{Query: "zebra striped grass", Rerank: "windows",
		Cascade: engine.Cascade{First: "plain", Keep: 2}, Chunking: ch})
	if err != nil {
		t.Fatal(err)
	}
	if !res.HasFallback(engine.FallbackNoChunking) || res.Reranked != 2 || res.Hits[0].Provenance.RerankSpan == nil || res.Hits[2].Provenance.RerankSpan != nil {
		t.Fatalf("cascade: fallbacks %v, reranked %d, hits %+v", res.Fallbacks, res.Reranked, res.Hits)
	}
}

func TestRequestChunkingValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  engine.Request
		ok   bool
	}{
		{"off", engine.Request{Query: "q"}, true},
		{"on", engine.Request{Query: "q", Rerank: "fast", Chunking: models.Chunking{Stride: 64, Aggregate: models.AggregateMeanTopK, TopK: 2}}, true},
		{"without rerank", engine.Request{Query: "q", Chunking: models.Chunking{Stride: 64}}, false},
		{"invalid", engine.Request{Query: "q", Rerank: "fast", Chunking: models.Chunking{Stride: 64, Aggregate: "sum"}}, false},
		{"no stride", engine.Request{Query: "q", Rerank: "fast", Chunking: models.Chunking{MaxChunks: 3}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, engine.ErrInvalidRequest)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestRequestChunkingJSON(t *testing.T) {
	var r engine.Request
	in := `{"query":"q","rerank":"fast","chunking":{"stride":128,"max_chunks_per_doc":8,"aggregate":"mean_top_k","top_k":2}}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	want := models.Chunking{Stride: 128, MaxChunks: 8, Aggregate: models.AggregateMeanTopK, TopK: 2}
	if r.Chunking != want {
		t.Fatalf("decoded %+v", r.Chunking)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"chunking":{"stride":128,"max_chunks_per_doc":8,"aggregate":"mean_top_k","top_k":2}`) {
		t.Fatalf("encoded %s", b)
	}
	b, _ = json.Marshal(engine.Request{Query: "q"})
	if strings.Contains(string(b), "chunking") {
		t.Fatalf("zero chunking encoded: %s", b)
	}
}
