package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/internal/dirlock"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/wal"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/postings"
)

// record is one stored document with what the engine derived from it. A
// record is immutable once published: Commit replaces records, never edits
// them, so a Search may keep using a record after the state it came from
// was replaced.
type record struct {
	doc     Document
	num     uint32    // the document number (≥ 1): its Ref in both indexes and its bit in the filter index
	termSet []uint64  // hashes of the analyzed terms of title+text, sorted, unique (MMR Jaccard)
	vec     []float32 // embedding, nil when none (MMR cosine)
}

// state is one published state of the engine, everything a Search reads:
// the lexical and dense indexes as of one commit and the document store
// that matches them. A state never changes; Commit and maintenance build
// the next one beside it and publish it with one atomic store, so a
// search sees a batch entirely or not at all and never waits for a
// writer.
type state struct {
	lex  *postings.View
	vec  *dense.View // nil without an embedder
	docs store
	nvec int // records with a vector
}

// Engine is a hybrid retrieval engine: BM25 postings, an optional dense
// index, a document store, fusion, expansion, budgeted reranking and
// packing. It is safe for concurrent use: any number of Searches may run
// during a Commit and never wait for it (see the package doc for the
// consistency model).
type Engine struct {
	cfg       Config
	dir       string
	analyzer  *analysis.Analyzer
	embedder  models.Embedder
	rerankers map[string]models.Reranker
	counter   TokenCounter
	costs     *costModel

	// cur is the published state; searches load it and take no lock.
	cur    atomic.Pointer[state]
	closed atomic.Bool

	// commitMu serialises the apply step of Commit, Snapshot, the
	// publishing steps of maintenance and Close. It guards broken and
	// every write to lex, vec and log, and the publishing of cur.
	commitMu sync.Mutex
	broken   error
	// readOnly is set once, by the first failed write or fsync of the
	// log (ErrReadOnly wrapping it), and never cleared: Commit and
	// Snapshot refuse from then on. Read without a lock.
	readOnly atomic.Pointer[error]
	lex      *postings.Index
	vec      *dense.Index // nil without an embedder

	// queue holds prepared Commits waiting to be applied; leading is
	// set while one of them, the leader, applies the queue in groups
	// (see Commit and leadCommits). Guarded by queueMu, which is never
	// held while waiting for commitMu.
	queueMu sync.Mutex
	queue   []*pendingCommit
	leading bool
	groups  atomic.Uint64 // groups applied (DurabilityStats.CommitGroups)

	// fs is what the log and snapshots write through (vfs.OS unless
	// WithFS); log is the write-ahead log (nil in memory); bg runs
	// background snapshots (see durable.go).
	fs       vfs.FS
	log      *wal.Log
	lock     *dirlock.Lock // on dir, held from Open to Close
	bg       background
	recovery Recovery      // what Open restored; read-only after Open
	snapPos  atomic.Uint64 // log position of the newest snapshot
	snapGen  atomic.Uint64 // generation of the newest snapshot

	// nums is the last document number given out (see prepare); numbers
	// start at 1, 0 being the indexes' NoRef.
	nums atomic.Uint64

	maint maintainer // background rebuilds and compactions (maintenance.go)
}

// Open opens the engine stored in dir: the newest snapshot, then every
// commit after it replayed from the write-ahead log. A dir with neither
// gives an empty engine (dir is created if missing). dir "" gives an
// in-memory engine that cannot Snapshot and has no log.
//
// When dir holds a snapshot, its index-shaping settings (cfg.Analysis,
// cfg.Postings, cfg.Dense) replace those of cfg, since the stored terms and
// vectors were made with them; Config reports the effective values. A
// snapshot with vectors reopened with an embedder of another dimension is an
// error.
func Open(dir string, cfg Config, opts ...Option) (*Engine, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:       cfg,
		dir:       dir,
		embedder:  o.embedder,
		rerankers: o.rerankers,
		counter:   o.counter,
		costs:     newCostModel(cfg.Rerank.EWMAAlpha),
		fs:        o.fs,
	}
	if e.fs == nil {
		e.fs = vfs.OS
	}
	if e.counter == nil {
		e.counter = wordCounter{}
	}
	if e.rerankers == nil {
		e.rerankers = map[string]models.Reranker{}
	}
	if err := e.loadModels(); err != nil {
		return nil, err
	}
	if dir == "" {
		if err := e.initIndexes(); err != nil {
			return nil, err
		}
		e.publish(store{}, 0)
		e.maint.start(e)
		return e, nil
	}
	if err := e.openDir(); err != nil {
		e.release()
		return nil, fmt.Errorf("open engine %s: %w", dir, err)
	}
	return e, nil
}

