package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// randomCorpus builds n documents over `tenants` tenants of very different
// sizes (t0 large, later ones tiny), a 12-word vocabulary so that queries
// match across tenants, random metadata and links that often point into
// other tenants.
func randomCorpus(rng *rand.Rand, n, tenants int) []engine.Document {
	docs := make([]engine.Document, n)
	for i := range docs {
		t := 0
		for t < tenants-1 && rng.IntN(2) == 0 {
			t++
		}
		words := make([]byte, 0, 64)
		for w := 0; w < 3+rng.IntN(8); w++ {
			words = fmt.Appendf(words, "w%d ", rng.IntN(12))
		}
		docs[i] = engine.Document{
			ID:       fmt.Sprintf("d%04d", i),
			Tenant:   fmt.Sprintf("t%d", t),
			Text:     string(words),
			Metadata: map[string]string{"color": []string{"red", "blue"}[rng.IntN(2)]},
			Source:   fmt.Sprintf("file%d", rng.IntN(4)),
			Span:     engine.Span{Start: i % 20, End: i%20 + 1 + rng.IntN(3)},
		}
		for l := 0; l < rng.IntN(4); l++ {
			docs[i].Links = append(docs[i].Links, fmt.Sprintf("d%04d", rng.IntN(n+5))) // some dangling
		}
	}
	return docs
}

func randomRequests(rng *rand.Rand, n, tenants int) []engine.Request {
	fusions := []engine.Fusion{engine.FusionRRF, engine.FusionWeighted, engine.FusionRelative}
	out := make([]engine.Request, n)
	for i := range out {
		r := engine.Request{
			Query:      fmt.Sprintf("w%d w%d", rng.IntN(12), rng.IntN(12)),
			Tenant:     fmt.Sprintf("t%d", rng.IntN(tenants+1)), // t<tenants> is empty
			TopK:       1 + rng.IntN(60),
			Candidates: 1 + rng.IntN(80),
			Fusion:     fusions[rng.IntN(3)],
			Alpha:      engine.Float(rng.Float64()),
			Expand:     engine.Expansion{Hops: rng.IntN(4), Decay: rng.Float64(), Seeds: rng.IntN(10)},
		}
		if rng.IntN(2) == 0 {
			r.Rerank = "fast"
		}
		if rng.IntN(3) == 0 {
			r.Filter = map[string]string{"color": []string{"red", "blue"}[rng.IntN(2)]}
		}
		if rng.IntN(3) == 0 {
			r.MMRLambda = 0.1 + 0.9*rng.Float64()
		}
		if rng.IntN(4) == 0 {
			r.TokenBudget = 5 + rng.IntN(40)
		}
		out[i] = r
	}
	return out
}

// TestTenantIsolationProperty runs 10,000 random searches (every fusion
// mode, with and without rerank, MMR and expansion over links that cross
// tenants, k above the tenant's size) and checks that no hit and no passage
// ever comes from another tenant or fails the filter.
func TestTenantIsolationProperty(t *testing.T) {
	const tenants = 6
	rng := rand.New(rand.NewPCG(42, 42))
	docs := randomCorpus(rng, 400, tenants)
	byID := map[string]engine.Document{}
	for _, d := range docs {
		byID[d.ID] = d
	}
	e := open(t, "", engine.WithEmbedder(enginetest.NewHashEmbedder(16)), engine.WithReranker("fast", &enginetest.OverlapReranker{}))
	commit(t, e, docs...)
	n := 10000
	if testing.Short() {
		n = 1000
	}
	ctx := context.Background()
	expanded := 0
	for i, req := range randomRequests(rng, n, tenants) {
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
		inHits := map[string]bool{}
		for _, h := range res.Hits {
			d := byID[h.Document.ID]
			if d.Tenant != req.Tenant || h.Document.Tenant != req.Tenant {
				t.Fatalf("search %d (%+v): foreign document %s of tenant %q", i, req, d.ID, d.Tenant)
			}
			for k, v := range req.Filter {
				if d.Metadata[k] != v {
					t.Fatalf("search %d: %s fails filter %v", i, d.ID, req.Filter)
				}
			}
			if h.Provenance.Origin.Kind == engine.OriginExpanded {
				expanded++
			}
			inHits[h.Document.ID] = true
		}
		if len(res.Hits) > req.TopK {
			t.Fatalf("search %d: %d hits for top_k %d", i, len(res.Hits), req.TopK)
		}
		for _, p := range res.Passages {
			for _, part := range p.Parts {
				if !inHits[part.ID] {
					t.Fatalf("search %d: passage part %s not among hits", i, part.ID)
				}
			}
		}
		if req.TokenBudget > 0 && res.Tokens > req.TokenBudget-req.Reserve {
			t.Fatalf("search %d: %d tokens over budget %d", i, res.Tokens, req.TokenBudget)
		}
	}
	if expanded == 0 {
		t.Error("no expanded hit in any search: the property test does not exercise expansion")
	}
}
