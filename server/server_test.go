package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/hybrank/hybrank/analysis"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
	"github.com/hybrank/hybrank/models/modeltest"
	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/simd"
)

type testServer struct {
	*httptest.Server
	s      *Server
	scorer *modeltest.Scorer
	index  *fakeIndex
}

// newTestServer serves the stand-in models (modeltest), each behind a
// queue built from the config (queued), over an in-memory index; mut may
// change the config and the Services first.

func newTestServer(t *testing.T, mut func(*Config, *Services)) *testServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rerank.MaxWait = Duration(time.Millisecond)
	cfg.Embed.MaxWait = Duration(time.Millisecond)
	sc, ix := &modeltest.Scorer{}, newFakeIndex()
	b := Services{Rerankers: defaultReranker(sc), Embedder: &modeltest.Embedder{}, Tokenizer: fakeTokenizer{}, Analyzer: analysis.MustNew(analysis.DefaultConfig()), Searcher: ix, Documents: ix, Stats: ix}
	if mut != nil {
		mut(&cfg, &b)
	}
	queued(t, cfg, &b)
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &testServer{Server: ts, s: s, scorer: sc, index: ix}
}

// do sends a request and returns status, headers and body.
func (ts *testServer) do(t *testing.T, method, path, key string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// errorFields returns an error body's message and type in whichever API's
// shape it is (errorJSON): the "error" object of hybrank's and OpenAI's,
// TEI's "error" and "error_type", Cohere's top-level "message" and
// "type", Weaviate's "error" (no type).
func errorFields(t *testing.T, body []byte) (msg, typ string) {
	t.Helper()
	var e struct {
		Error     json.RawMessage `json:"error"`
		ErrorType string          `json:"error_type"`
		Message   *string         `json:"message"`
		Type      string          `json:"type"`
	}
	mustJSON(t, body, &e)
	switch {
	case e.Message != nil:
		return *e.Message, e.Type
	case len(e.Error) > 0 && e.Error[0] == '"':
		mustJSON(t, e.Error, &msg)
		return msg, e.ErrorType
	case len(e.Error) > 0:
		var d errorDetail
		mustJSON(t, e.Error, &d)
		return d.Message, d.Type
	}
	t.Fatalf("no error message in %s", body)
	return "", ""
}

// expectError checks a JSON error response, in any API's shape (a TEI
// error's type may be TEI's word for the status, teiErrorType).
func expectError(t *testing.T, code int, body []byte, wantCode int, wantType, wantMsg string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("status %d, want %d; body %s", code, wantCode, body)
	}
	msg, typ := errorFields(t, body)
	if (typ != wantType && typ != teiErrorType(wantCode, wantType)) || !strings.Contains(msg, wantMsg) {
		t.Fatalf("error %s, want type %q and message containing %q", body, wantType, wantMsg)
	}
}

var rerankDocs = []string{
	"the cat sat on the mat",
	"dogs chase cats in the park",
	"a cat and a dog are friends",
	"stock markets fell sharply",
}

func expectedOrder(query string, docs []string) []int {
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return modeltest.PairScore(models.Pair{Query: query, Doc: docs[order[a]]}) > modeltest.PairScore(models.Pair{Query: query, Doc: docs[order[b]]})
	})
	return order
}

func TestRerankCohere(t *testing.T) {
	ts := newTestServer(t, nil)
	query := "cat dog"
	want := expectedOrder(query, rerankDocs)
	docsAsObjects := make([]map[string]string, len(rerankDocs))
	for i, d := range rerankDocs {
		docsAsObjects[i] = map[string]string{"text": d}
	}
	tests := []struct {
		name     string
		path     string
		body     map[string]any
		n        int
		wantDocs bool
	}{
		{"v1 strings all", "/v1/rerank", map[string]any{"query": query, "documents": rerankDocs}, 4, true},
		{"v1 objects top_n", "/v1/rerank", map[string]any{"query": query, "documents": docsAsObjects, "top_n": 2, "model": "hybrank-rerank"}, 2, true},
		{"v2 default no docs", "/v2/rerank", map[string]any{"query": query, "documents": rerankDocs, "top_n": 3}, 3, false},
		{"jina route return_documents false", "/rerank", map[string]any{"query": query, "documents": rerankDocs, "return_documents": false}, 4, false},
		{"top_n larger than docs", "/rerank", map[string]any{"query": query, "documents": rerankDocs, "top_n": 100}, 4, true},
		{"v2 asked for docs", "/v2/rerank", map[string]any{"query": query, "documents": rerankDocs, "return_documents": true}, 4, true},
		{"v1 return_documents false", "/v1/rerank", map[string]any{"query": query, "documents": rerankDocs, "return_documents": false}, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := ts.do(t, "POST", tc.path, "", tc.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var resp rerankResponse
			mustJSON(t, body, &resp)
			if len(resp.Results) != tc.n || resp.ID == "" {
				t.Fatalf("got %d results id %q, want %d", len(resp.Results), resp.ID, tc.n)
			}
			for k, r := range resp.Results {
				if r.Index != want[k] {
					t.Fatalf("result %d index %d, want %d", k, r.Index, want[k])
				}
				wantScore := models.Sigmoid(modeltest.PairScore(models.Pair{Query: query, Doc: rerankDocs[r.Index]}))
				if math.Abs(r.RelevanceScore-wantScore) > 1e-9 {
					t.Fatalf("result %d score %v want %v", k, r.RelevanceScore, wantScore)
				}
				if (r.Document != nil) != tc.wantDocs || (r.Document != nil && r.Document.Text != rerankDocs[r.Index]) {
					t.Fatalf("result %d document %+v, want docs=%v", k, r.Document, tc.wantDocs)
				}
			}
			if resp.Meta.BilledUnits.SearchUnits != 1 || resp.Meta.Tokens.InputTokens <= 0 {
				t.Fatalf("meta %+v", resp.Meta)
			}
			for _, hk := range []string{"x-compute-time", "x-compute-tokens", "x-total-time"} {
				if h.Get(hk) == "" {
					t.Fatalf("missing header %s", hk)
				}
			}
			if h.Get("x-compute-tokens") != fmt.Sprint(resp.Meta.Tokens.InputTokens) {
				t.Fatalf("x-compute-tokens %s vs meta %d", h.Get("x-compute-tokens"), resp.Meta.Tokens.InputTokens)
			}
			// Jina (/rerank, /v1/rerank) reports usage.total_tokens and the
			// model; Cohere v2's shape has neither.
			var raw map[string]json.RawMessage
			mustJSON(t, body, &raw)
			_, hasUsage := raw["usage"]
			_, hasModel := raw["model"]
			if v2 := tc.path == "/v2/rerank"; hasUsage == v2 || hasModel == v2 {
				t.Fatalf("%s: usage present %v, model present %v; body %s", tc.path, hasUsage, hasModel, body)
			}
			if tc.path != "/v2/rerank" && (resp.Usage == nil || resp.Usage.TotalTokens != resp.Meta.Tokens.InputTokens || resp.Model != "hybrank-rerank") {
				t.Fatalf("jina usage %+v model %q, want total_tokens %d", resp.Usage, resp.Model, resp.Meta.Tokens.InputTokens)
			}
			if !tc.wantDocs && strings.Contains(string(body), `"document"`) {
				t.Fatalf("documents returned: %s", body)
			}
		})
	}
}

