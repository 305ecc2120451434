package engine

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"github.com/hybrank/hybrank/dense"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/dirlock"
	"github.com/hybrank/hybrank/internal/wal"
)

// walDir is the write-ahead log's directory inside the engine's dir.
const walDir = "wal"

// logRecord is one Commit in the write-ahead log: the batch reduced to its
// final operation per document, with the vectors computed at commit time
// (replay never calls the embedder). Deletions apply before additions.
//
// Version 2 records carry the tenant of every deletion (DeleteKeys).
// Older logs hold records that delete IDs in every tenant, which Commit no
// longer writes but replay still applies with their meaning, resolved
// against the state the record is replayed onto (see wipe):
//   - version 2 records written with Batch.Delete, which was removed
//     after commit 04b3782 (testdata/wipes-v2 holds such a log), carry
//     such IDs in Wipes;
//   - version 0 records, written while IDs were global, carry Deletes,
//     IDs without a tenant: each is deleted in every tenant, and each
//     added ID is removed from the other tenants first.
type logRecord struct {
	Version    int
	Deletes    []string // version 0
	DeleteKeys []docKey
	Wipes      []string // version 2, written before Batch.Delete was removed
	Adds       []storedRecord
}

// logVersion is the version of the log records Commit writes. (Removing
// Batch.Delete needed no new version: Commit leaves Wipes empty, which
// every reader of version 2 replays correctly.)
const logVersion = 2

