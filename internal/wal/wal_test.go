package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/vfs"
)

// payload is record i's deterministic content (sizes 0..~300 bytes).
func payload(i int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, (i*37)%301)
}

func testConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 1 << 10 // many segments
	return c
}

func mustOpen(t testing.TB, dir string, cfg Config, start uint64) *Log {
	t.Helper()
	l, err := Open(vfs.OS, dir, cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// appendN appends records first..first+n-1 (payload(i) for seq i).
func appendN(t testing.TB, l *Log, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		seq, err := l.Append(payload(i))
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i) {
			t.Fatalf("record %d got sequence %d", i, seq)
		}
	}
}

// replayAll returns the sequence numbers replayed from `from`, checking
// every payload.
func replayAll(t testing.TB, l *Log, from uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	err := l.Replay(from, func(seq uint64, p []byte) error {
		if !bytes.Equal(p, payload(int(seq))) {
			return fmt.Errorf("record %d: payload of %d bytes differs", seq, len(p))
		}
		seqs = append(seqs, seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncEveryCommit, SyncInterval} {
		t.Run(string(pol), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.Sync = pol
			l := mustOpen(t, dir, cfg, 1)
			appendN(t, l, 1, 60)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, cfg, 1)
			defer l.Close()
			rec := l.Recovery()
			if rec.DroppedBytes != 0 || rec.First != 1 || rec.Next != 61 || rec.Segments < 5 {
				t.Fatalf("recovery %+v", rec)
			}
			if got := replayAll(t, l, 1); !slices.Equal(got, seqRange(1, 61)) {
				t.Fatalf("replayed %v", got)
			}
			if got := replayAll(t, l, 42); !slices.Equal(got, seqRange(42, 61)) {
				t.Fatalf("replayed from 42: %v", got)
			}
			appendN(t, l, 61, 5) // numbering goes on after a reopen
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"interval", func(c *Config) { c.Sync = SyncInterval }, true},
		{"unknown policy", func(c *Config) { c.Sync = "sometimes" }, false},
		{"zero interval", func(c *Config) { c.Interval = 0 }, false},
		{"tiny segments", func(c *Config) { c.SegmentBytes = 100 }, false},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
		if !tc.ok {
			if _, err := Open(vfs.OS, t.TempDir(), c, 1); !errors.Is(err, ErrConfig) {
				t.Errorf("%s: Open = %v", tc.name, err)
			}
		}
	}
}

// lastSegment returns the path of dir's newest segment.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := listSegments(vfs.OS, dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return segs[len(segs)-1].path
}

