package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/engine"
)

// threeRerankers configures fast, balanced and accurate, each with an
// alias, and gives each its own scorer.
func threeRerankers(t *testing.T, mut func(*Config, *Services)) (*testServer, map[string]*fakeScorer) {
	t.Helper()
	fakes := map[string]*fakeScorer{"fast": {}, "balanced": {}, "accurate": {}}
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.RerankModels = []RerankerConfig{
			{Name: "fast", Aliases: []string{"ms-marco-TinyBERT-L-2-v2"}},
			{Name: "balanced", Aliases: []string{"ms-marco-MiniLM-L-6-v2"}},
			{Name: "accurate", Aliases: []string{"ms-marco-MiniLM-L-12-v2"}},
		}
		b.Scorers = map[string]PairScorer{}
		for n, f := range fakes {
			b.Scorers[n] = f
		}
		if mut != nil {
			mut(c, b)
		}
	})
	return ts, fakes
}

// calls returns how many batches each fake scorer has seen.
func calls(fakes map[string]*fakeScorer) map[string]int {
	out := map[string]int{}
	for n, f := range fakes {
		out[n] = len(f.batchSizes())
	}
	return out
}

// TestRerankModelPerRequest sends a request per model name (served names,
// aliases, the default's names and "") on every rerank route and shape,
// and checks that it reached that model's scorer only and that the
// response names that model.
func TestRerankModelPerRequest(t *testing.T) {
	ts, fakes := threeRerankers(t, nil)
	routes := []struct {
		path string
		body func(model string) map[string]any
	}{
		{"/v1/rerank", func(m string) map[string]any {
			return map[string]any{"model": m, "query": "cat", "documents": rerankDocs}
		}},
		{"/v2/rerank", func(m string) map[string]any {
			return map[string]any{"model": m, "query": "cat", "documents": rerankDocs}
		}},
		{"/rerank", func(m string) map[string]any {
			return map[string]any{"model": m, "query": "cat", "documents": rerankDocs}
		}},
		{"/rerank", func(m string) map[string]any { return map[string]any{"model": m, "query": "cat", "texts": rerankDocs} }},
	}
	for _, tc := range []struct{ model, want string }{
		{"", "fast"}, // the first entry is the default: rerank_model names none
		{"hybrank-rerank", "fast"},
		{"fast", "fast"},
		{"ms-marco-TinyBERT-L-2-v2", "fast"},
		{"balanced", "balanced"},
		{"ms-marco-MiniLM-L-6-v2", "balanced"},
		{"accurate", "accurate"},
		{"ms-marco-MiniLM-L-12-v2", "accurate"},
		{"rerank-v3.5", "fast"}, // a client's default name (ClientRerankAliases) means the default
	} {
		for _, r := range routes {
			before := calls(fakes)
			code, _, body := ts.do(t, "POST", r.path, "", r.body(tc.model))
			if code != 200 {
				t.Fatalf("%s model %q: %d %s", r.path, tc.model, code, body)
			}
			after := calls(fakes)
			for n := range fakes {
				if want := before[n] + map[bool]int{true: 1}[n == tc.want]; after[n] != want {
					t.Fatalf("%s model %q: scorer %q ran %d batches, want %d", r.path, tc.model, n, after[n]-before[n], want-before[n])
				}
			}
			if r.path == "/v1/rerank" {
				var resp rerankResponse
				mustJSON(t, body, &resp)
				if resp.Model != tc.want {
					t.Fatalf("model %q answered as %q, want %q", tc.model, resp.Model, tc.want)
				}
			}
		}
	}
	// A name no reranker answers to is 404 naming every served model and
	// its aliases, on every route.
	for _, r := range routes {
		code, _, body := ts.do(t, "POST", r.path, "", r.body("rerank-english-v2.0"))
		expectError(t, code, body, 404, TypeNotFound, `unknown rerank model "rerank-english-v2.0"; this server's rerank models are "fast" (or "ms-marco-TinyBERT-L-2-v2", "hybrank-rerank", "rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0", "jina-reranker-v2-base-multilingual"), "balanced" (or "ms-marco-MiniLM-L-6-v2"), "accurate" (or "ms-marco-MiniLM-L-12-v2")`)
	}
	// Embedding names are not rerankers.
	code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "hybrank-embed", "query": "q", "documents": []string{"a"}})
	expectError(t, code, body, 404, TypeNotFound, "unknown rerank model")
}

