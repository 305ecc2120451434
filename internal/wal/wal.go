package wal

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
)

// headerSize is the record header: crc32c u32 | payload length u32 |
// sequence number u64, little endian. The checksum covers the length, the
// sequence number and the payload.
const headerSize = 16

// segmentExt ends a segment file's name; the name before it is the
// sequence number of the segment's first record, zero-padded to 20 digits
// so that names sort in log order.
const segmentExt = ".wal"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segment is one file of the log.
type segment struct {
	first uint64 // sequence number of its first record
	path  string
	size  int64 // valid bytes (the active segment's grows with writes)
}

// Recovery reports what Open found: the log's extent and, when the tail
// of the last segment was torn or corrupt, what was cut off.
type Recovery struct {
	// First and Next bound the records in the log: [First, Next).
	First, Next uint64
	// Segments is the number of segment files.
	Segments int
	// DroppedBytes is how many bytes Open cut off the last segment's
	// tail (a record torn by a crash, or one failing its checksum, and
	// everything after it: up to Config.PreallocateBytes of that can be
	// preallocated zeros), at DroppedOffset of DroppedSegment; zero when
	// the tail was clean. Zeros alone after the last record are a clean
	// end: records written but never synced and lost with the machine
	// (not a killed process) leave such zeros and go unreported, as
	// records never written do.
	DroppedBytes   int64
	DroppedOffset  int64
	DroppedSegment string
	// DroppedReason says what was wrong with the first dropped record.
	DroppedReason string
}

// Ticket identifies a written record for Wait.
type Ticket struct {
	// Seq is the record's sequence number.
	Seq uint64
	end int64 // bytes appended through this record, over the Log's life
}

// Stats are counters over a Log's life since Open.
type Stats struct {
	Records uint64 // records written
	Syncs   uint64 // fsyncs of segment files: group commits, rotations and Close
	Bytes   int64  // bytes in the log's segments now
}

// Log is an append-only, checksummed, segmented write-ahead log. It is
// safe for concurrent use: any number of goroutines may Write, Wait and
// Append at once, and share fsyncs (group commit).
type Log struct {
	cfg Config
	fs  vfs.FS
	dir string

	// mu guards every field below, and cond (on mu) signals the end of
	// an fsync.
	mu       sync.Mutex
	cond     *sync.Cond
	segs     []segment // oldest first; the last is the active one
	f        vfs.File  // the active segment, open for writing
	next     uint64    // sequence number of the next record
	appended int64     // bytes written over the Log's life
	synced   int64     // of those, bytes known durable
	zeroed   int64     // the active file's size: zeros past its records
	// noZeros stops preallocation until the next segment, after it
	// failed (a full disk): records are then written without it.
	noZeros  bool
	syncing  bool // an fsync leader is running (without mu)
	waiters  []syncWaiter
	failed   error // sticky: a write or fsync failed
	closed   bool
	stats    Stats
	recovery Recovery

	stop    chan struct{} // closed by Close to stop the flusher
	flusher sync.WaitGroup
	buf     []byte // record encoding scratch
}

// Open opens the log in dir (created if missing), checks every segment,
// cuts a torn or corrupt tail off the last one (reported by Recovery) or
// the zeros preallocated after its last record (a clean end, not reported),
// and positions the log for appending. start is the sequence number the
// caller's state has reached (a snapshot's log position; 1 for none): an
// empty log starts there, and a log that ends before it is emptied (its
// records are all covered). A log whose records begin after start is
// missing records: ErrCorrupt. Every filesystem call goes through fsys
// (vfs.OS in production).
func Open(fsys vfs.FS, dir string, cfg Config, start uint64) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if start == 0 {
		start = 1
	}
	if err := atomicfile.MkdirAll(fsys, dir); err != nil {
		return nil, fmt.Errorf("wal open %s: %w", dir, err)
	}
	l := &Log{cfg: cfg, fs: fsys, dir: dir, stop: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	if err := l.scan(start); err != nil {
		return nil, fmt.Errorf("wal open %s: %w", dir, err)
	}
	if cfg.Sync == SyncInterval {
		l.flusher.Add(1)
		go l.flush()
	}
	return l, nil
}

// listSegments returns dir's segments sorted by first sequence number.
func listSegments(fsys vfs.FS, dir string) ([]segment, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segmentExt)
		if !ok {
			continue
		}
		first, err := strconv.ParseUint(name, 10, 64)
		if err != nil || first == 0 {
			continue
		}
		segs = append(segs, segment{first: first, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmpU64(a.first, b.first) })
	return segs, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scan validates the segments, repairs the tail and opens the active
