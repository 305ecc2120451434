package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/analysis"
)

// TestAnalyze: /analyze answers the index analyzer's terms, as a
// document or as a query, with its version; bad input is 400.
func TestAnalyze(t *testing.T) {
	ts := newTestServer(t, nil)
	a := analysis.MustNew(analysis.DefaultConfig())
	code, _, body := ts.do(t, "POST", "/analyze", "", map[string]any{"inputs": []string{"The cats were running", "the of"}})
	var got analyzeResponse
	if err := json.Unmarshal(body, &got); err != nil || code != 200 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if got.Analyzer != a.Version() || len(got.Terms) != 2 || !slices.Equal(got.Terms[0], a.Analyze("The cats were running")) || got.Terms[1] == nil || len(got.Terms[1]) != 0 {
		t.Fatalf("%s", body)
	}
	if !slices.Contains(got.Terms[0], "cat") || !slices.Contains(got.Terms[0], "run") {
		t.Fatalf("terms %v are not stemmed (analyzer %s)", got.Terms[0], got.Analyzer)
	}
	if !strings.Contains(string(body), `"terms":[[`) || !strings.Contains(string(body), `,[]]`) {
		t.Fatalf("a text of stopwords only is not an empty list: %s", body)
	}
	code, _, body = ts.do(t, "POST", "/analyze", "", map[string]any{"inputs": "Cats RUNNING", "input_type": "query"})
	got = analyzeResponse{}
	if err := json.Unmarshal(body, &got); err != nil || code != 200 || !slices.Equal(got.Terms[0], a.AnalyzeQuery("Cats RUNNING")) {
		t.Fatalf("query: %d %s", code, body)
	}
	for _, tc := range []struct {
		body any
		code int
		msg  string
	}{
		{map[string]any{"inputs": "a", "input_type": "passage"}, 400, `input_type`},
		{map[string]any{}, 400, `inputs\" is required`},
		{map[string]any{"inputs": []string{}}, 400, "must not be empty"},
	} {
		code, _, body := ts.do(t, "POST", "/analyze", "", tc.body)
		if code != tc.code || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%v: %d %s, want %d with %q", tc.body, code, body, tc.code, tc.msg)
		}
	}
	lim := newTestServer(t, func(c *Config, _ *Services) { c.MaxInputs = 1 })
	if code, _, body := lim.do(t, "POST", "/analyze", "", map[string]any{"inputs": []string{"a", "b"}}); code != 413 {
		t.Errorf("over max_inputs: %d %s", code, body)
	}
}
