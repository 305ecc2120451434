package wal

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// preallocConfig preallocates 4 KiB ahead.
func preallocConfig() Config {
	c := DefaultConfig()
	c.PreallocateBytes = 4 << 10
	return c
}

// crashCopy writes records 1..n under cfg and returns a copy of the log
// taken before Close (as a kill -9 leaves it: zeros after the records),
// the offset where record n starts and where it ends.
func crashCopy(t *testing.T, cfg Config, n int) (dir string, lastStart, end int64) {
	t.Helper()
	src := t.TempDir()
	l := mustOpen(t, src, cfg, 1)
	appendN(t, l, 1, n-1)
	lastStart = l.Stats().Bytes
	appendN(t, l, n, 1)
	end = l.Stats().Bytes
	dir = copyDir(t, src)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, lastStart, end
}

// The active segment holds zeros ahead of its records; a log copied as a
// crash would leave it (zeros included) opens with every record and
// nothing dropped, and takes new records; Close cuts the zeros off.
func TestPreallocatedTail(t *testing.T) {
	cfg := preallocConfig()
	dir := t.TempDir()
	l := mustOpen(t, dir, cfg, 1)
	appendN(t, l, 1, 10)
	logical := l.Stats().Bytes
	seg := lastSegment(t, dir)
	// Zeros were added once a record passed them, PreallocateBytes at a time.
	if got := fileSize(t, seg); got <= logical || got > logical+cfg.PreallocateBytes {
		t.Fatalf("open segment holds %d bytes, want %d of records and up to %d of zeros", got, logical, cfg.PreallocateBytes)
	}

	crashed := copyDir(t, dir) // what a kill -9 leaves: records, then zeros
	c := mustOpen(t, crashed, cfg, 1)
	if rec := c.Recovery(); rec.DroppedBytes != 0 || rec.Next != 11 {
		t.Fatalf("recovery of a preallocated tail %+v: want a clean end after record 10", rec)
	}
	if got := replayAll(t, c, 1); !slices.Equal(got, seqRange(1, 11)) {
		t.Fatalf("replayed %v", got)
	}
	appendN(t, c, 11, 5)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, crashed, cfg, 1)
	if got := replayAll(t, c, 1); !slices.Equal(got, seqRange(1, 16)) {
		t.Fatalf("after new records: replayed %v", got)
	}
	c.Close()

	syncs := l.Stats().Syncs
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, seg); got != logical {
		t.Fatalf("closed segment holds %d bytes, want its %d bytes of records", got, logical)
	}
	// Every record was synced before Close; cutting the zeros takes one
	// more fsync, counted like the others.
	if got := l.Stats().Syncs; got != syncs+1 {
		t.Errorf("fsyncs %d after Close, %d before: want one more (the cut)", got, syncs)
	}
}

// Data after zeros is not preallocated space: a damaged tail, dropped and
// reported.
func TestPreallocatedTailWithData(t *testing.T) {
	cfg := preallocConfig()
	crashed, _, logical := crashCopy(t, cfg, 10)
	seg := lastSegment(t, crashed)
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{1}, logical+100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	size := fileSize(t, seg)
	c := mustOpen(t, crashed, cfg, 1)
	defer c.Close()
	rec := c.Recovery()
	if rec.DroppedBytes != size-logical || rec.DroppedOffset != logical || rec.DroppedReason != "zero record header followed by data" {
		t.Fatalf("recovery %+v: want the %d bytes after record 10 dropped", rec, size-logical)
	}
	if got := replayAll(t, c, 1); !slices.Equal(got, seqRange(1, 11)) {
		t.Fatalf("replayed %v", got)
	}
}