// segment.
func (l *Log) scan(start uint64) error {
	segs, err := listSegments(l.fs, l.dir)
	if err != nil {
		return err
	}
	next := uint64(0)
	for i := range segs {
		s := &segs[i]
		if i > 0 && s.first != next {
			return fmt.Errorf("%w: segment %s starts at %d, previous ends at %d", ErrCorrupt, filepath.Base(s.path), s.first, next)
		}
		end, valid, reason, err := scanSegment(l.fs, s.path, s.first, nil)
		if err != nil {
			return err
		}
		st, err := l.fs.Stat(s.path)
		if err != nil {
			return err
		}
		if valid < st.Size() && reason == "" && i == len(segs)-1 {
			// Zeros preallocated after the last record: a clean end.
			// (A closed segment ends with its last record: rotation cut
			// its zeros off before its fsync, so zeros there are damage.)
			if err := l.fs.Truncate(s.path, valid); err != nil {
				return fmt.Errorf("cut preallocated tail: %w", err)
			}
		} else if valid < st.Size() {
			if i != len(segs)-1 {
				return fmt.Errorf("%w: segment %s damaged at offset %d (%s) and followed by newer segments", ErrCorrupt, filepath.Base(s.path), valid, cmp.Or(reason, "zeros"))
			}
			if err := l.fs.Truncate(s.path, valid); err != nil {
				return fmt.Errorf("cut torn tail: %w", err)
			}
			l.recovery.DroppedBytes = st.Size() - valid
			l.recovery.DroppedOffset = valid
			l.recovery.DroppedSegment = filepath.Base(s.path)
			l.recovery.DroppedReason = reason
		}
		s.size = valid
		next = end
	}
	switch {
	case len(segs) > 0 && segs[0].first > start:
		return fmt.Errorf("%w: log begins at record %d, the caller's state ends at %d", ErrCorrupt, segs[0].first, start)
	case len(segs) > 0 && next < start:
		// Every record is older than the caller's state: start afresh.
		for _, s := range segs {
			if err := l.fs.Remove(s.path); err != nil {
				return err
			}
		}
		segs = nil
	}
	if len(segs) == 0 {
		next = start
		s, err := l.create(start)
		if err != nil {
			return err
		}
		segs = []segment{s}
	}
	l.segs, l.next = segs, next
	active := &l.segs[len(l.segs)-1]
	f, err := l.fs.OpenWrite(active.path)
	if err != nil {
		return err
	}
	l.f, l.zeroed = f, active.size
	l.recovery.First, l.recovery.Next, l.recovery.Segments = l.segs[0].first, next, len(l.segs)
	for _, s := range l.segs {
		l.stats.Bytes += s.size
	}
	return nil
}

// create makes an empty segment whose first record is first, durably.
func (l *Log) create(first uint64) (segment, error) {
	p := filepath.Join(l.dir, fmt.Sprintf("%020d%s", first, segmentExt))
	f, err := l.fs.Create(p)
	if err != nil {
		return segment{}, err
	}
	if err := f.Close(); err != nil {
		return segment{}, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return segment{}, err
	}
	return segment{first: first, path: p}, nil
}

// scanSegment reads the records of the segment at path, expecting
// sequence numbers from first on, calling fn (when not nil) for each valid
// one. It returns the sequence number after the last valid record, the
// offset where valid records end and, if that is before the end of the
// file, why the record there is invalid ("" when only zeros follow:
// preallocated space, a clean end). err is an I/O error or fn's.
func scanSegment(fsys vfs.FS, path string, first uint64, fn func(seq uint64, payload []byte) error) (next uint64, valid int64, reason string, err error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, 0, "", err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	var hdr [headerSize]byte
	var payload []byte
	next = first
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return next, valid, "", nil
			}
			if err == io.ErrUnexpectedEOF {
				return next, valid, "torn record header", nil
			}
			return 0, 0, "", err
		}
		if hdr == ([headerSize]byte{}) { // no record has sequence number 0
			zeros, err := allZero(r)
			if err != nil {
				return 0, 0, "", err
			}
			if zeros {
				return next, valid, "", nil // preallocated space: the end
			}
			return next, valid, "zero record header followed by data", nil
		}
		n := binary.LittleEndian.Uint32(hdr[4:])
		seq := binary.LittleEndian.Uint64(hdr[8:])
		if n > MaxRecord {
			return next, valid, fmt.Sprintf("record length %d", n), nil
		}
		payload = slices.Grow(payload[:0], int(n))[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return next, valid, "torn record payload", nil
			}
			return 0, 0, "", err
		}
		h := crc32.Update(0, castagnoli, hdr[4:])
		if crc32.Update(h, castagnoli, payload) != binary.LittleEndian.Uint32(hdr[:]) {
			return next, valid, "checksum mismatch", nil
		}
		if seq != next {
			return next, valid, fmt.Sprintf("sequence %d, expected %d", seq, next), nil
		}
		if fn != nil {
			if err := fn(seq, payload); err != nil {
				return 0, 0, "", err
			}
		}
		next++
		valid += headerSize + int64(n)
	}
}

