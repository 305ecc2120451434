package backend_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
)

// The disk-full variant of the HTTP crash test puts the index on a small
// tmpfs that the test mounts (and unmounts after), mostly filled by a
// ballast file, and drives the server with the crash test's writers until
// the disk is full: from then on /documents answers 503 (the engine turned
// read-only), /readyz says read-only and /search keeps answering. The
// child is then killed, the ballast removed (space freed) and the server
// restarted: every write answered 2xx must be there (0 acknowledged writes
// lost), the request that hit the full disk at most once per writer may
// be there as a whole, and the restarted server takes writes again.

const (
	diskFullSize     = 16 << 20 // the tmpfs
	diskFullFreeLeft = 1 << 20  // what the ballast leaves for the index
	diskFullRunsEnv  = "HYBRANK_SERVE_DISKFULL_RUNS"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it; the test skips when mounting is refused (not root, no permission).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("the disk-full test mounts a tmpfs, which needs root")
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("mounting a tmpfs was refused (%v: %s): the disk-full test needs CAP_SYS_ADMIN", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillTo writes a ballast file in dir until dir's filesystem has about
// free bytes left.
func fillTo(t *testing.T, dir string, free int64) string {
	t.Helper()
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * int64(st.Bsize)
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for n := int64(0); n+int64(len(chunk)) <= avail-free; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// writeUntilFull runs the crash test's writers from acked+1 on; each stops
// at its first 503 (the full disk) and records in acked its highest
// request answered 200. Any other answer fails the test.
func writeUntilFull(cl serveClient, acked *[serveWriters]atomic.Int64, refused *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range serveWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int(acked[w].Load()) + 1; ; n++ {
				adds, dels := serveStep(w, n)
				code, body, err := cl.do("POST", "/documents?tenant=t", map[string]any{"documents": adds, "delete": dels})
				switch {
				case err != nil:
					cl.t.Errorf("writer %d request %d: %v", w, n, err)
					return
				case code == http.StatusServiceUnavailable && strings.Contains(string(body), "read-only"):
					refused.Add(1)
					return
				case code != http.StatusOK:
					cl.t.Errorf("writer %d request %d: %d %s", w, n, code, body)
					return
				}
				acked[w].Store(int64(n))
			}
		}()
	}
	return &wg
}

// TestServeDiskFull: see the comment above. Two fills by default (the
// second after a restart on the freed disk); set
// HYBRANK_SERVE_DISKFULL_RUNS for more. Linux only (tmpfs, statfs).
func TestServeDiskFull(t *testing.T) {
	if os.Getenv(serveCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	runs := 2
	if v := os.Getenv(diskFullRunsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", diskFullRunsEnv, v)
		}
		runs = n
	}
	mnt := mountTmpfs(t, diskFullSize)
	dir := filepath.Join(mnt, "idx")
	var acked [serveWriters]atomic.Int64
	requests, refusedTotal := 0, 0
	for run := range runs {
		ballast := fillTo(t, mnt, diskFullFreeLeft)
		child, cl := startServeChild(t, dir, engine.SyncEveryCommit)
		m, lost := checkServeState(t, cl, &acked, false, run)
		if lost > 0 {
			t.Fatalf("run %d: %d acknowledged requests lost", run, lost)
		}
		for w := range m {
			acked[w].Store(int64(m[w]))
		}
		before := m
		var refused atomic.Int64
		done := make(chan struct{})
		go func() { writeUntilFull(cl, &acked, &refused).Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			child.Kill(t)
			t.Fatal("the disk never filled")
		}
		if t.Failed() {
			child.Kill(t)
			return
		}
		if refused.Load() != serveWriters {
			t.Fatalf("run %d: %d writers refused with 503, want all %d", run, refused.Load(), serveWriters)
		}
		code, body, err := cl.do("GET", "/readyz", nil)
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"status":"read-only"`) {
			t.Fatalf("run %d: readyz on a full disk: %d %v %s", run, code, err, body)
		}
		code, body, err = cl.do("POST", "/search", map[string]any{"query": "copper lantern", "tenant": "t", "top_k": 3})
		var res engine.Result
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Hits) == 0 {
			t.Fatalf("run %d: search on a read-only index: %d %v %s", run, code, err, body)
		}
		child.Kill(t)
		for w := range before {
			requests += int(acked[w].Load()) - before[w]
		}
		refusedTotal += int(refused.Load())
		if err := os.Remove(ballast); err != nil { // space freed
			t.Fatal(err)
		}
	}
	// The restarted server holds every acknowledged write and takes new
	// ones.
	child, cl := startServeChild(t, dir, engine.SyncEveryCommit)
	defer child.Kill(t)
	if _, lost := checkServeState(t, cl, &acked, false, runs); lost > 0 {
		t.Fatalf("after the restart: %d acknowledged requests lost", lost)
	}
	adds, dels := serveStep(0, int(acked[0].Load())+2) // any request: the state check is over
	if code, body, err := cl.do("POST", "/documents?tenant=t", map[string]any{"documents": adds, "delete": dels}); err != nil || code != http.StatusOK {
		t.Fatalf("write after the restart: %d %v %s", code, err, body)
	}
	t.Logf("%d fills of a %d MiB tmpfs: %d requests acknowledged, %d refused with 503 (read-only), 0 acknowledged lost",
		runs, diskFullSize>>20, requests, refusedTotal)
	if requests == 0 {
		t.Fatal("no request was acknowledged: the test exercised nothing")
	}
}