func TestRerankTEI(t *testing.T) {
	ts := newTestServer(t, nil)
	query := "cat dog"
	want := expectedOrder(query, rerankDocs)
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw_scores=%v", raw), func(t *testing.T) {
			code, _, body := ts.do(t, "POST", "/rerank", "", map[string]any{
				"query": query, "texts": rerankDocs, "raw_scores": raw, "return_text": true})
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var out []teiRank
			mustJSON(t, body, &out)
			if len(out) != len(rerankDocs) {
				t.Fatalf("got %d", len(out))
			}
			for k, r := range out {
				s := modeltest.PairScore(models.Pair{Query: query, Doc: rerankDocs[r.Index]})
				ws := models.Sigmoid(s)
				if raw {
					ws = float64(s)
				}
				if r.Index != want[k] || math.Abs(r.Score-ws) > 1e-6 || r.Text == nil || *r.Text != rerankDocs[r.Index] {
					t.Fatalf("item %d = %+v, want index %d score %v", k, r, want[k], ws)
				}
			}
		})
	}
}

func TestRerankMaxTokensPerDoc(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{
		"query": "q", "documents": []string{"one two three four five"}, "max_tokens_per_doc": 2})
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	b := ts.scorer.Batches()
	if len(b) != 1 || b[0][0].Doc != "one two" {
		t.Fatalf("scorer saw %+v, want the doc truncated to \"one two\"", b)
	}
}

func TestEmbedTEI(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		name   string
		body   any
		inputs []string
		raw    bool
	}{
		{"single string", map[string]any{"inputs": "hello world"}, []string{"hello world"}, false},
		{"list", map[string]any{"inputs": []string{"a b", "c d e"}, "normalize": true}, []string{"a b", "c d e"}, false},
		// TEI's normalize=false: the pooled vectors as the model gives them.
		{"normalize false", map[string]any{"inputs": []string{"a b", "c d e"}, "normalize": false}, []string{"a b", "c d e"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := ts.do(t, "POST", "/embed", "", tc.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var out [][]float32
			mustJSON(t, body, &out)
			if len(out) != len(tc.inputs) {
				t.Fatalf("got %d vectors", len(out))
			}
			for i, v := range out {
				w := modeltest.Vector(tc.inputs[i])
				if tc.raw {
					w = modeltest.RawVector(tc.inputs[i])
				}
				for d := range w {
					if math.Abs(float64(v[d]-w[d])) > 1e-6 {
						t.Fatalf("vector %d = %v, want %v", i, v, w)
					}
				}
			}
			if h.Get("x-compute-tokens") == "" {
				t.Fatal("missing x-compute-tokens")
			}
		})
	}
}

