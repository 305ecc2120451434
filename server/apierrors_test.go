package server

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// errorKeys returns the top-level keys of an error body and, when
// "error" is an object, its keys.
func errorKeys(t *testing.T, body []byte) (top, inner []string) {
	t.Helper()
	var m map[string]json.RawMessage
	mustJSON(t, body, &m)
	top = slices.Sorted(maps.Keys(m))
	if e := m["error"]; len(e) > 0 && e[0] == '{' {
		var in map[string]any
		mustJSON(t, e, &in)
		inner = slices.Sorted(maps.Keys(in))
	}
	return top, inner
}

var (
	hybrankShape  = []string{"error"}
	openAIShape   = []string{"detail", "error"}
	cohereShape   = []string{"detail", "message", "type"}
	teiShape      = []string{"error", "error_type"}
	weaviateShape = []string{"error"}
)

// TestErrorShapes: each API's routes answer errors in that API's shape,
// the rerank routes in their body's (TEI's for {query, texts}, Cohere's
// otherwise), before and after the body is read.
func TestErrorShapes(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct {
		name, method, path string
		body               any
		code               int
		top, inner         []string
		typ                string // "type" or "error_type"
	}{
		{"openai bad field", "POST", "/v1/embeddings", `{"input": "a", "encoding_format": "hex"}`, 400, openAIShape, []string{"code", "message", "param", "type"}, TypeInvalidRequest},
		{"openai other path", "POST", "/embeddings", `{bad`, 400, openAIShape, []string{"code", "message", "param", "type"}, TypeInvalidRequest},
		{"openai 405", "DELETE", "/v1/models", nil, 405, openAIShape, []string{"code", "message", "param", "type"}, TypeMethodNotAllowed},
		{"cohere v1", "POST", "/v1/rerank", `{"query": "q", "documents": ["a"], "top_n": 0}`, 400, cohereShape, nil, TypeInvalidRequest},
		{"cohere v2 malformed", "POST", "/v2/rerank", `{bad`, 400, cohereShape, nil, TypeInvalidRequest},
		{"cohere body on /rerank", "POST", "/rerank", `{"query": "q", "documents": ["a"], "top_n": 0}`, 400, cohereShape, nil, TypeInvalidRequest},
		{"cohere 404 model", "POST", "/v2/rerank", `{"model": "nope", "query": "q", "documents": ["a"]}`, 404, cohereShape, nil, TypeNotFound},
		{"tei body on /v1/rerank", "POST", "/v1/rerank", `{"query": "q", "texts": []}`, 400, teiShape, nil, "Validation"},
		{"tei body without query", "POST", "/v2/rerank", `{"texts": ["a"]}`, 400, teiShape, nil, "Validation"},
		{"tei malformed on /rerank", "POST", "/rerank", `{bad`, 400, teiShape, nil, "Validation"},
		{"tei 404 model", "POST", "/rerank", `{"model": "nope", "query": "q", "texts": ["a"]}`, 404, teiShape, nil, TypeNotFound},
		{"tei embed", "POST", "/embed", `{"inputs": []}`, 400, teiShape, nil, "Validation"},
		{"tei tokenize", "POST", "/tokenize", `{"inputs": 3}`, 400, teiShape, nil, "Validation"},
		{"tei 405", "GET", "/embed", nil, 405, teiShape, nil, TypeMethodNotAllowed},
		{"weaviate vectors", "POST", "/weaviate/vectors", `{}`, 400, weaviateShape, nil, ""},
		{"weaviate unknown path", "GET", "/weaviate/nothing", nil, 404, weaviateShape, nil, ""},
		{"weaviate 405", "GET", "/weaviate/rerank", nil, 405, weaviateShape, nil, ""},
		{"hybrank search", "POST", "/search", `{"query": "q", "fusion": "magic"}`, 400, hybrankShape, []string{"message", "type"}, TypeInvalidRequest},
		{"hybrank unknown route", "GET", "/nowhere", nil, 404, hybrankShape, []string{"message", "type"}, TypeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := ts.do(t, tc.method, tc.path, "", tc.body)
			if code != tc.code {
				t.Fatalf("status %d, want %d: %s", code, tc.code, body)
			}
			if h.Get("Content-Type") != "application/json" {
				t.Fatalf("Content-Type %q", h.Get("Content-Type"))
			}
			top, inner := errorKeys(t, body)
			if !slices.Equal(top, tc.top) || !slices.Equal(inner, tc.inner) {
				t.Fatalf("keys %v %v, want %v %v: %s", top, inner, tc.top, tc.inner, body)
			}
			msg, typ := errorFields(t, body)
			if msg == "" || typ != tc.typ {
				t.Fatalf("message %q type %q, want type %q: %s", msg, typ, tc.typ, body)
			}
		})
	}
}

// TestErrorShapeFields: OpenAI's param and code, Cohere's and Jina's
// text in both places, TEI's error types by status.
func TestErrorShapeFields(t *testing.T) {
	keyed := newTestServer(t, func(c *Config, _ *Services) { c.APIKeys = []APIKey{{Key: "k", Tenant: "t"}} })
	var oe openAIErrorBody
	code, _, body := keyed.do(t, "POST", "/v1/embeddings", "wrong", map[string]any{"input": "a"})
	mustJSON(t, body, &oe)
	if code != 401 || oe.Error.Code == nil || *oe.Error.Code != "invalid_api_key" || oe.Error.Param != nil || oe.Detail != oe.Error.Message {
		t.Fatalf("openai 401: %s", body)
	}
	ts := newTestServer(t, nil)
	code, _, body = ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"input": "a", "dimensions": 99})
	oe = openAIErrorBody{}
	mustJSON(t, body, &oe)
	if code != 400 || oe.Error.Param == nil || *oe.Error.Param != "dimensions" || oe.Error.Code != nil {
		t.Fatalf("openai dimensions: %s", body)
	}
	var ce cohereErrorBody
	code, _, body = keyed.do(t, "POST", "/v2/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}})
	mustJSON(t, body, &ce)
	if code != 401 || !strings.Contains(ce.Message, "API key") || ce.Detail != ce.Message || ce.Type != TypeUnauthorized {
		t.Fatalf("cohere 401: %s", body)
	}
	for _, tc := range []struct {
		status int
		typ    string
		want   string
	}{
		{400, TypeInvalidRequest, "Validation"}, {413, TypeTooLarge, "Validation"}, {429, TypeOverloaded, "Overloaded"},
		{500, TypeInternal, "Backend"}, {503, TypeUnavailable, "Unhealthy"}, {404, TypeNotFound, TypeNotFound}, {504, TypeTimeout, TypeTimeout},
	} {
		if got := teiErrorType(tc.status, tc.typ); got != tc.want {
			t.Errorf("teiErrorType(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
	// 429 on OpenAI's route: rate_limit_exceeded, with Retry-After.
	if c := openAICode(&apiError{status: 429}); c == nil || *c != "rate_limit_exceeded" {
		t.Errorf("429 code %v", c)
	}
	// A request no route wrapped (nil) is answered in hybrank's shape.
	if b, _ := json.Marshal(errorJSON(apiHybrank, badRequest("x"))); string(b) != `{"error":{"message":"x","type":"invalid_request_error"}}` {
		t.Errorf("hybrank shape %s", b)
	}
}
