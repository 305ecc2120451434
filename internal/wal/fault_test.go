package wal

import (
	"bytes"
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/vfs/errorfs"
)

// TestFaults injects one fault while record 6 is appended to a log
// holding records 1..5 (each Append fsyncs), then appends record 6 again
// once the fault is cleared, and reopens the directory on the real
// filesystem:
//
//   - a failed preallocation (a full disk) falls back to writing without
//     zeros: the Append succeeds;
//   - a failed or short write is cut back off the file: the Append fails,
//     the log stays usable (the engine above still turns read-only);
//   - a failed fsync is sticky (ErrFailed): the Append fails and so does
//     every later one, even once the disk is fine again, since the log
//     cannot know what reached the disk; what was written stays on disk;
//   - a failed cut-back of a failed write is sticky too.
func TestFaults(t *testing.T) {
	tests := []struct {
		name     string
		faults   []errorfs.Fault
		appendOK bool // the Append of record 6 under the fault
		sticky   bool // the log refuses work after it (ErrFailed)
		errno    error
	}{
		{"preallocate ENOSPC", []errorfs.Fault{{Op: errorfs.OpPreallocate}}, true, false, nil},
		{"write ENOSPC", []errorfs.Fault{{Op: errorfs.OpWrite}}, false, false, syscall.ENOSPC},
		{"short write", []errorfs.Fault{{Op: errorfs.OpWrite, Short: true}}, false, false, syscall.ENOSPC},
		{"write EIO", []errorfs.Fault{{Op: errorfs.OpWrite, Err: syscall.EIO}}, false, false, syscall.EIO},
		{"fsync EIO", []errorfs.Fault{{Op: errorfs.OpSync, Err: syscall.EIO}}, false, true, syscall.EIO},
		{"short write, cut-back fails", []errorfs.Fault{{Op: errorfs.OpWrite, Short: true}, {Op: errorfs.OpTruncate, Err: syscall.EIO}}, false, true, syscall.ENOSPC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := errorfs.New(vfs.OS)
			cfg := DefaultConfig()
			cfg.PreallocateBytes = 1 << 10
			l, err := Open(fsys, dir, cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 5; i++ {
				if _, err := l.Append(payload(i)); err != nil {
					t.Fatal(err)
				}
			}
			// Record 6 needs preallocation: 5 records fill less than the
			// 1 KiB ahead, so make it longer than what is left.
			big := bytes.Repeat([]byte{7}, 2<<10) // not zeros: the preallocated space must not complete it
			for _, f := range tc.faults {
				fsys.Inject(f)
			}
			_, err = l.Append(big)
			switch {
			case tc.appendOK && err != nil:
				t.Fatalf("Append under %v: %v, want success", tc.faults, err)
			case !tc.appendOK && (err == nil || !errors.Is(err, tc.errno)):
				t.Fatalf("Append under %v: %v, want %v", tc.faults, err, tc.errno)
			case !tc.appendOK && errors.Is(err, ErrFailed) != tc.sticky:
				t.Fatalf("Append under %v: %v; ErrFailed %v, want %v", tc.faults, err, errors.Is(err, ErrFailed), tc.sticky)
			}
			fsys.Reset()
			_, err = l.Append(payload(7))
			if tc.sticky != errors.Is(err, ErrFailed) || (!tc.sticky && err != nil) {
				t.Fatalf("Append after the fault cleared: %v (sticky %v)", err, tc.sticky)
			}
			l.Close()
			l2, err := Open(vfs.OS, dir, cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			var got []int
			if err := l2.Replay(1, func(seq uint64, p []byte) error {
				got = append(got, len(p))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := []int{len(payload(1)), len(payload(2)), len(payload(3)), len(payload(4)), len(payload(5))}
			switch {
			case tc.appendOK:
				want = append(want, len(big), len(payload(7)))
			case tc.sticky && tc.faults[0].Op == errorfs.OpSync:
				want = append(want, len(big)) // written, its fsync failed: on disk, never acknowledged
			case !tc.sticky:
				want = append(want, len(payload(7)))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("reopened record sizes %v, want %v (recovery %+v)", got, want, l2.Recovery())
			}
		})
	}
}
