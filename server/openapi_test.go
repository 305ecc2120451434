package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"mime"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hybrank/hybrank/models/modeltest"
)

// The OpenAPI document (openapi.json) is checked two ways: its paths and
// methods are exactly the route table's, and real responses of a test
// server over fakes validate against the schema it documents for their
// status (with a JSON-Schema subset validator below: type, properties,
// required, items, enum, oneOf, anyOf, nullable via type arrays,
// additionalProperties, $ref to components, and the numeric and length
// bounds). The validator refuses keywords it does not know, so the
// document cannot use one that would go unchecked.

// openAPI parses the embedded document.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return doc
}

// get walks a decoded JSON value by keys.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIRoutes checks that every registered route is documented
// under its method and that the document has no other operation; that
// the routes needing an API key document 401 and the public ones no
// security; and that GET /openapi.json serves the document.
func TestOpenAPIRoutes(t *testing.T) {
	doc := openAPI(t)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v, want 3.1.0", doc["openapi"])
	}
	ts := newTestServer(t, nil)
	var registered, documented []string
	auth := map[string]bool{}
	for _, r := range ts.s.routeTable() {
		key := r.method + " " + r.path
		registered = append(registered, key)
		auth[key] = r.auth
	}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for _, m := range httpMethods {
			op := get(item, m)
			if op == nil {
				continue
			}
			key := strings.ToUpper(m) + " " + path
			documented = append(documented, key)
			needsKey, known := auth[key]
			if !known {
				continue
			}
			_, has401 := get(op, "responses").(map[string]any)["401"]
			security, public := get(op, "security").([]any)
			public = public && len(security) == 0
			if needsKey != has401 || needsKey == public {
				t.Errorf("%s: route needs an API key %v, but the document has 401 %v and security %v", key, needsKey, has401, get(op, "security"))
			}
			if get(op, "operationId") == nil {
				t.Errorf("%s: no operationId", key)
			}
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	if !slices.Equal(registered, documented) {
		t.Fatalf("routes and document differ:\nregistered %v\ndocumented %v", registered, documented)
	}
	code, h, body := ts.do(t, "GET", "/openapi.json", "", nil)
	if code != 200 || h.Get("Content-Type") != "application/json" || !bytes.Equal(body, openAPIDoc) {
		t.Fatalf("GET /openapi.json: %d %s, %d bytes", code, h.Get("Content-Type"), len(body))
	}
}

