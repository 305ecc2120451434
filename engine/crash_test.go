package engine_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/crashtest"
	"github.com/hybrank/hybrank/engine/enginetest"
)

// The crash test re-executes the test binary as a child that commits batches
// and snapshots them in a loop, SIGKILLs it at a random moment, and checks
// what engine.Open recovers. The child's state after batch b is a pure
// function of b (crashState), so the parent knows every document a snapshot
// must hold.

const (
	crashDirEnv     = "HYBRANK_ENGINE_CRASH_DIR"
	crashDim        = 16
	crashWindow     = 12     // batch b deletes the documents batch b−crashWindow added
	crashPerB       = 4      // documents added per batch
	crashShared     = 5      // documents replaced in rotation
	crashMetaID     = "meta" // the document holding the last batch number, in tenant crashMetaTenant
	crashMetaTenant = "meta"
	crashMaxLife    = 20 * time.Second // a child that is never killed stops here
)

var crashVocab = strings.Fields("river stone maple cloud engine harbor violet signal copper lantern meadow orbit " +
	"pepper quartz summit tunnel willow falcon garnet ember glacier mosaic nectar prism")

func crashText(b, j int) string {
	rng := rand.New(rand.NewPCG(uint64(b), uint64(j)))
	w := make([]string, 6+rng.IntN(6))
	for i := range w {
		w[i] = crashVocab[rng.IntN(len(crashVocab))]
	}
	return strings.Join(w, " ")
}

// crashTenant is the tenant of document j of a batch.
func crashTenant(j int) string { return []string{"", "t1"}[j%2] }

// crashDel is a document a batch deletes.
type crashDel struct{ tenant, id string }

// crashBatch is what the child commits as batch b (b ≥ 1). Document IDs
// are unique across tenants, so crashState keys documents by ID alone.
func crashBatch(b int) (adds []engine.Document, dels []crashDel) {
	for j := range crashPerB {
		adds = append(adds, engine.Document{ID: fmt.Sprintf("b%d-%d", b, j), Tenant: crashTenant(j),
			Title: fmt.Sprintf("batch %d", b), Text: crashText(b, j)})
	}
	adds = append(adds,
		engine.Document{ID: fmt.Sprintf("shared-%d", b%crashShared), Text: crashText(b, 100) + " version " + strconv.Itoa(b)},
		engine.Document{ID: crashMetaID, Tenant: crashMetaTenant, Text: strconv.Itoa(b)})
	if old := b - crashWindow; old >= 1 {
		for j := range crashPerB {
			dels = append(dels, crashDel{crashTenant(j), fmt.Sprintf("b%d-%d", old, j)})
		}
	}
	return adds, dels
}

// crashState is the document set after batches 1..b.
func crashState(b int) map[string]engine.Document {
	st := map[string]engine.Document{}
	for i := 1; i <= b; i++ {
		adds, dels := crashBatch(i)
		for _, k := range dels {
			delete(st, k.id)
		}
		for _, d := range adds {
			st[d.ID] = d
		}
	}
	return st
}

// crashOpen opens the child's engine, and the reference (dir ""). Both
// run without background maintenance: a rebuild changes BM25 norms, which
// the comparison with the reference checks exactly.
func crashOpen(dir string) (*engine.Engine, error) {
	cfg := engine.DefaultConfig()
	cfg.Maintenance = engine.MaintenanceConfig{}
	return engine.Open(dir, cfg, engine.WithEmbedder(enginetest.NewHashEmbedder(crashDim)))
}

// batchOf returns the batch number a (reopened) engine holds.
func batchOf(e *engine.Engine) (int, error) {
	d, ok := e.GetIn(crashMetaTenant, crashMetaID)
	if !ok {
		return 0, nil
	}
	return strconv.Atoi(d.Text)
}

// crashDelete queues dels in b.
func crashDelete(b *engine.Batch, dels []crashDel) {
	for _, k := range dels {
		b.DeleteIn(k.tenant, k.id)
	}
}