// rerank_model picks the default among rerank_models by name or alias,
// and rerank_aliases name the default.
func TestRerankDefaultModel(t *testing.T) {
	for _, tc := range []struct{ rerankModel, want string }{
		{"balanced", "balanced"},
		{"ms-marco-MiniLM-L-12-v2", "accurate"},
		{"my-default", "fast"},
	} {
		t.Run(tc.rerankModel, func(t *testing.T) {
			ts, fakes := threeRerankers(t, func(c *Config, _ *Services) {
				c.RerankModel, c.RerankAliases = tc.rerankModel, []string{"house-reranker"}
			})
			for _, model := range []string{"", tc.rerankModel, "house-reranker"} {
				before := calls(fakes)[tc.want]
				code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": model, "query": "q", "documents": []string{"a"}})
				var resp rerankResponse
				mustJSON(t, body, &resp)
				if code != 200 || resp.Model != tc.want || calls(fakes)[tc.want] != before+1 {
					t.Fatalf("model %q: %d %s, want it served by %q", model, code, body, tc.want)
				}
			}
			if got := ts.s.cfg.Rerankers()[0].Name; got != tc.want {
				t.Fatalf("Rerankers()[0] = %q, want the default %q", got, tc.want)
			}
		})
	}
}

// GET /v1/models lists every name of every served model, each model's
// served name first with its aliases, the default reranker first; a
// configured reranker without a scorer is not listed and answers 503.
func TestModelsListsEveryModel(t *testing.T) {
	ts, _ := threeRerankers(t, func(c *Config, b *Services) {
		c.EmbedAliases = []string{"embed"}
		c.ClientRerankAliases, c.ClientEmbedAliases = nil, nil // clientnames_test.go lists those
		delete(b.Scorers, "accurate")
	})
	code, _, body := ts.do(t, "GET", "/v1/models", "", nil)
	var list modelList
	mustJSON(t, body, &list)
	want := []modelEntry{
		{ID: "fast", Kind: "rerank", Root: "fast", Default: true, Aliases: []string{"ms-marco-TinyBERT-L-2-v2", "hybrank-rerank"}},
		{ID: "ms-marco-TinyBERT-L-2-v2", Kind: "rerank", Root: "fast", Default: true},
		{ID: "hybrank-rerank", Kind: "rerank", Root: "fast", Default: true},
		{ID: "balanced", Kind: "rerank", Root: "balanced", Aliases: []string{"ms-marco-MiniLM-L-6-v2"}},
		{ID: "ms-marco-MiniLM-L-6-v2", Kind: "rerank", Root: "balanced"},
		{ID: "hybrank-embed", Kind: "embed", Root: "hybrank-embed", Default: true, Aliases: []string{"embed"}},
		{ID: "embed", Kind: "embed", Root: "hybrank-embed", Default: true},
	}
	for i := range want {
		want[i].Object, want[i].OwnedBy = "model", "hybrank"
	}
	if code != 200 || list.Object != "list" || len(list.Data) != len(want) {
		t.Fatalf("/v1/models %d %s", code, body)
	}
	for i, e := range list.Data {
		if e.ID != want[i].ID || e.Kind != want[i].Kind || e.Root != want[i].Root || e.Default != want[i].Default || !slices.Equal(e.Aliases, want[i].Aliases) || e.Object != "model" {
			t.Errorf("data[%d] = %+v, want %+v", i, e, want[i])
		}
	}
	code, _, body = ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "accurate", "query": "q", "documents": []string{"a"}})
	expectError(t, code, body, 503, TypeUnavailable, `reranking model "accurate"`)
	code, _, body = ts.do(t, "GET", "/readyz", "", nil)
	var ready struct {
		Reranker  bool
		Rerankers []string
	}
	mustJSON(t, body, &ready)
	if code != 200 || !ready.Reranker || !slices.Equal(ready.Rerankers, []string{"fast", "balanced"}) {
		t.Fatalf("/readyz %d %s", code, body)
	}
}

