package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
)

// The fault property test runs a seeded script of commits (adds, updates,
// deletes) and snapshots against an engine whose filesystem is an
// errorfs.FS, once per fault kind and per call index of that kind in the
// script (the Nth create, write, fsync, rename, ... fails), then reopens
// the directory on the real filesystem and checks:
//
//   - Open succeeds (a failed snapshot never makes the directory
//     unopenable);
//   - every commit whose Commit returned nil is present, every delete it
//     made stays deleted, and a commit that failed is either absent or
//     present as a whole: the reopened documents equal the acknowledged
//     commits applied in order plus some subset of the failed ones;
//   - after a failed snapshot the directory holds no entry of a generation
//     newer than its manifest's (the partial files were removed), and with
//     a one-off fault the next snapshot succeeds (retried later);
//   - a failed log write or fsync turned the engine read-only: every later
//     Commit and Snapshot failed with engine.ErrReadOnly.
//
// HYBRANK_FAULT_SEEDS sets how many scripts (seeds) run, each at every
// call index of every fault kind; the default is one (about 425 cases,
// 10 s under -race on two cores; longer scripts follow with more seeds).
// The seeds are fixed (1000, 1001, ...), so a failure names its seed and
// fault and reruns identically.

const faultSeedsEnv = "HYBRANK_FAULT_SEEDS"

// faultKinds are the faults tried at every call index.
var faultKinds = []struct {
	name  string
	fault errorfs.Fault
}{
	{"write ENOSPC", errorfs.Fault{Op: errorfs.OpWrite, Err: syscall.ENOSPC}},
	{"write EIO", errorfs.Fault{Op: errorfs.OpWrite, Err: syscall.EIO}},
	{"short write", errorfs.Fault{Op: errorfs.OpWrite, Err: syscall.ENOSPC, Short: true}},
	{"fsync EIO", errorfs.Fault{Op: errorfs.OpSync, Err: syscall.EIO}},
	{"create ENOSPC", errorfs.Fault{Op: errorfs.OpCreate, Err: syscall.ENOSPC}},
	{"rename EIO", errorfs.Fault{Op: errorfs.OpRename, Err: syscall.EIO}},
	{"remove EIO", errorfs.Fault{Op: errorfs.OpRemove, Err: syscall.EIO}},
	{"preallocate ENOSPC", errorfs.Fault{Op: errorfs.OpPreallocate, Err: syscall.ENOSPC}},
	{"truncate EIO", errorfs.Fault{Op: errorfs.OpTruncate, Err: syscall.EIO}},
	{"mkdir ENOSPC", errorfs.Fault{Op: errorfs.OpMkdir, Err: syscall.ENOSPC}},
	{"readdir EIO", errorfs.Fault{Op: errorfs.OpReadDir, Err: syscall.EIO}},
	{"disk full from write", errorfs.Fault{Op: errorfs.OpWrite, Err: syscall.ENOSPC, Mode: errorfs.All}},
	{"dead disk from fsync", errorfs.Fault{Op: errorfs.OpSync, Err: syscall.EIO, Mode: errorfs.All}},
}

// faultStep is one step of a script: a snapshot, or a commit.
type faultStep struct {
	snapshot bool
	adds     []engine.Document
	dels     []string // IDs in faultTenant
}

const (
	faultTenant = "t"
	faultKeys   = 8
	faultSteps  = 14
)

// faultScript is seed's script: commits of one to three operations on
// faultKeys keys (each text names its key, step and seed, so a partial or
// stale document shows), with a snapshot every few steps.
func faultScript(seed uint64) []faultStep {
	rng := rand.New(rand.NewPCG(seed, 99))
	var steps []faultStep
	for i := range faultSteps {
		if i > 0 && rng.IntN(4) == 0 {
			steps = append(steps, faultStep{snapshot: true})
			continue
		}
		var st faultStep
		for _, k := range rng.Perm(faultKeys)[:1+rng.IntN(3)] {
			id := "k" + strconv.Itoa(k)
			if rng.IntN(3) == 0 {
				st.dels = append(st.dels, id)
				continue
			}
			st.adds = append(st.adds, engine.Document{ID: id, Tenant: faultTenant,
				Text: fmt.Sprintf("lantern %s step%d seed%d %s", id, i, seed, strings.Repeat("meadow ", rng.IntN(20)))})
		}
		steps = append(steps, st)
	}
	return append(steps, faultStep{snapshot: true})
}