// cachedEmbedder serves the stand-in embedder as backend.Open does with
// --cache-mb: behind its queue (c.Embed), behind a cache, which it returns.
func cachedEmbedder(t *testing.T, c *Config, b *Services) *cache.Embedder {
	t.Helper()
	q := embedQueue(t, &modeltest.Embedder{}, c.Embed)
	ce, err := cache.NewEmbedder(q, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b.Embedder, b.Queues = ce, map[string]QueueStats{c.EmbedModel: q}
	return ce
}

// TestEmbedResponsesLeaveCachedVectorsAlone: behind an embedding cache,
// which hands out the vectors it stores, TEI's normalisation and OpenAI's
// shortened dimensions must not change what later requests get.
func TestEmbedResponsesLeaveCachedVectorsAlone(t *testing.T) {
	var ce *cache.Embedder
	ts := newTestServer(t, func(c *Config, b *Services) { ce = cachedEmbedder(t, c, b) })
	const text = "hello world"
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Fatalf("%s: got %v, want %v", what, got, want)
			}
		}
	}
	tei := func(normalize bool) []float32 {
		code, _, body := ts.do(t, "POST", "/embed", "", map[string]any{"inputs": text, "normalize": normalize})
		var vecs [][]float32
		mustJSON(t, body, &vecs)
		if code != 200 || len(vecs) != 1 {
			t.Fatalf("/embed %d %s", code, body)
		}
		return vecs[0]
	}
	openAI := func(dims int) []float32 {
		req := map[string]any{"input": text}
		if dims > 0 {
			req["dimensions"] = dims
		}
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", req)
		var resp struct {
			Data []struct{ Embedding []float32 } `json:"data"`
		}
		mustJSON(t, body, &resp)
		if code != 200 || len(resp.Data) != 1 {
			t.Fatalf("/v1/embeddings %d %s", code, body)
		}
		return resp.Data[0].Embedding
	}
	unit := modeltest.Vector(text)
	same("/embed normalised", tei(true), unit)
	same("/embed normalize=false after a normalised request", tei(false), modeltest.RawVector(text))
	if got := openAI(2); len(got) != 2 || math.Abs(float64(simd.Dot(got, got))-1) > 1e-5 {
		t.Fatalf("dimensions=2: %v, want a unit vector of 2", got)
	}
	same("/v1/embeddings after a dimensions=2 request", openAI(0), unit)
	same("/embed normalize=false at the end", tei(false), modeltest.RawVector(text))
	if st := ce.Stats(); st.Hits == 0 {
		t.Fatalf("the cache was not used: %+v", st)
	}
}

func TestOpenAIEmbeddings(t *testing.T) {
	ts := newTestServer(t, nil)
	inputs := []string{"first text", "second text here"}
	t.Run("float", func(t *testing.T) {
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": inputs, "model": "hybrank-embed"})
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		var resp struct {
			Object string
			Model  string
			Data   []struct {
				Object    string
				Index     int
				Embedding []float32
			}
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		mustJSON(t, body, &resp)
		if resp.Object != "list" || resp.Model != "hybrank-embed" || len(resp.Data) != 2 || resp.Usage.PromptTokens != 9 || resp.Usage.TotalTokens != 9 {
			t.Fatalf("response %+v", resp)
		}
		for i, d := range resp.Data {
			if d.Object != "embedding" || d.Index != i {
				t.Fatalf("data %d = %+v", i, d)
			}
			// Unit vectors: the server normalises the pooled vectors.
			assertVec(t, "openai float", d.Embedding, modeltest.Vector(inputs[i]))
		}
	})
	t.Run("base64 with dimensions", func(t *testing.T) {
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": "first text", "encoding_format": "base64", "dimensions": 4})
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		var resp struct{ Data []struct{ Embedding string } }
		mustJSON(t, body, &resp)
		raw, err := base64.StdEncoding.DecodeString(resp.Data[0].Embedding)
		if err != nil || len(raw) != 16 {
			t.Fatalf("base64 %q: %v (%d bytes)", resp.Data[0].Embedding, err, len(raw))
		}
		want := append([]float32(nil), modeltest.Vector("first text")[:4]...)
		simd.L2NormalizeGeneric(want) // the pure-Go reference; the server runs the dispatched kernel
		for i := range want {
			got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if math.Abs(float64(got-want[i])) > 1e-6 {
				t.Fatalf("dim %d = %v, want %v", i, got, want[i])
			}
		}
	})
	t.Run("dimensions too large", func(t *testing.T) {
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": "x", "dimensions": 9})
		expectError(t, code, body, 400, TypeInvalidRequest, "more than the 8")
	})
}

func TestModelsHealthReadyTokenize(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.do(t, "GET", "/v1/models", "", nil)
	if code != 200 || !strings.Contains(string(body), `"id":"hybrank-rerank"`) || !strings.Contains(string(body), `"id":"hybrank-embed"`) || !strings.Contains(string(body), `"object":"list"`) {
		t.Fatalf("models %d %s", code, body)
	}
	if code, _, body := ts.do(t, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}
	if code, _, body := ts.do(t, "GET", "/readyz", "", nil); code != 200 || !strings.Contains(string(body), `"reranker":true`) {
		t.Fatalf("readyz %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/tokenize", "", map[string]any{"inputs": "hello big world", "add_special_tokens": false})
	var toks [][]Token
	mustJSON(t, body, &toks)
	if code != 200 || len(toks) != 1 || len(toks[0]) != 3 || toks[0][1].Text != "big" || toks[0][1].Start != 6 {
		t.Fatalf("tokenize %d %s", code, body)
	}

	empty := newTestServer(t, func(c *Config, b *Services) { *b = Services{} })
	if code, _, body := empty.do(t, "GET", "/readyz", "", nil); code != 503 {
		t.Fatalf("readyz without models: %d %s", code, body)
	}
	code, _, body = empty.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"d"}})
	expectError(t, code, body, 503, TypeUnavailable, "no reranking model")
}

type fixedCacheStats cache.Stats

func (f fixedCacheStats) Stats() cache.Stats { return cache.Stats(f) }

type fixedQueueStats queue.Stats

func (f fixedQueueStats) Stats() queue.Stats { return queue.Stats(f) }

