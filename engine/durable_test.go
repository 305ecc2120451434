package engine_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

func openCfg(t *testing.T, dir string, cfg engine.Config, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, err := engine.Open(dir, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestCommitsDurableWithoutSnapshot: commits and deletes survive a Close
// and reopen with no Snapshot at all (log replay), under both policies,
// and a Snapshot truncates the log so only later commits are replayed.
func TestCommitsDurableWithoutSnapshot(t *testing.T) {
	for _, pol := range []engine.SyncPolicy{engine.SyncEveryCommit, engine.SyncInterval} {
		t.Run(string(pol), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			cfg := engine.DefaultConfig()
			cfg.Durability.Sync = pol
			emb := enginetest.NewHashEmbedder(8)
			e := openCfg(t, dir, cfg, engine.WithEmbedder(emb))
			commit(t, e, corpus...)
			b := e.NewBatch()
			b.DeleteIn("acme", "rs1")
			b.Add(engine.Document{ID: "go2", Tenant: "acme", Text: "replaced select text"})
			if err := e.Commit(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e2 := openCfg(t, dir, cfg, engine.WithEmbedder(emb))
			st := e2.Durability()
			if st.Recovery.Replayed != 2 || st.Recovery.SnapshotPosition != 0 || st.Recovery.DroppedBytes != 0 {
				t.Fatalf("recovery %+v", st.Recovery)
			}
			if _, ok := e2.GetIn("acme", "rs1"); ok || e2.Len() != len(corpus)-1 {
				t.Fatalf("deleted rs1 back or wrong count %d", e2.Len())
			}
			if d, _ := e2.GetIn("acme", "go2"); d.Text != "replaced select text" {
				t.Fatalf("go2 = %q", d.Text)
			}
			res, err := e2.Search(context.Background(), engine.Request{Query: "replaced select", Tenant: "acme"})
			if err != nil || len(res.Hits) == 0 || res.Hits[0].Document.ID != "go2" || len(res.Fallbacks) != 0 {
				t.Fatalf("search after replay: %v %+v", err, res)
			}
			// Snapshot, one more commit: only that one is replayed.
			if err := e2.Snapshot(); err != nil {
				t.Fatal(err)
			}
			commit(t, e2, engine.Document{ID: "late", Tenant: "acme", Text: "late arrival"})
			e2.Close()
			e3 := openCfg(t, dir, cfg, engine.WithEmbedder(emb))
			if r := e3.Durability().Recovery; r.Replayed != 1 || r.SnapshotPosition != 3 {
				t.Fatalf("after snapshot: recovery %+v", r)
			}
			if _, ok := e3.GetIn("acme", "late"); !ok || e3.Len() != len(corpus) {
				t.Fatalf("after snapshot + replay: %d documents", e3.Len())
			}
		})
	}
}

// waitFor polls cond until it holds; the deadline only bounds a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func TestBackgroundSnapshots(t *testing.T) {
	t.Run("log size", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "idx")
		cfg := engine.DefaultConfig()
		cfg.Durability.SnapshotLogBytes, cfg.Durability.SnapshotAge = 1, 0
		e := openCfg(t, dir, cfg)
		commit(t, e, corpus...)
		waitFor(t, "a size-triggered snapshot", func() bool { return e.Durability().BackgroundSnapshots > 0 })
		if st := e.Durability(); st.LastSnapshotError != "" {
			t.Fatal(st.LastSnapshotError)
		}
		e.Close()
		e2 := openCfg(t, dir, cfg)
		if r := e2.Durability().Recovery; r.SnapshotPosition != 2 || r.Replayed != 0 || e2.Len() != len(corpus) {
			t.Fatalf("recovery %+v, %d documents", r, e2.Len())
		}
	})
	t.Run("age", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "idx")
		cfg := engine.DefaultConfig()
		cfg.Durability.SnapshotLogBytes, cfg.Durability.SnapshotAge = 0, time.Millisecond
		e := openCfg(t, dir, cfg)
		commit(t, e, corpus...)
		waitFor(t, "an age-triggered snapshot", func() bool { return e.Durability().BackgroundSnapshots > 0 })
		if st := e.Durability(); st.LogNext != 2 {
			t.Fatalf("log next %d", st.LogNext)
		}
	})
}