// loadModels loads every registered model (models.Reranker.Load), so that the first search that needs one does not pay
// the load inside its budget, nor fold it into the rerank cost estimate.
func (e *Engine) loadModels() error {
	load := func(what string, m interface{ Load() error }) error {
		if err := m.Load(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrModelLoad, what, err)
		}
		return nil
	}
	if e.embedder != nil {
		if err := load("embedder", e.embedder); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.rerankers)) {
		if err := load(fmt.Sprintf("reranker %q", name), e.rerankers[name]); err != nil {
			return err
		}
	}
	return nil
}

// Warm runs one small inference through every registered model (one query
// embedding, one scored pair per reranker), so that what a model does on
// its first call — allocating its
// buffers — happens now rather than inside a search's budget. Warm-up
// calls are not folded into the rerank cost estimates. Call it after Open,
// before serving; it is safe to call at any time.
func (e *Engine) Warm(ctx context.Context) error {
	const text = "warm up"
	if e.embedder != nil {
		if _, _, err := models.Embed(ctx, e.embedder, models.InputQuery, []string{text}); err != nil {
			return fmt.Errorf("%w: embedder: %w", ErrModelLoad, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.rerankers)) {
		if _, _, err := models.Score(ctx, e.rerankers[name], text, []string{text}); err != nil {
			return fmt.Errorf("%w: reranker %q: %w", ErrModelLoad, name, err)
		}
	}
	return nil
}

// initIndexes builds the analyzer and empty indexes from e.cfg.
func (e *Engine) initIndexes() error {
	a, err := analysis.New(e.cfg.Analysis)
	if err != nil {
		return fmt.Errorf("%w: analysis: %w", ErrInvalidConfig, err)
	}
	e.analyzer = a
	e.cfg.Postings.AnalyzerVersion = a.Version()
	lex, err := postings.New(e.cfg.Postings)
	if err != nil {
		return fmt.Errorf("%w: postings: %w", ErrInvalidConfig, err)
	}
	e.lex = lex
	if e.embedder != nil {
		dim := e.embedder.Dim()
		if e.cfg.Dense.Dim != 0 && e.cfg.Dense.Dim != dim {
			return fmt.Errorf("%w: dense dim %d but embedder dim %d", ErrInvalidConfig, e.cfg.Dense.Dim, dim)
		}
		e.cfg.Dense.Dim = dim
		v, err := dense.New(e.cfg.Dense)
		if err != nil {
			return fmt.Errorf("%w: dense: %w", ErrInvalidConfig, err)
		}
		e.vec = v
	}
	return nil
}

// ReadOnly returns nil while the engine takes commits, and otherwise the
// error Commit and Snapshot refuse with: ErrReadOnly wrapping the failed
// log write or fsync that caused it. Safe for concurrent use; cheap (no
// lock).
func (e *Engine) ReadOnly() error {
	if p := e.readOnly.Load(); p != nil {
		return *p
	}
	return nil
}

// turnReadOnly makes the engine read-only because of cause (the first
// cause is kept) and returns ReadOnly's error.
func (e *Engine) turnReadOnly(cause error) error {
	err := fmt.Errorf("%w: %w", ErrReadOnly, cause)
	e.readOnly.CompareAndSwap(nil, &err)
	return e.ReadOnly()
}

// Config returns the effective configuration.
func (e *Engine) Config() Config { return e.cfg }

// Analyzer returns the analyzer the index is built and searched with
// (Config().Analysis, as the index on disk has it). It is set once, by
// Open, and safe for concurrent use.
func (e *Engine) Analyzer() *analysis.Analyzer { return e.analyzer }

// publish makes the indexes' current views and docs the engine's state.
// Called with commitMu held (or during Open).
func (e *Engine) publish(docs store, nvec int) {
	st := &state{lex: e.lex.View(), docs: docs, nvec: nvec}
	if e.vec != nil {
		st.vec = e.vec.View()
	}
	e.cur.Store(st)
}

// Len returns the number of stored documents.
func (e *Engine) Len() int { return e.cur.Load().docs.n }

// GetIn returns a copy of tenant's document with the given ID.
func (e *Engine) GetIn(tenant, id string) (Document, bool) {
	r := e.cur.Load().docs.get(tenant, id)
	if r == nil {
		return Document{}, false
	}
	return r.doc.clone(), true
}

// Close stops background maintenance and snapshots, flushes and closes the write-ahead log
// (every acknowledged commit is durable either way) and releases the
// indexes. It waits for in-flight Commits; Searches in flight finish on
// the state they started with. It is safe to call more than once. Close
// does not snapshot: the next Open replays the log since the last
// snapshot.
func (e *Engine) Close() error {
	e.maint.stop()
	e.bg.stop()
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.closed.Swap(true) {
		return nil
	}
	return e.release()
}

// release closes the log and the dense index and unlocks the directory.
// Called by Close with commitMu held, or by a failing Open.
func (e *Engine) release() error {
	var errs []error
	if e.log != nil {
		errs = append(errs, e.log.Close())
	}
	if e.vec != nil {
		errs = append(errs, e.vec.Close())
	}
	if e.lock != nil {
		errs = append(errs, e.lock.Release())
	}
	return errors.Join(errs...)
}

// Batch collects additions and deletions that Commit applies atomically.
// A document is identified by its tenant and its ID together (the same ID
// in two tenants is two documents). Operations on one document apply in
// order (the last one wins). A Batch is not safe for concurrent use; it
// may be reused after Commit returns, and is emptied by a successful
// Commit.
type Batch struct {
	ops []op
}

type opKind uint8

const (
	opAdd    opKind = iota // doc
	opDelete               // key
)

type op struct {
	kind opKind
	doc  Document
	key  docKey
}

// NewBatch returns an empty batch for e.
func (e *Engine) NewBatch() *Batch { return &Batch{} }

// Add queues copies of docs; each replaces the document with the same
// Tenant and ID, if any. Documents are validated by Commit.
func (b *Batch) Add(docs ...Document) {
	for i := range docs {
		b.ops = append(b.ops, op{kind: opAdd, doc: docs[i].clone()})
	}
}

// DeleteIn queues the deletion of tenant's documents with the given IDs;
// deleting an unknown document is not an error.
func (b *Batch) DeleteIn(tenant string, ids ...string) {
	for _, id := range ids {
		b.ops = append(b.ops, op{kind: opDelete, key: docKey{tenant, id}})
	}
}

// Len is the number of queued operations.
func (b *Batch) Len() int { return len(b.ops) }

// Validate reports why Commit would refuse b, as an *OpError naming the
// first bad operation (b's operations are numbered from 0 in the order
// they were queued): a document Document.Validate refuses, or the deletion
// of an empty ID. Every error wraps ErrInvalidDocument. Commit calls it;
// callers that want the verdict before preparing a commit (the HTTP
// server, for a 400 naming the request's field) call it themselves.
//
// A batch may name a document more than once: its operations apply in
// order and the last one on a document wins (Add after Add replaces,
// DeleteIn after Add deletes, Add after DeleteIn stores), the rule of the
// engine's batches and of the server's (see Commit).
func (b *Batch) Validate() error {
	for i, o := range b.ops {
		var err error
		switch o.kind {
		case opAdd:
			err = o.doc.Validate()
		case opDelete:
			if o.key.ID == "" {
				err = fmt.Errorf("%w: deletion of an empty ID", ErrInvalidDocument)
			}
		}
		if err != nil {
			return &OpError{Op: i, Err: err}
		}
	}
	return nil
}

// OpError is Batch.Validate's error: operation Op of the batch (from 0,
// in the order queued) is refused for Err, which wraps ErrInvalidDocument.
// Its message is "batch op N: " and Err's, so callers that number
// operations their own way (the HTTP server's documents[i] and ids[i]) put
// their name in front of Err's message instead.
type OpError struct {
	Op  int
	Err error
}

func (e *OpError) Error() string { return fmt.Sprintf("batch op %d: %v", e.Op, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// Commit applies b atomically, each document's last operation in b (the
// batch rule, see Batch.Validate): documents are validated, analyzed and (with
// an embedder) embedded in batches of Config.EmbedBatch before anything
// changes and without a lock, so concurrent Commits prepare in parallel;
// then the batch is written to the write-ahead log, applied to the lexical
// index, the dense index and the document store beside the state searches
// read, and published as the next state with one atomic swap. Concurrent
// Commits that reach that step while another holds it are applied
// together by the next one (group commit): each batch is logged as its own
// record and applied in arrival order, exactly as one after another, and
// the group is published at once, so a search still sees each batch
// entirely or not at all. On any error before the log write nothing is
// applied. Commit returns once the log record is durable under
// Config.Durability.Sync; concurrent Commits share fsyncs. Searches never
// wait for a Commit and may see the batch before it is durable (as soon
// as it is published). ctx bounds the embedding.
//
// A failed write or fsync of the log fails the Commits of its group and
// turns the engine read-only (ErrReadOnly, wrapping the log's error):
// every later Commit is refused with it until the engine is reopened,
// while searches keep working. A Commit that returned such an error may or
// may not be in the log: after a reopen its batch is present as a whole
// or absent, never in part.
func (e *Engine) Commit(ctx context.Context, b *Batch) error {
	if b == nil || len(b.ops) == 0 {
		return nil
	}
	if e.closed.Load() {
		return ErrClosed
	}
	if err := e.ReadOnly(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	adds, dels, err := reduce(b)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if e.nums.Load()+uint64(len(adds)) >= maxDocNum {
		return fmt.Errorf("commit: %w", ErrFull)
	}
	p := &pendingCommit{prepared: e.prepare(adds, dels)}
	if e.embedder != nil && len(adds) > 0 {
		if err := e.embed(ctx, adds); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	if e.log != nil {
		if p.payload, err = encodeLogRecord(adds, dels); err != nil {
			return fmt.Errorf("commit: encode log record: %w", err)
		}
	}
	p.wake = make(chan struct{})
	e.queueMu.Lock()
	e.queue = append(e.queue, p)
	lead := !e.leading
	if lead {
		e.leading, p.lead = true, true
	}
	e.queueMu.Unlock()
	if !lead {
		<-p.wake // applied by a leader, or handed the lead
	}
	if !p.done {
		e.leadCommits()
	}
	if p.err != nil {
		return p.err
	}
	b.ops = b.ops[:0]
	if e.log == nil {
		return nil
	}
	if err := e.log.Wait(p.ticket); err != nil {
		if errors.Is(err, wal.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("commit: %w", e.turnReadOnly(fmt.Errorf("write-ahead log sync: %w", err)))
	}
	e.bg.afterCommit(e.log)
	return nil
}

// prepared is a batch ready to apply: its additions (with their vectors,
// once embedded) and deletions, and the lexical index's batch of them.
type prepared struct {
	adds []*record
	dels []docKey
	lex  *postings.Batch
}

// maxDocNum bounds the document numbers: MaxUint32 is never given out.
const maxDocNum = math.MaxUint32

// prepare numbers the additions, analyzes them and builds the lexical
// index's batch, which hashes and counts the terms of each document: work
// done by each Commit in parallel, before the apply step that Commits take
// in turn. A document that replaces a stored one keeps its number; a new
// one gets the next. (Two Commits preparing the same new document at once
// give it two numbers; the one applied last holds it, the other is never
// used again. No two documents ever share a number.)
func (e *Engine) prepare(adds []*record, dels []docKey) prepared {
	st := e.cur.Load()
	for _, r := range adds {
		if old := st.docs.get(r.doc.Tenant, r.doc.ID); old != nil {
			r.num = old.num
		} else if n := e.nums.Add(1); n < maxDocNum {
			r.num = uint32(n)
		} // else 0: apply refuses the batch (ErrFull)
	}
	terms := e.analyze(adds)
	lb := e.lex.NewBatch()
	for _, k := range dels {
		lb.Delete(indexKey(k.Tenant, k.ID))
	}
	for i, r := range adds {
		lb.Add(postings.Doc{ID: indexKey(r.doc.Tenant, r.doc.ID), Ref: r.num, Terms: terms[i]})
	}
	return prepared{adds: adds, dels: dels, lex: lb}
}

// pendingCommit is a prepared Commit in the queue. Its result fields are
// written by the leader that applies it, before closing wake.
type pendingCommit struct {
	prepared
	payload []byte // log record

	wake   chan struct{} // closed when done, or when handed the lead
	lead   bool          // this Commit leads (guarded by queueMu until wake is closed)
	done   bool
	err    error
	ticket wal.Ticket
}

// leaderGroups bounds the groups one leader applies before it hands the
// lead to the next queued Commit and returns to its own.
const leaderGroups = 4

// leadCommits applies the queue in groups: under commitMu, everything
// queued by then (so Commits that arrive while the lock is busy join the
// group), again while more arrived, then hands the lead to the first
// Commit still queued, if any. Followers wait on their own channel, not on
// commitMu: a follower applied by a leader is woken once, and never holds
// the lock just to find its work done (with sixteen committers, those
// hand-offs of the lock had serialised the commits). A panic while
// applying breaks the engine (ErrBroken), fails the group, wakes its
// followers and passes the lead on before it propagates, so the Commits
// and Close that come after it return instead of waiting forever.
func (e *Engine) leadCommits() {
	var group []*pendingCommit
	defer func() {
		if r := recover(); r != nil {
			for _, p := range group {
				if !p.done {
					p.done, p.err = true, fmt.Errorf("commit: %w: panic while applying commits: %v", ErrBroken, r)
				}
			}
			wakeFollowers(group)
			e.passLead()
			panic(r)
		}
	}()
	for range leaderGroups {
		group = nil
		e.applyQueued(&group)
		wakeFollowers(group)
		group = nil
		e.queueMu.Lock()
		more := len(e.queue) > 0
		if !more {
			e.leading = false
		}
		e.queueMu.Unlock()
		if !more {
			return
		}
	}
	e.passLead()
}

// wakeFollowers wakes the Commits of an applied group but its leader.
func wakeFollowers(group []*pendingCommit) {
	for _, p := range group {
		if !p.lead {
			close(p.wake)
		}
	}
}

// applyQueued takes the queue into *group and applies it, under commitMu.
func (e *Engine) applyQueued(group *[]*pendingCommit) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	e.queueMu.Lock()
	*group = e.queue
	e.queue = nil
	e.queueMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			e.broken = fmt.Errorf("%w: panic while applying commits: %v", ErrBroken, r)
			for _, p := range *group {
				p.done, p.err = true, fmt.Errorf("commit: %w", e.broken)
			}
			panic(r)
		}
	}()
	e.commitGroup(*group)
}

// passLead hands the lead to the first queued Commit, or ends it.
func (e *Engine) passLead() {
	e.queueMu.Lock()
	defer e.queueMu.Unlock()
	if len(e.queue) == 0 {
		e.leading = false
		return
	}
	next := e.queue[0]
	next.lead = true
	close(next.wake)
}

// commitGroup logs and applies a group of queued Commits, in order, and
// fills in their results. Called with commitMu held.
func (e *Engine) commitGroup(group []*pendingCommit) {
	for _, p := range group {
		p.done = true
	}
	fail := func(ps []*pendingCommit, err error) {
		for _, p := range ps {
			p.err = err
		}
	}
	if e.closed.Load() {
		fail(group, ErrClosed)
		return
	}
	if e.broken != nil {
		fail(group, fmt.Errorf("commit: %w", e.broken))
		return
	}
	if err := e.ReadOnly(); err != nil {
		fail(group, fmt.Errorf("commit: %w", err))
		return
	}
	logged := make([]*prepared, 0, len(group))
	var applied []*pendingCommit
	var logFailed error // the group's Commits all fail with it
	for _, p := range group {
		if e.log != nil && logFailed == nil {
			// Logged before it is applied: a batch the lexical index
			// refuses is refused again, identically, when the log is
			// replayed.
			t, err := e.log.Write(p.payload)
			if errors.Is(err, wal.ErrTooLarge) {
				p.err = fmt.Errorf("commit: write-ahead log: %w", err)
				continue
			}
			if err != nil {
				logFailed = fmt.Errorf("commit: %w", e.turnReadOnly(fmt.Errorf("write-ahead log write: %w", err)))
			}
			p.ticket = t
		}
		if logFailed != nil {
			p.err = logFailed
			continue
		}
		logged = append(logged, &p.prepared)
		applied = append(applied, p)
	}
	if logFailed != nil {
		// The records written before the failure are in the log and may
		// reach the disk: apply them, as replay would, but acknowledge
		// none of the group.
		defer fail(applied, logFailed)
	}
	if len(logged) == 0 {
		return
	}
	e.groups.Add(1)
	err := e.apply(logged...)
	if errors.Is(err, errLexRefused) && len(applied) > 1 {
		// The lexical index refused the group as a whole and applied
		// nothing: apply one by one, so that only the refused batch
		// fails (as it will again when the log is replayed).
		for i, p := range applied {
			if e.broken != nil {
				p.err = fmt.Errorf("commit: %w", e.broken)
				continue
			}
			if err := e.apply(logged[i]); err != nil {
				p.err = fmt.Errorf("commit: %w", err)
			}
		}
		return
	}
	if err != nil {
		fail(applied, fmt.Errorf("commit: %w", err))
	}
}

// reduce validates b (Batch.Validate) and reduces it to the last
// operation per document (the batch rule), in first-seen order: the
// additions and the deletions.
func reduce(b *Batch) (adds []*record, dels []docKey, err error) {
	if err := b.Validate(); err != nil {
		return nil, nil, err
	}
	final := map[docKey]int{}
	var order []docKey
	for i, o := range b.ops {
		k := o.key
		if o.kind == opAdd {
			k = docKey{o.doc.Tenant, o.doc.ID}
		}
		if _, ok := final[k]; !ok {
			order = append(order, k)
		}
		final[k] = i
	}
	for _, k := range order {
		if o := b.ops[final[k]]; o.kind == opAdd {
			adds = append(adds, &record{doc: o.doc})
		} else {
			dels = append(dels, k)
		}
	}
	return adds, dels, nil
}

// analyze fills every record's termSet and returns its analyzed terms.
func (e *Engine) analyze(adds []*record) [][]string {
	terms := make([][]string, len(adds))
	var scratch []string // grown once, then each document's terms copied out at their size
	for i, r := range adds {
		scratch = e.analyzer.AppendAnalyze(scratch[:0], docText(&r.doc))
		terms[i] = slices.Clone(scratch)
		r.termSet = termSet(terms[i])
	}
	return terms
}

// errLexRefused marks a batch the lexical index refused; nothing of it was
// applied.
var errLexRefused = errors.New("lexical index refused the batch")

// apply writes prepared batches, in order, into the lexical index, the
// dense index and a copy of the document store, then publishes them as
// the next state: the state that applying them one after another gives.
// Searches keep reading the previous state meanwhile (the indexes publish
// views of their own, which no search uses until the engine's state names
// them). Called with commitMu held (or during Open).
func (e *Engine) apply(bs ...*prepared) error {
	st := e.cur.Load()
	lbs := make([]*postings.Batch, len(bs))
	for i, p := range bs {
		lbs[i] = p.lex
		for _, r := range p.adds {
			if r.num == 0 {
				return fmt.Errorf("%w: %w", errLexRefused, ErrFull)
			}
		}
	}
	// Postings first: its commit is atomic and validates everything, so a
	// refusal here leaves all three stores untouched.
	if err := e.lex.CommitGroup(lbs...); err != nil {
		return fmt.Errorf("%w: %w", errLexRefused, err)
	}
	w, nvec := st.docs.writer(), st.nvec
	for _, p := range bs {
		if err := e.applyDense(&w.s, p.adds, p.dels); err != nil {
			e.broken = fmt.Errorf("%w: dense index: %w", ErrBroken, err)
			return e.broken
		}
		for _, k := range p.dels {
			if old := w.del(k.Tenant, k.ID); old != nil && old.vec != nil {
				nvec--
			}
		}
		for _, r := range p.adds {
			if old := w.put(r); old != nil && old.vec != nil {
				nvec--
			}
			if r.vec != nil {
				nvec++
			}
		}
	}
	e.publish(w.done(), nvec)
	return nil
}

// applyDense mirrors a batch into the vector index; docs is the document
// store as it is before the batch. Called with commitMu held.
func (e *Engine) applyDense(docs *store, adds []*record, dels []docKey) error {
	if e.vec == nil {
		return nil
	}
	var gone []string
	for _, k := range dels {
		if r := docs.get(k.Tenant, k.ID); r != nil && r.vec != nil {
			gone = append(gone, indexKey(k.Tenant, k.ID))
		}
	}
	for _, r := range adds {
		if old := docs.get(r.doc.Tenant, r.doc.ID); old != nil && old.vec != nil && r.vec == nil {
			gone = append(gone, indexKey(r.doc.Tenant, r.doc.ID))
		}
	}
	if len(gone) > 0 {
		if err := e.vec.Delete(gone...); err != nil {
			return err
		}
	}
	items := make([]dense.Item, 0, len(adds))
	for _, r := range adds {
		if r.vec != nil {
			items = append(items, dense.Item{ID: indexKey(r.doc.Tenant, r.doc.ID), Ref: r.num, Vector: r.vec})
		}
	}
	if len(items) > 0 {
		return e.vec.Add(items...)
	}
	return nil
}

// embed fills r.vec for every record, in embedder batches.
func (e *Engine) embed(ctx context.Context, recs []*record) error {
	dim := e.embedder.Dim()
	texts := make([]string, 0, e.cfg.EmbedBatch)
	for lo := 0; lo < len(recs); lo += e.cfg.EmbedBatch {
		hi := min(lo+e.cfg.EmbedBatch, len(recs))
		texts = texts[:0]
		for _, r := range recs[lo:hi] {
			texts = append(texts, docText(&r.doc))
		}
		vecs, _, err := models.Embed(ctx, e.embedder, models.InputDocument, texts)
		if err != nil {
			return fmt.Errorf("%w: documents %d..%d: %w", ErrEmbed, lo, hi, err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("%w: %d vectors for %d texts", ErrEmbed, len(vecs), len(texts))
		}
		for i, v := range vecs {
			// What the dense index would refuse must fail here, before the
			// batch is logged: a logged record the index refuses breaks
			// the engine and every replay of its log.
			if err := dense.CheckVector(v, dim); err != nil {
				return fmt.Errorf("%w: vector for %q: %w", ErrEmbed, recs[lo+i].doc.ID, err)
			}
			recs[lo+i].vec = slices.Clone(v)
		}
	}
	return nil
}

// termSet returns the sorted unique hashes of terms. Hashes rather than
// the strings: a record keeps its set for as long as it is stored, and a
// slice of strings is a pointer per term for the garbage collector to
// scan on every cycle (at 100K documents that was 40 % of the heap and
// most of the mark work), while a []uint64 is never scanned. Two distinct
// terms share a 64-bit hash with probability about 2⁻⁶⁴, which MMR's
// Jaccard index cannot notice.
func termSet(terms []string) []uint64 {
	s := make([]uint64, len(terms))
	for i, t := range terms {
		s[i] = termHash(t)
	}
	slices.Sort(s)
	return slices.Clip(slices.Compact(s))
}

// termHash is the 64-bit FNV-1a hash of t.
func termHash(t string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(t); i++ {
		h ^= uint64(t[i])
		h *= 1099511628211
	}
	return h
}

// Search runs req; see the package doc for the pipeline, the budget and the
// fallbacks. Running out of req.Budget is reported in the Result
// (Degraded), not as an error; an error means the request was invalid, the
// engine is closed, ctx ended (cancelled, or its own deadline passed) before
// retrieval finished, or BM25 retrieval itself failed.
func (e *Engine) Search(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	e.fillDefaults(&req)
	alpha := e.cfg.Alpha
	if req.Alpha != nil {
		alpha = *req.Alpha
	}
	var deadline time.Time
	if req.Budget > 0 {
		deadline = start.Add(req.Budget)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	// sctx carries the budget's deadline: the optional stages (query
	// embedding and dense search, reranking) stop at it; BM25 runs under
	// ctx alone, so running out of budget degrades the result instead of
	// failing it.
	// When ctx's deadline comes first, sctx is ctx itself, so that ctx's
	// deadline reads as ctx's (an error), never as the budget's.
	sctx := ctx
	if d, ok := ctx.Deadline(); !deadline.IsZero() && (!ok || deadline.Before(d)) {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	res := &Result{}
	mark := func(d *time.Duration) func() {
		t := time.Now()
		return func() { *d = time.Since(t) }
	}

	done := mark(&res.Timings.Analysis)
	terms := e.analyzer.AnalyzeQuery(req.Query)
	done()

	// One state for the whole search: a batch committed meanwhile is
	// seen entirely or not at all.
	st := e.cur.Load()
	if e.closed.Load() {
		return nil, ErrClosed
	}
	var qvec []float32
	done = mark(&res.Timings.Dense)
	switch {
	case e.embedder == nil:
		res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackNoEmbedder, Detail: "BM25 only"})
	case st.nvec == 0:
		res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackNoVectors, Detail: "BM25 only"})
	default:
		vs, _, err := models.Embed(sctx, e.embedder, models.InputQuery, []string{req.Query})
		if err == nil && (len(vs) != 1 || len(vs[0]) != e.embedder.Dim()) {
			err = errors.New("embedder returned a malformed vector")
		}
		switch {
		case err == nil:
			qvec = vs[0]
		case ctx.Err() != nil:
			return nil, fmt.Errorf("search: embed query: %w", ctx.Err())
		case sctx.Err() != nil:
			res.budgetFallback("query embedding")
		default:
			res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackEmbedError, Detail: err.Error()})
		}
	}
	done()

	cands, err := e.retrieve(ctx, sctx, st, &req, terms, qvec, alpha, res)
	if err != nil {
		return nil, err
	}
	res.Candidates = len(cands)

	// Rerank.
	ordered := cands
	if req.Rerank != "" && len(cands) > 0 {
		done = mark(&res.Timings.Rerank)
		margin := e.cfg.Rerank.Margin + time.Duration(e.cfg.Rerank.MarginFraction*float64(req.Budget))
		var err error
		if ordered, err = e.rerank(sctx, ctx, &req, cands, deadline, margin, res); err != nil {
			return nil, err
		}
		done()
	}

	// MMR or plain top-k.
	done = mark(&res.Timings.MMR)
	var top []*candidate
	if req.MMRLambda > 0 && len(ordered) > 1 {
		var steps int
		top, steps = mmr(sctx, ordered, relevance(ordered), req.TopK, req.MMRLambda)
		if steps >= 0 {
			if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("mmr: %w", err) // cancelled, as a cancelled rerank is
			}
			res.Degraded = true
			res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackMMRBudget,
				Detail: fmt.Sprintf("budget spent after %d of %d MMR selections; the rest in final order", steps, len(top))})
		}
	} else {
		top = ordered[:min(req.TopK, len(ordered))]
	}
	done()

	res.Hits = make([]Hit, len(top))
	for i, c := range top {
		score := c.fused
		switch {
		case c.reranked:
			score = c.rerank
		case c.first:
			score = c.firstScore
		}
		var span *Span
		if c.reranked && c.spanned {
			sp := c.span
			span = &sp
		}
		res.Hits[i] = Hit{
			Document: c.rec.doc.clone(),
			Score:    score,
			Provenance: Provenance{
				BM25Score: c.bm25Score, BM25Rank: c.bm25Rank,
				DenseScore: c.denseScore, DenseRank: c.denseRank,
				FusedScore: c.fused, FusedRank: c.fusedRank,
				Reranked: c.reranked, RerankScore: c.rerank, RerankSpan: span,
				FirstStage: c.first, FirstStageScore: c.firstScore,
				FinalRank: i + 1,
				Origin:    c.origin,
			},
		}
	}

	done = mark(&res.Timings.Packing)
	budget := 0
	if req.TokenBudget > 0 {
		budget = req.TokenBudget - req.Reserve
	}
	res.Passages, res.Tokens = pack(res.Hits, e.counter, budget)
	done()
	res.Timings.Total = time.Since(start)
	return res, nil
}

