package engine_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"lukechampine.com/blake3"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/internal/manifest"
)

// copyFixture copies the engine directory testdata/name into a temporary
// directory and returns the copy's path. The fixtures:
//
//   - format2: written by the engine of commit d7fb671 (snapshot format 2,
//     before IDs were scoped by tenant; HashEmbedder(8), DefaultConfig):
//     the corpus, then three commits in the version-0 log record format
//     (add "late" and delete rs1; replace go2; add de1 in tenant evil,
//     which then moved it there from acme);
//   - format3: written by the engine of commit 310c688 (snapshot format 3,
//     whose postings and dense indexes held tenant and metadata bitmaps;
//     HashEmbedder(8), DefaultConfig): see TestMigrateFormat3;
//   - wipes-v2: a log with version-2 wipe records and no snapshot (see
//     TestReplayWipeRecords).
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "idx")
	err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name)))
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// manifestBody returns the JSON of dir's root manifest, checked and
// unsealed.
func manifestBody(t *testing.T, dir string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, manifest.Name))
	if err == nil {
		var body []byte
		if body, err = manifest.Unseal(raw); err == nil {
			return body
		}
	}
	t.Fatal(err)
	return nil
}

// manifestVersion returns the format version of dir's root manifest.
func manifestVersion(t *testing.T, dir string) int {
	t.Helper()
	var h manifest.Header
	if err := json.Unmarshal(manifestBody(t, dir), &h); err != nil {
		t.Fatal(err)
	}
	return h.Version
}

// TestOpenVersion1 opens an engine directory whose root manifest is in the
// version-1 layout (MANIFEST.json, plain JSON, the document file checked by
// BLAKE3), as written before the shared manifest package, and checks that
// the next Snapshot moves it to the current layout.
func TestOpenVersion1(t *testing.T) {
	dir := copyFixture(t, "format2")
	emb := enginetest.NewHashEmbedder(8)
	var cur map[string]any
	if err := json.Unmarshal(manifestBody(t, dir), &cur); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(dir, "snap-000001", "docs.gob"))
	if err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256(docs)
	old := map[string]any{
		"version": 1, "generation": 1, "snapshot": "snap-000001", "config": cur["config"], "has_dense": true,
		"docs": map[string]any{"name": "docs.gob", "size": len(docs), "blake3": hex.EncodeToString(sum[:]), "count": len(corpus)},
	}
	js, _ := json.MarshalIndent(old, "", "  ")
	os.WriteFile(filepath.Join(dir, "MANIFEST.json"), js, 0o644)
	os.Remove(filepath.Join(dir, manifest.Name))
	os.RemoveAll(filepath.Join(dir, "wal")) // version 1 had no log

	e2 := open(t, dir, engine.WithEmbedder(emb))
	if e2.Len() != len(corpus) {
		t.Fatalf("version-1 reopen: %d documents", e2.Len())
	}
	if d, ok := e2.GetIn("acme", "go1"); !ok || d.Text != corpus[0].Text {
		t.Fatalf("go1 = %+v, %v", d, ok)
	}
	if err := e2.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e2.Close()
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("MANIFEST.json after a new snapshot: %v", err)
	}
	if e3 := open(t, dir, engine.WithEmbedder(emb)); e3.Len() != len(corpus) {
		t.Fatalf("after migration: %d documents", e3.Len())
	}

	// A version-1 document file that fails its BLAKE3 is corrupt.
	dir2 := filepath.Join(t.TempDir(), "idx")
	e4 := open(t, dir2)
	commit(t, e4, corpus...)
	if err := e4.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e4.Close()
	os.Remove(filepath.Join(dir2, manifest.Name))
	os.RemoveAll(filepath.Join(dir2, "wal"))
	old["has_dense"] = false
	docs2, err := os.ReadFile(filepath.Join(dir2, "snap-000001", "docs.gob"))
	if err != nil {
		t.Fatal(err)
	}
	old["docs"].(map[string]any)["size"] = len(docs2) // right size, wrong digest
	old["docs"].(map[string]any)["blake3"] = hex.EncodeToString(make([]byte, 32))
	js, _ = json.Marshal(old)
	os.WriteFile(filepath.Join(dir2, "MANIFEST.json"), js, 0o644)
	if _, err := engine.Open(dir2, engine.DefaultConfig()); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("open with a bad BLAKE3: %v", err)
	}
}

