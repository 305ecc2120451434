package engine_test

import (
	"context"
	"fmt"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

func Example() {
	ctx := context.Background()
	// In production pass ONNX-backed models (WithEmbedder too); the fake
	// reranker is deterministic. Without an embedder search is BM25 only.
	e, err := engine.Open("", engine.DefaultConfig(),
		engine.WithReranker("fast", &enginetest.OverlapReranker{}))
	if err != nil {
		panic(err)
	}
	defer e.Close()

	b := e.NewBatch()
	b.Add(
		engine.Document{ID: "a", Tenant: "acme", Text: "Goroutines communicate over channels.", Links: []string{"b"}},
		engine.Document{ID: "b", Tenant: "acme", Text: "A select statement multiplexes operations."},
		engine.Document{ID: "x", Tenant: "other", Text: "Channels channels channels."},
	)
	if err := e.Commit(ctx, b); err != nil {
		panic(err)
	}
	res, err := e.Search(ctx, engine.Request{
		Query:  "channels",
		Tenant: "acme",
		Rerank: "fast",
		Expand: engine.Expansion{Hops: 1},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Fallbacks[0].Code)
	for _, h := range res.Hits {
		fmt.Printf("%d %s %s reranked=%v\n", h.Provenance.FinalRank, h.Document.ID, h.Provenance.Origin.Kind, h.Provenance.Reranked)
	}
	// Output:
	// no_embedder
	// 1 a retrieved reranked=true
	// 2 b expanded reranked=true
}
