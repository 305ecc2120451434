package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/modeltest"
)

// TestRerankChunking checks the chunking field of the rerank routes: a
// text whose relevant words lie past the reranker's window is scored by
// its best window, whose span comes back on the result, and the windows of
// all texts went to the scorer as ordinary pairs.
func TestRerankChunking(t *testing.T) {
	ts := newTestServer(t, func(c *Config, _ *Services) {
		c.MaxPairTokens = 16 // 3 query words + 3 specials: windows of 10 words
		c.Rerank.MaxItems = 1024
	})
	long := strings.TrimSpace(strings.Repeat("filler ", 40)) + " zebra striped grass " + strings.TrimSpace(strings.Repeat("padding ", 30))
	short := "grass only"
	chunking := map[string]any{"stride": 5, "max_chunks_per_doc": 100}

	// TEI: without chunking the long text is over the window (413).
	code, _, body := ts.do(t, "POST", "/rerank", "", map[string]any{"query": "zebra striped grass", "texts": []string{long, short}})
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("TEI without chunking: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/rerank", "", map[string]any{"query": "zebra striped grass", "texts": []string{long, short}, "raw_scores": true, "chunking": chunking})
	if code != http.StatusOK {
		t.Fatalf("TEI with chunking: %d %s", code, body)
	}
	var tei []teiRank
	mustJSON(t, body, &tei)
	if len(tei) != 2 || tei[0].Index != 0 || tei[0].Span == nil || tei[1].Span == nil {
		t.Fatalf("TEI results %s", body)
	}
	best := long[tei[0].Span.Start:tei[0].Span.End]
	if !strings.Contains(best, "zebra striped grass") || len(strings.Fields(best)) > 10 {
		t.Fatalf("best window %v is %q", *tei[0].Span, best)
	}
	if want := modeltest.PairScore(models.Pair{Query: "zebra striped grass", Doc: best}); tei[0].Score != float64(want) {
		t.Fatalf("score %v, want the best window's %v", tei[0].Score, want)
	}
	if *tei[1].Span != (models.Span{Start: 0, End: len(short)}) {
		t.Fatalf("short text span %v", *tei[1].Span)
	}
	pairs := 0
	for _, n := range ts.scorer.BatchSizes() {
		pairs += n
	}
	// 73 words in windows of 10 starting 5 apart: 14 windows (the last
	// starts at word 65), and the short text's one.
	if pairs != 15 {
		t.Fatalf("%d pairs scored, want the 15 windows", pairs)
	}

	// Cohere/Jina: the span is an extra field, only with chunking.
	for _, ch := range []any{chunking, nil} {
		req := map[string]any{"query": "zebra striped grass", "documents": []string{short, long}}
		if ch != nil {
			req["chunking"] = ch
		}
		code, _, body = ts.do(t, "POST", "/v1/rerank", "", req)
		if code != http.StatusOK {
			t.Fatalf("/v1/rerank: %d %s", code, body)
		}
		var resp rerankResponse
		mustJSON(t, body, &resp)
		if got := resp.Results[0].Span != nil; got != (ch != nil) || strings.Contains(string(body), `"span"`) != (ch != nil) {
			t.Fatalf("chunking %v: %s", ch, body)
		}
		if ch != nil && (resp.Results[0].Index != 1 || long[resp.Results[0].Span.Start:resp.Results[0].Span.End] != best) {
			t.Fatalf("Cohere results %s", body)
		}
	}

	// A request may not make more than max_documents × 32 windows.
	small := newTestServer(t, func(c *Config, _ *Services) { c.MaxDocuments, c.MaxPairTokens = 1, 16 })
	code, _, body = small.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "zebra", "documents": []string{long},
		"chunking": map[string]any{"stride": 1, "max_chunks_per_doc": 100}})
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "windows") {
		t.Fatalf("too many windows: %d %s", code, body)
	}

	// Bad chunking is a 400 naming the field.
	for _, bad := range []string{
		`{"query":"q","documents":["d"],"chunking":{"stride":4,"aggregate":"sum"}}`,
		`{"query":"q","documents":["d"],"chunking":{"max_chunks_per_doc":4}}`,
		`{"query":"q","documents":["d"],"chunking":{"stride":"4"}}`,
	} {
		code, _, body = ts.do(t, "POST", "/v1/rerank", "", bad)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "chunking") {
			t.Fatalf("%s: %d %s", bad, code, body)
		}
	}
}

// echoSearcher records the request it gets and answers one reranked hit
// with a span.
type echoSearcher struct {
	mu  sync.Mutex
	got engine.Request
}

func (e *echoSearcher) Search(_ context.Context, req engine.Request) (*engine.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = req
	return &engine.Result{Hits: []engine.Hit{{Document: engine.Document{ID: "a", Text: "some text"},
		Provenance: engine.Provenance{Reranked: true, RerankSpan: &engine.Span{Start: 5, End: 9}}}}}, nil
}

// TestSearchChunking checks /search's chunking field: it reaches the
// Searcher as engine.Request.Chunking, and a hit's rerank span comes back.
func TestSearchChunking(t *testing.T) {
	es := &echoSearcher{}
	ts := newTestServer(t, func(_ *Config, b *Services) { b.Searcher = es })
	code, _, body := ts.do(t, "POST", "/search", "", `{"query":"q","rerank":"fast","chunking":{"stride":64,"aggregate":"mean_top_k","top_k":2}}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if want := (models.Chunking{Stride: 64, Aggregate: models.AggregateMeanTopK, TopK: 2}); es.got.Chunking != want {
		t.Fatalf("searcher got %+v", es.got.Chunking)
	}
	var res struct {
		Hits []struct {
			Provenance struct {
				RerankSpan *models.Span `json:"rerank_span"`
			} `json:"provenance"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Hits) != 1 || res.Hits[0].Provenance.RerankSpan == nil || *res.Hits[0].Provenance.RerankSpan != (models.Span{Start: 5, End: 9}) {
		t.Fatalf("response %s (%v)", body, err)
	}
	code, _, body = ts.do(t, "POST", "/search", "", `{"query":"q","chunking":{"stride":64}}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "chunking") {
		t.Fatalf("chunking without rerank: %d %s", code, body)
	}
}
