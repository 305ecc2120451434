package postings

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
)

func buildRandom(t *testing.T, cfg Config, seed uint64) (*Index, *rand.Rand) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ix := mustNew(t, cfg)
	commitDocs(t, ix, randCorpus(r, 300, 200, 50, "d")...)
	b := ix.NewBatch()
	for _, d := range randCorpus(r, 40, 200, 30, "d") {
		b.Add(d) // updates
	}
	b.Delete("d7")
	b.Delete("d8")
	b.Add(Doc{ID: "big", Terms: append(make([]string, 0, 300), strings.Fields(strings.Repeat("t1 ", 300))...)})
	if err := ix.Commit(b); err != nil {
		t.Fatal(err)
	}
	return ix, r
}

func assertSameResults(t *testing.T, a, b *Index, r *rand.Rand) {
	t.Helper()
	for range 50 {
		q := Query{Terms: randQuery(r, 200), K: 1 + r.IntN(60), Allow: randAllow(r)}
		ha, hb := search(t, a, q), search(t, b, q)
		if !reflect.DeepEqual(ha, hb) {
			t.Fatalf("query %+v:\n%v\n%v", q, ha, hb)
		}
	}
}

func TestSaveOpenRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AnalyzerVersion = "an-v1"
	ix, r := buildRandom(t, cfg, 1)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	// A second save replaces the first generation and cleans it up.
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("dir has %d entries, want MANIFEST + 2 files", len(ents))
	}
	got, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// IndexBytes counts the lists as they are held: the saved index holds
	// the newest postings of each term in a tail (4 bytes a posting), the
	// reopened one in its bitmap.
	a, b := ix.Stats(), got.Stats()
	if b.IndexBytes > a.IndexBytes {
		t.Fatalf("reopened index takes %d bytes, more than the saved one's %d", b.IndexBytes, a.IndexBytes)
	}
	a.IndexBytes, b.IndexBytes = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("stats differ:\n%+v\n%+v", a, b)
	}
	if !got.Has("big") || got.Has("d7") || !got.Has("d9") {
		t.Fatal("ids not restored")
	}
	assertSameResults(t, ix, got, r)
	// The reopened index accepts more commits and a rebuild.
	commitDocs(t, got, Doc{ID: "new", Terms: []string{"t1", "t2"}})
	if err := got.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if got.Stats().DeletedDocs != 0 || !got.Has("new") {
		t.Fatalf("after rebuild: %+v", got.Stats())
	}
}

// TestOpenOtherVariant: opening with other scoring parameters recomputes the
// bounds; results equal an index built directly with them.
func TestOpenOtherVariant(t *testing.T) {
	ix, _ := buildRandom(t, DefaultConfig(), 2)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	cfg := cfgFor(BM25Plus)
	cfg.K1, cfg.B = 1.5, 0.6
	got, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, r := buildRandom(t, cfg, 2)
	assertSameResults(t, want, got, r)
}

func TestOpenErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AnalyzerVersion = "an-v1"
	ix, _ := buildRandom(t, cfg, 3)
	src := t.TempDir()
	if err := ix.Save(src); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(src)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	copyDir := func(t *testing.T) string {
		dst := t.TempDir()
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(src, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	mutate := func(name string, f func([]byte) []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	flip := func(at func(n int) int) func([]byte) []byte {
		return func(b []byte) []byte { b[at(len(b))] ^= 0x40; return b }
	}
	var cases []struct {
		name string
		prep func(t *testing.T, dir string)
		cfg  Config
		want error
	}
	add := func(name string, prep func(*testing.T, string), c Config, want error) {
		cases = append(cases, struct {
			name string
			prep func(t *testing.T, dir string)
			cfg  Config
			want error
		}{name, prep, c, want})
	}
	for _, n := range names {
		add("flip middle "+n, mutate(n, flip(func(n int) int { return n / 2 })), cfg, ErrCorrupt)
		add("flip last "+n, mutate(n, flip(func(n int) int { return n - 2 })), cfg, ErrCorrupt)
		add("truncate "+n, mutate(n, func(b []byte) []byte { return b[:len(b)*2/3] }), cfg, ErrCorrupt)
		if n != manifest.Name {
			add("remove "+n, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, n)) }, cfg, ErrCorrupt)
		}
	}
	add("newer version", mutate(manifest.Name, func(b []byte) []byte {
		body, err := manifest.Unseal(b)
		if err != nil {
			t.Fatal(err)
		}
		body = []byte(strings.Replace(string(body), fmt.Sprintf(`"version":%d`, FormatVersion), fmt.Sprintf(`"version":%d`, FormatVersion+1), 1))
		return manifest.Seal(body)
	}), cfg, ErrVersion)
	other := cfg
	other.AnalyzerVersion = "an-v2"
	add("analyzer mismatch", func(*testing.T, string) {}, other, ErrAnalyzerMismatch)
	add("no snapshot", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, manifest.Name)) }, cfg, ErrNoSnapshot)
	bad := cfg
	bad.B = 3
	add("bad config", func(*testing.T, string) {}, bad, ErrConfig)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t)
			tc.prep(t, dir)
			_, err := Open(dir, tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Open(copyDir(t), cfg); err != nil {
		t.Fatalf("pristine copy: %v", err)
	}
}

