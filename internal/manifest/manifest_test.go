package manifest_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
)

var (
	errTheirCorrupt = errors.New("test: corrupt")
	errTheirVersion = errors.New("test: version")
	errTheirNone    = errors.New("test: no snapshot")
	errBoom         = errors.New("boom")
)

// testManifest is a format's manifest: the header plus a field of its own.
type testManifest struct {
	manifest.Header
	Note string `json:"note"`
}

func testLayout() *manifest.Layout {
	return &manifest.Layout{
		Format: "test-format", Version: 2, Kinds: []string{"data", "dir"},
		ErrNoManifest: errTheirNone, ErrCorrupt: errTheirCorrupt, ErrVersion: errTheirVersion,
	}
}

// writeGen writes one generation: data-N.bin holding content, and dir-N/x.bin.
func writeGen(t *testing.T, l *manifest.Layout, dir, content, note string) uint64 {
	t.Helper()
	w, err := l.Begin(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteBytes(w.Name("data", ".bin"), []byte(content)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Mkdir("dir"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(w.Name("dir", "")+"/x.bin", func(out io.Writer) error {
		_, err := io.WriteString(out, "inner "+content)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(&testManifest{Note: note}); err != nil {
		t.Fatal(err)
	}
	return w.Generation()
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestRoundTripAndCleanup(t *testing.T) {
	l := testLayout()
	dir := filepath.Join(t.TempDir(), "snap")
	if g := writeGen(t, l, dir, "one", "first"); g != 1 {
		t.Fatalf("first generation %d", g)
	}
	// A foreign file survives cleanup; a torn temp does not.
	os.WriteFile(filepath.Join(dir, "keep-me"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "data-000002.bin.tmp"), []byte("torn"), 0o644)
	if g := writeGen(t, l, dir, "two", "second"); g != 3 {
		t.Fatalf("second generation %d, want 3 (above the torn temp of 2)", g)
	}
	if got, want := names(t, dir), []string{"MANIFEST", "data-000003.bin", "dir-000003", "keep-me"}; !slices.Equal(got, want) {
		t.Fatalf("dir holds %v, want %v", got, want)
	}
	var m testManifest
	if err := l.Read(vfs.OS, dir, &m); err != nil {
		t.Fatal(err)
	}
	if m.Format != "test-format" || m.Version != 2 || m.Generation != 3 || m.Note != "second" || len(m.Files) != 2 {
		t.Fatalf("manifest %+v", m)
	}
	data, err := l.ReadFiles(vfs.OS, dir, &m.Header, "dir", "data")
	if err != nil {
		t.Fatal(err)
	}
	if string(data[0]) != "inner two" || string(data[1]) != "two" {
		t.Fatalf("files %q", data)
	}
}

func TestNextGeneration(t *testing.T) {
	l := testLayout()
	dir := t.TempDir()
	if g := l.NextGeneration(vfs.OS, filepath.Join(dir, "missing")); g != 1 {
		t.Fatalf("missing dir: %d", g)
	}
	for _, n := range []string{"data-000004.bin", "dir-12", "other-000099.bin", "data-x.bin", "data-0000000007.bin.tmp"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	if g := l.NextGeneration(vfs.OS, dir); g != 13 {
		t.Fatalf("next %d, want 13 (dir-12; other kinds and bad names ignored)", g)
	}
	// A manifest naming a higher generation than any file counts too.
	os.WriteFile(filepath.Join(dir, manifest.Name), manifest.Seal([]byte(`{"generation":40}`)), 0o644)
	if g := l.NextGeneration(vfs.OS, dir); g != 41 {
		t.Fatalf("next %d, want 41", g)
	}
}

func TestParseName(t *testing.T) {
	tests := []struct {
		name string
		kind string
		gen  uint64
		tmp  bool
		ok   bool
	}{
		{"docs-000003.bin", "docs", 3, false, true},
		{"docs-0000000003.bin", "docs", 3, false, true},
		{"snap-1234567", "snap", 1234567, false, true},
		{"graph-000002.bin.tmp", "graph", 2, true, true},
		{"MANIFEST", "", 0, false, false},
		{"MANIFEST.tmp", "", 0, false, false},
		{"-000001.bin", "", 0, false, false},
		{"docs-.bin", "", 0, false, false},
		{"docs-+1.bin", "", 0, false, false},
		{"docs-99999999999999999999999.bin", "", 0, false, false},
	}
	for _, tc := range tests {
		k, g, tmp, ok := manifest.ParseName(tc.name)
		if k != tc.kind || g != tc.gen || tmp != tc.tmp || ok != tc.ok {
			t.Errorf("ParseName(%q) = %q %d %v %v, want %q %d %v %v", tc.name, k, g, tmp, ok, tc.kind, tc.gen, tc.tmp, tc.ok)
		}
	}
	if n := manifest.GenName("snap", 2, ""); n != "snap-000002" {
		t.Fatalf("GenName = %q", n)
	}
}

// rewrite decodes dir's sealed manifest, lets f edit the JSON object and
// seals it again (a manifest a newer or buggy writer could produce).
func rewrite(t *testing.T, dir string, f func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, manifest.Name)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	body, err := manifest.Unseal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatal(err)
	}
	f(obj)
	body, _ = json.Marshal(obj)
	if err := os.WriteFile(p, manifest.Seal(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func modify(name string, f func([]byte) []byte) func(*testing.T, string) {
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

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name   string
		damage func(*testing.T, string)
		want   []error // every one must be in the chain
	}{
		{"no manifest", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, manifest.Name)) },
			[]error{manifest.ErrNoManifest, errTheirNone, fs.ErrNotExist}},
		{"flipped byte in the body", modify(manifest.Name, func(b []byte) []byte { b[len(b)/3] ^= 0x20; return b }),
			[]error{manifest.ErrCorrupt, errTheirCorrupt}},
		{"wrong checksum", modify(manifest.Name, func(b []byte) []byte { b[len(b)-2] ^= 0x01; return b }),
			[]error{manifest.ErrCorrupt, errTheirCorrupt}},
		{"checksum line cut off", modify(manifest.Name, func(b []byte) []byte { return b[:len(b)-12] }),
			[]error{manifest.ErrCorrupt}},
		{"empty manifest", modify(manifest.Name, func([]byte) []byte { return nil }),
			[]error{manifest.ErrCorrupt}},
		{"sealed garbage", modify(manifest.Name, func([]byte) []byte { return manifest.Seal([]byte("{nope")) }),
			[]error{manifest.ErrCorrupt}},
		{"other format", func(t *testing.T, dir string) { rewrite(t, dir, func(o map[string]any) { o["format"] = "other" }) },
			[]error{manifest.ErrCorrupt}},
		{"newer version", func(t *testing.T, dir string) { rewrite(t, dir, func(o map[string]any) { o["version"] = 3 }) },
			[]error{manifest.ErrVersion, errTheirVersion}},
		{"version 0", func(t *testing.T, dir string) { rewrite(t, dir, func(o map[string]any) { o["version"] = 0 }) },
			[]error{manifest.ErrCorrupt}},
		{"generation 0", func(t *testing.T, dir string) { rewrite(t, dir, func(o map[string]any) { o["generation"] = 0 }) },
			[]error{manifest.ErrCorrupt}},
	}
	for _, bad := range []string{"../escape.bin", "/abs.bin", "a/../../b", "", "a//b"} {
		tests = append(tests, struct {
			name   string
			damage func(*testing.T, string)
			want   []error
		}{"file name " + bad, func(t *testing.T, dir string) {
			rewrite(t, dir, func(o map[string]any) { o["files"].([]any)[0].(map[string]any)["name"] = bad })
		}, []error{manifest.ErrCorrupt}})
	}
	l := testLayout()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGen(t, l, dir, "content", "n")
			tc.damage(t, dir)
			var m testManifest
			err := l.Read(vfs.OS, dir, &m)
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Fatalf("Read = %v, want %v in the chain", err, want)
				}
			}
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	l := testLayout()
	tests := []struct {
		name   string
		damage func(*testing.T, string)
	}{
		{"missing file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "data-000001.bin")) }},
		{"missing directory", func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "dir-000001")) }},
		{"truncated", modify("data-000001.bin", func(b []byte) []byte { return b[:len(b)-1] })},
		{"extended", modify("data-000001.bin", func(b []byte) []byte { return append(b, 0) })},
		{"wrong checksum", modify("dir-000001/x.bin", func(b []byte) []byte { b[0] ^= 1; return b })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGen(t, l, dir, "content", "n")
			tc.damage(t, dir)
			var m testManifest
			if err := l.Read(vfs.OS, dir, &m); err != nil {
				t.Fatal(err)
			}
			_, err := l.ReadFiles(vfs.OS, dir, &m.Header, "data", "dir")
			if !errors.Is(err, manifest.ErrCorrupt) || !errors.Is(err, errTheirCorrupt) {
				t.Fatalf("ReadFiles = %v, want ErrCorrupt", err)
			}
		})
	}
	t.Run("kind not named", func(t *testing.T) {
		dir := t.TempDir()
		writeGen(t, l, dir, "content", "n")
		var m testManifest
		if err := l.Read(vfs.OS, dir, &m); err != nil {
			t.Fatal(err)
		}
		if _, err := l.ReadFiles(vfs.OS, dir, &m.Header, "other"); !errors.Is(err, manifest.ErrCorrupt) {
			t.Fatalf("ReadFiles = %v", err)
		}
	})
}

