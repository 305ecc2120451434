package backend_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// TestReadOnlyAfterLogFailure: a failed write-ahead log write or fsync
// answers the /documents request with 503 and a message saying a restart
// is needed (no Retry-After), keeps answering 503 after the disk recovers
// (sticky), reports not-ready with the reason on /readyz and the reason on
// /metrics, keeps /search working, and a reopen serves writes again with
// every acknowledged document present.
func TestReadOnlyAfterLogFailure(t *testing.T) {
	tests := []struct {
		name  string
		fault errorfs.Fault
	}{
		{"fsync EIO", errorfs.Fault{Op: errorfs.OpSync, Path: "wal", Err: syscall.EIO}},
		{"write ENOSPC", errorfs.Fault{Op: errorfs.OpWrite, Path: "wal", Err: syscall.ENOSPC}},
		{"short write", errorfs.Fault{Op: errorfs.OpWrite, Path: "wal", Err: syscall.ENOSPC, Short: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := errorfs.New(vfs.OS)
			e, err := engine.Open(dir, engine.DefaultConfig(), engine.WithFS(fsys))
			if err != nil {
				t.Fatal(err)
			}
			ix := backend.NewIndex(e)
			s, err := server.New(server.DefaultConfig(), server.Services{Searcher: ix, Documents: ix, Stats: ix})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			post := func(id string) (*http.Response, string) {
				body := `{"documents":[{"id":"` + id + `","text":"copper lantern ` + id + `"}]}`
				return do(t, ts, "POST", "/documents", body)
			}
			if resp, body := post("a"); resp.StatusCode != 200 {
				t.Fatalf("first write: %d %s", resp.StatusCode, body)
			}
			fsys.Inject(tc.fault)
			resp, body := post("b")
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "read-only") || !strings.Contains(body, "restart") {
				t.Fatalf("write on a failing log: %d %s, want 503 saying read-only, restart", resp.StatusCode, body)
			}
			if ra := resp.Header.Get("Retry-After"); ra != "" {
				t.Errorf("Retry-After %q on a read-only index: only a restart helps", ra)
			}
			fsys.Reset() // the disk is fine again: the engine still refuses
			if resp, body := post("c"); resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("write after the fault cleared: %d %s, want 503 (sticky)", resp.StatusCode, body)
			}
			resp, body = do(t, ts, "GET", "/readyz", "")
			var ready struct{ Status, Reason string }
			if err := json.Unmarshal([]byte(body), &ready); err != nil || resp.StatusCode != 503 || ready.Status != "read-only" || !strings.Contains(ready.Reason, "write-ahead log") {
				t.Fatalf("readyz: %d %s", resp.StatusCode, body)
			}
			_, body = do(t, ts, "GET", "/metrics", "")
			if !strings.Contains(body, `hybrank_index_read_only{reason="engine: read-only`) || !strings.Contains(body, "} 1\n") {
				t.Fatalf("metrics lack hybrank_index_read_only 1 with its reason:\n%s", grepLines(body, "read_only"))
			}
			if resp, body := do(t, ts, "POST", "/search", `{"query":"copper"}`); resp.StatusCode != 200 || !strings.Contains(body, `"id":"a"`) {
				t.Fatalf("search on a read-only index: %d %s", resp.StatusCode, body)
			}
			e.Close() // may report the log's failure again
			e2, err := engine.Open(dir, engine.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			if _, ok := e2.GetIn("", "a"); !ok {
				t.Fatal("acknowledged document a lost")
			}
			if _, ok := e2.GetIn("", "c"); ok {
				t.Fatal("document c, refused while read-only, is present")
			}
			b := e2.NewBatch()
			b.Add(engine.Document{ID: "d", Text: "after reopen"})
			if err := e2.Commit(t.Context(), b); err != nil {
				t.Fatalf("commit after reopen: %v", err)
			}
			if e2.ReadOnly() != nil {
				t.Fatal("reopened engine is read-only")
			}
		})
	}
}

func do(t *testing.T, ts *httptest.Server, method, path, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
