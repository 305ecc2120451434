package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
	"github.com/hybrank/hybrank/models/modeltest"
	"github.com/hybrank/hybrank/simd"
)

// promptEmbedder is modeltest.Embedder with the prompts of em, applied as
// a model applies them (*ort.BiEncoder: the prompt of a query or a
// document on the text) and reported in its Capabilities.
type promptEmbedder struct {
	modeltest.Embedder
	em models.Embedding
}

func (p *promptEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	prompted := make([]string, len(texts))
	for i, t := range texts {
		prompted[i] = p.em.Prefix(in) + t
	}
	return p.Embedder.EmbedPooled(ctx, in, prompted)
}

func (p *promptEmbedder) Capabilities() models.Capabilities {
	return models.Capabilities{Embedding: p.em}
}

// unitPrefix is the unit vector of modeltest.RawVector(text) cut to dims (all
// when 0): what /vectors answers for text.
func unitPrefix(text string, dims int) []float32 {
	v := modeltest.RawVector(text)
	if dims > 0 {
		v = v[:dims]
	}
	simd.L2NormalizeGeneric(v)
	return v
}

// vectorize sends body to {prefix}/vectors as text2vec-transformers does
// and reads the answer into its struct.
func vectorize(t *testing.T, ts *testServer, path string, body []byte) (int, t2vRequest) {
	t.Helper()
	code, _, out := moduleRequest(t, ts, "POST", path, nil, body)
	var got t2vRequest
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the module cannot read %s: %v", out, err)
	}
	return code, got
}