func TestDurabilityConfigValidate(t *testing.T) {
	for name, edit := range map[string]func(*engine.DurabilityConfig){
		"unknown policy":    func(d *engine.DurabilityConfig) { d.Sync = "never" },
		"zero interval":     func(d *engine.DurabilityConfig) { d.SyncInterval = 0 },
		"tiny segments":     func(d *engine.DurabilityConfig) { d.SegmentBytes = 10 },
		"negative log size": func(d *engine.DurabilityConfig) { d.SnapshotLogBytes = -1 },
		"negative age":      func(d *engine.DurabilityConfig) { d.SnapshotAge = -time.Second },
	} {
		cfg := engine.DefaultConfig()
		edit(&cfg.Durability)
		if err := cfg.Validate(); !errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

// TestDirectoryLock: a second Open of a directory that is open fails with
// ErrLocked naming it; after Close it opens.
func TestDirectoryLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	e := open(t, dir)
	commit(t, e, corpus[0])
	_, err := engine.Open(dir, engine.DefaultConfig())
	if !errors.Is(err, engine.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v", err)
	}
	if e.Len() != 1 { // the failed Open left the first engine alone
		t.Fatalf("first engine has %d documents", e.Len())
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := open(t, dir)
	if e2.Len() != 1 {
		t.Fatalf("reopened: %d documents", e2.Len())
	}
	// In-memory engines take no lock.
	open(t, "")
	open(t, "")
}

// TestReplayWipeRecords opens testdata/wipes-v2, the log of an engine
// directory written by the engine of commit 04b3782 (HashEmbedder(8),
// DefaultConfig, no snapshot), whose version-2 records carry wipes: IDs
// deleted in every tenant by Batch.Delete (removed since), which Commit no
// longer writes.
// Its three commits:
//
//  1. add x and y in tenants a and b, z in c, keep in a;
//  2. add c/x, wipe x, add b/x again (one batch, in that order);
//  3. wipe y and never, delete c/z, add a/w.
//
// Replay must keep the wipes' meaning: x gone from a, and from c (the
// batch's earlier add), b/x the later add; y gone from every tenant; the
// wiped documents' postings and vectors gone too. The replayed state then
// survives a snapshot and reopen.
func TestReplayWipeRecords(t *testing.T) {
	dir := copyFixture(t, "wipes-v2")
	emb := enginetest.NewHashEmbedder(8)
	want := map[string]string{"a/keep": "keepsake alpha", "a/w": "walrus alpha", "b/x": "xylophone beta again"}
	check := func(e *engine.Engine) {
		t.Helper()
		got := map[string]string{}
		for _, tenant := range []string{"a", "b", "c"} {
			for _, id := range []string{"x", "y", "z", "keep", "w", "never"} {
				if d, ok := e.GetIn(tenant, id); ok {
					got[tenant+"/"+id] = d.Text
				}
			}
		}
		if !maps.Equal(got, want) || e.Len() != len(want) {
			t.Fatalf("state %v (%d documents), want %v", got, e.Len(), want)
		}
		if st := e.Stats(); st.Postings.Docs != 3 || st.Dense.Vectors != 3 || st.Vectors != 3 {
			t.Fatalf("indexes hold %d postings documents, %d vectors (%d stored), want 3", st.Postings.Docs, st.Dense.Vectors, st.Vectors)
		}
		for _, tc := range []struct {
			tenant string
			bm25   []string // BM25 hits for "xylophone yodel zeppelin"
			dense  int      // dense hits: every live document of the tenant
		}{
			{"a", nil, 2},
			{"b", []string{"x"}, 1},
			{"c", nil, 0},
		} {
			res, err := e.Search(context.Background(), engine.Request{Query: "xylophone yodel zeppelin", Tenant: tc.tenant})
			if err != nil {
				t.Fatal(err)
			}
			var bm25 []string
			dense := 0
			for _, h := range res.Hits {
				if h.Provenance.BM25Rank > 0 {
					bm25 = append(bm25, h.Document.ID)
				}
				if h.Provenance.DenseRank > 0 {
					dense++
				}
			}
			if !slices.Equal(bm25, tc.bm25) || dense != tc.dense {
				t.Fatalf("tenant %s: BM25 hits %v, %d dense; want %v, %d", tc.tenant, bm25, dense, tc.bm25, tc.dense)
			}
		}
	}
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	if r := e.Durability().Recovery; r.Replayed != 3 || r.Refused != 0 || r.SnapshotPosition != 0 || r.DroppedBytes != 0 {
		t.Fatalf("recovery %+v", r)
	}
	check(e)
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e2 := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	if r := e2.Durability().Recovery; r.Replayed != 0 || r.SnapshotPosition != 4 {
		t.Fatalf("after snapshot: recovery %+v", r)
	}
	check(e2)
}

// zeroEmbedder returns the zero vector for the text "zero" and
// HashEmbedder's vectors otherwise.
type zeroEmbedder struct{ *enginetest.HashEmbedder }

func (z zeroEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := z.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts)}, err
}

func (z zeroEmbedder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	out, err := z.HashEmbedder.Embed(ctx, in, texts)
	for i, t := range texts {
		if t == "zero" {
			out[i] = make([]float32, z.D)
		}
	}
	return out, err
}

// TestZeroVectorRefusedBeforeLogging: a vector the dense index would
// refuse (all zero) fails its commit with ErrEmbed before anything is
// logged; later commits and a reopen work. It had been logged, refused by
// the dense index (the engine then refused every commit) and refused again
// at every replay, so the directory could not be opened.
func TestZeroVectorRefusedBeforeLogging(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	emb := zeroEmbedder{enginetest.NewHashEmbedder(8)}
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	commit(t, e, engine.Document{ID: "ok", Tenant: "t", Text: "hello world"})
	b := e.NewBatch()
	b.Add(engine.Document{ID: "z", Tenant: "t", Text: "zero"})
	if err := e.Commit(context.Background(), b); !errors.Is(err, engine.ErrEmbed) {
		t.Fatalf("commit of a zero vector: %v, want ErrEmbed", err)
	}
	commit(t, e, engine.Document{ID: "after", Tenant: "t", Text: "later doc"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	for id, want := range map[string]bool{"ok": true, "z": false, "after": true} {
		if _, ok := e.GetIn("t", id); ok != want {
			t.Errorf("after reopening, document %q stored = %v, want %v", id, ok, want)
		}
	}
}

// TestReplayKeepsVectorsWithoutEmbedder: a log written with an embedder
// and replayed by an engine opened without one keeps its vectors, so a
// snapshot taken then still holds them for an engine opened with the
// embedder again (they had been dropped, and with the snapshot for good).
func TestReplayKeepsVectorsWithoutEmbedder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	emb := enginetest.NewHashEmbedder(8)
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	commit(t, e, corpus...)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openCfg(t, dir, engine.DefaultConfig())
	if n := e.Stats().Vectors; n != len(corpus) {
		t.Fatalf("replayed without an embedder: %d vectors, want %d", n, len(corpus))
	}
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	if n := e.Stats().Vectors; n != len(corpus) {
		t.Fatalf("after the snapshot, with the embedder again: %d vectors, want %d", n, len(corpus))
	}
}