func TestMetrics(t *testing.T) {
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.Provider = "cuda"
		b.Caches = map[string]CacheStats{"hybrank-rerank": fixedCacheStats{Hits: 5, Misses: 2, Entries: 2, Bytes: 200}}
	})
	ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "cat", "documents": rerankDocs})
	ts.do(t, "POST", "/v1/rerank", "", "{bad")
	ts.do(t, "POST", "/documents", "", map[string]any{"documents": []map[string]string{{"id": "1", "text": "a"}, {"id": "2", "text": "b"}}})
	code, _, body := ts.do(t, "GET", "/metrics", "", nil)
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	for _, want := range []string{
		`hybrank_http_requests_total{code="200",route="/v1/rerank"} 1`,
		`hybrank_http_requests_total{code="400",route="/v1/rerank"} 1`,
		`hybrank_http_request_duration_seconds_bucket{code="200",route="/v1/rerank"`,
		`hybrank_batch_items_count{kind="rerank",model="hybrank-rerank"} 1`,
		`hybrank_queue_items{kind="rerank",model="hybrank-rerank"} 0`,
		`hybrank_tokens_total{kind="rerank",model="hybrank-rerank"}`,
		`hybrank_provider{provider="cuda"} 1`,
		"hybrank_index_documents 2",
		"hybrank_index_wal_commits_total 7",
		"hybrank_index_wal_syncs_total 2",
		"# TYPE hybrank_index_wal_syncs_total counter",
		"hybrank_index_recovery_dropped_bytes 0",
		`hybrank_cache_hits_total{cache="rerank",model="hybrank-rerank"} 5`,
		`hybrank_cache_misses_total{cache="rerank",model="hybrank-rerank"} 2`,
		`hybrank_cache_bytes{cache="rerank",model="hybrank-rerank"} 200`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestLimits(t *testing.T) {
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.MaxBodyBytes = 2048
		c.MaxDocuments = 3
		c.MaxInputs = 2
		c.MaxIndexDocuments = 2
		c.MaxInputTokens = 5
		c.MaxPairTokens = 6
	})
	big := map[string]any{"query": "q", "documents": []string{strings.Repeat("x", 3000)}}
	tests := []struct {
		name     string
		method   string
		path     string
		body     any
		code     int
		typ, msg string
	}{
		{"body too large", "POST", "/v1/rerank", big, 413, TypeTooLarge, "2048 bytes"},
		{"too many documents", "POST", "/v1/rerank", map[string]any{"query": "q", "documents": []string{"a", "b", "c", "d"}}, 413, TypeTooLarge, "limit is 3"},
		{"too many texts TEI", "POST", "/rerank", map[string]any{"query": "q", "texts": []string{"a", "b", "c", "d"}}, 413, TypeTooLarge, "limit is 3"},
		{"too many inputs", "POST", "/v1/embeddings", map[string]any{"input": []string{"a", "b", "c"}}, 413, TypeTooLarge, "limit is 2"},
		{"too many index docs", "POST", "/documents", map[string]any{"documents": []map[string]string{{"id": "1", "text": "a"}, {"id": "2", "text": "b"}}, "delete": []string{"3"}}, 413, TypeTooLarge, "limit is 2"},
		{"embed input too long", "POST", "/embed", map[string]any{"inputs": "a b c d e f g"}, 413, TypeTooLarge, "max_input_tokens 5"},
		// 2 query + 2 text + 3 special tokens > 6: TEI answers 413 unless truncate=true.
		{"TEI rerank pair too long", "POST", "/rerank", map[string]any{"query": "q r", "texts": []string{"a", "b c"}}, 413, TypeTooLarge, "texts[1] with the query is 7 tokens"},
		{"TEI rerank pair too long truncate false", "POST", "/rerank", map[string]any{"query": "q r", "texts": []string{"b c"}, "truncate": false}, 413, TypeTooLarge, "window of 6 (max_pair_tokens) of reranker \"hybrank-rerank\""},
		{"malformed JSON", "POST", "/v1/rerank", `{"query": "q", "documents": [}`, 400, TypeInvalidRequest, "malformed JSON"},
		{"trailing data", "POST", "/v1/rerank", `{"query": "q", "documents": ["a"]} {}`, 400, TypeInvalidRequest, "after the request object"},
		{"not an object", "POST", "/embed", `["a"]`, 400, TypeInvalidRequest, "JSON object"},
		{"empty body", "POST", "/embed", ``, 400, TypeInvalidRequest, "empty"},
		{"wrong type top_n", "POST", "/v1/rerank", `{"query": "q", "documents": ["a"], "top_n": "3"}`, 400, TypeInvalidRequest, "top_n"},
		{"wrong type query", "POST", "/v1/rerank", `{"query": 7, "documents": ["a"]}`, 400, TypeInvalidRequest, "query"},
		{"document number", "POST", "/v1/rerank", `{"query": "q", "documents": [1]}`, 400, TypeInvalidRequest, "string or an object"},
		{"missing query", "POST", "/v1/rerank", `{"documents": ["a"]}`, 400, TypeInvalidRequest, "query"},
		{"no documents", "POST", "/v1/rerank", `{"query": "q", "documents": []}`, 400, TypeInvalidRequest, "non-empty"},
		{"bad top_n", "POST", "/v1/rerank", `{"query": "q", "documents": ["a"], "top_n": 0}`, 400, TypeInvalidRequest, "top_n"},
		{"token ids input", "POST", "/v1/embeddings", `{"input": [[1,2,3]]}`, 400, TypeInvalidRequest, "token-id"},
		{"bad encoding", "POST", "/v1/embeddings", `{"input": "a", "encoding_format": "hex"}`, 400, TypeInvalidRequest, "encoding_format"},
		{"bad search fusion", "POST", "/search", `{"query": "q", "fusion": "magic"}`, 400, TypeInvalidRequest, "fusion"},
		{"bad search reserve", "POST", "/search", `{"query": "q", "token_budget": 10, "reserve": 10}`, 400, TypeInvalidRequest, "reserve"},
		{"unknown rerank model", "POST", "/v1/rerank", map[string]any{"model": "rerank-english-v2.0", "query": "q", "documents": []string{"a"}}, 404, TypeNotFound, "unknown rerank model"},
		{"unknown embed model", "POST", "/v1/embeddings", map[string]any{"model": "text-embedding-4-tiny", "input": "a"}, 404, TypeNotFound, "unknown embedding model"},
		{"unknown route", "GET", "/v3/whatever", nil, 404, TypeNotFound, "no route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := ts.do(t, tc.method, tc.path, "", tc.body)
			expectError(t, code, body, tc.code, tc.typ, tc.msg)
		})
	}
	t.Run("truncate true cuts instead", func(t *testing.T) {
		code, _, body := ts.do(t, "POST", "/embed", "", map[string]any{"inputs": "a b c d e f g", "truncate": true})
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
	})
	// The model cuts long pairs when asked to; pairs that fit pass; Cohere
	// and Jina requests are truncated as those APIs document.
	for _, body := range []map[string]any{
		{"query": "q r", "texts": []string{"a", "b c"}, "truncate": true},
		{"query": "q r", "texts": []string{"a"}},
		{"query": "q r", "documents": []string{"a", "b c d e f"}},
	} {
		if code, _, resp := ts.do(t, "POST", "/rerank", "", body); code != 200 {
			t.Fatalf("%v: status %d: %s", body, code, resp)
		}
	}
}