// TestTornWrites leaves what a crash during the next generation can leave:
// a torn manifest temp, torn data temps, a complete data file and a
// directory of the next generation without a manifest naming them. Read
// must still see the previous generation, and the next Commit must number
// above the leftovers and remove them.
func TestTornWrites(t *testing.T) {
	l := testLayout()
	dir := t.TempDir()
	writeGen(t, l, dir, "good", "n")
	os.WriteFile(filepath.Join(dir, "MANIFEST.tmp"), []byte(`{"format":"test-fo`), 0o644)
	os.WriteFile(filepath.Join(dir, "data-000002.bin"), []byte("half a generation"), 0o644)
	os.MkdirAll(filepath.Join(dir, "dir-000002"), 0o755)
	os.WriteFile(filepath.Join(dir, "dir-000002", "x.bin.tmp"), []byte("in"), 0o644)
	os.WriteFile(filepath.Join(dir, "data-000003.bin.tmp"), []byte("torn"), 0o644)
	var m testManifest
	if err := l.Read(vfs.OS, dir, &m); err != nil || m.Generation != 1 {
		t.Fatalf("Read after torn writes: gen %d, %v", m.Generation, err)
	}
	data, err := l.ReadFiles(vfs.OS, dir, &m.Header, "data")
	if err != nil || string(data[0]) != "good" {
		t.Fatalf("data %q, %v", data, err)
	}
	// An abandoned Writer (its file failed) changes nothing either.
	w, err := l.Begin(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(w.Name("data", ".bin"), func(out io.Writer) error { out.Write([]byte("x")); return errBoom }); !errors.Is(err, errBoom) {
		t.Fatalf("WriteFile = %v", err)
	}
	if err := l.Read(vfs.OS, dir, &m); err != nil || m.Generation != 1 {
		t.Fatalf("Read after failed write: gen %d, %v", m.Generation, err)
	}
	if g := writeGen(t, l, dir, "next", "n"); g != 4 {
		t.Fatalf("next generation %d, want 4", g)
	}
	if got, want := names(t, dir), []string{"MANIFEST", "data-000004.bin", "dir-000004"}; !slices.Equal(got, want) {
		t.Fatalf("after commit: %v, want %v", got, want)
	}
}

func TestWriteFileRejectsEscapingNames(t *testing.T) {
	w, err := testLayout().Begin(vfs.OS, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"../x", "/x", "", "a/./b"} {
		if _, err := w.WriteBytes(n, []byte("x")); err == nil {
			t.Errorf("WriteBytes(%q) accepted", n)
		}
	}
}

// legacyManifest is an older layout's manifest: plain JSON under another
// name, with its own shape.
type legacyManifest struct {
	Gen  uint64 `json:"gen"`
	File string `json:"file"`
	Size int64  `json:"size"`
	Sum  uint32 `json:"sum"`
}

func TestLegacy(t *testing.T) {
	l := testLayout()
	l.LegacyName = "MANIFEST.json"
	l.Legacy = func(raw []byte, m manifest.Manifest) error {
		var old legacyManifest
		if err := json.Unmarshal(raw, &old); err != nil {
			return err
		}
		h := m.ManifestHeader()
		h.Version, h.Generation = 1, old.Gen
		h.Files = []manifest.File{{Name: old.File, Size: old.Size, CRC32C: old.Sum}}
		return nil
	}
	// Make a current-layout generation, then turn it into the legacy one.
	dir := t.TempDir()
	writeGen(t, l, dir, "legacy", "n")
	var cur testManifest
	if err := l.Read(vfs.OS, dir, &cur); err != nil {
		t.Fatal(err)
	}
	f, _ := cur.Find("data")
	js, _ := json.Marshal(legacyManifest{Gen: 1, File: f.Name, Size: f.Size, Sum: f.CRC32C})
	os.WriteFile(filepath.Join(dir, l.LegacyName), js, 0o644)
	os.Remove(filepath.Join(dir, manifest.Name))

	var m testManifest
	if err := l.Read(vfs.OS, dir, &m); err != nil {
		t.Fatal(err)
	}
	if data, err := l.ReadFiles(vfs.OS, dir, &m.Header, "data"); err != nil || string(data[0]) != "legacy" {
		t.Fatalf("legacy data %q, %v", data, err)
	}
	if g := l.NextGeneration(vfs.OS, dir); g != 2 {
		t.Fatalf("next generation after legacy %d", g)
	}
	// A corrupt legacy manifest is corrupt.
	os.WriteFile(filepath.Join(dir, l.LegacyName), []byte("{trunc"), 0o644)
	if err := l.Read(vfs.OS, dir, &m); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("Read of a torn legacy manifest = %v", err)
	}
	os.WriteFile(filepath.Join(dir, l.LegacyName), js, 0o644)
	// The next Commit replaces the legacy manifest.
	writeGen(t, l, dir, "new", "n")
	if got, want := names(t, dir), []string{"MANIFEST", "data-000002.bin", "dir-000002"}; !slices.Equal(got, want) {
		t.Fatalf("after commit: %v, want %v", got, want)
	}
	// Without a Legacy hook, a manifest without a checksum line is corrupt.
	l2 := testLayout()
	os.WriteFile(filepath.Join(dir, manifest.Name), js, 0o644)
	if err := l2.Read(vfs.OS, dir, &m); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("Read without hook = %v", err)
	}
}
