package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/crashtest"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// The write-ahead log crash test re-executes the test binary as a child in
// which several goroutines commit adds, updates and deletes and print every
// commit after Commit returns ("ack G N"); the parent SIGKILLs it at a
// random moment, optionally damages the log's last record (cut inside it,
// or one bit flipped), reopens the directory and checks that no
// acknowledged commit was lost and no acknowledged delete came back.
//
// Goroutine g's N-th commit is a pure function of (g, N) (walStep) and
// also stores N in the document ctr-g, so the parent knows exactly which
// state every reopen must hold: the one after commits 1..M_g of each g,
// where M_g (read back from ctr-g) is at least the last acknowledged N and
// at most one more (a commit durable but killed before its ack was
// printed). A damaged last record may lose that one commit, and Open must
// report the dropped bytes.

const (
	walCrashEnv      = "HYBRANK_ENGINE_WAL_CRASH_DIR"
	walCrashPolicy   = "HYBRANK_ENGINE_WAL_CRASH_POLICY"
	walCrashKillsEnv = "HYBRANK_ENGINE_WAL_CRASH_KILLS" // e.g. 200 for the long run
	walGoroutines    = 4
	walKeys          = 6     // keys per goroutine
	walTenant        = "t"   // the keys' tenant
	walCtrTenant     = "ctr" // the counter documents' tenant
)

// walStep is goroutine g's n-th commit (n ≥ 1): one to three operations on
// distinct keys of g, plus the counter document. dels are IDs in walTenant.
func walStep(g, n int) (adds []engine.Document, dels []string) {
	rng := rand.New(rand.NewPCG(uint64(g)+100, uint64(n)))
	for _, k := range rng.Perm(walKeys)[:1+rng.IntN(3)] {
		id := fmt.Sprintf("g%d-k%d", g, k)
		if rng.IntN(3) == 0 {
			dels = append(dels, id)
			continue
		}
		adds = append(adds, engine.Document{ID: id, Tenant: walTenant,
			Text: fmt.Sprintf("%s %s", walToken(g, n, k), crashText(g*1000+n, k))})
	}
	adds = append(adds, engine.Document{ID: fmt.Sprintf("ctr-%d", g), Tenant: walCtrTenant, Text: strconv.Itoa(n)})
	return adds, dels
}

// walToken is a word only commit (g, n) writes into key k.
func walToken(g, n, k int) string { return fmt.Sprintf("zq%dq%dq%d", g, n, k) }

// walModel is goroutine g's documents after its commits 1..m.
func walModel(g, m int) map[string]string {
	st := map[string]string{}
	for n := 1; n <= m; n++ {
		adds, dels := walStep(g, n)
		for _, id := range dels {
			delete(st, id)
		}
		for _, d := range adds {
			st[d.ID] = d.Text
		}
	}
	return st
}

func walCrashConfig(policy engine.SyncPolicy) engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Durability.Sync = policy
	cfg.Durability.SegmentBytes = 4 << 10      // several segments between snapshots
	cfg.Durability.SnapshotLogBytes = 48 << 10 // background snapshots (and truncation) during the run
	return cfg
}

func walCrashOpen(dir string, policy engine.SyncPolicy) (*engine.Engine, error) {
	return engine.Open(dir, walCrashConfig(policy), engine.WithEmbedder(enginetest.NewHashEmbedder(8)))
}

// walCounters reads every goroutine's last commit from e.
func walCounters(e *engine.Engine) ([walGoroutines]int, error) {
	var m [walGoroutines]int
	for g := range m {
		if d, ok := e.GetIn(walCtrTenant, fmt.Sprintf("ctr-%d", g)); ok {
			n, err := strconv.Atoi(d.Text)
			if err != nil {
				return m, err
			}
			m[g] = n
		}
	}
	return m, nil
}

// TestEngineWALCrashChild is the child: skipped unless run by
// TestEngineWALCrash.
func TestEngineWALCrashChild(t *testing.T) {
	dir := os.Getenv(walCrashEnv)
	if dir == "" {
		t.Skip("child of TestEngineWALCrash")
	}
	e, err := walCrashOpen(dir, engine.SyncPolicy(os.Getenv(walCrashPolicy)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	start, err := walCounters(e)
	if err != nil {
		os.Exit(3)
	}
	var outMu sync.Mutex
	say := func(s string) { // one write per line: a kill never tears a line
		outMu.Lock()
		os.Stdout.WriteString(s + "\n")
		outMu.Unlock()
	}
	say("ready")
	var wg sync.WaitGroup
	for g := range walGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := start[g] + 1; ; n++ {
				adds, dels := walStep(g, n)
				b := e.NewBatch()
				b.DeleteIn(walTenant, dels...)
				b.Add(adds...)
				if err := e.Commit(context.Background(), b); err != nil {
					fmt.Fprintln(os.Stderr, "child commit:", err)
					os.Exit(4)
				}
				say(fmt.Sprintf("ack %d %d", g, n))
			}
		}()
	}
	time.Sleep(crashMaxLife) // the parent kills long before
	os.Exit(0)
}

