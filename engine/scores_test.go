package engine_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

// TestRerankNonFiniteScores: a reranker that answers ±Inf (an overflowing
// fp16 logit) or NaN failed: the result falls back to the fused order with
// rerank_error, encodes as JSON, and MMR over it does not panic.
func TestRerankNonFiniteScores(t *testing.T) {
	for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		r := models.RerankFunc(func(_ context.Context, _ string, docs []string) ([]float32, error) {
			out := make([]float32, len(docs))
			for i := range out {
				out[i] = float32(i)
			}
			out[0] = bad
			return out, nil
		})
		e := open(t, "", engine.WithReranker("bad", r))
		commit(t, e, corpus...)
		for _, lambda := range []float64{0, 0.7} {
			res, err := e.Search(context.Background(), engine.Request{Query: "channels goroutines select", Tenant: "acme", Rerank: "bad", MMRLambda: lambda})
			if err != nil {
				t.Fatalf("score %v, λ %v: %v", bad, lambda, err)
			}
			if !hasFallback(res, engine.FallbackRerankError) || len(res.Hits) == 0 || res.Hits[0].Provenance.Reranked {
				t.Fatalf("score %v, λ %v: fallbacks %+v, hits %+v: want the fused order and rerank_error", bad, lambda, res.Fallbacks, res.Hits)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("score %v, λ %v: the result does not encode: %v", bad, lambda, err)
			}
		}
	}
}

// hasFallback reports whether res records code.
func hasFallback(res *engine.Result, code engine.FallbackCode) bool {
	for _, f := range res.Fallbacks {
		if f.Code == code {
			return true
		}
	}
	return false
}

// slowQueryEmbedder embeds queries only after sleeping past any budget of
// the tests, whatever its context says (documents at once).
type slowQueryEmbedder struct {
	*enginetest.HashEmbedder
	sleep time.Duration
}

func (s slowQueryEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := s.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts)}, err
}

func (s slowQueryEmbedder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	if in == models.InputQuery {
		time.Sleep(s.sleep)
	}
	return s.HashEmbedder.Embed(ctx, in, texts)
}

// TestMMRStopsAtBudget: MMR costs a similarity per candidate per place, so
// it runs under the budget too. The query embedder here returns after the
// whole budget has passed, so MMR starts with no time left: every place
// holds the final order, the result is Degraded with mmr_budget, and
// nothing is lost.
func TestMMRStopsAtBudget(t *testing.T) {
	const budget = 20 * time.Millisecond
	emb := slowQueryEmbedder{HashEmbedder: enginetest.NewHashEmbedder(16), sleep: 3 * budget}
	e := open(t, "", engine.WithEmbedder(emb))
	commit(t, e, corpus...)
	req := engine.Request{Query: "channels goroutines select", Tenant: "acme", MMRLambda: 0.5, TopK: 3, Budget: budget}
	res, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Degraded || !hasFallback(res, engine.FallbackMMRBudget) {
		t.Fatalf("degraded %v, fallbacks %+v: want mmr_budget", res.Degraded, res.Fallbacks)
	}
	plain := req
	plain.MMRLambda = 0
	want, err := e.Search(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hitIDs(res), hitIDs(want); len(got) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("hits %v, want the final order without MMR %v", got, want)
	}
}