func TestQueueFullAndTimeout(t *testing.T) {
	t.Run("too many requests in flight", func(t *testing.T) {
		sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 1)}
		ts := newTestServer(t, func(c *Config, b *Services) { c.MaxConcurrentRequests = 1; b.Rerankers = defaultReranker(sc) })
		done := make(chan int)
		go func() {
			code, _, _ := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}})
			done <- code
		}()
		<-sc.Started
		code, h, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"b"}})
		expectError(t, code, body, 429, TypeOverloaded, "retry later")
		if h.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q", h.Get("Retry-After"))
		}
		close(sc.Gate)
		if c := <-done; c != 200 {
			t.Fatalf("first request %d", c)
		}
	})
	t.Run("model queue full", func(t *testing.T) {
		sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 4)}
		ts := newTestServer(t, func(c *Config, b *Services) {
			b.Rerankers = defaultReranker(sc)
			c.Rerank.Workers, c.Rerank.MaxQueueItems, c.Rerank.MaxItems = 1, 4, 2
		})
		done := make(chan int, 2)
		send := func(docs []string) {
			code, _, _ := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": docs})
			done <- code
		}
		go send([]string{"a", "b"}) // occupies the only worker
		<-sc.Started
		go send([]string{"c", "d", "e"}) // waits in the queue
		deadline := time.Now().Add(5 * time.Second)
		for {
			if q := ts.s.b.Queues[DefaultConfig().RerankModel].Stats().Queued; q == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("second request never queued")
			}
			time.Sleep(time.Millisecond)
		}
		code, h, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"f", "g"}})
		expectError(t, code, body, 429, TypeOverloaded, "queue full")
		if h.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
		close(sc.Gate)
		for range 2 {
			if c := <-done; c != 200 {
				t.Fatalf("queued request %d", c)
			}
		}
	})
	t.Run("deadline exceeded is 504", func(t *testing.T) {
		ts := newTestServer(t, func(c *Config, b *Services) {
			c.RequestTimeout = Duration(20 * time.Millisecond)
			b.Rerankers = defaultReranker(&modeltest.Scorer{Delay: time.Second})
			ix := newFakeIndex()
			ix.wait = time.Second
			b.Searcher = ix
		})
		code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}})
		expectError(t, code, body, 504, TypeTimeout, "deadline")
		code, _, body = ts.do(t, "POST", "/search", "", map[string]any{"query": "q"})
		expectError(t, code, body, 504, TypeTimeout, "deadline")
	})
	t.Run("backend error is 500", func(t *testing.T) {
		ts := newTestServer(t, func(c *Config, b *Services) {
			b.Rerankers = defaultReranker(&modeltest.Scorer{Err: fmt.Errorf("onnx exploded")})
		})
		code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}})
		expectError(t, code, body, 500, TypeInternal, "onnx exploded")
	})
}