// TestOpenAPISchemas checks every schema of the document: each $ref
// resolves and each keyword is one the validator checks (or an
// annotation).
func TestOpenAPISchemas(t *testing.T) {
	doc := openAPI(t)
	v := &schemaValidator{doc: doc}
	n := 0
	var walk func(node any, at string)
	walk = func(node any, at string) {
		switch x := node.(type) {
		case map[string]any:
			if s, ok := x["schema"]; ok {
				n++
				if err := v.check(s, at+"/schema"); err != nil {
					t.Error(err)
				}
			}
			for k, c := range x {
				if k != "schema" {
					walk(c, at+"/"+k)
				}
			}
		case []any:
			for i, c := range x {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc["paths"], "#/paths")
	walk(get(doc, "components", "responses"), "#/components/responses")
	for name, s := range get(doc, "components", "schemas").(map[string]any) {
		n++
		if err := v.check(s, "#/components/schemas/"+name); err != nil {
			t.Error(err)
		}
	}
	if n < 50 {
		t.Fatalf("checked %d schemas", n)
	}
}

// schemaValidator validates decoded JSON against the JSON-Schema subset
// openapi.json uses, resolving $ref against the document.
type schemaValidator struct{ doc map[string]any }

// schemaKeywords are the keywords the validator checks; annotations are
// read by people only.
var (
	schemaKeywords = []string{"$ref", "type", "properties", "required", "additionalProperties", "items", "enum",
		"oneOf", "anyOf", "minimum", "maximum", "minItems", "minLength", "maxLength"}
	schemaAnnotations = []string{"description", "title", "format", "default", "examples", "deprecated"}
)

func (v *schemaValidator) resolve(ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not to #/components/", ref)
	}
	s := get(v.doc["components"], strings.Split(p, "/")...)
	if s == nil {
		return nil, fmt.Errorf("$ref %q resolves to nothing", ref)
	}
	return s, nil
}

// check reports an unknown keyword or an unresolved $ref in schema or the
// schemas inside it (not following $refs, which are checked where they
// point).
func (v *schemaValidator) check(schema any, at string) error {
	m, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is %T, want an object", at, schema)
	}
	var errs []string
	for k, x := range m {
		switch {
		case slices.Contains(schemaAnnotations, k):
		case !slices.Contains(schemaKeywords, k):
			errs = append(errs, fmt.Sprintf("%s: keyword %q is not checked by the test's validator", at, k))
		case k == "$ref":
			if _, err := v.resolve(x.(string)); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", at, err))
			}
		case k == "properties":
			for name, p := range x.(map[string]any) {
				if err := v.check(p, at+"/properties/"+name); err != nil {
					errs = append(errs, err.Error())
				}
			}
		case k == "items" || (k == "additionalProperties" && x != false):
			if err := v.check(x, at+"/"+k); err != nil {
				errs = append(errs, err.Error())
			}
		case k == "oneOf" || k == "anyOf":
			for i, s := range x.([]any) {
				if err := v.check(s, fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// jsonTypes returns the JSON Schema types of a decoded value (a whole
// number is both integer and number).
func jsonTypes(x any) []string {
	switch x := x.(type) {
	case nil:
		return []string{"null"}
	case bool:
		return []string{"boolean"}
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return []string{"integer", "number"}
		}
		return []string{"number"}
	case string:
		return []string{"string"}
	case []any:
		return []string{"array"}
	case map[string]any:
		return []string{"object"}
	}
	return []string{fmt.Sprintf("%T", x)}
}

// validate returns why x does not match schema ("" when it does), at
// naming x's place in the body.
func (v *schemaValidator) validate(schema any, x any, at string) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: schema is %T", at, schema)}
	}
	if ref, ok := m["$ref"].(string); ok {
		s, err := v.resolve(ref)
		if err != nil {
			return []string{fmt.Sprintf("%s: %v", at, err)}
		}
		return v.validate(s, x, at)
	}
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, a...)) }
	if t, ok := m["type"]; ok {
		var want []string
		switch t := t.(type) {
		case string:
			want = []string{t}
		case []any:
			for _, s := range t {
				want = append(want, s.(string))
			}
		}
		if !slices.ContainsFunc(jsonTypes(x), func(s string) bool { return slices.Contains(want, s) }) {
			fail("got %s %s, want type %v", jsonTypes(x)[0], brief(x), want)
			return errs // the other keywords would only repeat it
		}
	}
	if enum, ok := m["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, x) }) {
		fail("%s is not one of %v", brief(x), enum)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		alts, ok := m[k].([]any)
		if !ok {
			continue
		}
		matched, why := 0, []string{}
		for i, s := range alts {
			if e := v.validate(s, x, fmt.Sprintf("%s/%s[%d]", at, k, i)); len(e) == 0 {
				matched++
			} else {
				why = append(why, e...)
			}
		}
		if matched == 0 || (k == "oneOf" && matched > 1) {
			fail("%d of the %s alternatives match, want %s: %s", matched, k, map[string]string{"oneOf": "exactly 1", "anyOf": "at least 1"}[k], strings.Join(why, "; "))
		}
	}
	switch x := x.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		for _, r := range asStrings(m["required"]) {
			if _, ok := x[r]; !ok {
				fail("required property %q is missing", r)
			}
		}
		for _, k := range slices.Sorted(mapsKeys(x)) {
			if p, ok := props[k]; ok {
				errs = append(errs, v.validate(p, x[k], at+"."+k)...)
				continue
			}
			switch ap := m["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("property %q is not in the schema (additionalProperties false)", k)
				}
			case map[string]any:
				errs = append(errs, v.validate(ap, x[k], at+"."+k)...)
			}
		}
	case []any:
		if n, ok := m["minItems"].(float64); ok && float64(len(x)) < n {
			fail("%d items, want at least %v", len(x), n)
		}
		if items, ok := m["items"]; ok {
			for i, e := range x {
				errs = append(errs, v.validate(items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case float64:
		if lo, ok := m["minimum"].(float64); ok && x < lo {
			fail("%v is below the minimum %v", x, lo)
		}
		if hi, ok := m["maximum"].(float64); ok && x > hi {
			fail("%v is above the maximum %v", x, hi)
		}
	case string:
		n := float64(utf8.RuneCountInString(x))
		if lo, ok := m["minLength"].(float64); ok && n < lo {
			fail("%q is shorter than %v", x, lo)
		}
		if hi, ok := m["maxLength"].(float64); ok && n > hi {
			fail("string of %v characters is longer than %v", n, hi)
		}
	}
	return errs
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// brief is x as JSON, cut short for messages.
func brief(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// The validator must fail what it should, or the response test proves
// nothing.
func TestSchemaValidator(t *testing.T) {
	v := &schemaValidator{doc: openAPI(t)}
	ref := func(name string) any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	for _, tc := range []struct {
		name   string
		schema string
		body   string
		want   string // "" means valid
	}{
		{"valid token", "Token", `{"id": 7, "text": "a", "special": false, "start": 0, "stop": 1}`, ""},
		{"null offsets", "Token", `{"id": 101, "text": "[CLS]", "special": true, "start": null, "stop": null}`, ""},
		{"wrong type", "Token", `{"id": "7", "text": "a", "special": false, "start": 0, "stop": 1}`, "want type [integer]"},
		{"not an integer", "Token", `{"id": 7.5, "text": "a", "special": false, "start": 0, "stop": 1}`, "want type [integer]"},
		{"missing required", "Token", `{"id": 7, "text": "a", "special": false, "start": 0}`, `required property "stop"`},
		{"additional property", "Token", `{"id": 7, "text": "a", "special": false, "start": 0, "stop": 1, "x": 1}`, `property "x" is not in the schema`},
		{"null for an array", "SearchResult", `{"hits": [], "passages": null, "tokens": 0, "candidates": 0, "reranked": 0, "degraded": false, "timings": {"analysis": 0, "bm25": 0, "dense": 0, "fusion": 0, "expansion": 0, "mmr": 0, "rerank": 0, "packing": 0, "total": 0}}`, "passages: got null"},
		{"enum", "Fallback", `{"code": "whatever"}`, "is not one of"},
		{"oneOf none", "RerankDocument", `7`, "0 of the oneOf alternatives match"},
		{"oneOf string", "RerankDocument", `"text"`, ""},
		{"minimum", "Span", `{"start": -1, "end": 0}`, "below the minimum"},
		{"array items", "TEIRerankResponse", `[{"index": 0, "score": 0.5}, {"index": 1}]`, `[1]: required property "score"`},
		{"map values", "Metadata", `{"lang": "en", "year": 2024}`, ".year: got integer"},
		{"ref to ref", "OpenAIEmbedResponse", `{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, "x"]}], "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}}`, "0 of the oneOf alternatives match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x any
			if err := json.Unmarshal([]byte(tc.body), &x); err != nil {
				t.Fatal(err)
			}
			errs := strings.Join(v.validate(ref(tc.schema), x, "$"), "\n")
			if (tc.want == "") != (errs == "") || !strings.Contains(errs, tc.want) {
				t.Fatalf("errors %q, want %q", errs, tc.want)
			}
		})
	}
	if err := v.check(map[string]any{"allOf": []any{}}, "#"); err == nil {
		t.Fatal("unknown keyword allOf accepted")
	}
}

// operation finds the documented operation of a request: the path
// template matching urlPath ({name} matches one segment) and the method.
func operation(doc map[string]any, method, urlPath string) (op map[string]any, template string) {
	for tmpl, item := range doc["paths"].(map[string]any) {
		re := "^" + regexp.MustCompile(`\\\{[^/]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(urlPath) {
			op, _ := get(item, strings.ToLower(method)).(map[string]any)
			return op, tmpl
		}
	}
	return nil, ""
}

// pathErrorSchema is the error schema of the operations of path template
// tmpl (the first 4xx response with a JSON schema, in status order): the
// shape of that path's API, which a 405 on it takes too.
func pathErrorSchema(v *schemaValidator, doc map[string]any, tmpl string) any {
	item, _ := get(doc, "paths", tmpl).(map[string]any)
	for _, m := range httpMethods {
		responses, _ := get(item, m, "responses").(map[string]any)
		for _, code := range slices.Sorted(mapsKeys(responses)) {
			resp := responses[code]
			if ref, ok := get(resp, "$ref").(string); ok {
				resp, _ = v.resolve(ref)
			}
			if sc := get(resp, "content", "application/json", "schema"); strings.HasPrefix(code, "4") && sc != nil {
				return sc
			}
		}
	}
	return map[string]any{"$ref": "#/components/schemas/Error"}
}

// openAPICase is one request of TestOpenAPIResponses.
type openAPICase struct {
	method, path, key string
	body              any
	code              int
}

// checkOpenAPI sends each case to ts and validates the response against
// the schema the document gives its status (for a method or path with no
// operation, the Error schema) and, for a 2xx answer, the request body
// against the operation's request schema.
func checkOpenAPI(t *testing.T, ts *testServer, cases []openAPICase) {
	t.Helper()
	doc := openAPI(t)
	v := &schemaValidator{doc: doc}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s %d", c.method, c.path, c.code)
		code, h, body := ts.do(t, c.method, c.path, c.key, c.body)
		if code != c.code {
			t.Errorf("%s: status %d: %s", name, code, body)
			continue
		}
		op, tmpl := operation(doc, c.method, strings.SplitN(c.path, "?", 2)[0])
		var schema any = map[string]any{"$ref": "#/components/schemas/Error"}
		if op == nil && tmpl != "" {
			schema = pathErrorSchema(v, doc, tmpl) // 405: the path's API's errors
		}
		mediaType := "application/json"
		if op != nil {
			resp := get(op, "responses", fmt.Sprint(code))
			if resp == nil {
				t.Errorf("%s: status %d is not documented", name, code)
				continue
			}
			if ref, ok := get(resp, "$ref").(string); ok {
				if resp, _ = v.resolve(ref); resp == nil {
					t.Errorf("%s: %s resolves to nothing", name, ref)
					continue
				}
			}
			content, _ := get(resp, "content").(map[string]any)
			if content == nil && code == http.StatusNoContent {
				if len(body) != 0 {
					t.Errorf("%s: 204 with a body: %s", name, body)
				}
				continue // documented without content, answered without
			}
			mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
			if err != nil || content[mt] == nil {
				t.Errorf("%s: content type %q is not documented (%v)", name, h.Get("Content-Type"), slices.Collect(mapsKeys(content)))
				continue
			}
			mediaType, schema = mt, get(content, mt, "schema")
			if code/100 == 2 && c.body != nil {
				reqSchema := get(op, "requestBody", "content", "application/json", "schema")
				var sent any
				b, _ := json.Marshal(c.body)
				if s, ok := c.body.(string); ok {
					b = []byte(s)
				}
				if err := json.Unmarshal(b, &sent); err != nil {
					t.Fatalf("%s: request body: %v", name, err)
				}
				for _, e := range v.validate(reqSchema, sent, "request") {
					t.Errorf("%s: the document refuses a request the server answered %d: %s", name, code, e)
				}
			}
		}
		if mediaType != "application/json" {
			continue // /metrics: text
		}
		var got any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("%s: response is not JSON: %v", name, err)
			continue
		}
		for _, e := range v.validate(schema, got, "response") {
			t.Errorf("%s: %s\n\tbody %s", name, e, brief(got))
		}
	}
}

// TestOpenAPIResponses validates real responses of every route, in every
// shape and for the errors each can answer, against the document.
func TestOpenAPIResponses(t *testing.T) {
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.RerankAliases, c.EmbedAliases = []string{"balanced"}, []string{"embed"}
	})
	long := strings.Repeat("word ", 600)
	docs := []map[string]any{
		{"id": "d1", "title": "Cats", "text": "the cat sat on the mat", "metadata": map[string]string{"lang": "en"},
			"source": "cats.md", "span": map[string]int{"start": 0, "end": 3}, "links": []string{"d2"}},
		{"id": "d2", "text": "a cat and a dog"},
		{"id": "d3", "tenant": "acme", "text": "cat food"},
	}
	checkOpenAPI(t, ts, []openAPICase{
		{"POST", "/rerank", "", map[string]any{"query": "cat", "documents": rerankDocs, "top_n": 2}, 200},
		{"POST", "/rerank", "", map[string]any{"query": "cat", "texts": rerankDocs, "return_text": true, "raw_scores": true}, 200},
		{"POST", "/v1/rerank", "", map[string]any{"model": "balanced", "query": "cat", "documents": []any{"a cat", map[string]string{"text": "a dog"}}}, 200},
		{"POST", "/v1/rerank", "", map[string]any{"query": "cat", "documents": rerankDocs, "return_documents": false, "max_tokens_per_doc": 3}, 200},
		{"POST", "/v2/rerank", "", map[string]any{"model": "hybrank-rerank", "query": "cat", "documents": rerankDocs}, 200},
		{"POST", "/v2/rerank", "", map[string]any{"query": "cat", "documents": rerankDocs, "return_documents": true}, 200},
		{"POST", "/v2/rerank", "", map[string]any{"query": "cat", "texts": rerankDocs}, 200},
		{"POST", "/rerank", "", map[string]any{"query": "cat", "texts": []string{long}, "chunking": map[string]any{"stride": 64, "max_chunks_per_doc": 4}}, 200},
		{"POST", "/v1/rerank", "", map[string]any{"query": "cat", "documents": []string{long, "a cat"}, "chunking": map[string]any{"stride": 64, "aggregate": "mean_top_k", "top_k": 2}}, 200},
		{"POST", "/v2/rerank", "", map[string]any{"query": "cat", "documents": []string{long}, "chunking": map[string]any{"stride": 100}}, 200},
		{"POST", "/embed", "", map[string]any{"inputs": "hello world"}, 200},
		{"POST", "/embed", "", map[string]any{"inputs": []string{"a b", "c"}, "normalize": false, "truncate": true}, 200},
		{"POST", "/v1/embeddings", "", map[string]any{"input": []string{"a b", "c"}, "model": "embed"}, 200},
		{"POST", "/v1/embeddings", "", map[string]any{"input": "a b", "encoding_format": "base64", "dimensions": 4}, 200},
		{"POST", "/embeddings", "", map[string]any{"input": "a b", "encoding_format": "float"}, 200},
		{"GET", "/v1/models", "", nil, 200},
		{"POST", "/tokenize", "", map[string]any{"inputs": "hello big world"}, 200},
		{"POST", "/tokenize", "", map[string]any{"inputs": []string{"hello world", " "}, "add_special_tokens": false}, 200},
		{"POST", "/analyze", "", map[string]any{"inputs": []string{"Running cats", "the"}}, 200},
		{"POST", "/analyze", "", map[string]any{"inputs": "cats", "input_type": "query"}, 200},
		{"POST", "/documents", "", map[string]any{"documents": docs, "delete": []string{"gone"}}, 200},
		{"GET", "/documents/d1", "", nil, 200},
		{"GET", "/documents/d3?tenant=acme", "", nil, 200},
		{"POST", "/search", "", map[string]any{"query": "cat", "top_k": 5, "filter": map[string]string{"lang": "en"},
			"expand": map[string]any{"hops": 1, "decay": 0.5}, "budget_ms": 200, "rerank": "balanced",
			"cascade": map[string]any{"first": "hybrank-rerank", "keep": 2}, "fusion": "weighted", "alpha": 0.3, "token_budget": 100, "reserve": 10}, 200},
		{"POST", "/search", "", map[string]any{"query": "cat", "tenant": "acme", "mmr_lambda": 0.7, "rrf_k": 60}, 200},
		{"POST", "/search", "", map[string]any{"query": "nothing matches this"}, 200},
		{"POST", "/search", "", map[string]any{"query": "cat", "rerank": "balanced", "chunking": map[string]any{"stride": 16}}, 200},
		{"POST", "/documents?tenant=acme", "", map[string]any{"delete": []string{"d3"}}, 200},
		{"DELETE", "/documents?tenant=acme", "", map[string]any{"ids": []string{"d3"}}, 200},
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/health", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/openapi.json", "", nil, 200},
		// Errors.
		{"POST", "/v1/rerank", "", "{bad", 400},
		{"POST", "/search", "", map[string]any{"query": "q", "fusion": "magic"}, 400},
		{"POST", "/documents", "", map[string]any{"documents": []map[string]any{{"id": "m", "metadata": map[string]any{"n": 1}}}}, 400},
		{"POST", "/tokenize", "", map[string]any{"inputs": []int{1}}, 400},
		{"POST", "/analyze", "", map[string]any{"inputs": "a", "input_type": "passage"}, 400},
		{"POST", "/v1/rerank", "", map[string]any{"model": "rerank-english-v2.0", "query": "q", "documents": []string{"a"}}, 404},
		{"POST", "/v1/embeddings", "", map[string]any{"model": "text-embedding-4-tiny", "input": "a"}, 404},
		{"GET", "/documents/nope", "", nil, 404},
		{"POST", "/rerank", "", map[string]any{"query": "q", "texts": []string{long}}, 413},
		{"POST", "/embed", "", map[string]any{"inputs": long}, 413},
		{"GET", "/v1/rerank", "", nil, 405},
		{"DELETE", "/healthz", "", nil, 405},
		{"GET", "/nowhere", "", nil, 404},
	})

	keyed := newTestServer(t, func(c *Config, _ *Services) { c.APIKeys = []APIKey{{Key: "k", Tenant: "t"}} })
	checkOpenAPI(t, keyed, []openAPICase{
		{"POST", "/search", "", map[string]any{"query": "q"}, 401},
		{"GET", "/v1/models", "", nil, 401},
		{"GET", "/documents/x", "nope", nil, 401},
		{"POST", "/search", "k", map[string]any{"query": "q", "tenant": "other"}, 403},
		{"POST", "/documents", "k", map[string]any{"documents": []map[string]string{{"id": "x", "tenant": "other"}}}, 403},
		{"DELETE", "/documents?tenant=other", "k", map[string]any{"ids": []string{"x"}}, 403},
		{"GET", "/documents/x?tenant=other", "k", nil, 403},
		{"POST", "/documents", "k", map[string]any{"documents": []map[string]string{{"id": "x", "text": "mine"}}}, 200},
		{"GET", "/documents/x", "k", nil, 200},
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/openapi.json", "", nil, 200},
	})

	empty := newTestServer(t, func(_ *Config, b *Services) { *b = Services{} })
	checkOpenAPI(t, empty, []openAPICase{
		{"POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}}, 503},
		{"POST", "/v2/rerank", "", map[string]any{"query": "q", "texts": []string{"a"}}, 503},
		{"POST", "/embed", "", map[string]any{"inputs": "a"}, 503},
		{"POST", "/v1/embeddings", "", map[string]any{"input": "a"}, 503},
		{"POST", "/tokenize", "", map[string]any{"inputs": "a"}, 503},
		{"POST", "/analyze", "", map[string]any{"inputs": "a"}, 503},
		{"POST", "/search", "", map[string]any{"query": "q"}, 503},
		{"POST", "/documents", "", map[string]any{"documents": []map[string]string{{"id": "x"}}}, 503},
		{"DELETE", "/documents", "", map[string]any{"ids": []string{"x"}}, 503},
		{"GET", "/documents/x", "", nil, 503},
		{"GET", "/readyz", "", nil, 503},
		{"GET", "/v1/models", "", nil, 200},
	})

	failing := newTestServer(t, func(c *Config, b *Services) {
		b.Rerankers = defaultReranker(&modeltest.Scorer{Err: fmt.Errorf("onnx exploded")})
		c.RequestTimeout = Duration(20 * time.Millisecond)
		ix := newFakeIndex()
		ix.wait = time.Second
		b.Searcher = ix
	})
	checkOpenAPI(t, failing, []openAPICase{
		{"POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}}, 500},
		{"POST", "/search", "", map[string]any{"query": "q"}, 504},
	})

	sc := &modeltest.Scorer{Gate: make(chan struct{}), Started: make(chan int, 1)}
	busy := newTestServer(t, func(c *Config, b *Services) { c.MaxConcurrentRequests = 1; b.Rerankers = defaultReranker(sc) })
	done := make(chan int)
	go func() {
		code, _, _ := busy.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "q", "documents": []string{"a"}})
		done <- code
	}()
	<-sc.Started
	checkOpenAPI(t, busy, []openAPICase{{"POST", "/v2/rerank", "", map[string]any{"query": "q", "documents": []string{"b"}}, 429}})
	close(sc.Gate)
	if code := <-done; code != 200 {
		t.Fatalf("first request %d", code)
	}
}

// TestOpenAPIFallbackCodes: the document's enum of fallback codes is
// exactly the engine's FallbackCode constants (read from its source, so a
// new code cannot go undocumented).
func TestOpenAPIFallbackCodes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "engine", "types.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "FallbackCode" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					want = append(want, s)
				}
			}
		}
	}
	var got []string
	for _, v := range get(openAPI(t), "components", "schemas", "Fallback", "properties", "code", "enum").([]any) {
		got = append(got, v.(string))
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) < 9 || !slices.Equal(got, want) {
		t.Fatalf("openapi.json Fallback codes %v, engine's FallbackCode constants %v", got, want)
	}
}