// allZero reports whether everything left in r is zero bytes.
func allZero(r io.Reader) (bool, error) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// Recovery returns what Open found.
func (l *Log) Recovery() Recovery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recovery
}

// Replay calls fn for every record with sequence number ≥ from, in order.
// The payload is valid only during the call. Call it before writing (it
// reads the records that were in the log at Open). fn's error stops the
// replay and is returned.
func (l *Log) Replay(from uint64, fn func(seq uint64, payload []byte) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].first <= from {
			continue // every record of s is older than from
		}
		end, valid, reason, err := scanSegment(l.fs, s.path, s.first, func(seq uint64, p []byte) error {
			if seq < from {
				return nil
			}
			return fn(seq, p)
		})
		if err != nil {
			return err
		}
		if valid < s.size {
			return fmt.Errorf("%w: segment %s changed since Open at offset %d (%s, record %d)", ErrCorrupt, filepath.Base(s.path), valid, reason, end)
		}
	}
	return nil
}

// Next returns the sequence number the next written record gets: a
// snapshot that holds every record written so far has log position Next.
func (l *Log) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Stats returns the Log's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Append writes payload as the next record and returns its sequence
// number once it is durable under the sync policy (Write, then Wait).
func (l *Log) Append(payload []byte) (uint64, error) {
	t, err := l.Write(payload)
	if err != nil {
		return 0, err
	}
	return t.Seq, l.Wait(t)
}

// Write appends payload as the next record, handing it to the operating
// system but not waiting for durability: Wait(ticket) does. Records are
// numbered in the order Writes return. A failed write leaves the log as it
// was (the partial record is cut off) or, if even that fails, marks the log
// failed (ErrFailed).
func (l *Log) Write(payload []byte) (Ticket, error) {
	if len(payload) > MaxRecord {
		return Ticket{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(payload))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return Ticket{}, err
	}
	for l.segs[len(l.segs)-1].size >= l.cfg.SegmentBytes {
		if l.syncing {
			l.cond.Wait() // the leader is fsyncing the active file
			if err := l.usable(); err != nil {
				return Ticket{}, err
			}
			continue
		}
		if err := l.rotate(); err != nil {
			return Ticket{}, err
		}
	}
	active := &l.segs[len(l.segs)-1]
	b := l.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint64(b, l.next)
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	l.buf = b[:0]
	if cap(l.buf) > 1<<20 {
		l.buf = nil // do not pin a huge batch's buffer
	}
	if err := l.preallocate(active.size + int64(len(b))); err != nil {
		// Zeros only make fsyncs cheaper: write the record without them.
		l.noZeros, l.zeroed = true, active.size
		if terr := l.f.Truncate(active.size); terr != nil {
			l.failed = fmt.Errorf("%w: %w (and cutting the zeros: %v)", ErrFailed, err, terr)
			l.wake() // waiters get the error
			return Ticket{}, l.failed
		}
	}
	if _, err := l.f.WriteAt(b, active.size); err != nil {
		l.zeroed = active.size
		if terr := l.f.Truncate(active.size); terr != nil {
			l.failed = fmt.Errorf("%w: write %s: %w (and cutting the partial record: %v)", ErrFailed, active.path, err, terr)
			l.wake() // waiters get the error
			return Ticket{}, l.failed
		}
		return Ticket{}, fmt.Errorf("wal write %s: %w", active.path, err)
	}
	active.size += int64(len(b))
	l.appended += int64(len(b))
	l.stats.Bytes += int64(len(b))
	l.stats.Records++
	t := Ticket{Seq: l.next, end: l.appended}
	l.next++
	return t, nil
}