func TestSearchAndDocuments(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.do(t, "POST", "/documents", "", "{\"documents\": [{\"id\": \"a\", \"text\": \"caf\xe9\"}]}")
	expectError(t, code, body, 400, TypeInvalidRequest, "not valid UTF-8")
	code, _, body = ts.do(t, "POST", "/documents", "", map[string]any{"documents": []map[string]any{
		{"id": "d1", "text": "the cat sat", "metadata": map[string]string{"lang": "en"}, "span": map[string]int{"start": 0, "end": 11}},
		{"id": "d2", "text": "cat and dog"},
		{"id": "d3", "text": "nothing here"},
	}})
	if code != 200 || !strings.Contains(string(body), `"upserted":3`) {
		t.Fatalf("upsert %d %s", code, body)
	}
	code, h, body := ts.do(t, "POST", "/search", "", map[string]any{"query": "cat dog", "top_k": 5})
	var resp engine.Result
	mustJSON(t, body, &resp)
	if code != 200 || len(resp.Hits) != 2 || resp.Hits[0].Document.ID != "d2" || resp.Hits[0].Provenance != (engine.Provenance{BM25Rank: 1, Origin: engine.Origin{Kind: engine.OriginRetrieved}}) || resp.Timings.BM25 == 0 || h.Get("x-total-time") == "" {
		t.Fatalf("search %d %s", code, body)
	}
	code, _, body = ts.do(t, "DELETE", "/documents", "", map[string]any{"ids": []string{"d2"}})
	if code != 200 || !strings.Contains(string(body), `"deleted":1`) {
		t.Fatalf("delete %d %s", code, body)
	}
	_, _, body = ts.do(t, "POST", "/search", "", map[string]any{"query": "cat dog"})
	mustJSON(t, body, &resp)
	if len(resp.Hits) != 1 || resp.Hits[0].Document.ID != "d1" {
		t.Fatalf("after delete %s", body)
	}
	// The batch rule is the engine's: documents in order, then delete, the
	// last operation on a document winning.
	for _, tc := range []struct {
		name, query, body string
		want              map[string]string // tenant/id -> text ("": absent)
	}{
		{"duplicate ids", "", `{"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}`, map[string]string{"/a": "y"}},
		{"duplicate ids in a tenant", "", `{"documents": [{"id": "a", "text": "x", "tenant": "t"}, {"id": "a", "text": "y", "tenant": "t"}]}`, map[string]string{"t/a": "y", "/a": "y"}},
		{"upserted and deleted", "", `{"documents": [{"id": "u", "text": "x"}], "delete": ["b", "u"]}`, map[string]string{"/u": ""}},
		{"upserted and deleted in a tenant", "?tenant=t", `{"documents": [{"id": "u", "text": "x", "tenant": "t"}], "delete": ["u"]}`, map[string]string{"t/u": "", "t/a": "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := ts.do(t, "POST", "/documents"+tc.query, "", tc.body)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			for k, text := range tc.want {
				tenant, id, _ := strings.Cut(k, "/")
				d, ok := ts.index.docs[docKey(tenant, id)]
				if ok != (text != "") || d.Text != text {
					t.Errorf("%s = %q %v, want %q", k, d.Text, ok, text)
				}
			}
		})
	}
	for _, tc := range []struct{ name, method, body, msg string }{
		{"empty id", "POST", `{"documents": [{"text": "x"}]}`, "documents[0]: engine: invalid document: empty ID"},
		{"empty id deleted", "POST", `{"documents": [{"id": "a", "text": "x"}], "delete": ["b", ""]}`, "ids[1]: engine: invalid document: deletion of an empty ID"},
		{"empty id on DELETE", "DELETE", `{"ids": [""]}`, "ids[0]: engine: invalid document: deletion of an empty ID"},
		{"ids on POST", "POST", `{"ids": ["a"]}`, "DELETE"},
		{"documents on DELETE", "DELETE", `{"documents": [{"id": "a"}]}`, "ids"},
		{"nothing", "POST", `{}`, "nothing to do"},
		{"bad span", "POST", `{"documents": [{"id": "a", "span": {"start": 5, "end": 1}}]}`, "span"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, query, _ := strings.Cut(tc.method, "?")
			path := "/documents"
			if query != "" {
				path += "?" + query
			}
			code, _, body := ts.do(t, method, path, "", tc.body)
			expectError(t, code, body, 400, TypeInvalidRequest, tc.msg)
		})
	}
	// The same ID in two tenants is two documents, also in one batch; so
	// is an ID upserted in one tenant and deleted in another, and an ID
	// deleted twice.
	code, _, body = ts.do(t, "POST", "/documents", "", map[string]any{"documents": []map[string]any{
		{"id": "x", "text": "alpha", "tenant": "a"}, {"id": "x", "text": "beta", "tenant": "b"}}, "delete": []string{"x", "x"}})
	if code != 200 || !strings.Contains(string(body), `"upserted":2`) {
		t.Fatalf("same id in two tenants: %d %s", code, body)
	}
	if ts.index.docs[docKey("a", "x")].Text != "alpha" || ts.index.docs[docKey("b", "x")].Text != "beta" {
		t.Fatalf("tenants' documents x: %+v", ts.index.docs)
	}
}

