package backend_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/crashtest"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// The HTTP crash test runs the server (server.New over backend.Index over
// an engine on disk, as serve --index runs it, with a hashing embedder in
// place of ONNX models) in a child process, drives it with concurrent HTTP
// writers from the parent, SIGKILLs the child at a random moment, damages
// the log's last record on some runs (cut inside it, or one bit flipped),
// restarts it and checks over HTTP that no write acknowledged with 200 was
// lost and no acknowledged delete came back.
//
// Writer w's n-th request is a pure function of (w, n) (serveStep): adds,
// updates and deletes of w's own keys in tenant "t", plus the counter
// document ctr-w (tenant "ctr") holding n, all in one POST. The parent
// records the highest n answered 200 per writer; a reopened index must
// hold, per writer, the state after its requests 1..M_w with M_w at least
// that and at most one more (a request durable but killed before its
// answer). A damaged last record may lose one acknowledged request, and the
// reopen must then report dropped bytes.

const (
	serveCrashDirEnv   = "HYBRANK_SERVE_CRASH_DIR"
	serveCrashPolicy   = "HYBRANK_SERVE_CRASH_POLICY"
	serveCrashKillsEnv = "HYBRANK_SERVE_CRASH_KILLS" // e.g. 200 for the long run
	serveWriters       = 16
	serveKeys          = 6 // keys per writer
	serveMaxLife       = 30 * time.Second
)

// serveStep is writer w's n-th request (n ≥ 1).
func serveStep(w, n int) (adds []engine.Document, dels []string) {
	rng := rand.New(rand.NewPCG(uint64(w)+500, uint64(n)))
	for _, k := range rng.Perm(serveKeys)[:1+rng.IntN(3)] {
		id := fmt.Sprintf("w%d-k%d", w, k)
		if rng.IntN(3) == 0 {
			dels = append(dels, id)
			continue
		}
		adds = append(adds, engine.Document{ID: id, Tenant: "t",
			Text: fmt.Sprintf("zq%dq%dq%d copper lantern %d meadow", w, n, k, rng.IntN(1000))})
	}
	adds = append(adds, engine.Document{ID: fmt.Sprintf("ctr-%d", w), Tenant: "ctr", Text: strconv.Itoa(n)})
	return adds, dels
}

// serveModel is writer w's documents (id → text) after requests 1..m.
func serveModel(w, m int) map[string]string {
	st := map[string]string{}
	for n := 1; n <= m; n++ {
		adds, dels := serveStep(w, n)
		for _, id := range dels {
			delete(st, id)
		}
		for _, d := range adds {
			if d.Tenant == "t" {
				st[d.ID] = d.Text
			}
		}
	}
	return st
}

func serveCrashConfig(policy engine.SyncPolicy) engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Durability.Sync = policy
	cfg.Durability.SegmentBytes = 8 << 10      // several segments between snapshots
	cfg.Durability.SnapshotLogBytes = 96 << 10 // background snapshots (and truncation) during the run
	return cfg
}

// TestServeCrashChild is the server: skipped unless run by TestServeCrash.
func TestServeCrashChild(t *testing.T) {
	dir := os.Getenv(serveCrashDirEnv)
	if dir == "" {
		t.Skip("child of TestServeCrash")
	}
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(3)
	}
	e, err := engine.Open(dir, serveCrashConfig(engine.SyncPolicy(os.Getenv(serveCrashPolicy))), engine.WithEmbedder(enginetest.NewHashEmbedder(8)))
	if err != nil {
		fail("open", err)
	}
	ix := backend.NewIndex(e)
	s, err := server.New(server.DefaultConfig(), server.Services{Searcher: ix, Documents: ix, Stats: ix})
	if err != nil {
		fail("server", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen", err)
	}
	os.Stdout.WriteString("addr http://" + l.Addr().String() + "\n")
	go func() { fail("serve", http.Serve(l, s.Handler())) }()
	time.Sleep(serveMaxLife) // the parent kills long before
	os.Exit(0)
}

// serveClient talks to one child.
type serveClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (c serveClient) do(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// get returns a document's text, or ok false on 404.
func (c serveClient) get(tenant, id string) (string, bool) {
	code, body, err := c.do("GET", "/documents/"+id+"?tenant="+tenant, nil)
	if err != nil {
		c.t.Fatalf("GET %s/%s: %v", tenant, id, err)
	}
	switch code {
	case http.StatusNotFound:
		return "", false
	case http.StatusOK:
		var d engine.Document
		if err := json.Unmarshal(body, &d); err != nil {
			c.t.Fatal(err)
		}
		return d.Text, true
	}
	c.t.Fatalf("GET %s/%s: %d %s", tenant, id, code, body)
	return "", false
}

// metric reads one unlabelled series from /metrics.
func (c serveClient) metric(name string) float64 {
	code, body, err := c.do("GET", "/metrics", nil)
	if err != nil || code != 200 {
		c.t.Fatalf("metrics: %d %v", code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				c.t.Fatal(err)
			}
			return f
		}
	}
	c.t.Fatalf("metrics lack %s", name)
	return 0
}

