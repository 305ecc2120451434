package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/postings"
)

// MaintenanceStats describes background maintenance since Open.
type MaintenanceStats struct {
	// Running names the task in progress: "rebuild", "compact" or "".
	Running string `json:"running,omitempty"`
	// Rebuilds and Compactions count the finished tasks; Steps every
	// step of every task.
	Rebuilds    int `json:"rebuilds"`
	Compactions int `json:"compactions"`
	Steps       int `json:"steps"`
	// LastRebuild and LastCompaction are when the last one was published
	// (zero: never).
	LastRebuild    time.Time `json:"last_rebuild,omitzero"`
	LastCompaction time.Time `json:"last_compaction,omitzero"`
	// LastError is the error of the last task that failed ("" if none
	// failed since the last success).
	LastError string `json:"last_error,omitempty"`
}

// maintainer runs background maintenance: one task (a BM25 rebuild or a
// dense compaction) at a time, one bounded step per Interval, each step
// without a lock; only the task's last step publishes, under commitMu.
// Its methods are safe for concurrent use.
type maintainer struct {
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu    sync.Mutex // guards stats
	stats MaintenanceStats
}

// maintTask is a maintenance task in progress.
type maintTask interface {
	name() string
	// step does one bounded step and reports whether the work is done.
	step(cfg *MaintenanceConfig) bool
	// finish publishes the work; called with commitMu held.
	finish() error
}

type rebuildTask struct{ r *postings.Rebuilding }

func (rebuildTask) name() string                       { return "rebuild" }
func (t rebuildTask) step(cfg *MaintenanceConfig) bool { return t.r.Step(cfg.RebuildStep) }
func (t rebuildTask) finish() error                    { return t.r.Finish() }

type compactTask struct{ c *dense.Compaction }

func (compactTask) name() string                       { return "compact" }
func (t compactTask) step(cfg *MaintenanceConfig) bool { return t.c.Step(cfg.CompactStep) }
func (t compactTask) finish() error                    { return t.c.Finish() }

func (m *maintainer) start(e *Engine) {
	m.done = make(chan struct{})
	if e.cfg.Maintenance.Interval <= 0 {
		return
	}
	m.wg.Add(1)
	go m.run(e)
}

func (m *maintainer) run(e *Engine) {
	defer m.wg.Done()
	cfg := e.cfg.Maintenance
	t := time.NewTimer(cfg.Interval)
	defer t.Stop()
	var task maintTask
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		t.Reset(cfg.Interval)
		if task == nil {
			if task = e.nextTask(&cfg); task == nil {
				continue
			}
			m.update(func(s *MaintenanceStats) { s.Running = task.name() })
		}
		done := task.step(&cfg)
		m.update(func(s *MaintenanceStats) { s.Steps++ })
		if !done {
			continue
		}
		err := e.finishTask(task)
		if errors.Is(err, ErrClosed) {
			return
		}
		name := task.name()
		task = nil
		m.update(func(s *MaintenanceStats) {
			s.Running = ""
			switch {
			case errors.Is(err, postings.ErrRebuildStale):
				// Another rebuild won; the next check decides again.
			case err != nil:
				s.LastError = fmt.Sprintf("%s: %v", name, err)
			case name == "rebuild":
				s.Rebuilds, s.LastRebuild, s.LastError = s.Rebuilds+1, time.Now(), ""
			default:
				s.Compactions, s.LastCompaction, s.LastError = s.Compactions+1, time.Now(), ""
			}
		})
	}
}

// nextTask starts the task the published state needs, or returns nil: a
// BM25 rebuild first (drift changes every score), then a dense compaction.
func (e *Engine) nextTask(cfg *MaintenanceConfig) maintTask {
	st := e.cur.Load()
	if st.docs.n < cfg.MinDocs {
		return nil
	}
	sum := st.lex.Summary()
	if nums := sum.Docs + sum.DeletedDocs; sum.Drift > cfg.RebuildDrift || float64(sum.DeletedDocs) > cfg.RebuildDeleted*float64(nums) {
		return rebuildTask{e.lex.StartRebuild()}
	}
	if st.vec != nil {
		tomb := st.vec.Tombstones()
		if float64(tomb) > cfg.CompactTombstones*float64(tomb+st.vec.Len()) {
			c, err := e.vec.StartCompaction()
			if err != nil {
				return nil // closed: the loop stops at the next check
			}
			return compactTask{c}
		}
	}
	return nil
}

// finishTask publishes a task's work as the next state: the index it
// rebuilt changed, the documents did not. A rebuild also asks for a
// background snapshot, so that the new norms survive a restart (Open
// restores the last snapshot's and replays the log, which does not record
// rebuilds).
func (e *Engine) finishTask(t maintTask) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if e.broken != nil {
		return e.broken
	}
	if err := t.finish(); err != nil {
		return err
	}
	st := e.cur.Load()
	e.publish(st.docs, st.nvec)
	if _, ok := t.(rebuildTask); ok {
		e.bg.request()
	}
	return nil
}

func (m *maintainer) update(f func(*MaintenanceStats)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.stats)
}

func (m *maintainer) snapshot() MaintenanceStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// stop ends the maintenance goroutine, abandoning a task in progress
// (nothing of it was published), and waits for it.
func (m *maintainer) stop() {
	m.stopOnce.Do(func() {
		if m.done != nil {
			close(m.done)
		}
	})
	m.wg.Wait()
}

// Stats describes an engine's contents and upkeep.
type Stats struct {
	// Documents and Tenants count the stored documents and the distinct
	// tenants they belong to; Vectors the documents with an embedding.
	Documents int `json:"documents"`
	Tenants   int `json:"tenants"`
	Vectors   int `json:"vectors"`
	// Postings is the BM25 index: live and deleted documents, terms,
	// postings, sizes in bytes, avgdl and its drift since the last build.
	Postings postings.Stats `json:"postings"`
	// Dense is the vector index (zero without an embedder).
	Dense DenseStats `json:"dense"`
	// Maintenance is the background maintenance (see MaintenanceConfig).
	Maintenance MaintenanceStats `json:"maintenance"`
	// Durability is the write-ahead log, recovery and background
	// snapshots (Engine.Durability).
	Durability DurabilityStats `json:"durability"`
	// SnapshotGeneration is the generation of the newest snapshot loaded
	// or written (0: none; in memory always 0).
	SnapshotGeneration uint64 `json:"snapshot_generation"`
}

// DenseStats describes the vector index.
type DenseStats struct {
	// Vectors is the number of live vectors; Tombstones the graph nodes
	// of deleted or replaced ones, which compaction drops.
	Vectors    int `json:"vectors"`
	Tombstones int `json:"tombstones"`
}

// Stats reports the published state, maintenance and durability. It walks
// the BM25 index's term and document tables for their sizes
// (O(terms + documents)); safe for concurrent use, and it never blocks a
// search or a commit.
func (e *Engine) Stats() Stats {
	st := e.cur.Load()
	s := Stats{
		Documents:          st.docs.n,
		Tenants:            len(st.docs.filters.tenants),
		Vectors:            st.nvec,
		Postings:           st.lex.Stats(),
		Maintenance:        e.maint.snapshot(),
		Durability:         e.Durability(),
		SnapshotGeneration: e.snapGen.Load(),
	}
	if st.vec != nil {
		s.Dense = DenseStats{Vectors: st.vec.Len(), Tombstones: st.vec.Tombstones()}
	}
	return s
}