func TestAuthTenantIsolation(t *testing.T) {
	for _, leak := range []bool{false, true} {
		t.Run(fmt.Sprintf("searcher leaks=%v", leak), func(t *testing.T) {
			ts := newTestServer(t, func(c *Config, b *Services) {
				c.APIKeys = []APIKey{{Key: "key-a", Tenant: "a"}, {Key: "key-b", Tenant: "b"}}
			})
			ts.index.leak = leak
			// Unauthenticated and wrong keys.
			for _, key := range []string{"", "nope"} {
				code, h, body := ts.do(t, "POST", "/search", key, map[string]any{"query": "cat"})
				expectError(t, code, body, 401, TypeUnauthorized, "API key")
				if h.Get("WWW-Authenticate") == "" {
					t.Fatal("no WWW-Authenticate")
				}
				code, _, body = ts.do(t, "POST", "/v1/rerank", key, map[string]any{"query": "q", "documents": []string{"a"}})
				expectError(t, code, body, 401, TypeUnauthorized, "API key")
			}
			if code, _, _ := ts.do(t, "GET", "/healthz", "", nil); code != 200 {
				t.Fatal("healthz must not need a key")
			}
			// Each tenant writes a document; tenant forced from the key.
			for _, k := range []struct{ key, id string }{{"key-a", "doc-a"}, {"key-b", "doc-b"}} {
				code, _, body := ts.do(t, "POST", "/documents", k.key, map[string]any{"documents": []map[string]string{{"id": k.id, "text": "secret cat"}}})
				if code != 200 {
					t.Fatalf("upsert %d %s", code, body)
				}
			}
			if ts.index.docs[docKey("a", "doc-a")].Tenant != "a" || ts.index.docs[docKey("b", "doc-b")].Tenant != "b" {
				t.Fatalf("tenants not forced: %+v", ts.index.docs)
			}
			// Writing into another tenant is refused.
			code, _, body := ts.do(t, "POST", "/documents", "key-a", map[string]any{"documents": []map[string]string{{"id": "x", "text": "t", "tenant": "b"}}})
			expectError(t, code, body, 403, TypeForbidden, `tenant "a"`)
			// Searching another tenant is refused; own search sees only own docs.
			code, _, body = ts.do(t, "POST", "/search", "key-a", map[string]any{"query": "cat", "tenant": "b"})
			expectError(t, code, body, 403, TypeForbidden, `tenant "a"`)
			code, _, body = ts.do(t, "POST", "/search", "key-a", map[string]any{"query": "cat"})
			var resp engine.Result
			mustJSON(t, body, &resp)
			if code != 200 || len(resp.Hits) != 1 || resp.Hits[0].Document.ID != "doc-a" {
				t.Fatalf("tenant a search %d %s", code, body)
			}
			// The same ID in another tenant is another document.
			code, _, body = ts.do(t, "POST", "/documents", "key-a", map[string]any{"documents": []map[string]string{{"id": "doc-b", "text": "mine too"}}})
			if code != 200 {
				t.Fatalf("same id in tenant a: %d %s", code, body)
			}
			for _, k := range []struct{ key, text string }{{"key-a", "mine too"}, {"key-b", "secret cat"}} {
				code, _, body = ts.do(t, "GET", "/documents/doc-b", k.key, nil)
				var d engine.Document
				mustJSON(t, body, &d)
				if code != 200 || d.Text != k.text {
					t.Fatalf("GET doc-b with %s: %d %s", k.key, code, body)
				}
			}
			code, _, body = ts.do(t, "GET", "/documents/nope", "key-a", nil)
			expectError(t, code, body, 404, TypeNotFound, `"nope"`)
			// Deleting deletes in the key's tenant only.
			code, _, body = ts.do(t, "DELETE", "/documents", "key-a", map[string]any{"ids": []string{"doc-b"}})
			if code != 200 || !strings.Contains(string(body), `"deleted":1`) {
				t.Fatalf("delete %d %s", code, body)
			}
			if _, ok := ts.index.docs[docKey("b", "doc-b")]; !ok {
				t.Fatal("tenant a deleted tenant b's document")
			}
			// ?tenant= naming another tenant is refused with a key, on every
			// documents route, as the same tenant in the body is.
			for _, m := range []struct{ method, path string }{
				{"POST", "/documents?tenant=b"}, {"DELETE", "/documents?tenant=b"}, {"GET", "/documents/doc-b?tenant=b"},
			} {
				var payload any
				switch m.method {
				case "POST":
					payload = map[string]any{"documents": []map[string]string{{"id": "y", "text": "t"}}}
				case "DELETE":
					payload = map[string]any{"ids": []string{"doc-b"}}
				}
				code, _, body = ts.do(t, m.method, m.path, "key-a", payload)
				expectError(t, code, body, 403, TypeForbidden, `tenant "a"`)
			}
			code, _, body = ts.do(t, "GET", "/documents/doc-a?tenant=a", "key-a", nil)
			if code != 200 {
				t.Fatalf("own ?tenant=: %d %s", code, body)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	bad := []struct {
		name string
		mut  func(*Config)
	}{
		{"addr", func(c *Config) { c.Addr = "nocolon" }},
		{"body", func(c *Config) { c.MaxBodyBytes = 0 }},
		{"docs", func(c *Config) { c.MaxDocuments = -1 }},
		{"batch tokens", func(c *Config) { c.Rerank.MaxTokens = 0 }},
		{"batch wait", func(c *Config) { c.Embed.MaxWait = Duration(2 * time.Second) }},
		{"workers", func(c *Config) { c.Rerank.Workers = 0 }},
		{"key without tenant", func(c *Config) { c.APIKeys = []APIKey{{Key: "k"}} }},
		{"duplicate key", func(c *Config) { c.APIKeys = []APIKey{{Key: "k", Tenant: "a"}, {Key: "k", Tenant: "b"}} }},
		{"timeout", func(c *Config) { c.RequestTimeout = 0 }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "invalid config") {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
			if _, err := New(c, Services{}); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
	t.Run("load file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "c.json")
		os.WriteFile(p, []byte(`{"addr": "127.0.0.1:9999", "rerank": {"enabled": false, "max_wait": "5ms", "max_tokens": 100, "max_items": 8, "chunk_items": 4, "max_queue_items": 10, "workers": 1}, "api_keys": [{"key": "k", "tenant": "t"}]}`), 0o644)
		c, err := LoadConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.Addr != "127.0.0.1:9999" || c.Rerank.Enabled || time.Duration(c.Rerank.MaxWait) != 5*time.Millisecond || c.MaxDocuments != 10000 || c.APIKeys[0].Tenant != "t" {
			t.Fatalf("loaded %+v", c)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, []byte(`{"adr": "x"}`), 0o644)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), "adr") {
			t.Fatalf("unknown field accepted: %v", err)
		}
		// A second object (here the API keys) is an error, not dropped.
		os.WriteFile(p, []byte("{\"max_documents\": 5}\n{\"api_keys\": [{\"key\": \"secret\", \"tenant\": \"acme\"}]}\n"), 0o644)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), "after the config object") {
			t.Fatalf("data after the object accepted: %v", err)
		}
		os.WriteFile(p, []byte("{\"max_documents\": 5}\n\n"), 0o644)
		if c, err := LoadConfig(p); err != nil || c.MaxDocuments != 5 {
			t.Fatalf("trailing whitespace: %+v %v", c.MaxDocuments, err)
		}
	})
}

// TestSlowBody: a body that does not arrive within RequestTimeout ends the
// request with 408 instead of holding its connection (the body is read
// before admission and before the request's deadline starts).
func TestSlowBody(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RequestTimeout = Duration(200 * time.Millisecond)
	services := Services{Rerankers: defaultReranker(&modeltest.Scorer{})}
	queued(t, cfg, &services)
	s, err := New(cfg, services)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", serveLocal(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers promise 100 bytes; 10 come, then nothing.
	if _, err := io.WriteString(conn, "POST /v1/rerank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"query\": "); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "request_timeout") {
		t.Fatalf("stalled body: %d %s, want 408", resp.StatusCode, b)
	}
}