// runWALChild starts a child on dir, kills it when it has been ready for
// d, and merges the highest commit it acknowledged per goroutine into
// acked.
func runWALChild(t *testing.T, dir string, policy engine.SyncPolicy, d time.Duration, acked *[walGoroutines]int) {
	t.Helper()
	ready := make(chan struct{})
	env := []string{walCrashEnv + "=" + dir, walCrashPolicy + "=" + string(policy)}
	c := crashtest.Start(t, "TestEngineWALCrashChild", env, func(line string) {
		var g, n int
		if line == "ready" {
			close(ready)
		} else if _, err := fmt.Sscanf(line, "ack %d %d", &g, &n); err == nil && g >= 0 && g < walGoroutines {
			acked[g] = max(acked[g], n)
		}
	})
	select {
	case <-ready:
		time.Sleep(d)
	case <-c.Done: // died early: kill reports it
	case <-time.After(crashMaxLife):
	}
	c.Kill(t)
}

// TestEngineWALCrash: see the comment at the top of this file. Runs a few
// kills by default (fewer under -short); set HYBRANK_ENGINE_WAL_CRASH_KILLS
// for a long run (e.g. 200).
func TestEngineWALCrash(t *testing.T) {
	if os.Getenv(walCrashEnv) != "" {
		t.Skip("in the child")
	}
	kills := 9
	if testing.Short() {
		kills = 3
	}
	if v := os.Getenv(walCrashKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", walCrashKillsEnv, v)
		}
		kills = n
	}
	dir := filepath.Join(t.TempDir(), "idx")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("seed %d, %d kills", seed, kills)
	var acked [walGoroutines]int // per goroutine: every commit ≤ this is acknowledged and durable
	commits, lostToDamage, dropped, damagedRuns := 0, 0, 0, 0
	for run := range kills {
		policy := engine.SyncEveryCommit
		if run%2 == 1 {
			policy = engine.SyncInterval // a kill (not a power loss) loses nothing either
		}
		before := acked
		runWALChild(t, dir, policy, time.Duration(20+rng.IntN(300))*time.Millisecond, &acked)
		damage := crashtest.DamageFor(run)
		damaged := crashtest.DamageLastRecord(t, filepath.Join(dir, "wal"), damage, rng)

		e, err := walCrashOpen(dir, policy)
		if err != nil {
			t.Fatalf("run %d (%s damage): reopen: %v", run, damage, err)
		}
		rec := e.Durability().Recovery
		if damaged {
			damagedRuns++
		}
		if damaged && rec.DroppedBytes == 0 {
			t.Fatalf("run %d: %s in the last log record, but Open reports no dropped bytes: %+v", run, damage, rec)
		}
		m, err := walCounters(e)
		if err != nil {
			t.Fatal(err)
		}
		lost := 0
		for g := range m {
			if m[g] > acked[g]+1 {
				t.Fatalf("run %d: goroutine %d at commit %d, but only %d acknowledged (one in flight at most)", run, g, m[g], acked[g])
			}
			lost += max(0, acked[g]-m[g])
		}
		if lost > 0 && (!damaged || lost > 1 || rec.DroppedBytes == 0) {
			t.Fatalf("run %d (%s damage, recovery %+v): %d acknowledged commits lost; counters %v, acknowledged %v", run, damage, rec, lost, m, acked)
		}
		lostToDamage += lost
		if rec.DroppedBytes > 0 {
			dropped++
		}
		checkWALState(t, e, m, run)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		for g := range m {
			commits += max(0, m[g]-before[g])
		}
		acked = m // the durable state from here on
	}
	t.Logf("%d commits survived %d kills; %d tails damaged on purpose, %d reopens cut a torn or damaged tail, %d acknowledged commits lost to the deliberate damage", commits, kills, damagedRuns, dropped, lostToDamage)
	if commits == 0 {
		t.Fatal("no commit was acknowledged: the test exercised nothing")
	}
}

// checkWALState compares e with the model after commits m[g] of every
// goroutine: every document's presence and text, the count, and a BM25
// search for each live key's own token.
func checkWALState(t *testing.T, e *engine.Engine, m [walGoroutines]int, run int) {
	t.Helper()
	total := 0
	for g := range m {
		want := walModel(g, m[g])
		total += len(want)
		for k := range walKeys {
			id := fmt.Sprintf("g%d-k%d", g, k)
			got, ok := e.GetIn(walTenant, id)
			text, live := want[id]
			switch {
			case live && !ok:
				t.Fatalf("run %d: %s lost (goroutine %d at commit %d)", run, id, g, m[g])
			case !live && ok:
				t.Fatalf("run %d: deleted %s is back: %q (goroutine %d at commit %d)", run, id, got.Text, g, m[g])
			case live && got.Text != text:
				t.Fatalf("run %d: %s = %q, want %q", run, id, got.Text, text)
			case live:
				tok := strings.Fields(text)[0]
				res, err := e.Search(context.Background(), engine.Request{Query: tok, Tenant: walTenant, TopK: 3})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Hits) == 0 || res.Hits[0].Document.ID != id {
					t.Fatalf("run %d: search %q: %v, want %s first", run, tok, hitIDs(res), id)
				}
			}
		}
	}
	if e.Len() != total {
		t.Fatalf("run %d: %d documents, model %d", run, e.Len(), total)
	}
}