// preallocate fills the active file with zeros up to Config.PreallocateBytes
// past need (never past SegmentBytes unless need is), when need (the end of
// the record about to be written) is past what it holds. Called with mu
// held.
func (l *Log) preallocate(need int64) error {
	if l.cfg.PreallocateBytes == 0 || l.noZeros || need <= l.zeroed {
		return nil
	}
	to := min(need+l.cfg.PreallocateBytes, max(need, l.cfg.SegmentBytes))
	if err := l.f.Preallocate(l.zeroed, to-l.zeroed); err != nil {
		return fmt.Errorf("wal preallocate %s: %w", l.f.Name(), err)
	}
	l.zeroed = to
	return nil
}

// usable reports why the log cannot take work. Called with mu held.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.failed
}

// rotate fsyncs and closes the active segment and starts a new one. Called
// with mu held and no fsync leader running.
func (l *Log) rotate() error {
	// Its fsync covers waiters, or its failure is theirs: release them
	// (and hand the lead to one still uncovered).
	defer l.wake()
	if err := l.cutZeros(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		l.failed = fmt.Errorf("%w: fsync %s: %w", ErrFailed, l.f.Name(), err)
		return l.failed
	}
	l.stats.Syncs++
	l.synced = l.appended
	if err := l.f.Close(); err != nil {
		l.failed = fmt.Errorf("%w: close %s: %w", ErrFailed, l.f.Name(), err)
		return l.failed
	}
	s, err := l.create(l.next)
	if err == nil {
		l.f, err = l.fs.OpenWrite(s.path)
	}
	if err != nil {
		l.f = nil
		l.failed = fmt.Errorf("%w: new segment: %w", ErrFailed, err)
		return l.failed
	}
	l.segs = append(l.segs, s)
	l.zeroed, l.noZeros = 0, false
	return nil
}

// cutZeros cuts the preallocated zeros off the active file, so that a
// closed segment ends with its last record. Called with mu held.
func (l *Log) cutZeros() error {
	active := l.segs[len(l.segs)-1]
	if l.zeroed <= active.size {
		return nil
	}
	if err := l.f.Truncate(active.size); err != nil {
		l.failed = fmt.Errorf("%w: cut preallocated space of %s: %w", ErrFailed, l.f.Name(), err)
		return l.failed
	}
	l.zeroed = active.size
	return nil
}

// Wait returns once the record of t is durable under the sync policy:
// covered by an fsync (SyncEveryCommit), or written (SyncInterval). Under
// SyncEveryCommit the first waiter whose record is not yet covered becomes
// the leader and fsyncs everything written so far, while later waiters
// queue behind it and are covered by the next fsync: concurrent committers
// share fsyncs.
func (l *Log) Wait(t Ticket) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Sync == SyncInterval {
		return l.failed
	}
	return l.syncTo(t.end)
}

// Sync makes every record written so far durable, whatever the policy.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.syncTo(l.appended)
}

// syncTo returns once the first target bytes appended are durable, leading
// an fsync when none is running. Called with mu held; releases it while
// fsyncing or waiting.
func (l *Log) syncTo(target int64) error {
	defer func() {
		// A waiter handed the lead may find its record covered by a
		// rotation's fsync and have nothing to lead: pass the lead on.
		if !l.syncing && len(l.waiters) > 0 {
			l.wake()
		}
	}()
	for l.synced < target {
		if l.failed != nil {
			return l.failed
		}
		if l.syncing {
			w := syncWaiter{end: target, ch: make(chan struct{})}
			l.waiters = append(l.waiters, w)
			l.mu.Unlock()
			<-w.ch
			l.mu.Lock()
			continue
		}
		l.lead()
	}
	return nil
}

// syncWaiter is a Wait queued behind a running fsync; ch is closed when an
// fsync covered end, or when it is to lead the next one.
type syncWaiter struct {
	end int64
	ch  chan struct{}
}

// leaderRounds bounds the fsyncs one leader runs back to back.
const leaderRounds = 8

