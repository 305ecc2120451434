package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/server"
)

// lengthScorer scores a document by its length: a stand-in for a
// cross-encoder.
var lengthScorer = models.RerankFunc(func(_ context.Context, _ string, docs []string) ([]float32, error) {
	out := make([]float32, len(docs))
	for i, d := range docs {
		out[i] = float32(len(d)) / 10
	}
	return out, nil
})

// A server over a models.Reranker, behind its queue as backend.Open
// serves a model, answers Cohere-shape rerank requests (here Cohere v2's:
// index and score, no documents).
func Example() {
	cfg := server.DefaultConfig()
	q, err := queue.NewReranker(lengthScorer, cfg.Rerank)
	if err != nil {
		panic(err)
	}
	defer q.Close()
	s, err := server.New(cfg, server.Services{
		Rerankers: map[string]models.Reranker{cfg.RerankModel: q},
		Queues:    map[string]server.QueueStats{cfg.RerankModel: q},
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	resp, err := ts.Client().Post(ts.URL+"/v2/rerank", "application/json",
		strings.NewReader(`{"query": "q", "documents": ["a", "abc", "ab"], "top_n": 2}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// Drop the random id for a stable output.
	out := string(body)
	out = out[strings.Index(out, `"results"`):]
	// input_tokens are the pairs' tokens, [CLS] q [SEP] doc [SEP] each,
	// as the server counts them (estimated here: no Tokenizer).
	fmt.Println(resp.StatusCode, strings.TrimSpace(out))
	// Output: 200 "results":[{"index":1,"relevance_score":0.574442519725829},{"index":2,"relevance_score":0.5498339980501348}],"meta":{"billed_units":{"search_units":1},"tokens":{"input_tokens":15}}}
}
