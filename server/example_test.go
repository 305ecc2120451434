package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/server"
)

// lengthScorer scores a pair by document length: a stand-in for a
// cross-encoder.
type lengthScorer struct{}

func (lengthScorer) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	out := make([]float32, len(pairs))
	for i, p := range pairs {
		out[i] = float32(len(p.Doc)) / 10
	}
	return out, models.Usage{Pairs: len(pairs), Batches: 1, Tokens: 3 * len(pairs)}, nil
}

// A server over a PairScorer answers Cohere-shape rerank requests (here
// Cohere v2's: index and score, no documents).
func Example() {
	cfg := server.DefaultConfig()
	s, err := server.New(cfg, server.Services{Scorers: map[string]server.PairScorer{cfg.RerankModel: lengthScorer{}}})
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
