package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
)

// TestKeepPrevious: with KeepPrevious, Commit keeps the generation the
// current manifest named and its manifest as MANIFEST.prev; ReadPrevious
// reads it and Restore makes it current again, so that the next Commit
// keeps it (not a damaged newer one) as its previous.
func TestKeepPrevious(t *testing.T) {
	l := testLayout()
	l.KeepPrevious = true
	dir := t.TempDir()
	var m testManifest
	if err := l.ReadPrevious(vfs.OS, dir, &m); !errors.Is(err, manifest.ErrNoManifest) {
		t.Fatalf("ReadPrevious of an empty directory: %v", err)
	}
	writeGen(t, l, dir, "one", "first")
	writeGen(t, l, dir, "two", "second")
	writeGen(t, l, dir, "three", "third")
	want := []string{"MANIFEST", "MANIFEST.prev", "data-000002.bin", "data-000003.bin", "dir-000002", "dir-000003"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if err := l.ReadPrevious(vfs.OS, dir, &m); err != nil || m.Generation != 2 || m.Note != "second" {
		t.Fatalf("ReadPrevious: %+v %v", m, err)
	}
	if _, err := l.ReadFiles(vfs.OS, dir, &m.Header, "data"); err != nil {
		t.Fatalf("previous generation's files: %v", err)
	}
	// Generation 3 is damaged: fall back and restore.
	if err := os.WriteFile(filepath.Join(dir, "data-000003.bin"), []byte("bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Restore(vfs.OS, dir); err != nil {
		t.Fatal(err)
	}
	var cur testManifest
	if err := l.Read(vfs.OS, dir, &cur); err != nil || cur.Generation != 2 {
		t.Fatalf("after Restore the current manifest is %+v (%v), want generation 2", cur, err)
	}
	g := writeGen(t, l, dir, "four", "fourth")
	if g != 4 {
		t.Fatalf("next generation %d, want 4 (above the damaged 3)", g)
	}
	if err := l.ReadPrevious(vfs.OS, dir, &m); err != nil || m.Generation != 2 {
		t.Fatalf("previous after the restore and a commit: %+v %v, want generation 2", m, err)
	}
	want = []string{"MANIFEST", "MANIFEST.prev", "data-000002.bin", "data-000004.bin", "dir-000002", "dir-000004"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	// A damaged previous manifest is corrupt, and cannot be restored.
	raw, _ := os.ReadFile(filepath.Join(dir, manifest.PreviousName))
	raw[3] ^= 1
	os.WriteFile(filepath.Join(dir, manifest.PreviousName), raw, 0o644)
	if err := l.ReadPrevious(vfs.OS, dir, &m); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("ReadPrevious of a damaged manifest: %v", err)
	}
	if err := l.Restore(vfs.OS, dir); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("Restore of a damaged manifest: %v", err)
	}
}

// TestAbort: a generation whose write or Commit failed is removed by
// Abort, leaving the previous one; Abort does nothing once the manifest
// names the generation.
func TestAbort(t *testing.T) {
	tests := []struct {
		name  string
		fault errorfs.Fault
		kept  bool // the generation became current (only the last directory fsync failed)
	}{
		{"data write", errorfs.Fault{Op: errorfs.OpWrite, Path: "data-"}, false},
		{"inner file rename", errorfs.Fault{Op: errorfs.OpRename, Path: "x.bin"}, false},
		{"manifest write", errorfs.Fault{Op: errorfs.OpWrite, Path: "MANIFEST"}, false},
		{"directory fsync before the manifest", errorfs.Fault{Op: errorfs.OpSync, Path: "dir-"}, false},
		{"directory fsync after the manifest", errorfs.Fault{Op: errorfs.OpSync, N: 6}, true}, // two files, two directories, the manifest, then its directory,
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testLayout()
			dir := t.TempDir()
			writeGen(t, l, dir, "one", "first")
			before := names(t, dir)
			fsys := errorfs.New(vfs.OS, tc.fault)
			w, err := l.Begin(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			err = func() error {
				if _, err := w.WriteBytes(w.Name("data", ".bin"), []byte("two")); err != nil {
					return err
				}
				if _, err := w.Mkdir("dir"); err != nil {
					return err
				}
				if _, err := w.WriteBytes(w.Name("dir", "")+"/x.bin", []byte("inner two")); err != nil {
					return err
				}
				return w.Commit(&testManifest{Note: "second"})
			}()
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("the generation's write: %v, want the injected fault", err)
			}
			if err := w.Abort(); err != nil {
				t.Fatal(err)
			}
			var m testManifest
			if err := l.Read(vfs.OS, dir, &m); err != nil {
				t.Fatal(err)
			}
			if tc.kept {
				if m.Generation != 2 {
					t.Fatalf("manifest at generation %d, want 2 (renamed before the failed fsync)", m.Generation)
				}
				return
			}
			if got := names(t, dir); m.Generation != 1 || !slices.Equal(got, before) {
				t.Fatalf("after Abort: generation %d, entries %v, want 1 and %v", m.Generation, got, before)
			}
		})
	}
}