// TestEngineCrashChild is the child: it is skipped unless run by
// TestEngineCrashSnapshot.
func TestEngineCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child of TestEngineCrashSnapshot")
	}
	e, err := crashOpen(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	b, err := batchOf(e)
	if err != nil {
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for start := time.Now(); time.Since(start) < crashMaxLife; {
		b++
		adds, dels := crashBatch(b)
		batch := e.NewBatch()
		crashDelete(batch, dels)
		batch.Add(adds...)
		if err := e.Commit(context.Background(), batch); err != nil {
			fmt.Fprintln(os.Stderr, "child commit:", err)
			os.Exit(4)
		}
		if err := e.Snapshot(); err != nil {
			fmt.Fprintln(os.Stderr, "child snapshot:", err)
			os.Exit(5)
		}
		fmt.Fprintf(out, "snap %d\n", b)
		out.Flush()
	}
	os.Exit(0)
}

// TestEngineCrashSnapshot SIGKILLs committing, snapshotting children at
// random moments. After every kill the directory must open, hold exactly the
// documents after one batch (the last snapshot the child reported or the
// next batch, whose commit was durable in the write-ahead log before its
// snapshot was reported), and
// answer searches exactly like an in-memory engine rebuilt from the same
// documents by the same commits (batches 1..b, one Commit each). Open
// verifies the manifest and the document file's BLAKE3.
//
// The reference replays the commits rather than loading all documents in
// one batch because postings keeps the avgdl of its first build in the
// document norms until a Rebuild (see package postings), which neither
// engine runs (crashOpen): a one-batch rebuild scores differently by
// design.
func TestEngineCrashSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary ≥ 25 times; skipped under -short")
	}
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	dir := filepath.Join(t.TempDir(), "idx")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const kills, minSnapshots = 25, 50 // more kills run until 50 snapshots completed
	deadline := time.Now().Add(40 * time.Second)
	verified, snapshots := 0, 0
	ref, err := crashOpen("")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for run := 0; run < kills || snapshots < minSnapshots; run++ {
		if time.Now().After(deadline) {
			if run < kills/2 || snapshots < minSnapshots/5 {
				t.Fatalf("machine too slow: %d kills, %d snapshots in 40 s", run, snapshots)
			}
			t.Logf("time cap reached after %d kills", run)
			break
		}
		reported := runAndKill(t, dir, time.Duration(30+rng.IntN(400))*time.Millisecond)
		last := max(verified, reported)
		e, err := crashOpen(dir)
		if err != nil {
			t.Fatalf("run %d: open after kill (last snapshot reported %d): %v", run, reported, err)
		}
		got, err := batchOf(e)
		if err != nil {
			t.Fatalf("run %d: meta: %v", run, err)
		}
		if got != last && got != last+1 {
			t.Fatalf("run %d: reopened at batch %d, child had reported snapshot %d (previous verified %d)", run, got, reported, verified)
		}
		for b := verified + 1; b <= got; b++ { // advance the reference
			adds, dels := crashBatch(b)
			rb := ref.NewBatch()
			crashDelete(rb, dels)
			rb.Add(adds...)
			if err := ref.Commit(context.Background(), rb); err != nil {
				t.Fatal(err)
			}
		}
		snapshots += got - verified
		verified = got
		checkCrashState(t, e, ref, got)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d snapshots completed across the kills, last batch %d", snapshots, verified)
}

// runAndKill starts a child on dir, kills it after d and returns the last
// batch whose snapshot it reported (0 if none).
func runAndKill(t *testing.T, dir string, d time.Duration) int {
	t.Helper()
	n := 0
	c := crashtest.Start(t, "TestEngineCrashChild", []string{crashDirEnv + "=" + dir}, func(line string) {
		if v, ok := strings.CutPrefix(line, "snap "); ok {
			if b, err := strconv.Atoi(v); err == nil {
				n = b
			}
		}
	})
	time.Sleep(d)
	c.Kill(t)
	return n
}

