package server

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestModelAliases checks that the served names and their aliases are all
// accepted as "model" and listed by /v1/models, and that the README's
// examples (model "embed") work once backend.Open has added the aliases.
func TestModelAliases(t *testing.T) {
	ts := newTestServer(t, func(c *Config, _ *Services) {
		c.RerankAliases = []string{"balanced", "ms-marco-MiniLM-L-6-v2"}
		c.EmbedAliases = []string{"embed", "all-minilm-l6-v2"}
	})
	for _, name := range []string{"", "hybrank-rerank", "balanced", "ms-marco-MiniLM-L-6-v2"} {
		for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
			code, _, body := ts.do(t, "POST", path, "", map[string]any{"model": name, "query": "q", "documents": []string{"a"}})
			if code != 200 {
				t.Fatalf("%s model %q: %d %s", path, name, code, body)
			}
		}
	}
	for _, name := range []string{"", "hybrank-embed", "embed", "all-minilm-l6-v2"} {
		code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": name, "input": []string{"hello world"}})
		if code != 200 {
			t.Fatalf("embeddings model %q: %d %s", name, code, body)
		}
		var resp struct{ Model string }
		mustJSON(t, body, &resp)
		if resp.Model != "hybrank-embed" {
			t.Fatalf("embeddings model %q answered as %q, want the served name", name, resp.Model)
		}
	}
	// A model's names do not reach the other model's routes.
	code, _, body := ts.do(t, "POST", "/v1/embeddings", "", map[string]any{"model": "balanced", "input": "x"})
	expectError(t, code, body, 404, TypeNotFound, `"hybrank-embed", "embed", "all-minilm-l6-v2"`)
	code, _, body = ts.do(t, "POST", "/v1/rerank", "", map[string]any{"model": "embed", "query": "q", "documents": []string{"a"}})
	expectError(t, code, body, 404, TypeNotFound, `"hybrank-rerank", "balanced", "ms-marco-MiniLM-L-6-v2"`)

	code, _, body = ts.do(t, "GET", "/v1/models", "", nil)
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	mustJSON(t, body, &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	cfg := ts.s.Config()
	want := append(append(append([]string{"hybrank-rerank", "balanced", "ms-marco-MiniLM-L-6-v2"}, cfg.ClientRerankAliases...),
		"hybrank-embed", "embed", "all-minilm-l6-v2"), cfg.ClientEmbedAliases...)
	if code != 200 || list.Object != "list" || !slices.Equal(ids, want) {
		t.Fatalf("/v1/models %d: ids %v, want %v", code, ids, want)
	}
}

// configCase is a change to DefaultConfig that Validate must refuse with
// ErrConfig and a message containing msg.
type configCase struct {
	name string
	mut  func(*Config)
	msg  string
}

// checkConfigCases runs every case as a subtest.
func checkConfigCases(t *testing.T, cases []configCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Validate = %v, want ErrConfig containing %q", err, tc.msg)
			}
		})
	}
}

func TestModelNamesValidate(t *testing.T) {
	checkConfigCases(t, []configCase{
		{"alias of both", func(c *Config) { c.RerankAliases, c.EmbedAliases = []string{"m"}, []string{"m"} }, `"m" names both`},
		{"alias is the other served name", func(c *Config) { c.RerankAliases = []string{c.EmbedModel} }, "names both"},
		{"empty alias", func(c *Config) { c.EmbedAliases = []string{" "} }, "embed_aliases[0] is empty"},
	})
	c := DefaultConfig()
	c.RerankAliases = []string{"balanced", "balanced", c.RerankModel}
	if err := c.Validate(); err != nil {
		t.Fatalf("repeated aliases of one model: %v", err)
	}
	if got := c.RerankNames(); !slices.Equal(got, append([]string{"hybrank-rerank", "balanced"}, c.ClientRerankAliases...)) {
		t.Fatalf("RerankNames = %v", got)
	}
}