// copyDir copies the flat directory src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// tornFixture writes records 1..n into one segment and returns the dir and
// the offset where the last record starts.
func tornFixture(t *testing.T, n int) (string, int64) {
	t.Helper()
	dir := t.TempDir()
	cfg := DefaultConfig()
	l := mustOpen(t, dir, cfg, 1)
	appendN(t, l, 1, n-1)
	lastStart := l.Stats().Bytes
	appendN(t, l, n, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, lastStart
}

// TestTornTail cuts the log at every byte of its last record: Open must
// keep every earlier record, report the cut-off bytes and offset, and
// accept new records after them.
func TestTornTail(t *testing.T) {
	const n = 12 // payload(12) is 143 bytes
	src, lastStart := tornFixture(t, n)
	st, _ := os.Stat(lastSegment(t, src))
	for cut := lastStart; cut < st.Size(); cut++ {
		dir := copyDir(t, src)
		seg := lastSegment(t, dir)
		if err := os.Truncate(seg, cut); err != nil {
			t.Fatal(err)
		}
		l := mustOpen(t, dir, DefaultConfig(), 1)
		rec := l.Recovery()
		wantDrop := cut - lastStart
		if rec.DroppedBytes != wantDrop || (wantDrop > 0 && (rec.DroppedOffset != lastStart || rec.DroppedSegment != filepath.Base(seg) || rec.DroppedReason == "")) {
			t.Fatalf("cut at %d: recovery %+v, want %d bytes dropped at %d", cut, rec, wantDrop, lastStart)
		}
		if got := replayAll(t, l, 1); !slices.Equal(got, seqRange(1, n)) {
			t.Fatalf("cut at %d: replayed %v", cut, got)
		}
		appendN(t, l, n, 2) // the lost record's number is reused
		l.Close()
		l = mustOpen(t, dir, DefaultConfig(), 1)
		if rec := l.Recovery(); rec.DroppedBytes != 0 || rec.Next != n+2 {
			t.Fatalf("cut at %d: second reopen %+v", cut, rec)
		}
		l.Close()
	}
}

// TestBitFlip flips one bit in every byte of the last record (header and
// payload), and in a record before it.
func TestBitFlip(t *testing.T) {
	const n = 12
	src, lastStart := tornFixture(t, n)
	st, _ := os.Stat(lastSegment(t, src))
	flip := func(t *testing.T, at int64, bit byte) string {
		dir := copyDir(t, src)
		seg := lastSegment(t, dir)
		b, _ := os.ReadFile(seg)
		b[at] ^= 1 << bit
		os.WriteFile(seg, b, 0o644)
		return dir
	}
	for at := lastStart; at < st.Size(); at++ {
		dir := flip(t, at, byte(at%8))
		l, err := Open(vfs.OS, dir, DefaultConfig(), 1)
		if err != nil {
			t.Fatalf("flip at %d: %v", at, err)
		}
		if rec := l.Recovery(); rec.DroppedBytes != st.Size()-lastStart || rec.DroppedOffset != lastStart {
			t.Fatalf("flip at %d: recovery %+v", at, rec)
		}
		if got := replayAll(t, l, 1); !slices.Equal(got, seqRange(1, n)) {
			t.Fatalf("flip at %d: replayed %v", at, got)
		}
		l.Close()
	}
	// A flip in an earlier record of the last segment drops from there on,
	// and says so.
	dir := flip(t, 20, 3)
	l := mustOpen(t, dir, DefaultConfig(), 1)
	defer l.Close()
	if rec := l.Recovery(); rec.DroppedOffset != 0 || rec.DroppedBytes != st.Size() || rec.Next != 1 {
		t.Fatalf("flip in record 1: recovery %+v", rec)
	}
}

// TestCorruptOlderSegment: damage before the last segment is not a torn
// tail and fails Open.
func TestCorruptOlderSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testConfig(), 1)
	appendN(t, l, 1, 40)
	l.Close()
	segs, _ := listSegments(vfs.OS, dir)
	b, _ := os.ReadFile(segs[0].path)
	b[len(b)-1] ^= 0x10
	os.WriteFile(segs[0].path, b, 0o644)
	if _, err := Open(vfs.OS, dir, testConfig(), 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v", err)
	}
	// So is a missing segment in the middle.
	dir2 := t.TempDir()
	l = mustOpen(t, dir2, testConfig(), 1)
	appendN(t, l, 1, 40)
	l.Close()
	segs, _ = listSegments(vfs.OS, dir2)
	os.Remove(segs[1].path)
	if _, err := Open(vfs.OS, dir2, testConfig(), 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a gap = %v", err)
	}
}

func TestTruncateBefore(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := mustOpen(t, dir, cfg, 1)
	appendN(t, l, 1, 100)
	before := l.Stats().Bytes
	if err := l.TruncateBefore(60); err != nil {
		t.Fatal(err)
	}
	segs, _ := listSegments(vfs.OS, dir)
	if segs[0].first > 60 || len(segs) < 2 || l.Stats().Bytes >= before {
		t.Fatalf("after TruncateBefore(60): segments from %d, %d segments, %d bytes (was %d)", segs[0].first, len(segs), l.Stats().Bytes, before)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].first <= 60 {
			t.Fatalf("segment from %d kept though its successor starts at %d ≤ 60", segs[i-1].first, segs[i].first)
		}
	}
	if got := replayAll(t, l, 60); !slices.Equal(got, seqRange(60, 101)) {
		t.Fatalf("replayed %v", got)
	}
	// Everything covered: one empty segment remains, numbering goes on.
	if err := l.TruncateBefore(l.Next()); err != nil {
		t.Fatal(err)
	}
	l.Close()
	segs, _ = listSegments(vfs.OS, dir)
	if len(segs) != 1 || segs[0].first != 101 {
		t.Fatalf("after full truncation: %+v", segs)
	}
	l = mustOpen(t, dir, cfg, 101)
	appendN(t, l, 101, 3)
	l.Close()
	// A caller whose state is older than the log's first record cannot be
	// brought up to date.
	if _, err := Open(vfs.OS, dir, cfg, 50); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(start 50) = %v", err)
	}
	// A caller ahead of the log (all records covered) starts afresh there.
	l = mustOpen(t, dir, cfg, 500)
	if l.Next() != 500 || len(replayAll(t, l, 1)) != 0 {
		t.Fatalf("Open(start 500): next %d", l.Next())
	}
	appendN(t, l, 500, 2)
	l.Close()
}