func faultConfig() engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Durability.SegmentBytes = 4 << 10 // rotations within a script
	cfg.Durability.PreallocateBytes = 1 << 10
	cfg.Durability.SnapshotLogBytes = 0 // snapshots only where the script says
	cfg.Durability.SnapshotAge = 0
	cfg.Maintenance.Interval = 0 // nothing in the background: calls in a fixed order
	return cfg
}

// faultRun is what one run of a script did.
type faultRun struct {
	acked     []int // steps whose Commit returned nil
	uncertain []int // steps whose Commit failed without being refused up front
	refused   int   // steps refused because the engine was read-only already
	snapFails int
	calls     map[errorfs.Op]int // calls of each kind from the arming of the fault to the end of Close
	err       error              // a violated property seen while running
}

// runScript runs steps on a fresh engine in dir over fsys, with fault
// armed (nil: none) right after Open.
func runScript(dir string, fsys *errorfs.FS, fault *errorfs.Fault, steps []faultStep) (run faultRun) {
	emb := enginetest.NewHashEmbedder(8)
	e, err := engine.Open(dir, faultConfig(), engine.WithFS(fsys), engine.WithEmbedder(emb))
	if err != nil {
		run.err = fmt.Errorf("open before the fault: %w", err)
		return run
	}
	before := map[errorfs.Op]int{}
	for _, op := range errorfs.Ops {
		before[op] = fsys.Calls(op)
	}
	defer func() {
		e.Close()
		run.calls = map[errorfs.Op]int{}
		for _, op := range errorfs.Ops {
			run.calls[op] = fsys.Calls(op) - before[op]
		}
	}()
	if fault != nil {
		fsys.Inject(*fault)
	}
	ctx := context.Background()
	snapFailed := false
	for i, st := range steps {
		wasReadOnly := e.ReadOnly() != nil
		if st.snapshot {
			err := e.Snapshot()
			switch {
			case err == nil && wasReadOnly:
				return faultRun{err: fmt.Errorf("step %d: snapshot succeeded on a read-only engine", i)}
			case err == nil && snapFailed && fault.Mode != errorfs.Once:
			case err != nil && wasReadOnly && !errors.Is(err, engine.ErrReadOnly):
				return faultRun{err: fmt.Errorf("step %d: snapshot on a read-only engine: %v, want ErrReadOnly", i, err)}
			case err != nil && !wasReadOnly && snapFailed && fault.Mode == errorfs.Once && e.ReadOnly() == nil:
				return faultRun{err: fmt.Errorf("step %d: snapshot retried after a one-off fault failed again: %v", i, err)}
			case err != nil:
				run.snapFails++
				snapFailed = true
				if perr := noPartialGeneration(dir); perr != nil && fault.Mode == errorfs.Once && fault.Op != errorfs.OpReadDir {
					return faultRun{err: fmt.Errorf("step %d: after a failed snapshot (%v): %w", i, err, perr)}
				}
			}
			continue
		}
		b := e.NewBatch()
		b.Add(st.adds...)
		b.DeleteIn(faultTenant, st.dels...)
		err := e.Commit(ctx, b)
		switch {
		case err == nil && wasReadOnly:
			return faultRun{err: fmt.Errorf("step %d: commit acknowledged on a read-only engine", i)}
		case err == nil:
			run.acked = append(run.acked, i)
		case wasReadOnly:
			if !errors.Is(err, engine.ErrReadOnly) {
				return faultRun{err: fmt.Errorf("step %d: commit on a read-only engine: %v, want ErrReadOnly", i, err)}
			}
			run.refused++
		default:
			if !errors.Is(err, engine.ErrReadOnly) {
				return faultRun{err: fmt.Errorf("step %d: a failed commit did not turn the engine read-only: %v", i, err)}
			}
			run.uncertain = append(run.uncertain, i)
		}
	}
	return run
}

