package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
)

// TestWriteFaults: whichever call of a crash-safe write fails (a full
// disk, an I/O error, a short write), Write returns the error, removes its
// temporary and leaves the existing file as it was; only a failure of the
// final directory fsync, after the rename, leaves the new content in
// place (and is still an error: the rename may not be durable).
func TestWriteFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   errorfs.Fault
		renamed bool // the new content is in place despite the error
	}{
		{"create ENOSPC", errorfs.Fault{Op: errorfs.OpCreate}, false},
		{"write ENOSPC", errorfs.Fault{Op: errorfs.OpWrite}, false},
		{"short write", errorfs.Fault{Op: errorfs.OpWrite, Short: true}, false},
		{"fsync EIO", errorfs.Fault{Op: errorfs.OpSync, Err: syscall.EIO}, false},
		{"rename EIO", errorfs.Fault{Op: errorfs.OpRename, Err: syscall.EIO}, false},
		{"directory fsync EIO", errorfs.Fault{Op: errorfs.OpSync, N: 2, Err: syscall.EIO}, true},
	}
	for _, tc := range tests {
		for _, buffered := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/Write", false: "/WriteBytes"}[buffered]
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "f")
				if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				fsys := errorfs.New(vfs.OS, tc.fault)
				data := bytes.Repeat([]byte("new"), 1000)
				var err error
				if buffered {
					_, err = Write(fsys, dir, "f", bytesWriter(data))
				} else {
					err = WriteBytes(fsys, dir, "f", data)
				}
				if !errors.Is(err, errorfs.ErrInjected) {
					t.Fatalf("err %v, want the injected fault", err)
				}
				if left, _ := filepath.Glob(filepath.Join(dir, "*"+TempSuffix)); len(left) != 0 {
					t.Errorf("temporaries left: %v", left)
				}
				got, _ := os.ReadFile(p)
				want := []byte("old")
				if tc.renamed {
					want = data
				}
				if !bytes.Equal(got, want) {
					t.Errorf("file holds %d bytes, want %d", len(got), len(want))
				}
			})
		}
	}
}