// startServeChild starts a child on dir and returns its client.
func startServeChild(t *testing.T, dir string, policy engine.SyncPolicy) (*crashtest.Child, serveClient) {
	t.Helper()
	addr := make(chan string, 1)
	env := []string{serveCrashDirEnv + "=" + dir, serveCrashPolicy + "=" + string(policy)}
	c := crashtest.Start(t, "TestServeCrashChild", env, func(line string) {
		if a, ok := strings.CutPrefix(line, "addr "); ok {
			addr <- a
		}
	})
	select {
	case a := <-addr:
		tr := &http.Transport{MaxIdleConnsPerHost: serveWriters}
		return c, serveClient{t: t, base: a, hc: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
	case <-c.Done:
		c.Kill(t) // reports how it died
	case <-time.After(serveMaxLife):
		c.Kill(t)
		t.Fatal("child never listened")
	}
	return nil, serveClient{}
}

// write runs the writers from acked+1 on until a request fails (the
// kill), recording each writer's highest acknowledged request in acked.
func write(cl serveClient, acked *[serveWriters]atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range serveWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int(acked[w].Load()) + 1; ; n++ {
				adds, dels := serveStep(w, n)
				code, body, err := cl.do("POST", "/documents?tenant=t", map[string]any{"documents": adds, "delete": dels})
				if err != nil {
					return // the child is gone
				}
				if code != http.StatusOK {
					cl.t.Errorf("writer %d request %d: %d %s", w, n, code, body)
					return
				}
				acked[w].Store(int64(n))
			}
		}()
	}
	return &wg
}

// checkServeState reads every writer's counter and keys over HTTP and
// compares them with the model; it returns the counters.
func checkServeState(t *testing.T, cl serveClient, acked *[serveWriters]atomic.Int64, damaged bool, run int) (m [serveWriters]int, lost int) {
	t.Helper()
	for w := range serveWriters {
		if text, ok := cl.get("ctr", fmt.Sprintf("ctr-%d", w)); ok {
			n, err := strconv.Atoi(text)
			if err != nil {
				t.Fatal(err)
			}
			m[w] = n
		}
		a := int(acked[w].Load())
		if m[w] > a+1 {
			t.Fatalf("run %d: writer %d at request %d, but only %d acknowledged (one in flight at most)", run, w, m[w], a)
		}
		lost += max(0, a-m[w])
		want := serveModel(w, m[w])
		for k := range serveKeys {
			id := fmt.Sprintf("w%d-k%d", w, k)
			got, ok := cl.get("t", id)
			text, live := want[id]
			switch {
			case live && !ok:
				t.Fatalf("run %d: %s lost (writer %d at request %d)", run, id, w, m[w])
			case !live && ok:
				t.Fatalf("run %d: deleted %s is back: %q (writer %d at request %d)", run, id, got, w, m[w])
			case live && got != text:
				t.Fatalf("run %d: %s = %q, want %q", run, id, got, text)
			}
		}
		// The BM25 index agrees with the document table.
		if id := fmt.Sprintf("w%d-k0", w); want[id] != "" {
			tok := strings.Fields(want[id])[0]
			code, body, err := cl.do("POST", "/search", map[string]any{"query": tok, "tenant": "t", "top_k": 3})
			var res engine.Result
			if err != nil || code != 200 || json.Unmarshal(body, &res) != nil || len(res.Hits) == 0 || res.Hits[0].Document.ID != id {
				t.Fatalf("run %d: search %q: %d %v %s", run, tok, code, err, body)
			}
		}
	}
	if lost > 0 && (!damaged || lost > 1) {
		t.Fatalf("run %d: %d acknowledged requests lost (damaged tail: %v)", run, lost, damaged)
	}
	return m, lost
}

// TestServeCrash: see the comment at the top of this file. A few kills by
// default (fewer under -short); set HYBRANK_SERVE_CRASH_KILLS for a long
// run (e.g. 200).
func TestServeCrash(t *testing.T) {
	if os.Getenv(serveCrashDirEnv) != "" {
		t.Skip("in the child")
	}
	kills := 6
	if testing.Short() {
		kills = 3
	}
	if v := os.Getenv(serveCrashKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", serveCrashKillsEnv, v)
		}
		kills = n
	}
	dir := filepath.Join(t.TempDir(), "idx")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 13))
	t.Logf("seed %d, %d kills, %d writers", seed, kills, serveWriters)
	var acked [serveWriters]atomic.Int64
	requests, lostToDamage, damagedRuns, dropped := 0, 0, 0, 0
	damaged := false
	for run := 0; run <= kills; run++ {
		policy := engine.SyncEveryCommit
		if run%2 == 1 {
			policy = engine.SyncInterval // a kill (not a power loss) loses nothing either
		}
		child, cl := startServeChild(t, dir, policy)
		if damaged && cl.metric("hybrank_index_recovery_dropped_bytes") == 0 {
			t.Fatalf("run %d: the log's last record was damaged, but the reopen reports no dropped bytes", run)
		}
		if cl.metric("hybrank_index_recovery_dropped_bytes") > 0 {
			dropped++
		}
		m, lost := checkServeState(t, cl, &acked, damaged, run)
		lostToDamage += lost
		for w := range m {
			acked[w].Store(int64(m[w])) // the durable state from here on
		}
		if run == kills {
			child.Kill(t)
			break
		}
		before := m
		wg := write(cl, &acked)
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		child.Kill(t)
		wg.Wait()
		if t.Failed() {
			return
		}
		for w := range before {
			requests += int(acked[w].Load()) - before[w]
		}
		damaged = crashtest.DamageLastRecord(t, filepath.Join(dir, "wal"), crashtest.DamageFor(run), rng)
		if damaged {
			damagedRuns++
		}
	}
	t.Logf("%d acknowledged requests from %d writers over %d kills; %d tails damaged on purpose, %d reopens cut a torn or damaged tail, %d acknowledged requests lost to the deliberate damage",
		requests, serveWriters, kills, damagedRuns, dropped, lostToDamage)
	if requests == 0 {
		t.Fatal("no request was acknowledged: the test exercised nothing")
	}
}
