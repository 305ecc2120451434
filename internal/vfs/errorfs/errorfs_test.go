package errorfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
)

// script makes one call of each kind, in a fixed order, and returns the
// error of each call by kind name (the first error of a kind).
func script(fsys vfs.FS, dir string) map[errorfs.Op]error {
	got := map[errorfs.Op]error{}
	note := func(op errorfs.Op, err error) {
		if _, seen := got[op]; !seen || got[op] == nil {
			got[op] = err
		}
	}
	note(errorfs.OpMkdir, fsys.MkdirAll(filepath.Join(dir, "d")))
	f, err := fsys.Create(filepath.Join(dir, "d", "a"))
	note(errorfs.OpCreate, err)
	if err == nil {
		_, err = f.Write([]byte("0123456789"))
		note(errorfs.OpWrite, err)
		note(errorfs.OpPreallocate, f.Preallocate(10, 10))
		note(errorfs.OpTruncate, f.Truncate(10))
		note(errorfs.OpSync, f.SyncData())
		f.Close()
	}
	note(errorfs.OpRename, fsys.Rename(filepath.Join(dir, "d", "a"), filepath.Join(dir, "d", "b")))
	_, err = fsys.ReadDir(filepath.Join(dir, "d"))
	note(errorfs.OpReadDir, err)
	note(errorfs.OpRemove, fsys.Remove(filepath.Join(dir, "d", "b")))
	return got
}

func TestFaultKinds(t *testing.T) {
	for _, op := range errorfs.Ops {
		for _, errno := range []error{syscall.ENOSPC, syscall.EIO} {
			t.Run(op.String()+"/"+errno.Error(), func(t *testing.T) {
				fsys := errorfs.New(vfs.OS, errorfs.Fault{Op: op, Err: errno})
				got := script(fsys, t.TempDir())
				for k, err := range got {
					switch {
					case k == op && !(errors.Is(err, errno) && errors.Is(err, errorfs.ErrInjected)):
						t.Errorf("%s: err %v, want injected %v", k, err, errno)
					case k != op && errors.Is(err, errorfs.ErrInjected):
						t.Errorf("%s: err %v, want no injected fault", k, err)
					}
				}
				if n := fsys.Injected(op); n != 1 {
					t.Errorf("Injected(%s) = %d, want 1", op, n)
				}
			})
		}
	}
}

func TestModesAndCounting(t *testing.T) {
	tests := []struct {
		name  string
		fault errorfs.Fault
		want  []bool // whether each of five writes fails
	}{
		{"once, third", errorfs.Fault{Op: errorfs.OpWrite, N: 3}, []bool{false, false, true, false, false}},
		{"every from second", errorfs.Fault{Op: errorfs.OpWrite, N: 2, Mode: errorfs.Every}, []bool{false, true, true, true, true}},
		{"all from fourth", errorfs.Fault{Op: errorfs.OpWrite, N: 4, Mode: errorfs.All}, []bool{false, false, false, true, true}},
		{"path filter", errorfs.Fault{Op: errorfs.OpWrite, Path: "other", Mode: errorfs.Every}, []bool{false, false, false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := errorfs.New(vfs.OS, tc.fault)
			f, err := fsys.Create(filepath.Join(dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i, want := range tc.want {
				_, err := f.Write([]byte("x"))
				if got := err != nil; got != want {
					t.Errorf("write %d: err %v, want failure %v", i+1, err, want)
				}
			}
			if fsys.Calls(errorfs.OpWrite) != len(tc.want) {
				t.Errorf("Calls = %d, want %d", fsys.Calls(errorfs.OpWrite), len(tc.want))
			}
			fsys.Reset()
			if _, err := f.Write([]byte("x")); err != nil {
				t.Errorf("write after Reset: %v", err)
			}
		})
	}
	// A dead disk (All) fails every kind, not only the fault's.
	fsys := errorfs.New(vfs.OS, errorfs.Fault{Op: errorfs.OpSync, Mode: errorfs.All})
	dir := t.TempDir()
	if err := fsys.SyncDir(dir); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("sync: %v", err)
	}
	if _, err := fsys.Create(filepath.Join(dir, "x")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("create on a dead disk: %v", err)
	}
}

// A short write hands half the bytes to the file, then fails.
func TestShortWrite(t *testing.T) {
	dir := t.TempDir()
	fsys := errorfs.New(vfs.OS, errorfs.Fault{Op: errorfs.OpWrite, Short: true, Err: syscall.EIO})
	p := filepath.Join(dir, "f")
	f, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.WriteAt([]byte("abcdefgh"), 0)
	f.Close()
	if n != 4 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("WriteAt = %d, %v; want 4, EIO", n, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "abcd" {
		t.Fatalf("file holds %q, want %q", b, "abcd")
	}
}
