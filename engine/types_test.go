package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
)

// The engine's types are the server's wire types: durations travel as
// milliseconds ("budget_ms", fractional stage timings).
func TestRequestJSON(t *testing.T) {
	tests := []struct {
		name   string
		budget time.Duration
		want   string // the budget_ms member, "" when omitted
	}{
		{"no budget", 0, ""},
		{"whole ms", 50 * time.Millisecond, `"budget_ms":50`},
		{"sub-ms rounds up", 1500 * time.Microsecond, `"budget_ms":2`},
		{"under a ms stays positive", time.Nanosecond, `"budget_ms":1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(engine.Request{Query: "q", TopK: 3, Budget: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b); strings.Contains(got, `"budget"`) || (tc.want == "") == strings.Contains(got, "budget_ms") || !strings.Contains(got, tc.want) {
				t.Fatalf("marshal %s, want %q", got, tc.want)
			}
		})
	}
	var r engine.Request
	if err := json.Unmarshal([]byte(`{"query": "q", "top_k": 5, "fusion": "weighted", "alpha": 0.25, "expand": {"hops": 1}, "budget_ms": 75}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Query != "q" || r.TopK != 5 || r.Fusion != engine.FusionWeighted || r.Alpha == nil || *r.Alpha != 0.25 || r.Expand.Hops != 1 || r.Budget != 75*time.Millisecond {
		t.Fatalf("unmarshal %+v", r)
	}
	for _, bad := range []string{`{"query": "q", "budget_ms": 99999999999999}`, `{"query": "q", "budget_ms": "5"}`, `{"query": 5}`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestResultJSON(t *testing.T) {
	in := engine.Result{
		Hits:    []engine.Hit{{Document: engine.Document{ID: "a", Text: "t", Span: engine.Span{Start: 1, End: 2}}, Score: 0.5, Provenance: engine.Provenance{BM25Rank: 1}}},
		Timings: engine.Timings{BM25: 1500 * time.Microsecond, Total: 3 * time.Millisecond},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"bm25":1.5`, `"total":3`, `"analysis":0`, `"provenance":{"bm25_score":0,"bm25_rank":1`, `"span":{"start":1,"end":2}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var out engine.Result
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Timings != in.Timings || out.Hits[0].Provenance != in.Hits[0].Provenance || out.Hits[0].Document.Span != in.Hits[0].Document.Span {
		t.Fatalf("round trip %+v, want %+v", out, in)
	}
}