// encodeDocsV2 is the docs file of formats 1 and 2 (no Refs; the tenant
// and metadata filter bitmaps at the end), stamped version: encodeDocs's
// old layout with two filter bitmaps in place of its empty set.
func encodeDocsV2(s *snapshot, version uint32) []byte {
	b := encodeDocs(s, version)
	e := enc{b: b[:len(b)-1]} // the filter count, 0
	e.uv(2)
	e.str("t\x00@acme")
	e.bitmap(roaring.BitmapOf(0, 2, 5))
	e.str("m\x00lang\x00en")
	e.bitmap(roaring.BitmapOf(1))
	return e.b
}

// TestOpenVersion1 opens a snapshot in the version-1 layout (ten-digit
// generation names, data files stamped version 1, the docs file without
// Refs and with filter bitmaps), as written before the shared manifest
// package, and compares it with the index it came from once SetRefs gave
// its documents their Refs.
func TestOpenVersion1(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AnalyzerVersion = "an-v1"
	ix, r := buildRandom(t, cfg, 4)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, manifest.Name))
	if err != nil {
		t.Fatal(err)
	}
	body, err := manifest.Unseal(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(body), fmt.Sprintf(`"version":%d`, FormatVersion), `"version":1`, 1)
	for _, kind := range []string{docsKind, postsKind} {
		from, to := manifest.GenName(kind, 1, ".bin"), fmt.Sprintf("%s-%010d.bin", kind, 1)
		b, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			t.Fatal(err)
		}
		b[len(docsMagic)] = 1 // the header's little-endian version
		if kind == docsKind {
			b = encodeDocsV2(ix.cur.Load(), 1)
		}
		os.Remove(filepath.Join(dir, from))
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s = strings.Replace(s, from, to, 1)
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.Name), manifest.Seal([]byte(s)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The rewritten files changed the checksums and sizes: fix them in the
	// manifest.
	var m persisted
	if err := layout.Read(vfs.OS, dir, &m); err != nil {
		t.Fatal(err)
	}
	for i, f := range m.Files {
		b, _ := os.ReadFile(filepath.Join(dir, f.Name))
		m.Files[i].CRC32C = crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		m.Files[i].Size = int64(len(b))
	}
	js, _ := json.Marshal(&m)
	os.WriteFile(filepath.Join(dir, manifest.Name), manifest.Seal(js), 0o644)

	got, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := allowWhere(func(int, int, int) bool { return true })
	all.Remove(NoRef)
	if h := search(t, got, Query{Terms: []string{"t1"}, K: 10, Allow: all}); len(h) != 0 {
		t.Fatalf("documents without Refs passed an allow-list: %v", h)
	}
	if h := search(t, got, Query{Terms: []string{"t1"}, K: 10}); len(h) == 0 {
		t.Fatal("no hits without an allow-list")
	}
	refs := map[string]uint32{}
	snap := ix.cur.Load()
	for id, num := range ix.byID {
		refs[id] = snap.refs[num]
	}
	delete(refs, "big")
	if err := got.SetRefs(refs); !errors.Is(err, ErrBadDoc) {
		t.Fatalf("SetRefs without a live ID: %v, want ErrBadDoc", err)
	}
	refs["big"] = snap.refs[ix.byID["big"]]
	if err := got.SetRefs(refs); err != nil {
		t.Fatal(err)
	}
	assertSameResults(t, ix, got, r)
	// Saving again moves the directory to the current layout.
	if err := got.Save(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("dir has %d entries after re-save, want MANIFEST + 2 files", len(ents))
	}
}