// noPartialGeneration reports an entry of dir of a snapshot generation
// newer than its manifest's.
func noPartialGeneration(dir string) error {
	cur := uint64(0)
	if raw, err := os.ReadFile(filepath.Join(dir, manifest.Name)); err == nil {
		if body, err := manifest.Unseal(raw); err == nil {
			var h manifest.Header
			if json.Unmarshal(body, &h) == nil {
				cur = h.Generation
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if _, g, _, ok := manifest.ParseName(ent.Name()); ok && g > cur {
			return fmt.Errorf("%s left behind (manifest at generation %d)", ent.Name(), cur)
		}
	}
	return nil
}

// faultModel is the documents (ID → text) after applying steps' commits
// in take, in order.
func faultModel(steps []faultStep, take []int) map[string]string {
	m := map[string]string{}
	for _, i := range take {
		for _, id := range steps[i].dels {
			delete(m, id)
		}
		for _, d := range steps[i].adds {
			m[d.ID] = d.Text
		}
	}
	return m
}

// checkReopen opens dir on the real filesystem and checks its documents
// against the acknowledged commits plus some subset of the uncertain ones.
func checkReopen(dir string, steps []faultStep, run faultRun) (present int, err error) {
	e, err := engine.Open(dir, faultConfig(), engine.WithEmbedder(enginetest.NewHashEmbedder(8)))
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	defer e.Close()
	got := map[string]string{}
	for k := range faultKeys {
		if d, ok := e.GetIn(faultTenant, "k"+strconv.Itoa(k)); ok {
			got[d.ID] = d.Text
		}
	}
	if len(run.uncertain) > 4 {
		return 0, fmt.Errorf("%d uncertain commits: the engine should have refused all but the first", len(run.uncertain))
	}
	for mask := range 1 << len(run.uncertain) {
		take := slices.Clone(run.acked)
		n := 0
		for j, s := range run.uncertain {
			if mask&(1<<j) != 0 {
				take = append(take, s)
				n++
			}
		}
		slices.Sort(take)
		if maps.Equal(got, faultModel(steps, take)) {
			if e.Len() != len(got) {
				return 0, fmt.Errorf("engine holds %d documents, the keys %d", e.Len(), len(got))
			}
			// The BM25 index agrees with the documents.
			for id := range got {
				res, err := e.Search(context.Background(), engine.Request{Query: "lantern " + id, Tenant: faultTenant, TopK: faultKeys})
				if err != nil || !slices.Contains(hitIDs(res), id) {
					return 0, fmt.Errorf("search for %s: %v %v", id, err, hitIDs(res))
				}
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("reopened documents match no outcome: acknowledged steps %v, failed steps %v\n got  %v\n want %v (+ a subset of the failed)",
		run.acked, run.uncertain, got, faultModel(steps, run.acked))
}

// faultTempDir is a temporary directory in memory (/dev/shm) where there
// is one: the test injects its faults itself and reopens without a power
// loss, so a real disk's fsyncs would only cost time (most of it).
func faultTempDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "hybrank-fault-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// TestFaultProperty: see the comment at the top of this file.
func TestFaultProperty(t *testing.T) {
	seeds := 1
	if v := os.Getenv(faultSeedsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", faultSeedsEnv, v)
		}
		seeds = n
	}
	start := time.Now()
	type tally struct{ cases, acked, failed, present, snapFails int }
	total := map[string]*tally{}
	for s := range seeds {
		seed := uint64(1000 + s)
		steps := faultScript(seed)
		// A run without faults counts each kind's calls after Open.
		dry := runScript(faultTempDir(t), errorfs.New(vfs.OS), nil, steps)
		if dry.err != nil || len(dry.uncertain) > 0 || dry.snapFails > 0 {
			t.Fatalf("seed %d: run without faults: %v (%d failed commits, %d failed snapshots)", seed, dry.err, len(dry.uncertain), dry.snapFails)
		}
		calls := dry.calls
		for _, k := range faultKinds {
			tl := total[k.name]
			if tl == nil {
				tl = &tally{}
				total[k.name] = tl
			}
			for n := 1; n <= calls[k.fault.Op]; n++ {
				fault := k.fault
				fault.N = n
				dir := faultTempDir(t)
				run := runScript(dir, errorfs.New(vfs.OS), &fault, steps)
				if run.err != nil {
					t.Fatalf("seed %d, fault %v: %v", seed, fault, run.err)
				}
				present, err := checkReopen(dir, steps, run)
				if err != nil {
					t.Fatalf("seed %d, fault %v: %v", seed, fault, err)
				}
				tl.cases++
				tl.acked += len(run.acked)
				tl.failed += len(run.uncertain) + run.refused
				tl.present += present
				tl.snapFails += run.snapFails
			}
		}
	}
	var b bytes.Buffer
	cases := 0
	for _, k := range faultKinds {
		tl := total[k.name]
		cases += tl.cases
		fmt.Fprintf(&b, "\n  %-22s %4d cases: %5d commits acknowledged, 0 lost; %4d failed (%d present as a whole, 0 partial); %3d snapshots failed",
			k.name, tl.cases, tl.acked, tl.failed, tl.present, tl.snapFails)
	}
	t.Logf("%d seeds, %d injected cases in %v:%s", seeds, cases, time.Since(start).Round(time.Millisecond), b.String())
}

// snapEntries lists dir's snapshot generation entries and temporaries.
func snapEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ent := range ents {
		if n := ent.Name(); strings.HasPrefix(n, "snap-") || strings.HasSuffix(n, ".tmp") || strings.HasPrefix(n, "MANIFEST") {
			out = append(out, n)
		}
	}
	return out
}

// TestSnapshotDiskFull: a disk that fills while a snapshot is written
// (whichever file it is writing) fails the Snapshot, removes what it wrote
// of the new generation, leaves the previous snapshots and the log as they
// were and the engine writable; once there is space, the next Snapshot
// succeeds, and a reopen holds every commit.
func TestSnapshotDiskFull(t *testing.T) {
	tests := []struct {
		name  string
		fault errorfs.Fault
	}{
		{"lexical", errorfs.Fault{Op: errorfs.OpWrite, Path: "lexical", Mode: errorfs.Every}},
		{"dense", errorfs.Fault{Op: errorfs.OpWrite, Path: "dense", Mode: errorfs.Every}},
		{"documents", errorfs.Fault{Op: errorfs.OpWrite, Path: "docs.gob", Mode: errorfs.Every}},
		{"manifest", errorfs.Fault{Op: errorfs.OpWrite, Path: "MANIFEST.", Mode: errorfs.Every}},
		{"generation directory", errorfs.Fault{Op: errorfs.OpMkdir, Path: "snap-", Mode: errorfs.Every}},
		{"fsync of a file", errorfs.Fault{Op: errorfs.OpSync, Path: "snap-", Mode: errorfs.Every, Err: syscall.EIO}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := faultTempDir(t)
			fsys := errorfs.New(vfs.OS)
			emb := enginetest.NewHashEmbedder(8)
			e := openCfg(t, dir, faultConfig(), engine.WithFS(fsys), engine.WithEmbedder(emb))
			commit(t, e, corpus[:3]...)
			if err := e.Snapshot(); err != nil {
				t.Fatal(err)
			}
			commit(t, e, corpus[3:]...)
			if err := e.Snapshot(); err != nil {
				t.Fatal(err)
			}
			before := snapEntries(t, dir)
			commit(t, e, engine.Document{ID: "late", Tenant: "acme", Text: "written before the disk filled"})
			fsys.Inject(tc.fault)
			err := e.Snapshot()
			if err == nil || !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Snapshot on a full disk: %v", err)
			}
			if got := snapEntries(t, dir); !slices.Equal(got, before) {
				t.Fatalf("after the failed snapshot the directory holds %v, want %v as before", got, before)
			}
			if e.ReadOnly() != nil || e.Stats().SnapshotGeneration != 2 {
				t.Fatalf("after a failed snapshot: read-only %v, generation %d", e.ReadOnly(), e.Stats().SnapshotGeneration)
			}
			fsys.Reset()
			commit(t, e, engine.Document{ID: "later", Tenant: "acme", Text: "written once there was space"})
			if err := e.Snapshot(); err != nil {
				t.Fatalf("snapshot retried with space: %v", err)
			}
			e.Close()
			e2 := openCfg(t, dir, faultConfig(), engine.WithEmbedder(emb))
			if e2.Len() != len(corpus)+2 || e2.Durability().Recovery.FellBack != "" {
				t.Fatalf("reopened: %d documents (want %d), fell back %q", e2.Len(), len(corpus)+2, e2.Durability().Recovery.FellBack)
			}
		})
	}
}

// TestBackgroundSnapshotRetried: a background snapshot that fails for a
// full disk is reported (LastSnapshotError) and retried at the next
// trigger, which succeeds once there is space.
func TestBackgroundSnapshotRetried(t *testing.T) {
	dir := faultTempDir(t)
	fsys := errorfs.New(vfs.OS, errorfs.Fault{Op: errorfs.OpMkdir, Path: "snap-", Mode: errorfs.Every})
	cfg := faultConfig()
	cfg.Durability.SnapshotLogBytes = 1 // after every commit
	e := openCfg(t, dir, cfg, engine.WithFS(fsys))
	commit(t, e, corpus[:2]...)
	waitFor(t, "a failed background snapshot", func() bool { return e.Durability().LastSnapshotError != "" })
	if st := e.Durability(); st.BackgroundSnapshots != 0 || e.ReadOnly() != nil {
		t.Fatalf("after a failed background snapshot: %+v, read-only %v", st, e.ReadOnly())
	}
	fsys.Reset()
	commit(t, e, corpus[2:]...)
	waitFor(t, "the retried background snapshot", func() bool { return e.Durability().BackgroundSnapshots > 0 })
	waitFor(t, "the error to clear", func() bool { return e.Durability().LastSnapshotError == "" })
}

// TestOpenFallsBack: a snapshot that fails its checksum at Open falls
// back to the previous generation plus the log, and says so (naming the
// file); with no valid generation left Open fails naming the file, never
// opening empty.
func TestOpenFallsBack(t *testing.T) {
	flip := func(t *testing.T, path string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)/2] ^= 0x40
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	only := func(t *testing.T, dir, sub string) string {
		m, _ := filepath.Glob(filepath.Join(dir, "snap-000002", sub, "*.bin"))
		if len(m) == 0 {
			t.Fatalf("no %s files", sub)
		}
		return m[0]
	}
	tests := []struct {
		name     string
		damage   func(t *testing.T, dir string) string // returns the damaged file's name
		fellBack bool                                  // else Open fails
	}{
		{"manifest checksum", func(t *testing.T, dir string) string {
			flip(t, filepath.Join(dir, manifest.Name))
			return manifest.Name
		}, true},
		{"manifest missing", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, manifest.Name))
			return manifest.Name
		}, true},
		{"documents", func(t *testing.T, dir string) string {
			flip(t, filepath.Join(dir, "snap-000002", "docs.gob"))
			return "docs.gob"
		}, true},
		{"lexical", func(t *testing.T, dir string) string {
			p := only(t, dir, "lexical")
			flip(t, p)
			return filepath.Base(p)
		}, true},
		{"dense", func(t *testing.T, dir string) string {
			p := only(t, dir, "dense")
			flip(t, p)
			return filepath.Base(p)
		}, true},
		{"both generations", func(t *testing.T, dir string) string {
			flip(t, filepath.Join(dir, "snap-000002", "docs.gob"))
			flip(t, filepath.Join(dir, "snap-000001", "docs.gob"))
			return "snap-000001"
		}, false},
		{"current damaged, previous manifest damaged", func(t *testing.T, dir string) string {
			flip(t, filepath.Join(dir, manifest.Name))
			flip(t, filepath.Join(dir, manifest.PreviousName))
			return manifest.PreviousName
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := faultTempDir(t)
			emb := enginetest.NewHashEmbedder(8)
			e := openCfg(t, dir, faultConfig(), engine.WithEmbedder(emb))
			commit(t, e, corpus[:3]...)
			if err := e.Snapshot(); err != nil {
				t.Fatal(err)
			}
			commit(t, e, corpus[3:]...)
			if err := e.Snapshot(); err != nil {
				t.Fatal(err)
			}
			b := e.NewBatch()
			b.DeleteIn(corpus[0].Tenant, corpus[0].ID) // a delete after the snapshots: it must not come back
			if err := e.Commit(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			e.Close()
			name := tc.damage(t, dir)
			e2, err := engine.Open(dir, faultConfig(), engine.WithEmbedder(emb))
			if !tc.fellBack {
				if err == nil {
					e2.Close()
					t.Fatal("Open succeeded with no valid generation")
				}
				if !errors.Is(err, engine.ErrCorrupt) || !strings.Contains(err.Error(), name) {
					t.Fatalf("Open: %v, want ErrCorrupt naming %s", err, name)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open after damage to %s: %v", name, err)
			}
			defer e2.Close()
			fb := e2.Durability().Recovery.FellBack
			if !strings.Contains(fb, name) || !strings.Contains(fb, "generation 1") {
				t.Fatalf("Recovery.FellBack %q does not name %s and generation 1", fb, name)
			}
			if _, ok := e2.GetIn(corpus[0].Tenant, corpus[0].ID); ok || e2.Len() != len(corpus)-1 {
				t.Fatalf("after the fallback: %d documents (want %d), deleted %s present %v", e2.Len(), len(corpus)-1, corpus[0].ID, ok)
			}
			// The next snapshot builds on the generation that was read.
			if err := e2.Snapshot(); err != nil {
				t.Fatal(err)
			}
			e2.Close()
			e3 := openCfg(t, dir, faultConfig(), engine.WithEmbedder(emb))
			if e3.Len() != len(corpus)-1 || e3.Durability().Recovery.FellBack != "" {
				t.Fatalf("after the next snapshot: %d documents, fell back %q", e3.Len(), e3.Durability().Recovery.FellBack)
			}
		})
	}
}