// Closed segments end with their last record: rotation cuts the zeros
// off before it fsyncs the segment; no preallocation passes SegmentBytes
// but for a record that needs it.
func TestPreallocatedRotation(t *testing.T) {
	cfg := testConfig() // 1 KiB segments
	cfg.PreallocateBytes = 64 << 10
	dir := t.TempDir()
	l := mustOpen(t, dir, cfg, 1)
	defer l.Close()
	appendN(t, l, 1, 40)
	segs, err := listSegments(vfs.OS, dir)
	if err != nil || len(segs) < 3 {
		t.Fatalf("segments %v, %v: want several", segs, err)
	}
	recs, err := Records(dir)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[string]int64{}
	for _, r := range recs {
		ends[r.Segment] = r.Offset + r.Size
	}
	for _, s := range segs[:len(segs)-1] {
		if got := fileSize(t, s.path); got != ends[s.path] {
			t.Errorf("closed segment %s holds %d bytes, its records end at %d", s.path, got, ends[s.path])
		}
	}
	active := segs[len(segs)-1].path
	if got := fileSize(t, active); got > max(cfg.SegmentBytes, ends[active]) {
		t.Errorf("active segment preallocated to %d bytes, past its %d-byte segments", got, cfg.SegmentBytes)
	}
}

// Without preallocation the segment holds only its records.
func TestPreallocateOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PreallocateBytes = 0
	dir := t.TempDir()
	l := mustOpen(t, dir, cfg, 1)
	defer l.Close()
	appendN(t, l, 1, 5)
	if got, want := fileSize(t, lastSegment(t, dir)), l.Stats().Bytes; got != want {
		t.Fatalf("segment holds %d bytes, want %d", got, want)
	}
}

// A record torn by a crash in preallocated space leaves its start, then
// zeros (the file keeps its size): dropped and reported, the records
// before it kept.
func TestTornRecordInPreallocatedSpace(t *testing.T) {
	cfg := preallocConfig()
	crashed, lastStart, _ := crashCopy(t, cfg, 12) // payload(12) is 143 bytes
	seg := lastSegment(t, crashed)
	size := fileSize(t, seg)
	for _, keep := range []int64{1, headerSize - 1, headerSize, headerSize + 50} {
		dir := copyDir(t, crashed)
		seg := lastSegment(t, dir)
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		clear(b[lastStart+keep:])
		if err := os.WriteFile(seg, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c := mustOpen(t, dir, cfg, 1)
		rec := c.Recovery()
		if rec.DroppedBytes != size-lastStart || rec.DroppedOffset != lastStart || rec.Next != 12 {
			t.Fatalf("record 12 cut after %d bytes, zeros after: recovery %+v, want %d bytes dropped at %d", keep, rec, size-lastStart, lastStart)
		}
		if got := replayAll(t, c, 1); !slices.Equal(got, seqRange(1, 12)) {
			t.Fatalf("replayed %v", got)
		}
		c.Close()
	}
}

// Zeros after the last record of a closed (not the last) segment are
// damage: rotation cuts them off before the segment's fsync.
func TestZerosInClosedSegment(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	l := mustOpen(t, dir, cfg, 1)
	appendN(t, l, 1, 20)
	l.Close()
	segs, err := listSegments(vfs.OS, dir)
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	f, err := os.OpenFile(segs[0].path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(vfs.OS, dir, cfg, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

// A record longer than the preallocation is preallocated for: the file
// grows to hold it, and it reads back.
func TestRecordLongerThanPreallocation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PreallocateBytes = 1 << 10
	dir := t.TempDir()
	l := mustOpen(t, dir, cfg, 1)
	big := make([]byte, 10<<10)
	for i := range big {
		big[i] = byte(i)
	}
	if _, err := l.Append(big); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, lastSegment(t, dir)); got < headerSize+int64(len(big)) {
		t.Fatalf("segment holds %d bytes, the record needs %d", got, headerSize+len(big))
	}
	crashed := copyDir(t, dir)
	l.Close()
	c := mustOpen(t, crashed, cfg, 1)
	defer c.Close()
	var got []byte
	if err := c.Replay(1, func(_ uint64, p []byte) error { got = slices.Clone(p); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, big) || c.Recovery().DroppedBytes != 0 {
		t.Fatalf("replayed %d bytes (recovery %+v), want the %d-byte record", len(got), c.Recovery(), len(big))
	}
}