func encodeLogRecord(adds []*record, dels []docKey) ([]byte, error) {
	rec := logRecord{Version: logVersion, DeleteKeys: dels, Adds: make([]storedRecord, len(adds))}
	for i, r := range adds {
		rec.Adds[i] = storedRecord{Doc: r.doc, Vec: r.vec}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Recovery reports what Open restored from the directory.
type Recovery struct {
	// SnapshotPosition is the log position of the snapshot loaded (the
	// first log record it does not hold); 0 when there was none.
	SnapshotPosition uint64 `json:"snapshot_position"`
	// Replayed is the number of log records (commits) applied after it.
	Replayed int `json:"replayed"`
	// Refused counts logged batches the lexical index refused on replay,
	// as it had refused them when they were committed (their Commit
	// returned an error and applied nothing).
	Refused int `json:"refused"`
	// DroppedMetadataKeys counts metadata keys holding a NUL byte that
	// replay dropped from logged documents (engines before such keys were
	// refused accepted them).
	DroppedMetadataKeys int `json:"dropped_metadata_keys,omitempty"`
	// DroppedBytes is the size of the torn or corrupt log tail that was
	// cut off (a commit being written when the process died, or a damaged
	// record, and everything after it, preallocated zeros included), at
	// DroppedOffset of the segment file DroppedSegment; DroppedReason says
	// what was wrong. A dropped tail under SyncEveryCommit normally holds
	// no acknowledged commit. Zeros alone after the last record are the
	// log's preallocated space, a clean end, not reported.
	DroppedBytes   int64  `json:"dropped_bytes"`
	DroppedOffset  int64  `json:"dropped_offset"`
	DroppedSegment string `json:"dropped_segment,omitempty"`
	DroppedReason  string `json:"dropped_reason,omitempty"`
	// FellBack, when not empty, says that the newest snapshot failed
	// verification (naming the file and what was wrong) and that Open
	// loaded the previous generation instead and replayed the log from
	// its position.
	FellBack string `json:"fell_back,omitempty"`
}

// DurabilityStats describes the write-ahead log and background snapshots.
type DurabilityStats struct {
	// Recovery is what Open restored.
	Recovery Recovery `json:"recovery"`
	// LogBytes is the size of the log's segments: the records since the
	// previous snapshot (the one before the newest: Open's fallback
	// replays from there), in whole segments, without the up to
	// Durability.PreallocateBytes of zeros ahead of them on disk; LogNext
	// the position of the next record.
	LogBytes int64  `json:"log_bytes"`
	LogNext  uint64 `json:"log_next"`
	// LogSyncs counts the log's fsyncs since Open; Commits the commits
	// logged since Open (so Commits/LogSyncs is the group commit factor).
	LogSyncs uint64 `json:"log_syncs"`
	Commits  uint64 `json:"commits"`
	// CommitGroups counts the groups Commits were applied in since Open
	// (see Commit; Commits/CommitGroups is the apply group factor). It
	// is counted in memory too.
	CommitGroups uint64 `json:"commit_groups"`
	// BackgroundSnapshots counts snapshots the engine took by itself;
	// LastSnapshotError is the error of the last failed one ("" if none
	// failed since the last success).
	BackgroundSnapshots int    `json:"background_snapshots"`
	LastSnapshotError   string `json:"last_snapshot_error,omitempty"`
	// ReadOnly, when not empty, is why the engine refuses commits: the
	// failed log write or fsync (Engine.ReadOnly); reopen to recover.
	ReadOnly string `json:"read_only,omitempty"`
}

// Durability returns the log's and background snapshots' state. An
// in-memory engine reports zeros but for CommitGroups.
func (e *Engine) Durability() DurabilityStats {
	st := DurabilityStats{Recovery: e.recovery, CommitGroups: e.groups.Load()}
	if e.log != nil {
		ls := e.log.Stats()
		st.LogBytes, st.LogSyncs, st.Commits, st.LogNext = ls.Bytes, ls.Syncs, ls.Records, e.log.Next()
	}
	st.BackgroundSnapshots, st.LastSnapshotError = e.bg.status()
	if err := e.ReadOnly(); err != nil {
		st.ReadOnly = err.Error()
	}
	return st
}

// openDir loads the newest snapshot in e.dir (or builds empty indexes),
// opens the log and replays it, and starts background snapshots.
func (e *Engine) openDir() error {
	if err := atomicfile.MkdirAll(e.fs, e.dir); err != nil {
		return err
	}
	lock, err := dirlock.Acquire(e.dir)
	if errors.Is(err, dirlock.ErrLocked) {
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	if err != nil {
		return err
	}
	e.lock = lock
	loaded, err := e.loadNewest()
	if err != nil {
		return err
	}
	pos := e.snapPos.Load()
	if !loaded {
		if err := e.initIndexes(); err != nil {
			return err
		}
		e.publish(store{}, 0)
	}
	e.recovery.SnapshotPosition = pos
	e.snapPos.Store(max(pos, 1))
	if e.log, err = wal.Open(e.fs, filepath.Join(e.dir, walDir), e.cfg.Durability.walConfig(), max(pos, 1)); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	r := e.log.Recovery()
	e.recovery.DroppedBytes, e.recovery.DroppedOffset = r.DroppedBytes, r.DroppedOffset
	e.recovery.DroppedSegment, e.recovery.DroppedReason = r.DroppedSegment, r.DroppedReason
	if err := e.log.Replay(max(pos, 1), e.replayRecord); err != nil {
		return fmt.Errorf("replay write-ahead log: %w", err)
	}
	e.bg.start(e)
	e.maint.start(e)
	return nil
}

// replayRecord applies one logged batch during Open.
func (e *Engine) replayRecord(seq uint64, payload []byte) error {
	var rec logRecord
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&rec); err != nil {
		return fmt.Errorf("%w: log record %d: %v", ErrCorrupt, seq, err)
	}
	adds := make([]*record, len(rec.Adds))
	for i, s := range rec.Adds {
		// Metadata keys holding a NUL byte were accepted before Validate
		// refused them (they made filters ambiguous); drop them so that
		// such a log still opens.
		for k := range s.Doc.Metadata {
			if strings.IndexByte(k, 0) >= 0 {
				delete(s.Doc.Metadata, k)
				e.recovery.DroppedMetadataKeys++
			}
		}
		if err := s.Doc.Validate(); err != nil {
			return fmt.Errorf("%w: log record %d: %w", ErrCorrupt, seq, err)
		}
		r := &record{doc: s.Doc, vec: s.Vec}
		if e.vec == nil && r.vec != nil {
			// Logged by an engine with an embedder, replayed by one
			// without: keep the vectors in an index of their dimension, so
			// that the next snapshot still holds them (as it does when a
			// snapshot has them).
			cfg := e.cfg.Dense
			cfg.Dim = len(r.vec)
			v, err := dense.New(cfg)
			if err != nil {
				return fmt.Errorf("%w: log record %d: dense: %w", ErrInvalidConfig, seq, err)
			}
			e.vec, e.cfg.Dense = v, cfg
		}
		switch {
		case e.vec == nil:
			r.vec = nil // no dense index to hold it
		case r.vec != nil && len(r.vec) != e.cfg.Dense.Dim:
			return fmt.Errorf("%w: log record %d holds vectors of dim %d, the index has %d", ErrInvalidConfig, seq, len(r.vec), e.cfg.Dense.Dim)
		}
		adds[i] = r
	}
	dels, wipes := rec.DeleteKeys, rec.Wipes
	if rec.Version < logVersion {
		wipes = slices.Clone(rec.Deletes)
		for _, r := range adds {
			wipes = append(wipes, r.doc.ID)
		}
	}
	if len(wipes) > 0 {
		dels = e.wipe(adds, dels, wipes)
	}
	p := e.prepare(adds, dels)
	err := e.apply(&p)
	switch {
	case errors.Is(err, errLexRefused):
		e.recovery.Refused++
		return nil
	case err != nil:
		return fmt.Errorf("log record %d: %w", seq, err)
	}
	e.recovery.Replayed++
	return nil
}

// wipe resolves an old log record's IDs deleted in every tenant (wipes)
// against the current state: it returns dels extended with every stored
// document that has one of those IDs, except the documents the record
// itself adds or deletes (the batch's own operations on a wiped ID were
// already folded into the record's additions and deletions when it was
// written). Called during Open.
func (e *Engine) wipe(adds []*record, dels []docKey, wipes []string) []docKey {
	st := e.cur.Load()
	inBatch := make(map[docKey]bool, len(adds)+len(dels))
	for _, r := range adds {
		inBatch[docKey{r.doc.Tenant, r.doc.ID}] = true
	}
	for _, k := range dels {
		inBatch[k] = true
	}
	dels = slices.Clone(dels)
	for _, id := range wipes {
		for _, r := range st.docs.all(id) {
			if k := (docKey{r.doc.Tenant, id}); !inBatch[k] {
				dels = append(dels, k)
			}
		}
	}
	return dels
}

// background runs the snapshots the engine takes by itself: when the log
// passes Durability.SnapshotLogBytes (checked after each Commit) or when
// it holds commits and the last snapshot is Durability.SnapshotAge old.
// Its methods are safe for concurrent use.
type background struct {
	kick     chan struct{} // buffered 1: a size-triggered request
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	wg       sync.WaitGroup
	maxBytes int64
	// base is the log's size right after the last snapshot truncated it:
	// the log keeps the records since the previous snapshot, so what the
	// size trigger measures is the growth since then.
	base atomic.Int64

	mu      sync.Mutex // guards taken and lastErr
	taken   int
	lastErr error
}

func (b *background) start(e *Engine) {
	b.kick, b.done = make(chan struct{}, 1), make(chan struct{})
	b.maxBytes = e.cfg.Durability.SnapshotLogBytes
	b.wg.Add(1)
	go b.run(e, e.cfg.Durability.SnapshotAge)
}

// afterCommit requests a snapshot when the log has grown past the limit
// since the last snapshot.
func (b *background) afterCommit(l *wal.Log) {
	if b.maxBytes <= 0 || l.Stats().Bytes-b.base.Load() < b.maxBytes {
		return
	}
	b.request()
}

// snapshotted records the log's size after a snapshot truncated it.
// Called with commitMu held.
func (b *background) snapshotted(l *wal.Log) { b.base.Store(l.Stats().Bytes) }

// request asks for a snapshot soon (a no-op in memory).
func (b *background) request() {
	if b.kick == nil {
		return
	}
	select {
	case b.kick <- struct{}{}:
	default: // one is already requested
	}
}

func (b *background) run(e *Engine, age time.Duration) {
	defer b.wg.Done()
	var tick <-chan time.Time
	if age > 0 {
		// Check four times per period, so a snapshot is at most 1.25 ×
		// age late.
		t := time.NewTicker(max(age/4, time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	last := time.Now()
	for {
		select {
		case <-b.done:
			return
		case <-b.kick:
		case <-tick:
			if time.Since(last) < age || e.log.Next() <= e.snapPos.Load() {
				continue
			}
		}
		err := e.Snapshot()
		if errors.Is(err, ErrClosed) {
			return
		}
		last = time.Now()
		b.mu.Lock()
		if err == nil {
			b.taken++
		}
		b.lastErr = err
		b.mu.Unlock()
	}
}

// stop ends the background goroutine and waits for a snapshot in progress.
func (b *background) stop() {
	b.stopOnce.Do(func() {
		if b.done != nil {
			close(b.done)
		}
	})
	b.wg.Wait()
}

func (b *background) status() (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lastErr != nil {
		return b.taken, b.lastErr.Error()
	}
	return b.taken, ""
}