// TestReadOnlyConcurrentCommits: committers sharing group commits when an
// fsync of the log fails: every Commit that returned nil is present after
// a reopen, each failed one is present whole or absent, and once the
// engine is read-only every Commit fails with ErrReadOnly.
func TestReadOnlyConcurrentCommits(t *testing.T) {
	const committers = 8
	dir := faultTempDir(t)
	fsys := errorfs.New(vfs.OS)
	e := openCfg(t, dir, faultConfig(), engine.WithFS(fsys))
	fsys.Inject(errorfs.Fault{Op: errorfs.OpSync, Path: "wal", N: 20, Err: syscall.EIO})
	type outcome struct {
		acked  []int
		failed int // the commit that failed (-1: none)
	}
	out := make([]outcome, committers)
	done := make(chan int)
	for g := range committers {
		go func() {
			defer func() { done <- g }()
			out[g].failed = -1
			for n := 0; ; n++ {
				readOnly := e.ReadOnly() != nil
				b := e.NewBatch()
				b.Add(engine.Document{ID: fmt.Sprintf("g%d-%d-a", g, n), Text: "first half"},
					engine.Document{ID: fmt.Sprintf("g%d-%d-b", g, n), Text: "second half"})
				err := e.Commit(context.Background(), b)
				if err == nil {
					if readOnly {
						t.Errorf("committer %d: commit %d acknowledged on a read-only engine", g, n)
					}
					out[g].acked = append(out[g].acked, n)
					continue
				}
				if !errors.Is(err, engine.ErrReadOnly) {
					t.Errorf("committer %d: commit %d: %v, want ErrReadOnly", g, n, err)
				}
				out[g].failed = n
				return
			}
		}()
	}
	for range committers {
		<-done
	}
	if e.ReadOnly() == nil {
		t.Fatal("the engine is not read-only after a failed fsync")
	}
	e.Close()
	e2 := openCfg(t, dir, faultConfig())
	for g, o := range out {
		for _, n := range o.acked {
			for _, half := range []string{"a", "b"} {
				if _, ok := e2.GetIn("", fmt.Sprintf("g%d-%d-%s", g, n, half)); !ok {
					t.Fatalf("committer %d: acknowledged commit %d lost (%s)", g, n, half)
				}
			}
		}
		if o.failed >= 0 {
			_, a := e2.GetIn("", fmt.Sprintf("g%d-%d-a", g, o.failed))
			_, b := e2.GetIn("", fmt.Sprintf("g%d-%d-b", g, o.failed))
			if a != b {
				t.Fatalf("committer %d: failed commit %d present in part", g, o.failed)
			}
		}
	}
}