// checkCrashState compares e with crashState(b) document by document and
// its searches with ref, an in-memory engine that applied batches 1..b.
func checkCrashState(t *testing.T, e, ref *engine.Engine, b int) {
	t.Helper()
	want := crashState(b)
	if e.Len() != len(want) || ref.Len() != len(want) {
		t.Fatalf("batch %d: %d documents (reference %d), want %d", b, e.Len(), ref.Len(), len(want))
	}
	for id, d := range want {
		got, ok := e.GetIn(d.Tenant, id)
		if !ok || got.Text != d.Text || got.Title != d.Title || got.Tenant != d.Tenant {
			t.Fatalf("batch %d: document %s = %+v (found %v), want %+v", b, id, got, ok, d)
		}
	}
	ctx := context.Background()
	for qi, q := range []string{"river stone", "copper lantern meadow", "version", "prism ember glacier falcon"} {
		for _, tenant := range []string{"", "t1"} {
			req := engine.Request{Query: q, Tenant: tenant, TopK: 200, Candidates: 200, Fusion: engine.FusionRRF}
			a, err := e.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ref.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			// An empty engine (a kill before the first commit) legally
			// falls back to BM25 (no vectors yet), as the reference does.
			if !slices.Equal(fallbackCodes(a), fallbackCodes(r)) {
				t.Fatalf("batch %d: reopened engine fell back: %+v, reference %+v", b, a.Fallbacks, r.Fallbacks)
			}
			ga, gr := bm25List(a), bm25List(r)
			if len(ga) != len(gr) || len(a.Hits) != len(r.Hits) {
				t.Fatalf("batch %d query %d tenant %q: %d hits (%d BM25), reference %d (%d)", b, qi, tenant, len(a.Hits), len(ga), len(r.Hits), len(gr))
			}
			for i := range ga {
				if ga[i].id != gr[i].id || math.Abs(ga[i].score-gr[i].score) > 1e-5*math.Max(1, math.Abs(gr[i].score)) {
					t.Fatalf("batch %d query %q tenant %q BM25 hit %d: %v, reference %v", b, q, tenant, i, ga[i], gr[i])
				}
			}
			// Dense scores come from the same vectors; only HNSW's graph
			// (and so tie order) may differ, so compare the score multisets.
			da, dr := denseScores(a), denseScores(r)
			for i := range da {
				if i >= len(dr) || math.Abs(da[i]-dr[i]) > 1e-6 {
					t.Fatalf("batch %d query %q tenant %q: dense scores %v, reference %v", b, q, tenant, da, dr)
				}
			}
		}
	}
}

func fallbackCodes(r *engine.Result) []engine.FallbackCode {
	var out []engine.FallbackCode
	for _, f := range r.Fallbacks {
		out = append(out, f.Code)
	}
	return out
}

func denseScores(r *engine.Result) []float64 {
	var out []float64
	for _, h := range r.Hits {
		if h.Provenance.DenseRank > 0 {
			out = append(out, h.Provenance.DenseScore)
		}
	}
	slices.Sort(out)
	return out
}

type bm25Hit struct {
	id    string
	score float64
}

// bm25List is the BM25 part of a result, by score (to 4 decimals) then ID:
// the order of tied scores depends on insertion order, and float32
// accumulation in a process that reopened a snapshot can differ from the
// reference in the last bit.
func bm25List(r *engine.Result) []bm25Hit {
	var out []bm25Hit
	for _, h := range r.Hits {
		if h.Provenance.BM25Rank > 0 {
			out = append(out, bm25Hit{h.Document.ID, h.Provenance.BM25Score})
		}
	}
	slices.SortFunc(out, func(a, b bm25Hit) int {
		if c := cmp.Compare(math.Round(b.score*1e4), math.Round(a.score*1e4)); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}