func t2vBody(t *testing.T, text string, cfg t2vRequestConfig) []byte {
	t.Helper()
	b, err := json.Marshal(t2vRequest{Text: text, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWeaviateVectors: text2vec-transformers' requests (the fixtures)
// on both paths get the text's unit vector, cut to config.dimensions,
// through the shared embedding batcher; query and passage get the
// embedder's prompts.
func TestWeaviateVectors(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/weaviate/vectors", "/weaviate/vectors/"} {
		code, got := vectorize(t, ts, path, moduleFixture(t, "t2v-vectors-passage.json"))
		if code != 200 || got.Error != "" || got.Text != "The cat sat on the mat." || got.Dims != modeltest.Dim {
			t.Fatalf("%s: %d %+v", path, code, got)
		}
		assertVec(t, path, got.Vector, unitPrefix("The cat sat on the mat.", 0))
	}
	code, got := vectorize(t, ts, "/weaviate/vectors", moduleFixture(t, "t2v-vectors-query-dimensions.json"))
	if code != 200 || len(got.Vector) != 4 || got.Dims != 4 {
		t.Fatalf("dimensions 4: %d %+v", code, got)
	}
	assertVec(t, "dimensions 4", got.Vector, unitPrefix("where do cats sit", 4)) // cut, then unit length
	var raw map[string]any
	_, _, out := moduleRequest(t, ts, "POST", "/weaviate/vectors", nil, moduleFixture(t, "t2v-vectors-passage.json"))
	mustJSON(t, out, &raw)
	if raw["dim"] != float64(modeltest.Dim) { // the Python containers' field
		t.Fatalf("no dim: %s", out)
	}
	// A text over max_input_tokens is cut to it, as the containers cut.
	long := strings.Repeat("word ", 2000)
	if code, got := vectorize(t, ts, "/weaviate/vectors", t2vBody(t, long, t2vRequestConfig{})); code != 200 || len(got.Vector) != modeltest.Dim {
		t.Fatalf("long text: %d %+v", code, got.Error)
	}
	// The empty text embeds, as the containers embed it.
	if code, got := vectorize(t, ts, "/weaviate/vectors", t2vBody(t, "", t2vRequestConfig{TaskType: "query"})); code != 200 || len(got.Vector) != modeltest.Dim {
		t.Fatalf("empty text: %d %+v", code, got.Error)
	}

	// Prompts: query and passage (and no task type) get the embedder's,
	// through a cache that wraps it (Unwrap).
	pe := &promptEmbedder{em: models.Embedding{Pooling: models.PoolingMean, QueryPrefix: "query: ", DocumentPrefix: "passage: "}}
	ce, err := cache.NewEmbedder(pe, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ps := newTestServer(t, func(_ *Config, b *Services) { b.Embedder = ce })
	for _, tc := range []struct{ task, prefix string }{{"query", "query: "}, {"passage", "passage: "}, {"", "passage: "}} {
		code, got := vectorize(t, ps, "/weaviate/vectors", t2vBody(t, "cats", t2vRequestConfig{PoolingStrategy: "masked_mean", TaskType: tc.task}))
		if code != 200 {
			t.Fatalf("task %q: %d %s", tc.task, code, got.Error)
		}
		assertVec(t, "task "+tc.task, got.Vector, unitPrefix(tc.prefix+"cats", 0))
	}
	if pe.Calls() == 0 {
		t.Fatal("the prompts did not reach the embedder")
	}
}

// TestWeaviateVectorsErrors: what the server cannot do is a 4xx or 503
// whose text the module reads (its struct's Error), naming the fix.
func TestWeaviateVectorsErrors(t *testing.T) {
	cls := &promptEmbedder{em: models.Embedding{Pooling: models.PoolingCLS}}
	ts := newTestServer(t, func(_ *Config, b *Services) { b.Embedder = cls })
	for _, tc := range []struct {
		name string
		body string
		code int
		msg  string
	}{
		{"pooling not the model's", string(t2vBody(t, "x", t2vRequestConfig{PoolingStrategy: "masked_mean"})), 400,
			`is "masked_mean", but embedding model "hybrank-embed" pools by cls ("cls"); set the collection's poolingStrategy to "cls"`},
		{"unknown pooling", string(t2vBody(t, "x", t2vRequestConfig{PoolingStrategy: "weighted"})), 400, `"config.pooling_strategy" is "weighted"`},
		{"unknown task", string(t2vBody(t, "x", t2vRequestConfig{TaskType: "classification"})), 400, `want "query" or "passage"`},
		{"more dimensions than the model", string(t2vBody(t, "x", t2vRequestConfig{Dimensions: int64p(1536)})), 400,
			`"config.dimensions" is 1536, more than the 8 of embedding model "hybrank-embed"; set the collection's dimensions to at most 8`},
		{"zero dimensions", `{"text": "x", "config": {"dimensions": 0}}`, 400, "positive number of dimensions"},
		{"no text", `{"config": {}}`, 400, `"text" is required`},
		{"not JSON", `{"text": `, 400, "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := vectorize(t, ts, "/weaviate/vectors", []byte(tc.body))
			if code != tc.code || !strings.Contains(got.Error, tc.msg) {
				t.Fatalf("%d %q, want %d with %q", code, got.Error, tc.code, tc.msg)
			}
		})
	}
	// The model's own pooling passes, by either name.
	for _, p := range []string{"cls", ""} {
		if code, got := vectorize(t, ts, "/weaviate/vectors", t2vBody(t, "x", t2vRequestConfig{PoolingStrategy: p})); code != 200 {
			t.Fatalf("pooling %q: %d %s", p, code, got.Error)
		}
	}
	none := newTestServer(t, func(_ *Config, b *Services) { b.Embedder = nil })
	if code, got := vectorize(t, none, "/weaviate/vectors", moduleFixture(t, "t2v-vectors-passage.json")); code != 503 || !strings.Contains(got.Error, "no embedding model") {
		t.Fatalf("no embedder: %d %q", code, got.Error)
	}
}

// postRerankFixture posts reranker-transformers' request (the fixture)
// and returns the answer, which must be a 200 with one score per document.
func postRerankFixture(t *testing.T, ts *testServer) rtRankResponse {
	t.Helper()
	code, _, out := moduleRequest(t, ts, "POST", "/weaviate/rerank", nil, moduleFixture(t, "reranker-transformers-rerank.json"))
	var got rtRankResponse
	mustJSON(t, out, &got)
	if code != 200 || got.Error != "" || len(got.Scores) != len(rerankDocs) {
		t.Fatalf("%d %s", code, out)
	}
	return got
}

// TestWeaviateRerank: reranker-transformers' request (the fixture) gets
// one score per document in the documents' order, the sigmoid of the
// default reranker's logit; without documents, the one pair's score.
func TestWeaviateRerank(t *testing.T) {
	ts := newTestServer(t, nil)
	got := postRerankFixture(t, ts)
	for i, s := range got.Scores {
		want := models.Sigmoid(modeltest.PairScore(models.Pair{Query: "cat dog", Doc: rerankDocs[i]}))
		if s.Document != rerankDocs[i] || math.Abs(s.Score-want) > 1e-9 {
			t.Fatalf("score %d = %+v, want %q %v", i, s, rerankDocs[i], want)
		}
	}
	if n := len(ts.scorer.BatchSizes()); n != 1 {
		t.Fatalf("%d model calls, want 1 through the shared batcher", n)
	}
	// The single pair of the containers' older form.
	code, _, out := moduleRequest(t, ts, "POST", "/weaviate/rerank", nil, []byte(`{"query": "cat dog", "property": "a cat and a dog"}`))
	got = rtRankResponse{}
	mustJSON(t, out, &got)
	if want := models.Sigmoid(modeltest.PairScore(models.Pair{Query: "cat dog", Doc: "a cat and a dog"})); code != 200 || got.RankPropertyValue != "a cat and a dog" || math.Abs(got.Score-want) > 1e-9 {
		t.Fatalf("single pair: %d %s", code, out)
	}
	// Errors are the module's Error.
	for _, tc := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"query": "", "documents": ["a"], "property": ""}`, 400, `"query" must not be empty`},
		{`{"query": "q", "documents": [], "property": ""}`, 400, "non-empty"},
		{`{"query": "q"}`, 400, `"documents" is required`},
		{`{"query": "q", "documents": [1]}`, 400, `field "documents"`},
	} {
		code, _, out := moduleRequest(t, ts, "POST", "/weaviate/rerank", nil, []byte(tc.body))
		var e rtRankResponse
		mustJSON(t, out, &e)
		if code != tc.code || !strings.Contains(e.Error, tc.msg) {
			t.Fatalf("%s: %d %s, want %d with %q", tc.body, code, out, tc.code, tc.msg)
		}
	}
	lim := newTestServer(t, func(c *Config, _ *Services) { c.MaxDocuments = 2 })
	code, _, out = moduleRequest(t, lim, "POST", "/weaviate/rerank", nil, moduleFixture(t, "reranker-transformers-rerank.json"))
	if code != 413 || !strings.Contains(string(out), "the limit is 2") {
		t.Fatalf("over max_documents: %d %s", code, out)
	}
	failing := newTestServer(t, func(_ *Config, b *Services) {
		b.Rerankers = defaultReranker(&modeltest.Scorer{Err: errors.New("onnx exploded")})
	})
	code, _, out = moduleRequest(t, failing, "POST", "/weaviate/rerank", nil, moduleFixture(t, "reranker-transformers-rerank.json"))
	if code != 500 || string(out) != "{\"error\":\"onnx exploded\"}\n" {
		t.Fatalf("model failure: %d %s", code, out)
	}
}

// TestWeaviateRerankBudget: a call the model cannot answer within
// weaviate.rerank_budget is answered 200 in the order sent, scored −1,
// −2, …, and counted; a model failure within the budget still fails, and
// the budget must stay below request_timeout.
func TestWeaviateRerankBudget(t *testing.T) {
	gate := make(chan struct{}) // never opened: the model never answers
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.Weaviate.RerankBudget = Duration(50 * time.Millisecond)
		b.Rerankers = defaultReranker(&modeltest.Scorer{Gate: gate})
	})
	got := postRerankFixture(t, ts)
	for i, s := range got.Scores {
		if s.Document != rerankDocs[i] || s.Score != -float64(i+1) {
			t.Fatalf("score %d = %+v, want %q %d", i, s, rerankDocs[i], -(i + 1))
		}
	}
	code, _, out := moduleRequest(t, ts, "POST", "/weaviate/rerank", nil, []byte(`{"query": "cat dog", "property": "a cat and a dog"}`))
	got = rtRankResponse{}
	mustJSON(t, out, &got)
	if code != 200 || got.RankPropertyValue != "a cat and a dog" || got.Score != -1 {
		t.Fatalf("single pair: %d %s", code, out)
	}
	if code, _, body := ts.do(t, "GET", "/metrics", "", nil); code != 200 || !strings.Contains(string(body), `hybrank_weaviate_rerank_degraded_total{model="hybrank-rerank"} 2`) {
		t.Errorf("metrics lack 2 degraded rerank calls: %d", code)
	}
	// A model that fails at once fails the call, budget or not.
	failing := newTestServer(t, func(c *Config, b *Services) {
		c.Weaviate.RerankBudget = Duration(time.Second)
		b.Rerankers = defaultReranker(&modeltest.Scorer{Err: errors.New("onnx exploded")})
	})
	if code, _, out := moduleRequest(t, failing, "POST", "/weaviate/rerank", nil, moduleFixture(t, "reranker-transformers-rerank.json")); code != 500 {
		t.Fatalf("model failure within the budget: %d %s", code, out)
	}
	for _, tc := range []struct {
		budget, timeout time.Duration
		ok              bool
	}{
		{0, 30 * time.Second, true},
		{29 * time.Second, 30 * time.Second, true},
		{30 * time.Second, 30 * time.Second, false},
		{-time.Second, 30 * time.Second, false},
	} {
		cfg := DefaultConfig()
		cfg.Weaviate.RerankBudget, cfg.RequestTimeout = Duration(tc.budget), Duration(tc.timeout)
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("budget %v, timeout %v: Validate = %v, want ok %v", tc.budget, tc.timeout, err, tc.ok)
		} else if err != nil && !strings.Contains(err.Error(), "rerank_budget") {
			t.Errorf("budget %v: %v does not name rerank_budget", tc.budget, err)
		}
	}
	if got := DefaultConfig().Weaviate.rerankBudget(Duration(30 * time.Second)); got != 27*time.Second {
		t.Errorf("default budget under a 30s request_timeout = %v, want 27s", got)
	}
}

// TestWeaviateMetaAndReadiness: /meta is a JSON object the modules pass
// on; ready and live answer what the modules' start-up check waits for.
func TestWeaviateMetaAndReadiness(t *testing.T) {
	pe := &promptEmbedder{em: models.Embedding{Pooling: models.PoolingMean, QueryPrefix: "q: "}}
	ts := newTestServer(t, func(_ *Config, b *Services) { b.Embedder = pe })
	code, _, out := moduleRequest(t, ts, "GET", "/weaviate/meta", nil, nil)
	var meta map[string]any // what the modules unmarshal it into
	mustJSON(t, out, &meta)
	var m weaviateMeta
	mustJSON(t, out, &m)
	if code != 200 || m.Server != "hybrank" || m.Embedder == nil || m.Embedder.Dim != modeltest.Dim || m.Embedder.PoolingStrategy != "masked_mean" ||
		m.Embedder.QueryPrefix != "q: " || m.Reranker == nil || m.Reranker.Model != "hybrank-rerank" || !slices.Contains(m.Reranker.Names, "rerank-v3.5") {
		t.Fatalf("meta %d %s", code, out)
	}
	for _, p := range []string{"/weaviate/.well-known/ready", "/weaviate/.well-known/live"} {
		if code, _, out := moduleRequest(t, ts, "GET", p, nil, nil); code != 204 || len(out) != 0 {
			t.Fatalf("%s: %d %q", p, code, out)
		}
	}
	empty := newTestServer(t, func(_ *Config, b *Services) { *b = Services{} })
	code, _, out = moduleRequest(t, empty, "GET", "/weaviate/.well-known/ready", nil, nil)
	if code != 503 || !strings.Contains(string(out), `"error":"server: backend not configured: no embedding or reranking model loaded"`) {
		t.Fatalf("ready without models: %d %s", code, out)
	}
	if code, _, _ := moduleRequest(t, empty, "GET", "/weaviate/.well-known/live", nil, nil); code != 204 {
		t.Fatalf("live without models: %d", code)
	}
	ts.s.draining.Store(true)
	if code, _, out := moduleRequest(t, ts, "GET", "/weaviate/.well-known/ready", nil, nil); code != 503 || !strings.Contains(string(out), "shutting down") {
		t.Fatalf("ready while draining: %d %s", code, out)
	}
}

// TestWeaviateOpenAPI: the Weaviate routes' answers, errors included,
// match openapi.json.
func TestWeaviateOpenAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	vec := func(name string) any { return string(moduleFixture(t, name)) }
	checkOpenAPI(t, ts, []openAPICase{
		{"POST", "/weaviate/vectors", "", vec("t2v-vectors-passage.json"), 200},
		{"POST", "/weaviate/vectors/", "", vec("t2v-vectors-query-dimensions.json"), 200},
		{"POST", "/weaviate/rerank", "", vec("reranker-transformers-rerank.json"), 200},
		{"POST", "/weaviate/rerank", "", map[string]any{"query": "q", "property": "a"}, 200},
		{"GET", "/weaviate/meta", "", nil, 200},
		{"GET", "/weaviate/.well-known/ready", "", nil, 204},
		{"GET", "/weaviate/.well-known/live", "", nil, 204},
		{"POST", "/weaviate/vectors", "", map[string]any{"text": "x", "config": map[string]any{"dimensions": 9}}, 400},
		{"POST", "/weaviate/rerank", "", map[string]any{"query": "q"}, 400},
		{"GET", "/weaviate/vectors", "", nil, 405},
	})
	keyed := newTestServer(t, func(c *Config, _ *Services) { c.APIKeys = []APIKey{{Key: "k", Tenant: "t"}} })
	checkOpenAPI(t, keyed, []openAPICase{
		{"POST", "/weaviate/vectors", "", vec("t2v-vectors-passage.json"), 401},
		{"GET", "/weaviate/meta", "", nil, 401},
		{"GET", "/weaviate/.well-known/ready", "", nil, 204},
	})
	empty := newTestServer(t, func(_ *Config, b *Services) { *b = Services{} })
	checkOpenAPI(t, empty, []openAPICase{
		{"POST", "/weaviate/vectors", "", vec("t2v-vectors-passage.json"), 503},
		{"POST", "/weaviate/rerank", "", vec("reranker-transformers-rerank.json"), 503},
		{"GET", "/weaviate/.well-known/ready", "", nil, 503},
		{"GET", "/weaviate/meta", "", nil, 200},
	})
}

// TestWeaviatePrefix: the prefix moves the routes, "" removes them, and a
// prefix that is not a clean path or would take another route's place is
// refused.
func TestWeaviatePrefix(t *testing.T) {
	ts := newTestServer(t, func(c *Config, _ *Services) { c.Weaviate.Prefix = "/inference/t2v" })
	if code, got := vectorize(t, ts, "/inference/t2v/vectors", moduleFixture(t, "t2v-vectors-passage.json")); code != 200 || len(got.Vector) != modeltest.Dim {
		t.Fatalf("moved prefix: %d %+v", code, got)
	}
	code, _, out := moduleRequest(t, ts, "POST", "/weaviate/vectors", nil, moduleFixture(t, "t2v-vectors-passage.json"))
	expectError(t, code, out, 404, TypeNotFound, "no route")
	off := newTestServer(t, func(c *Config, _ *Services) { c.Weaviate.Prefix = "" })
	for _, rt := range off.s.routeTable() {
		if strings.Contains(rt.path, "vectors") || strings.Contains(rt.path, "well-known") {
			t.Fatalf("prefix \"\" still serves %s", rt.path)
		}
	}
	checkConfigCases(t, []configCase{
		{"trailing slash", func(c *Config) { c.Weaviate.Prefix = "/weaviate/" }, `must start with "/" and not end with one`},
		{"no leading slash", func(c *Config) { c.Weaviate.Prefix = "weaviate" }, `must start with "/"`},
		{"root", func(c *Config) { c.Weaviate.Prefix = "/" }, `not end with one`},
		{"space", func(c *Config) { c.Weaviate.Prefix = "/a b" }, `segment "a b"`},
		{"wildcard", func(c *Config) { c.Weaviate.Prefix = "/{x}" }, `segment "{x}"`},
		{"dot dot", func(c *Config) { c.Weaviate.Prefix = "/a/.." }, `segment ".."`},
		{"empty segment", func(c *Config) { c.Weaviate.Prefix = "/a//b" }, `segment ""`},
	})
	for _, p := range []string{"/v1", "/v2", "/documents"} {
		cfg := DefaultConfig()
		cfg.Weaviate.Prefix = p
		if _, err := New(cfg, Services{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "choose another weaviate.prefix") {
			t.Fatalf("prefix %s: New = %v, want ErrConfig naming the clash", p, err)
		}
	}
}

// TestWeaviateAPIKeys: Weaviate's API modules send "Authorization:
// Bearer <module key>"; with --api-key the right key passes and another
// gets 401 in the module's own error shape, whose text it reads. The
// transformers modules send no key: their routes are 401 with the fix in
// the text unless weaviate.public, and readiness is public.
func TestWeaviateAPIKeys(t *testing.T) {
	keys := func(public bool) func(*Config, *Services) {
		return func(c *Config, _ *Services) {
			c.APIKeys = []APIKey{{Key: "module-key", Tenant: "t"}}
			c.Weaviate.Public = public
		}
	}
	ts := newTestServer(t, keys(false))

	// reranker-cohere: POST /v1/rerank.
	code, _, out := moduleRequest(t, ts, "POST", "/v1/rerank", bearer("module-key"), moduleFixture(t, "reranker-cohere-rerank.json"))
	var rr cohereRankResponse
	mustJSON(t, out, &rr)
	if code != 200 || len(rr.Results) != len(rerankDocs) {
		t.Fatalf("cohere with the key: %d %s", code, out)
	}
	scores := make([]float64, len(rerankDocs)) // placed by index, as toDocumentScores does
	for _, r := range rr.Results {
		scores[r.Index] = r.RelevanceScore
	}
	for i, d := range rerankDocs {
		if want := models.Sigmoid(modeltest.PairScore(models.Pair{Query: "cat dog", Doc: d})); math.Abs(scores[i]-want) > 1e-9 {
			t.Fatalf("cohere score %d = %v, want %v", i, scores[i], want)
		}
	}
	code, _, out = moduleRequest(t, ts, "POST", "/v1/rerank", bearer("wrong"), moduleFixture(t, "reranker-cohere-rerank.json"))
	var ce cohereAPIError
	mustJSON(t, out, &ce)
	if code != 401 || !strings.Contains(ce.Message, "missing or unknown API key") {
		t.Fatalf("cohere with a wrong key: %d %s (the module reads message %q)", code, out, ce.Message)
	}

	// text2vec-openai: POST /v1/embeddings.
	code, _, out = moduleRequest(t, ts, "POST", "/v1/embeddings", bearer("module-key"), moduleFixture(t, "text2vec-openai-ada-002.json"))
	var emb moduleOpenAIEmbedding
	mustJSON(t, out, &emb)
	if code != 200 || emb.Error != nil || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != modeltest.Dim {
		t.Fatalf("openai with the key: %d %s", code, out)
	}
	code, _, out = moduleRequest(t, ts, "POST", "/v1/embeddings", bearer("wrong"), moduleFixture(t, "text2vec-openai-ada-002.json"))
	emb = moduleOpenAIEmbedding{}
	mustJSON(t, out, &emb)
	if code != 401 || emb.Error == nil || !strings.Contains(emb.Error.Message, "missing or unknown API key") || emb.Error.Code != "invalid_api_key" {
		t.Fatalf("openai with a wrong key: %d %s", code, out)
	}

	// The transformers modules: no key.
	code, got := vectorize(t, ts, "/weaviate/vectors", moduleFixture(t, "t2v-vectors-passage.json"))
	if code != 401 || !strings.Contains(got.Error, "set weaviate.public (serve --weaviate-public)") {
		t.Fatalf("transformers without a key: %d %q", code, got.Error)
	}
	code, _, out = moduleRequest(t, ts, "POST", "/weaviate/rerank", nil, moduleFixture(t, "reranker-transformers-rerank.json"))
	var re rtRankResponse
	mustJSON(t, out, &re)
	if code != 401 || !strings.Contains(re.Error, "weaviate.public") {
		t.Fatalf("reranker-transformers without a key: %d %s", code, out)
	}
	if code, _, _ := moduleRequest(t, ts, "GET", "/weaviate/.well-known/ready", nil, nil); code != 204 {
		t.Fatalf("ready needs no key: %d", code)
	}
	pub := newTestServer(t, keys(true))
	if code, got := vectorize(t, pub, "/weaviate/vectors", moduleFixture(t, "t2v-vectors-passage.json")); code != 200 || len(got.Vector) != modeltest.Dim {
		t.Fatalf("public transformers route: %d %q", code, got.Error)
	}
	if code, _, out := moduleRequest(t, pub, "POST", "/v1/embeddings", nil, moduleFixture(t, "text2vec-openai-ada-002.json")); code != 401 {
		t.Fatalf("weaviate.public opened another route: %d %s", code, out)
	}
}

// TestWeaviateOpenAIDefaults: text2vec-openai's default model and
// dimensions (text-embedding-3-small, 1536) are a 400 the module reports
// with the fix; with the model's dimensions they embed.
func TestWeaviateOpenAIDefaults(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, out := moduleRequest(t, ts, "POST", "/v1/embeddings", bearer("any"), moduleFixture(t, "text2vec-openai-3-small.json"))
	var emb moduleOpenAIEmbedding
	if err := json.Unmarshal(out, &emb); err != nil {
		t.Fatalf("the module cannot read %s: %v", out, err)
	}
	want := fmt.Sprintf(`set the collection's "dimensions" to %d, or its "model" to "hybrank-embed"`, modeltest.Dim)
	if code != 400 || emb.Error == nil || !strings.Contains(emb.Error.Message, want) || emb.Error.Param != "dimensions" {
		t.Fatalf("3-small with 1536: %d %s", code, out)
	}
	var req openAIEmbeddingsRequest
	mustJSON(t, moduleFixture(t, "text2vec-openai-3-small.json"), &req)
	req.Dimensions = int64p(modeltest.Dim)
	b, _ := json.Marshal(req)
	code, _, out = moduleRequest(t, ts, "POST", "/v1/embeddings", bearer("any"), b)
	emb = moduleOpenAIEmbedding{}
	mustJSON(t, out, &emb)
	if code != 200 || len(emb.Data) != 2 || emb.Usage == nil || emb.Usage.TotalTokens == 0 {
		t.Fatalf("3-small with %d: %d %s", modeltest.Dim, code, out)
	}
	for i, d := range emb.Data {
		assertVec(t, "3-small", d.Embedding, modeltest.Vector(req.Input[i]))
	}
}

// The decoders of the Weaviate routes, fuzzed as the others are
// (fuzz_test.go).
func FuzzDecodeWeaviateVectors(f *testing.F) {
	for _, s := range []string{
		`{"text": "a", "config": {"pooling_strategy": "masked_mean", "task_type": "query", "dimensions": 4}}`,
		`{"text": "", "dims": 0, "vector": null, "error": "", "config": {}}`, `{"text": "a", "config": null}`,
		`{"text": "a", "config": {"dimensions": -1}}`, `{"text": 1}`, `{}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeWeaviateVectors(body)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		if r.Dimensions < 0 || (r.Input != models.InputQuery && r.Input != models.InputDocument) || !r.Pooling.Valid() {
			t.Fatalf("decoded an invalid request %+v", r)
		}
	})
}

func FuzzDecodeWeaviateRerank(f *testing.F) {
	for _, s := range []string{
		`{"query": "q", "documents": ["a", "b"], "property": ""}`, `{"query": "q", "property": "a"}`,
		`{"query": "", "documents": ["a"]}`, `{"query": "q", "documents": []}`, `{"query": "q", "documents": [1]}`,
		`{"query": "q", "documents": ["a","a","a","a","a","a","a","a","a"]}`, `{"query": "q"}`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeWeaviateRerank(body, fuzzLimits)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		if strings.TrimSpace(r.Query) == "" || len(r.Docs) == 0 || len(r.Docs) > fuzzLimits.maxDocuments || r.ReturnDocuments == nil || *r.ReturnDocuments {
			t.Fatalf("decoded an invalid request %+v", r)
		}
	})
}