// budgetFallback records that the latency budget ran out before stage
// (part of dense retrieval) finished: the result is BM25 only.
func (res *Result) budgetFallback(stage string) {
	res.Degraded = true
	res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackRetrievalBudget, Detail: "budget spent before the " + stage + " finished; BM25 only"})
}

// retrieve runs BM25 (under ctx) and dense retrieval (under bctx, which
// adds the budget's deadline), fusion, the score threshold and expansion
// on st and returns the candidates, best first, with their records
// attached.
func (e *Engine) retrieve(ctx, bctx context.Context, st *state, req *Request, terms []string, qvec []float32, alpha float64, res *Result) ([]*candidate, error) {
	var bm25, dn []scored
	t := time.Now()
	// The one allow-list of the request: its tenant's documents passing
	// its filter, as document numbers (nil: every document).
	allow := st.docs.filters.allow(req.Tenant, req.Filter)
	if len(terms) > 0 {
		hits, err := st.lex.Search(ctx, postings.Query{Terms: terms, K: req.Candidates, Allow: allow})
		if err != nil {
			return nil, fmt.Errorf("search: bm25: %w", err)
		}
		bm25 = make([]scored, len(hits))
		for i, h := range hits {
			bm25[i] = scored{h.ID, float64(h.Score)}
		}
	}
	res.Timings.BM25 = time.Since(t)
	if qvec != nil && st.vec != nil {
		t = time.Now()
		hits, err := st.vec.Search(bctx, qvec, req.Candidates, allow)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, fmt.Errorf("search: dense: %w", ctx.Err())
		case bctx.Err() != nil:
			res.budgetFallback("dense search")
		default:
			res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackDenseError, Detail: err.Error()})
		}
		if err == nil {
			dn = make([]scored, len(hits))
			for i, h := range hits {
				dn[i] = scored{h.ID, float64(h.Score)}
			}
		}
		res.Timings.Dense += time.Since(t)
	}

	t = time.Now()
	fused := fuse(req.Fusion, bm25, dn, req.RRFK, alpha)
	cands := fused[:0]
	var dropped map[string]bool // by the score threshold
	for _, c := range fused {
		c.rec = st.docs.getKey(c.id)
		// Defence in depth: the retrievers filter, and the store agrees.
		if c.rec == nil || !c.rec.doc.matches(req.Tenant, req.Filter) {
			continue
		}
		// From here on candidates are the request tenant's documents,
		// known by their IDs (which order like their index keys).
		c.id = c.rec.doc.ID
		if req.ScoreThreshold != 0 && c.fused < req.ScoreThreshold {
			if dropped == nil {
				dropped = map[string]bool{}
			}
			dropped[c.id] = true
			continue
		}
		cands = append(cands, c)
	}
	for i, c := range cands {
		c.fusedRank = i + 1
	}
	res.Timings.Fusion = time.Since(t)

	if req.Expand.Hops > 0 {
		t = time.Now()
		decay := req.Expand.Decay
		if decay == 0 {
			decay = DefaultDecay
		}
		seeds := req.Expand.Seeds
		if seeds == 0 {
			seeds = req.TopK
		}
		lookup := func(id string) *record { return st.docs.get(req.Tenant, id) }
		cands = expand(cands, lookup, expansion{
			tenant: req.Tenant, filter: req.Filter, hops: req.Expand.Hops, decay: decay, seeds: seeds,
			minScore: req.ScoreThreshold, dropped: dropped,
		})
		res.Timings.Expansion = time.Since(t)
	}
	return cands, nil
}

// finalOrder puts the first n candidates (the reranked ones) in rerank score
// order, ties by fused rank, followed by the rest in fused order.
func finalOrder(cands []*candidate, n int) []*candidate {
	out := slices.Clone(cands)
	sort.SliceStable(out[:n], func(i, j int) bool { return out[i].rerank > out[j].rerank })
	return out
}

func (e *Engine) fillDefaults(r *Request) {
	if r.TopK == 0 {
		r.TopK = e.cfg.TopK
	}
	if r.Candidates == 0 {
		r.Candidates = e.cfg.Candidates
	}
	if r.Fusion == "" {
		r.Fusion = e.cfg.Fusion
	}
	if r.RRFK == 0 {
		r.RRFK = e.cfg.RRFK
	}
}
