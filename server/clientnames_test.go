package server

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestClientDefaultNames: the model names Weaviate's modules and the
// official clients send by default are the default models' aliases on
// every route, listed by /v1/models with their served name as root.
func TestClientDefaultNames(t *testing.T) {
	ts := newTestServer(t, nil)
	cfg := ts.s.Config()
	for _, name := range cfg.ClientRerankAliases {
		for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
			code, _, body := ts.do(t, "POST", path, "", map[string]any{"model": name, "query": "q", "documents": []string{"a"}})
			if code != 200 {
				t.Fatalf("%s model %q: %d %s", path, name, code, body)
			}
		}
		code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": name, "query": "q", "documents": []string{"a"}})
		var resp rerankResponse
		mustJSON(t, body, &resp)
		if code != 200 || resp.Model != cfg.RerankModel {
			t.Fatalf("model %q answered as %q, want the served name", name, resp.Model)
		}
	}
	for _, name := range cfg.ClientEmbedAliases {
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": name, "input": "a"})
		if code != 200 {
			t.Fatalf("embeddings model %q: %d %s", name, code, body)
		}
	}
	_, _, body := ts.do(t, "GET", "/v1/models", "", nil)
	var list modelList
	mustJSON(t, body, &list)
	roots := map[string]string{}
	for _, m := range list.Data {
		roots[m.ID] = m.Root + "/" + m.Kind
	}
	for _, n := range cfg.ClientRerankAliases {
		if roots[n] != cfg.RerankModel+"/rerank" {
			t.Errorf("/v1/models: %q is %q, want the default reranker", n, roots[n])
		}
	}
	for _, n := range cfg.ClientEmbedAliases {
		if roots[n] != cfg.EmbedModel+"/embed" {
			t.Errorf("/v1/models: %q is %q, want the embedder", n, roots[n])
		}
	}
	// The defaults are the ones Weaviate v1.35.2 and the clients send.
	for _, n := range []string{"rerank-v3.5", "jina-reranker-v2-base-multilingual"} {
		if !slices.Contains(cfg.ClientRerankAliases, n) {
			t.Errorf("ClientRerankAliases lacks %q", n)
		}
	}
	for _, n := range []string{"text-embedding-3-small", "text-embedding-ada-002", "jina-embeddings-v4"} {
		if !slices.Contains(cfg.ClientEmbedAliases, n) {
			t.Errorf("ClientEmbedAliases lacks %q", n)
		}
	}
}

// TestClientDefaultNamesConfig: the lists can be emptied or replaced, a
// model's own names win over them, and a name in both lists is refused.
func TestClientDefaultNamesConfig(t *testing.T) {
	off := newTestServer(t, func(c *Config, _ *Services) { c.ClientRerankAliases, c.ClientEmbedAliases = []string{}, nil })
	code, _, body := off.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "rerank-v3.5", "query": "q", "documents": []string{"a"}})
	expectError(t, code, body, 404, TypeNotFound, `unknown rerank model "rerank-v3.5"`)
	code, _, body = off.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": "text-embedding-3-small", "input": "a"})
	expectError(t, code, body, 404, TypeNotFound, `unknown embedding model "text-embedding-3-small"`)

	mine := newTestServer(t, func(c *Config, _ *Services) { c.ClientRerankAliases = []string{"my-client-default"} })
	if code, _, body := mine.do(t, "POST", "/v2/rerank", "", map[string]any{"model": "my-client-default", "query": "q", "documents": []string{"a"}}); code != 200 {
		t.Fatalf("a replaced list: %d %s", code, body)
	}

	// A reranker of its own named rerank-v3.5 keeps the name; the default
	// keeps the other client names.
	ts, fakes := threeRerankers(t, func(c *Config, b *Services) {
		c.RerankModels = append(c.RerankModels, RerankerConfig{Name: "rerank-v3.5"})
		f := &fakeScorer{}
		b.Scorers["rerank-v3.5"] = f
	})
	if err := ts.s.Config().Validate(); err != nil {
		t.Fatal(err)
	}
	before := calls(fakes)
	code, _, body = ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "rerank-v3.5", "query": "q", "documents": []string{"a"}})
	var resp rerankResponse
	mustJSON(t, body, &resp)
	if code != 200 || resp.Model != "rerank-v3.5" || !maps.Equal(before, calls(fakes)) {
		t.Fatalf("own reranker named rerank-v3.5: %d %s", code, body)
	}
	if names := ts.s.Config().Rerankers()[0].Names(); slices.Contains(names, "rerank-v3.5") || !slices.Contains(names, "rerank-english-v3.0") {
		t.Fatalf("default reranker's names %v", names)
	}
	// The embedder's own alias wins over a client rerank name.
	emb := newTestServer(t, func(c *Config, _ *Services) { c.EmbedAliases = []string{"rerank-english-v3.0"} })
	if code, _, body := emb.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": "rerank-english-v3.0", "input": "a"}); code != 200 {
		t.Fatalf("embed alias over a client name: %d %s", code, body)
	}
	checkConfigCases(t, []configCase{
		{"in both lists", func(c *Config) { c.ClientEmbedAliases = append(c.ClientEmbedAliases, "rerank-v3.5") }, `"rerank-v3.5" names both a reranker and the embedder`},
		{"empty rerank name", func(c *Config) { c.ClientRerankAliases = []string{""} }, "client_rerank_aliases[0] is empty"},
		{"empty embed name", func(c *Config) { c.ClientEmbedAliases = []string{"a", " "} }, "client_embed_aliases[1] is empty"},
	})
}

// TestClientNamesInErrors: an unknown name's 404 lists the client names
// too, after the model's own.
func TestClientNamesInErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": "nope", "input": "a"})
	expectError(t, code, body, 404, TypeNotFound, `"hybrank-embed", "text-embedding-3-small"`)
	if !strings.Contains(string(body), `"param":"model"`) || !strings.Contains(string(body), `"code":"model_not_found"`) {
		t.Fatalf("OpenAI's param and code: %s", body)
	}
}