// lead fsyncs everything appended, and again while records arrived during
// the last fsync (at most leaderRounds times): the leader is running
// already, while handing over would wait for a sleeping waiter to be
// scheduled, which on a busy machine takes longer than the fsync. After
// each fsync it wakes the waiters it covered, and only those (waking every
// waiter to check, sixteen committers made most wakeups useless). Called
// with mu held and no leader running; releases mu while fsyncing.
func (l *Log) lead() {
	l.syncing = true
	defer func() {
		l.syncing = false
		l.wake()
		l.cond.Broadcast() // Write and Close wait for the leader to finish
	}()
	for range leaderRounds {
		l.mu.Unlock()
		// Let the goroutines that are ready to run go first: on a busy
		// machine they are committers about to write their records,
		// which this fsync then covers too (fewer, larger fsyncs, and
		// fsync time is CPU time on a machine without a write cache);
		// on an idle one this returns at once.
		runtime.Gosched()
		l.mu.Lock()
		f, upto := l.f, l.appended
		l.mu.Unlock()
		err := f.SyncData()
		l.mu.Lock()
		l.stats.Syncs++
		if err != nil {
			l.failed = fmt.Errorf("%w: fsync %s: %w", ErrFailed, f.Name(), err)
			return
		}
		l.synced = max(l.synced, upto)
		if l.appended == l.synced || l.f != f || l.closed {
			return
		}
		l.wake()
	}
}

// wake releases the waiters an fsync covered (every waiter once the log
// failed) and, when no leader runs, the first waiter left, to lead the
// next fsync. Called with mu held.
func (l *Log) wake() {
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.end <= l.synced || l.failed != nil {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
	if !l.syncing && len(kept) > 0 {
		close(kept[0].ch)
		l.waiters = slices.Delete(kept, 0, 1)
	}
}

// flush is the SyncInterval flusher.
func (l *Log) flush() {
	defer l.flusher.Done()
	tick := time.NewTicker(l.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			l.mu.Lock()
			if l.usable() == nil {
				_ = l.syncTo(l.appended) // a failure is sticky: the next Write reports it
			}
			l.mu.Unlock()
		}
	}
}

// TruncateBefore removes the segments whose records all have sequence
// numbers below pos (a durable snapshot's log position). When that
// includes the active segment, the log first moves to a new one, so a log
// whose records are all covered ends up as one empty segment.
func (l *Log) TruncateBefore(pos uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	active := l.segs[len(l.segs)-1]
	if l.next <= pos && l.next > active.first {
		for l.syncing {
			l.cond.Wait()
		}
		if err := l.usable(); err != nil {
			return err
		}
		if err := l.rotate(); err != nil {
			return err
		}
	}
	keep := l.segs[:0]
	var errs []error
	for i, s := range l.segs {
		end := l.next
		if i+1 < len(l.segs) {
			end = l.segs[i+1].first
		}
		if i+1 < len(l.segs) && end <= pos {
			if err := l.fs.Remove(s.path); err != nil {
				errs = append(errs, err)
				keep = append(keep, s)
				continue
			}
			l.stats.Bytes -= s.size
			continue
		}
		keep = append(keep, s)
	}
	l.segs = keep
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close makes every written record durable (whatever the policy), closes
// the active segment and stops the flusher. It is safe to call more than
// once; later calls return nil. Writes after Close return ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	err := l.syncTo(l.appended)
	for l.syncing {
		l.cond.Wait()
	}
	l.closed = true
	if l.f != nil && l.failed == nil && l.zeroed > l.segs[len(l.segs)-1].size {
		// Leave the file as it would be without preallocation.
		cerr := l.cutZeros()
		if cerr == nil {
			if cerr = l.f.Sync(); cerr == nil {
				l.stats.Syncs++
			}
		}
		err = errors.Join(err, cerr)
	}
	if l.f != nil {
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
	}
	l.cond.Broadcast()
	l.mu.Unlock()
	close(l.stop)
	l.flusher.Wait()
	return err
}

// RecordInfo locates one record of a log.
type RecordInfo struct {
	Segment string // path of the segment file
	Offset  int64  // of the record's header in the segment
	Size    int64  // header and payload
	Seq     uint64
}

// Records lists the valid records of the log in dir, oldest first, up to
// the first invalid one, without opening the log for writing or repairing
// anything: a read-only view for diagnostics and for tests that damage a
// log on purpose. Do not call it on a log another process is writing.
func Records(dir string) ([]RecordInfo, error) {
	segs, err := listSegments(vfs.OS, dir)
	if err != nil {
		return nil, err
	}
	var out []RecordInfo
	for _, s := range segs {
		off := int64(0)
		_, valid, _, err := scanSegment(vfs.OS, s.path, s.first, func(seq uint64, p []byte) error {
			size := headerSize + int64(len(p))
			out = append(out, RecordInfo{Segment: s.path, Offset: off, Size: size, Seq: seq})
			off += size
			return nil
		})
		if err != nil {
			return nil, err
		}
		if st, err := vfs.OS.Stat(s.path); err != nil || valid < st.Size() {
			break // the rest is not part of the log
		}
	}
	return out, nil
}
