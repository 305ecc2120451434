package ort_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// Example_library is the README's library example, line for line between
// the README markers (TestReadmeLibraryExample keeps the two identical and
// runs it against generated cross-encoder weights and the real embedder
// when `make models` has fetched it). It has no Output comment: it needs
// ONNX Runtime and model directories, so go test only compiles it.
func Example_library() {
	// README begin
	ctx := context.Background()
	// An empty Dir resolves the profile: embed is $HYBRANK_REAL_MODELS/all-minilm-l6-v2
	// (make models) else $HYBRANK_MODELS/embed; balanced is $HYBRANK_MODELS/balanced
	// (bench models --out DIR). Set Dir to use any HF ONNX export or sentence-transformers dir.
	embCfg, _ := models.ProfileConfig(models.ProfileEmbed)
	emb, err := ort.NewBiEncoder(embCfg) // loads lazily, on first use (engine.Open warms it)
	if err != nil {
		log.Fatal(err)
	}
	defer emb.Close()
	rrCfg, _ := models.ProfileConfig(models.ProfileBalanced)
	rr, err := ort.NewCrossEncoder(rrCfg)
	if err != nil {
		log.Fatal(err)
	}
	defer rr.Close()

	e, err := engine.Open("index-dir", engine.DefaultConfig(),
		engine.WithEmbedder(emb), engine.WithReranker("balanced", rr))
	if err != nil {
		log.Fatal(err) // names the cause: a missing model directory, ONNX Runtime not found (HYBRANK_ORT_LIB), a locked index
	}
	defer e.Close()

	b := e.NewBatch()
	b.Add(engine.Document{ID: "a", Tenant: "acme", Title: "Channels", Text: "Goroutines communicate over channels.",
		Source: "doc/go.md", Span: engine.Span{Start: 10, End: 14}, Links: []string{"b"}},
		engine.Document{ID: "b", Tenant: "acme", Text: "A select statement waits on several channel operations."})
	if err := e.Commit(ctx, b); err != nil { // atomic, and durable when it returns (write-ahead log)
		log.Fatal(err)
	}
	if err := e.Snapshot(); err != nil { // crash-safe, versioned, checksummed; truncates the log
		log.Fatal(err)
	}

	res, err := e.Search(ctx, engine.Request{
		Query: "how do goroutines talk", Tenant: "acme", TopK: 10,
		Fusion: engine.FusionRRF, Rerank: "balanced", Budget: 500 * time.Millisecond,
		Expand: engine.Expansion{Hops: 1, Decay: 0.5}, TokenBudget: 2000, Reserve: 200,
	})
	if err != nil {
		log.Fatal(err)
	}
	// Provenance: BM25/dense/fused/rerank scores and ranks, origin, final rank.
	// Passages: packed into the token budget. Also Degraded, Reranked, Fallbacks, Timings.
	for _, h := range res.Hits {
		fmt.Println(h.Provenance.FinalRank, h.Document.ID, h.Provenance.Origin.Kind)
	}
	fmt.Println(len(res.Passages), "passages")
	// README end
}
