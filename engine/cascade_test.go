package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

// lengthReranker scores a document by its length (longer is better) and
// records what it was asked to score.
type lengthReranker struct {
	mu   sync.Mutex
	seen []string
}

func (r *lengthReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

func (r *lengthReranker) ScoreSpans(context.Context, string, []string, models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

func (r *lengthReranker) Capabilities() models.Capabilities { return models.Capabilities{} }

func (r *lengthReranker) Load() error { return nil }

func (r *lengthReranker) Score(_ context.Context, _ string, docs []string) ([]float32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]float32, len(docs))
	for i, d := range docs {
		r.seen = append(r.seen, d)
		out[i] = float32(len(d))
	}
	return out, nil
}

func TestCascade(t *testing.T) {
	first, second := &enginetest.OverlapReranker{}, &lengthReranker{}
	e := open(t, "", engine.WithReranker("fast", first), engine.WithReranker("accurate", second))
	var docs []engine.Document
	for i := range 12 {
		// Documents 0..5 hold both query words (fast scores them 1), the
		// rest one (0.5); lengths grow with i.
		text := "apple " + fmt.Sprint(slices.Repeat([]string{"x"}, i))
		if i < 6 {
			text = "apple banana " + fmt.Sprint(slices.Repeat([]string{"y"}, i))
		}
		docs = append(docs, engine.Document{ID: fmt.Sprintf("d%02d", i), Text: text})
	}
	commit(t, e, docs...)
	req := engine.Request{Query: "apple banana", TopK: 12, Rerank: "accurate", Cascade: engine.Cascade{First: "fast", Keep: 3}}
	res, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstStage != 12 || res.Reranked != 3 || res.Degraded || res.HasFallback(engine.FallbackRerankUnknown) {
		t.Fatalf("first stage %d, reranked %d, degraded %v, fallbacks %v", res.FirstStage, res.Reranked, res.Degraded, res.Fallbacks)
	}
	if len(second.seen) != 3 {
		t.Fatalf("second stage scored %d documents, want 3", len(second.seen))
	}
	// The second stage saw three of the first stage's best (d00..d05) and
	// ordered them by length; the rest follow by the first stage's score.
	for i, h := range res.Hits {
		p := h.Provenance
		switch {
		case !p.FirstStage:
			t.Fatalf("hit %d %s: no first-stage score", i, h.Document.ID)
		case i < 3 && (!p.Reranked || h.Score != p.RerankScore || h.Document.ID > "d05"):
			t.Fatalf("hit %d %+v: want a second-stage hit among d00..d05", i, h)
		case i > 0 && i < 3 && p.RerankScore > res.Hits[i-1].Provenance.RerankScore:
			t.Fatalf("second-stage hits out of order: %v", hitIDs(res))
		case i >= 3 && (p.Reranked || h.Score != p.FirstStageScore):
			t.Fatalf("hit %d %+v: want a first-stage-only hit", i, h)
		case i > 3 && p.FirstStageScore > res.Hits[i-1].Provenance.FirstStageScore:
			t.Fatalf("first-stage hits out of order: %v", hitIDs(res))
		}
	}
	if first.Docs.Load() != 12 {
		t.Fatalf("first stage scored %d documents, want 12", first.Docs.Load())
	}

	// An unknown first stage falls back to the second profile alone.
	req.Cascade.First = "nope"
	res, err = e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.HasFallback(engine.FallbackRerankUnknown) || res.Reranked != 12 || res.FirstStage != 0 {
		t.Fatalf("unknown first stage: %+v", res)
	}

	for _, c := range []engine.Request{
		{Query: "a", Cascade: engine.Cascade{First: "fast", Keep: 3}},
		{Query: "a", Rerank: "accurate", Cascade: engine.Cascade{First: "fast"}},
		{Query: "a", Rerank: "fast", Cascade: engine.Cascade{First: "fast", Keep: 2}},
		{Query: "a", Rerank: "fast", Cascade: engine.Cascade{Keep: 2}},
	} {
		if _, err := e.Search(context.Background(), c); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%+v: err %v, want ErrInvalidRequest", c.Cascade, err)
		}
	}
}

// TestCascadeMMRLambdaOne: MMR with λ = 1 is pure relevance and keeps a
// cascade's final order (the second stage's, then what only the first
// stage scored, by its score, then the rest); MMR had ranked the
// first-stage tier by fused score.
func TestCascadeMMRLambdaOne(t *testing.T) {
	e, err := engine.Open("", engine.DefaultConfig(), engine.WithReranker("len", &lengthReranker{}), engine.WithReranker("ov", &enginetest.OverlapReranker{}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := e.NewBatch()
	for i := range 8 {
		b.Add(engine.Document{ID: fmt.Sprintf("d%d", i), Text: "apple" + strings.Repeat(" filler", i*3)})
	}
	if err := e.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	req := engine.Request{Query: "apple", TopK: 8, Rerank: "ov", Cascade: engine.Cascade{First: "len", Keep: 2}}
	order := func(req engine.Request) []string {
		t.Helper()
		res, err := e.Search(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Hits {
			out = append(out, fmt.Sprintf("%s(%.0f)", h.Document.ID, h.Score))
		}
		return out
	}
	plain := order(req)
	req.MMRLambda = 1
	if got := order(req); !slices.Equal(got, plain) {
		t.Fatalf("λ = 1 changed the order:\n no MMR: %v\n λ = 1:  %v", plain, got)
	}
}