func TestGracefulShutdown(t *testing.T) {
	sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 1)}
	cfg := DefaultConfig()
	b := Services{Rerankers: defaultReranker(sc)}
	queued(t, cfg, &b)
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	type result struct {
		code int
		body string
		err  error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, err := http.Post(url+"/v1/rerank", "application/json", strings.NewReader(`{"query": "cat", "documents": ["a cat", "a dog"]}`))
		if err != nil {
			inflight <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- result{code: resp.StatusCode, body: string(b)}
	}()
	<-sc.Started // the request is inside the model
	cancel()     // SIGTERM
	// The listener closes promptly; new connections are refused while the
	// in-flight request is still held inside the model.
	noKeepAlive := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := noKeepAlive.Get(url + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted while draining")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	default:
	}
	close(sc.Gate)
	r := <-inflight
	if r.err != nil || r.code != 200 || !strings.Contains(r.body, `"relevance_score"`) {
		t.Fatalf("in-flight request: %+v", r)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// ownTenant drops another tenant's hits and every passage packed from one,
// coalesced passages included.
func TestOwnTenantDropsLeakedPassages(t *testing.T) {
	hit := func(id, tenant string) engine.Hit {
		return engine.Hit{Document: engine.Document{ID: id, Tenant: tenant}}
	}
	part := func(ids ...string) engine.Passage {
		p := engine.Passage{Text: strings.Join(ids, "+")}
		for _, id := range ids {
			p.Parts = append(p.Parts, engine.PassagePart{ID: id})
		}
		return p
	}
	res := &engine.Result{
		Hits:     []engine.Hit{hit("a1", "a"), hit("b1", "b"), hit("a2", "a")},
		Passages: []engine.Passage{part("a1"), part("b1"), part("a2", "b1"), part("a2")},
	}
	ownTenant(res, "a")
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Document.ID)
	}
	for _, p := range res.Passages {
		got = append(got, p.Text)
	}
	if want := []string{"a1", "a2", "a1", "a2"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// TestUsageWithCache: behind the embedding cache the API's usage is the
// request's input tokens whether the cache or the model answered (a
// request of cached texts plus one new text reports all of them), while
// x-compute-tokens says what the model computed (0 on all hits).
func TestUsageWithCache(t *testing.T) {
	ts := newTestServer(t, func(c *Config, b *Services) { cachedEmbedder(t, c, b) })
	embed := func(inputs ...string) (usage int, compute string) {
		t.Helper()
		code, h, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": inputs})
		var resp struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}
		mustJSON(t, body, &resp)
		if code != 200 || resp.Usage.PromptTokens != resp.Usage.TotalTokens {
			t.Fatalf("%d %s", code, body)
		}
		return resp.Usage.PromptTokens, h.Get("x-compute-tokens")
	}
	docs := []string{"one two three", "four five", "six"}
	cold, coldCompute := embed(docs...)
	if cold != 3+2+1+3*2 || coldCompute != fmt.Sprint(cold) {
		t.Fatalf("cold: usage %d, x-compute-tokens %s; want 12 and 12", cold, coldCompute)
	}
	if hit, compute := embed(docs...); hit != cold || compute != "0" {
		t.Fatalf("all hits: usage %d (cold %d), x-compute-tokens %s (want 0)", hit, cold, compute)
	}
	if more, compute := embed(append(docs, "seven eight")...); more != cold+4 || compute != "4" {
		t.Fatalf("hits and one new text: usage %d (want %d), x-compute-tokens %s (want 4)", more, cold+4, compute)
	}
}

// TestShutdownServesBodyInFlight: a request whose headers were in when
// Serve began to drain, and whose body arrives after, is served (the drain
// waits for it) rather than refused with 503.
func TestShutdownServesBodyInFlight(t *testing.T) {
	ix := newFakeIndex()
	s, err := New(DefaultConfig(), Services{Documents: ix, Searcher: ix, Stats: ix})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A first request on the connection: the server has accepted it.
	br := bufio.NewReader(conn)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	body := `{"documents": [{"id": "d1", "text": "late body"}]}`
	head := fmt.Sprintf("POST /documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := io.WriteString(conn, head+body[:10]); err != nil {
		t.Fatal(err)
	}
	// Give the server time to read the headers (the connection turns
	// active), then drain.
	time.Sleep(200 * time.Millisecond)
	cancel()
	for deadline := time.Now().Add(5 * time.Second); !s.draining.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Serve did not start draining")
		}
	}
	time.Sleep(50 * time.Millisecond) // the drain is under way
	if _, err := io.WriteString(conn, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("body that arrived during the drain: %d %s", resp.StatusCode, b)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, ok := ix.docs[docKey("", "d1")]; !ok {
		t.Fatalf("document not stored: %v", ix.docs)
	}
}
