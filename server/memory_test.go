package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// gatedIndex is a fakeIndex whose Apply waits for gate (or its context).
type gatedIndex struct {
	*fakeIndex
	gate chan struct{}
}

func (x gatedIndex) Apply(ctx context.Context, b DocumentBatch) (CommitResult, error) {
	select {
	case <-x.gate:
	case <-ctx.Done():
		return CommitResult{}, ctx.Err()
	}
	return x.fakeIndex.Apply(ctx, b)
}

// docsBody is a /documents body of n documents of textLen bytes each.
func docsBody(n, textLen int) string {
	var b strings.Builder
	b.WriteString(`{"documents":[`)
	text := strings.Repeat("lantern ", textLen/8+1)[:textLen]
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"d%d","text":%q}`, i, text)
	}
	b.WriteString(`]}`)
	return b.String()
}

// rerankBody is a rerank body of n documents of textLen bytes each.
func rerankBody(n, textLen int) string {
	var b strings.Builder
	b.WriteString(`{"query":"lantern","documents":[`)
	text := strings.Repeat("meadow ", textLen/7+1)[:textLen]
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", text)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestBodyBytesInFlight: request bodies held at once are capped by
// MaxInflightBodyBytes (429 with Retry-After beyond), a request is
// admitted when it fits beside those in flight, and the reservation is
// returned when a request is answered.
func TestBodyBytesInFlight(t *testing.T) {
	gate := make(chan struct{})
	ts := newTestServer(t, func(c *Config, b *Services) {
		c.MaxBodyBytes, c.MaxInflightBodyBytes = 64<<10, 100<<10
		ix := newFakeIndex()
		b.Documents, b.Searcher = gatedIndex{ix, gate}, ix
	})
	big := docsBody(60, 1000) // ≈ 60 KiB: two do not fit in 100 KiB
	first := make(chan int, 1)
	go func() {
		code, _, _ := ts.do(t, "POST", "/documents", "", big)
		first <- code
	}()
	for deadline := time.Now().Add(30 * time.Second); ts.s.bodyBytes.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first request never reserved its body")
		}
	}
	code, h, body := ts.do(t, "POST", "/documents", "", big)
	expectError(t, code, body, http.StatusTooManyRequests, TypeOverloaded, "max_inflight_body_bytes")
	if h.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	small := make(chan int, 1)
	go func() {
		code, _, _ := ts.do(t, "POST", "/documents", "", docsBody(1, 10)) // fits beside the first
		small <- code
	}()
	close(gate)
	if c := <-first; c != http.StatusOK {
		t.Fatalf("first request: %d", c)
	}
	if c := <-small; c != http.StatusOK {
		t.Fatalf("small request beside it: %d", c)
	}
	if code, _, body := ts.do(t, "POST", "/documents", "", big); code != http.StatusOK {
		t.Fatalf("the refused request once the first was answered: %d %s", code, body)
	}
	if n := ts.s.bodyBytes.Load(); n != 0 {
		t.Fatalf("%d body bytes still reserved after every request was answered", n)
	}
}

// TestMemoryPressure: near the memory limit (a small debug.SetMemoryLimit,
// read through the runtime as in production) requests with a body are
// shed with 503 and Retry-After before their body is read, while health
// and readiness keep answering; a huge /documents batch and a rerank of
// 10,000 long documents are refused with 413 by the per-request limits
// rather than decoded; with the memory back under the limit the same
// routes serve again.
func TestMemoryPressure(t *testing.T) {
	ts := newTestServer(t, nil)
	huge := docsBody(DefaultConfig().MaxIndexDocuments+1, 10)
	long := rerankBody(10000, 1000) // 10,000 documents, ≈ 10 MB: over max_body_bytes
	small := docsBody(1, 10)
	tests := []struct {
		name, path, body string
		pressure         bool
		code             int
		typ, msg         string
	}{
		{"huge documents batch", "/documents", huge, false, http.StatusRequestEntityTooLarge, TypeTooLarge, "the limit is"},
		{"10,000 long documents to rerank", "/v1/rerank", long, false, http.StatusRequestEntityTooLarge, TypeTooLarge, "max_body_bytes"},
		{"documents near the limit", "/documents", small, true, http.StatusServiceUnavailable, TypeUnavailable, "memory limit"},
		{"rerank near the limit", "/v1/rerank", rerankBody(2, 10), true, http.StatusServiceUnavailable, TypeUnavailable, "memory limit"},
		{"huge batch near the limit", "/documents", huge, true, http.StatusServiceUnavailable, TypeUnavailable, "memory limit"},
		{"documents under the limit", "/documents", small, false, http.StatusOK, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pressure {
				// A limit well under what the process uses now: above
				// the high water mark whatever the collector frees.
				old := debug.SetMemoryLimit(runtimeMemory() / 4)
				defer debug.SetMemoryLimit(old)
			}
			code, h, body := ts.do(t, "POST", tc.path, "", tc.body)
			if tc.code == http.StatusOK {
				if code != http.StatusOK {
					t.Fatalf("%d %s", code, body)
				}
				return
			}
			expectError(t, code, body, tc.code, tc.typ, tc.msg)
			if tc.pressure {
				if h.Get("Retry-After") == "" {
					t.Error("503 near the memory limit without Retry-After")
				}
				if code, _, _ := ts.do(t, "GET", "/healthz", "", nil); code != http.StatusOK {
					t.Errorf("healthz near the memory limit: %d", code)
				}
			}
		})
	}
	if code, _, body := ts.do(t, "GET", "/metrics", "", nil); code != 200 || !strings.Contains(string(body), `hybrank_requests_shed_total{reason="memory"} 3`) {
		t.Errorf("metrics lack 3 requests shed for memory: %d", code)
	}
}