// TestMigrateFormat2 opens a directory written before IDs were scoped by
// tenant (snapshot format 2, version-0 log records), checks that the log
// replays with the old meaning of IDs, that the same ID then goes into a
// second tenant as a second document, and that the next snapshot is the
// current format and reopens.
func TestMigrateFormat2(t *testing.T) {
	dir := copyFixture(t, "format2")
	emb := enginetest.NewHashEmbedder(8)
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	if r := e.Durability().Recovery; r.Replayed != 3 || r.SnapshotPosition != 2 {
		t.Fatalf("recovery %+v", r)
	}
	ctx := context.Background()
	check := func(e *engine.Engine, extra int) {
		t.Helper()
		want := map[[2]string]bool{
			{"acme", "go1"}: true, {"acme", "go2"}: true, {"acme", "late"}: true, {"evil", "ev1"}: true, {"evil", "de1"}: true,
			{"acme", "rs1"}: false, {"acme", "de1"}: false,
		}
		for k, present := range want {
			if _, ok := e.GetIn(k[0], k[1]); ok != present {
				t.Errorf("%s/%s present %v, want %v", k[0], k[1], ok, present)
			}
		}
		if d, _ := e.GetIn("acme", "go2"); d.Text != "Select picks a ready channel at random." {
			t.Errorf("go2 not replaced: %q", d.Text)
		}
		if e.Len() != 5+extra {
			t.Errorf("%d documents, want %d", e.Len(), 5+extra)
		}
		for _, tc := range []struct {
			tenant, query string
			want          []string
		}{
			{"evil", "Kanäle", []string{"de1"}},
			{"acme", "Kanäle", nil},
			{"acme", "ownership borrowing", nil},
			{"acme", "ready channel", []string{"go2"}},
		} {
			res, err := e.Search(ctx, engine.Request{Query: tc.query, Tenant: tc.tenant, Fusion: engine.FusionWeighted, Alpha: engine.Float(0)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string // BM25's hits (dense ranks every document)
			for _, h := range res.Hits {
				if h.Provenance.BM25Rank > 0 {
					got = append(got, h.Document.ID)
				}
			}
			if !slices.Equal(got[:min(len(got), len(tc.want))], tc.want) || len(tc.want) == 0 && len(got) != 0 {
				t.Errorf("%s %q: %v, want %v first", tc.tenant, tc.query, got, tc.want)
			}
			if res.HasFallback(engine.FallbackNoVectors) {
				t.Errorf("%s %q: no vectors after migration", tc.tenant, tc.query)
			}
		}
	}
	check(e, 0)
	// The same ID in another tenant is another document now.
	commit(t, e, engine.Document{ID: "go1", Tenant: "evil", Text: "Evil twin of go1 about ownership."})
	check(e, 1)
	if d, _ := e.GetIn("acme", "go1"); d.Text != corpus[0].Text {
		t.Fatalf("acme's go1 overwritten: %q", d.Text)
	}
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if v := manifestVersion(t, dir); v != engine.FormatVersion {
		t.Fatalf("manifest version %d, want %d", v, engine.FormatVersion)
	}
	e2 := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	check(e2, 1)
	res, err := e2.Search(ctx, engine.Request{Query: "ownership twin", Tenant: "evil"})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Document.ID != "go1" || res.Hits[0].Document.Tenant != "evil" {
		t.Fatalf("evil's go1: %v %v", err, res)
	}
}

// TestMigrateFormat3 opens a directory written before the engine numbered
// its documents (snapshot format 3: the postings and dense indexes kept
// tenant and metadata bitmaps of their own): acme's go1, go2 (replaced,
// lang en, kind faq) and de1 (lang de), evil's go1 (lang en), the default
// tenant's rs1 (lang en), acme's "gone" added and deleted, then, in the
// log only, evil's late (lang de). Every search sees exactly its tenant's
// documents passing its filter, by BM25 and by vectors, before and after
// the next snapshot, which is the current format.
func TestMigrateFormat3(t *testing.T) {
	dir := copyFixture(t, "format3")
	emb := enginetest.NewHashEmbedder(8)
	e := openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb))
	if r := e.Durability().Recovery; r.Replayed != 1 {
		t.Fatalf("recovery %+v", r)
	}
	ctx := context.Background()
	check := func(e *engine.Engine) {
		t.Helper()
		if e.Len() != 6 {
			t.Errorf("%d documents, want 6", e.Len())
		}
		for _, tc := range []struct {
			tenant string
			filter map[string]string
			want   []string
		}{
			{"acme", nil, []string{"de1", "go1", "go2"}},
			{"acme", map[string]string{"lang": "en"}, []string{"go1", "go2"}},
			{"acme", map[string]string{"lang": "en", "kind": "faq"}, []string{"go2"}},
			{"acme", map[string]string{"kind": "none"}, nil},
			{"evil", nil, []string{"go1", "late"}},
			{"evil", map[string]string{"lang": "de"}, []string{"late"}},
			{"", nil, []string{"rs1"}},
			{"nobody", nil, nil},
		} {
			for _, alpha := range []float64{0, 1} { // BM25 only, vectors only
				res, err := e.Search(ctx, engine.Request{Query: "channels", Tenant: tc.tenant, Filter: tc.filter, Fusion: engine.FusionWeighted, Alpha: engine.Float(alpha)})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range res.Hits {
					if h.Document.Tenant != tc.tenant {
						t.Fatalf("tenant %q got %s/%s", tc.tenant, h.Document.Tenant, h.Document.ID)
					}
					if alpha == 0 && h.Provenance.BM25Rank > 0 || alpha == 1 && h.Provenance.DenseRank > 0 {
						got = append(got, h.Document.ID)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%q %v alpha %v: %v, want %v", tc.tenant, tc.filter, alpha, got, tc.want)
				}
				if res.HasFallback(engine.FallbackNoVectors) {
					t.Errorf("%q: no vectors after migration", tc.tenant)
				}
			}
		}
	}
	check(e)
	// New documents get numbers of their own after the migrated ones.
	commit(t, e, engine.Document{ID: "new", Tenant: "acme", Text: "New channels doc.", Metadata: map[string]string{"lang": "fr"}})
	res, err := e.Search(ctx, engine.Request{Query: "channels", Tenant: "acme", Filter: map[string]string{"lang": "fr"}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Document.ID != "new" {
		t.Fatalf("acme lang fr: %v %v", err, res)
	}
	b := e.NewBatch()
	b.DeleteIn("acme", "new")
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if v := manifestVersion(t, dir); v != engine.FormatVersion {
		t.Fatalf("manifest version %d, want %d", v, engine.FormatVersion)
	}
	check(openCfg(t, dir, engine.DefaultConfig(), engine.WithEmbedder(emb)))
}