// Each reranker has its own window (max_pair_tokens) and its own batcher
// and metrics, labelled with its name.
func TestRerankModelWindowAndMetrics(t *testing.T) {
	ts, _ := threeRerankers(t, func(c *Config, _ *Services) {
		c.RerankModels[0].MaxPairTokens = 6
	})
	tei := func(model string) map[string]any {
		return map[string]any{"model": model, "query": "q r", "texts": []string{"a b c"}}
	}
	code, _, body := ts.do(t, "POST", "/rerank", "", tei("fast"))
	expectError(t, code, body, 413, TypeTooLarge, `window of 6 (max_pair_tokens) of reranker "fast"`)
	if code, _, body := ts.do(t, "POST", "/rerank", "", tei("balanced")); code != 200 {
		t.Fatalf("balanced (window 512): %d %s", code, body)
	}
	if len(ts.s.rerankers) != 3 || ts.s.rerankers[0].batch == ts.s.rerankers[1].batch {
		t.Fatal("rerankers share a batcher")
	}
	ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "accurate", "query": "q", "documents": []string{"a", "b"}})
	_, _, metrics := ts.do(t, "GET", "/metrics", "", nil)
	for _, want := range []string{
		`hybrank_batch_items_count{kind="rerank",model="balanced"} 1`,
		`hybrank_batch_items_count{kind="rerank",model="accurate"} 1`,
		`hybrank_tokens_total{kind="rerank",model="accurate"}`,
		`hybrank_queue_items{kind="rerank",model="fast"} 0`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// recordingSearcher keeps the requests it was given.
type recordingSearcher struct {
	*fakeIndex
	mu   sync.Mutex
	reqs []engine.Request
}

func (r *recordingSearcher) Search(ctx context.Context, req engine.Request) (*engine.Result, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.fakeIndex.Search(ctx, req)
}

// /search's rerank and cascade.first take every name "model" takes; the
// Searcher gets the served name. Unknown names pass through for the
// engine to report as a fallback.
func TestSearchRerankNames(t *testing.T) {
	rs := &recordingSearcher{fakeIndex: newFakeIndex()}
	ts, _ := threeRerankers(t, func(_ *Config, b *Services) { b.Searcher = rs })
	for _, tc := range []struct{ rerank, first, wantRerank, wantFirst string }{
		{"ms-marco-MiniLM-L-12-v2", "hybrank-rerank", "accurate", "fast"},
		{"balanced", "", "balanced", ""},
		{"", "", "", ""},
		{"no-such-model", "", "no-such-model", ""},
	} {
		req := map[string]any{"query": "cat", "rerank": tc.rerank}
		if tc.first != "" {
			req["cascade"] = map[string]any{"first": tc.first, "keep": 5}
		}
		if code, _, body := ts.do(t, "POST", "/search", "", req); code != 200 {
			t.Fatalf("%v: %d %s", req, code, body)
		}
		got := rs.reqs[len(rs.reqs)-1]
		if got.Rerank != tc.wantRerank || got.Cascade.First != tc.wantFirst {
			t.Fatalf("%v: searcher got rerank %q, cascade.first %q; want %q, %q", req, got.Rerank, got.Cascade.First, tc.wantRerank, tc.wantFirst)
		}
	}
}

func TestRerankModelsValidate(t *testing.T) {
	three := func(c *Config) {
		c.RerankModels = []RerankerConfig{{Name: "fast"}, {Name: "balanced", Aliases: []string{"b"}}, {Name: "accurate"}}
	}
	checkConfigCases(t, []configCase{
		{"duplicate name", func(c *Config) { three(c); c.RerankModels[2].Name = "fast" }, `two rerank_models are named "fast"`},
		{"alias of two rerankers", func(c *Config) { three(c); c.RerankModels[2].Aliases = []string{"b"} }, `"b" names both reranker "balanced" and reranker "accurate"`},
		{"alias is another's name", func(c *Config) { three(c); c.RerankModels[0].Aliases = []string{"accurate"} }, `"accurate" names both reranker`},
		{"default alias is another's name", func(c *Config) { three(c); c.RerankAliases = []string{"balanced"} }, `"balanced" names both reranker "fast" and reranker "balanced"`},
		{"reranker named as the embedder", func(c *Config) { three(c); c.RerankModels[1].Aliases = []string{"hybrank-embed"} }, `"hybrank-embed" names both a reranker and the embedder`},
		{"empty name", func(c *Config) { three(c); c.RerankModels[1].Name = " " }, "rerank_models[1].name is empty"},
		{"empty alias", func(c *Config) { three(c); c.RerankModels[1].Aliases = []string{""} }, "rerank_models[1].aliases[0] is empty"},
		{"negative window", func(c *Config) { three(c); c.RerankModels[0].MaxPairTokens = -1 }, "rerank_models[0].max_pair_tokens"},
	})
	c := DefaultConfig()
	three(&c)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.RerankNames(), slices.Concat([]string{"fast", "hybrank-rerank"}, c.ClientRerankAliases, []string{"balanced", "b", "accurate"}); !slices.Equal(got, want) {
		t.Fatalf("RerankNames = %v, want %v", got, want)
	}
	// A scorer or a cache must front a served model, by its served name.
	for _, b := range []Services{
		{Scorers: map[string]PairScorer{"b": &fakeScorer{}}},
		{Scorers: map[string]PairScorer{"hybrank-rerank": &fakeScorer{}}},
		{Caches: map[string]CacheStats{"rerank": fixedCacheStats{}}},
	} {
		if _, err := New(c, b); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", b, err)
		}
	}
}
