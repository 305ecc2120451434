package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
)

var errBoom = errors.New("boom")

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (bufSize/16)*2+7) // spans several buffer flushes
	tests := []struct {
		name     string
		existing []byte // nil: no file before the write
		write    func(io.Writer) error
		want     []byte // content expected on success
		wantErr  error
	}{
		{
			name:  "new file",
			write: func(w io.Writer) error { _, err := w.Write([]byte("hello")); return err },
			want:  []byte("hello"),
		},
		{
			name:     "replaces existing",
			existing: []byte("old content"),
			write:    func(w io.Writer) error { _, err := w.Write([]byte("new")); return err },
			want:     []byte("new"),
		},
		{
			name:  "empty",
			write: func(w io.Writer) error { return nil },
			want:  []byte{},
		},
		{
			name: "larger than buffer, many writes",
			write: func(w io.Writer) error {
				for p := big; len(p) > 0; {
					k := min(len(p), 4093)
					if _, err := w.Write(p[:k]); err != nil {
						return err
					}
					p = p[k:]
				}
				return nil
			},
			want: big,
		},
		{
			name:     "callback error keeps existing file",
			existing: []byte("precious"),
			write: func(w io.Writer) error {
				w.Write(big) // some of it reaches the temp file
				return errBoom
			},
			wantErr: errBoom,
		},
		{
			name:    "callback error, no existing file",
			write:   func(w io.Writer) error { w.Write([]byte("partial")); return errBoom },
			wantErr: errBoom,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.bin")
			if tc.existing != nil {
				if err := os.WriteFile(path, tc.existing, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n, err := Write(vfs.OS, dir, "f.bin", tc.write)
			if names := listDir(t, dir); len(names) > 1 || (len(names) == 1 && names[0] != "f.bin") {
				t.Errorf("dir holds %v, want at most f.bin", names)
			}
			got, rerr := os.ReadFile(path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if n != 0 {
					t.Errorf("n = %d on error, want 0", n)
				}
				if tc.existing == nil {
					if !errors.Is(rerr, fs.ErrNotExist) {
						t.Errorf("target exists after failed write (read err %v)", rerr)
					}
				} else if !bytes.Equal(got, tc.existing) {
					t.Errorf("existing file changed to %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("content: %d bytes, want %d", len(got), len(tc.want))
			}
			if n != int64(len(tc.want)) {
				t.Errorf("n = %d, want %d", n, len(tc.want))
			}
		})
	}
}

func TestWriteFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) (dir, name string)
	}{
		{
			name: "directory missing",
			setup: func(t *testing.T) (string, string) {
				return filepath.Join(t.TempDir(), "no", "such"), "f.bin"
			},
		},
		{
			name: "rename target is a non-empty directory",
			setup: func(t *testing.T) (string, string) {
				dir := t.TempDir()
				if err := os.MkdirAll(filepath.Join(dir, "f.bin", "child"), 0o755); err != nil {
					t.Fatal(err)
				}
				return dir, "f.bin"
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, name := tc.setup(t)
			called := false
			_, err := Write(vfs.OS, dir, name, func(w io.Writer) error { called = true; _, err := w.Write([]byte("x")); return err })
			if err == nil {
				t.Fatal("Write succeeded, want error")
			}
			if err := WriteBytes(vfs.OS, dir, name, []byte("x")); err == nil {
				t.Fatal("WriteBytes succeeded, want error")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, name+".*"+TempSuffix)); len(left) != 0 {
				t.Errorf("temp files left behind: %v", left)
			}
			if _, serr := os.Stat(dir); serr == nil {
				if fi, _ := os.Stat(filepath.Join(dir, name)); fi == nil || !fi.IsDir() {
					t.Errorf("target directory was replaced")
				}
			} else if called {
				t.Error("callback ran although the temp file could not be created")
			}
		})
	}
}

func TestWriteBytesAndNoSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBytes(vfs.OS, dir, "a", []byte("alpha")); err != nil {
		t.Fatal(err)
	}
	n, err := WriteNoSyncDir(vfs.OS, dir, "b", func(w io.Writer) error { _, err := io.WriteString(w, "beta!"); return err })
	if err != nil || n != 5 {
		t.Fatalf("WriteNoSyncDir = %d, %v; want 5, nil", n, err)
	}
	if err := vfs.OS.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "alpha", "b": "beta!"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if names := listDir(t, dir); len(names) != 2 {
		t.Errorf("dir holds %v, want [a b]", names)
	}
}

func TestSyncDirMissing(t *testing.T) {
	if err := vfs.OS.SyncDir(filepath.Join(t.TempDir(), "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("vfs.OS.SyncDir(missing) = %v, want fs.ErrNotExist", err)
	}
}

func BenchmarkWriteBytes(b *testing.B) {
	b.ReportAllocs()
	dir := b.TempDir()
	data := bytes.Repeat([]byte{7}, 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := WriteBytes(vfs.OS, dir, "f", data); err != nil {
			b.Fatal(err)
		}
	}
}

// Two writers of one name never share a temporary: a reader sees one
// whole version or the other, and no write fails.
func TestConcurrentWritersOfOneName(t *testing.T) {
	dir := t.TempDir()
	versions := [][]byte{bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 32<<10)}
	if err := WriteBytes(vfs.OS, dir, "f", versions[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, len(versions))
	for _, v := range versions {
		go func() {
			for range 100 {
				if err := WriteBytesNoSyncDir(vfs.OS, dir, "f", v); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for finished := 0; finished < len(versions); {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		default:
			got, err := os.ReadFile(filepath.Join(dir, "f"))
			if err != nil || !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
				t.Fatalf("read %d bytes (%v): neither version whole", len(got), err)
			}
		}
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Fatalf("left %v", names)
	}
	fi, err := os.Stat(filepath.Join(dir, "f"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644", fi.Mode(), err)
	}
}

// TestMkdirAll: it creates the missing directories of a path (an existing
// one is no error) and fails where a file stands in the way.
func TestMkdirAll(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := MkdirAll(vfs.OS, deep); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(deep); err != nil || !st.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	if err := MkdirAll(vfs.OS, deep); err != nil {
		t.Fatalf("existing directory: %v", err)
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(vfs.OS, filepath.Join(file, "sub")); err == nil {
		t.Fatal("a directory under a file was created")
	}
}