// TestConcurrentCommitters runs committers that share fsyncs; run with
// -race. Every record must come back exactly once.
func TestConcurrentCommitters(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := mustOpen(t, dir, cfg, 1)
	const writers, each = 16, 40
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := l.Append([]byte(fmt.Sprintf("w%d-%d", w, i))); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	st := l.Stats()
	t.Logf("%d records, %d fsyncs", st.Records, st.Syncs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := l.Append([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	l = mustOpen(t, dir, cfg, 1)
	defer l.Close()
	seen := map[string]bool{}
	next := uint64(1)
	if err := l.Replay(1, func(seq uint64, p []byte) error {
		if seq != next || seen[string(p)] {
			return fmt.Errorf("record %d (%q) out of order or twice", seq, p)
		}
		next++
		seen[string(p)] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("%d records replayed, want %d", len(seen), writers*each)
	}
}

// TestIntervalFlusher: under SyncInterval, Append returns before an fsync
// and the flusher (or Close) makes the records durable.
func TestIntervalFlusher(t *testing.T) {
	cfg := testConfig()
	cfg.Sync, cfg.Interval = SyncInterval, time.Millisecond
	l := mustOpen(t, t.TempDir(), cfg, 1)
	appendN(t, l, 1, 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.Stats().Syncs == 0 {
		t.Fatal("Sync did not fsync")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTooLarge(t *testing.T) {
	l := mustOpen(t, t.TempDir(), DefaultConfig(), 1)
	defer l.Close()
	if _, err := l.Write(make([]byte, MaxRecord+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Write = %v", err)
	}
}

func TestRecords(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testConfig(), 1)
	appendN(t, l, 1, 30)
	l.Close()
	recs, err := Records(dir)
	if err != nil || len(recs) != 30 {
		t.Fatalf("Records: %d, %v", len(recs), err)
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) || r.Size != headerSize+int64(len(payload(i+1))) {
			t.Fatalf("record %d: %+v", i, r)
		}
		if i > 0 && r.Segment == recs[i-1].Segment && r.Offset != recs[i-1].Offset+recs[i-1].Size {
			t.Fatalf("record %d at %d, previous ends at %d", i, r.Offset, recs[i-1].Offset+recs[i-1].Size)
		}
	}
	// Damage in the last record ends the listing before it.
	last := recs[len(recs)-1]
	os.Truncate(last.Segment, last.Offset+last.Size-1)
	if recs, _ := Records(dir); len(recs) != 29 {
		t.Fatalf("after a cut: %d records", len(recs))
	}
}

// TestWaitReturnsOnlyWhenCovered checks the group commit's wakeups: with
// many committers sharing fsyncs (a leader running several back to back,
// waking only the waiters each covered), no Wait returns before an fsync
// that started after its record was written has finished.
func TestWaitReturnsOnlyWhenCovered(t *testing.T) {
	// 1 KiB segments: records rotate the log all the time, between and
	// during the leaders' fsync rounds.
	l := mustOpen(t, t.TempDir(), testConfig(), 1)
	defer l.Close()
	const writers, each = 16, 150
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				tk, err := l.Write([]byte(fmt.Sprintf("w%d-%d", w, i)))
				if err == nil {
					err = l.Wait(tk)
				}
				if err != nil {
					errc <- err
					return
				}
				l.mu.Lock()
				synced, waiting := l.synced, len(l.waiters)
				l.mu.Unlock()
				if synced < tk.end {
					errc <- fmt.Errorf("record %d: Wait returned with %d bytes synced, its record ends at %d (%d waiters)", tk.Seq, synced, tk.end, waiting)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		l.mu.Lock()
		n := len(l.waiters)
		l.mu.Unlock()
		t.Fatalf("committers still waiting after a minute (%d waiters queued): a lost wakeup", n)
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) != 0 || l.syncing {
		t.Fatalf("%d waiters left, syncing %v", len(l.waiters), l.syncing)
	}
	if st := l.stats; st.Syncs >= st.Records {
		t.Logf("no fsync was shared: %d records, %d fsyncs", st.Records, st.Syncs)
	}
}

// TestRotationReleasesCoveredWaiters: a leader that stops with waiters
// left hands the lead to the first; if a rotation's fsync covers the rest
// before that one runs, they are released by the rotation (the waiter
// handed the lead finds nothing to do and would not release them).
func TestRotationReleasesCoveredWaiters(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testConfig(), 1)
	defer l.Close()
	t1, err := l.Write([]byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	t2, err := l.Write([]byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	w1 := syncWaiter{end: t1.end, ch: make(chan struct{})}
	w2 := syncWaiter{end: t2.end, ch: make(chan struct{})}
	l.waiters = append(l.waiters, w1, w2) // queued behind a leader
	l.wake()                              // which stops: w1 is handed the lead
	select {
	case <-w1.ch:
	default:
		t.Fatal("the first waiter was not handed the lead")
	}
	err = l.rotate() // before w1 runs
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w2.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter covered by the rotation's fsync was never released")
	}
}
