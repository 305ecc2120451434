package dense

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/simd"
)

// Item is one vector to index. Add copies Vector. Ref is the caller's
// number for the item, what an allow-list names (see View.Search): the
// live items' Refs must be distinct, except NoRef, which no allow-list
// admits.
type Item struct {
	ID     string
	Ref    uint32
	Vector []float32
}

// NoRef is the Ref of the items of a snapshot written before Refs existed
// (format 2 and older), until SetRefs gives them theirs.
const NoRef = 0

// Hit is one search result: an item ID and its cosine similarity to the
// query. Results come best first.
type Hit struct {
	ID    string
	Score float32
}

// slabRows is the number of vector rows per slab. Slabs are never
// reallocated, so rows handed out stay valid.
const slabRows = 1024

// record is what the index knows about one num besides its vector. Records
// are immutable; a tombstoned num keeps its record (views published before
// the deletion still return it).
type record struct {
	id  string
	ref uint32
}

// View is one published state of an Index: the items it holds and the
// graph that routes over them. A View never changes; searches on it run
// without locks, concurrently with writers building the next one. It is
// safe for concurrent use. Index.View returns the current one.
type View struct {
	closed bool
	cfg    Config // EfSearch as last set by SetEfSearch
	g      graph  // a copy of the writer's graph: nums below g.n
	recs   []record
	live   *roaring.Bitmap
	refs   *roaring.Bitmap // the live items' Refs (NoRef left out)
	byRef  refTable        // a live Ref's num
}

// Index is a dense vector index. It is safe for concurrent use; see the
// package documentation for the concurrency model.
type Index struct {
	// cur is the published view: searches load it and never lock.
	cur atomic.Pointer[View]

	// mu serialises writers (Add, Delete, SetEfSearch, the last step of a
	// compaction, Save, Close) and guards g, recs and byID: the writer's
	// graph (which searches read through the copies in views, see graph),
	// the append-only records by num, and the live ID → num map.
	mu   sync.Mutex
	g    *graph
	recs []record
	byID map[string]uint32
}

// New returns an empty index.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ix := &Index{g: newHNSW(cfg), byID: make(map[string]uint32)}
	ix.cur.Store(&View{
		cfg:  cfg,
		g:    *ix.g,
		live: roaring.New(),
		refs: roaring.New(),
	})
	return ix, nil
}

// View returns the current published state.
func (ix *Index) View() *View { return ix.cur.Load() }

// Config returns the index's configuration.
func (ix *Index) Config() Config { return ix.cur.Load().cfg }

// Len returns the number of live vectors.
func (ix *Index) Len() int { return ix.cur.Load().Len() }

// Len returns the number of live vectors in v.
func (v *View) Len() int { return int(v.live.GetCardinality()) }

// Tombstones returns the number of graph nodes that no longer back a live
// item (deleted or replaced); Compact drops them.
func (ix *Index) Tombstones() int { return ix.cur.Load().Tombstones() }

// Tombstones returns the number of graph nodes of v that back no live
// item.
func (v *View) Tombstones() int { return v.g.size - v.Len() }

// checkVector validates v against cfg (CheckVector).
func checkVector(cfg *Config, v []float32) error { return CheckVector(v, cfg.Dim) }

// CheckVector reports why v cannot be stored in, or searched with, an index
// of dimension dim: a length other than dim (ErrDim), or a zero, NaN or
// infinite vector, which has no direction (ErrVector). Callers that log a
// vector before adding it (package engine) check it first.
func CheckVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("%w: got %d, want %d", ErrDim, len(v), dim)
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		return ErrVector
	}
	return nil
}

// txn builds the next view from the current one under ix.mu. Bitmaps and
// maps of the current view are cloned on first write (readers iterate
// them); the graph, records and slabs are appended to or, for links,
// written atomically (see graph).
type txn struct {
	ix        *Index
	v         View
	liveOwned bool
	refsOwned bool
	byRef     refWriter
}

func (ix *Index) begin() *txn { return &txn{ix: ix, v: *ix.cur.Load()} }

func (t *txn) liveBM() *roaring.Bitmap {
	if !t.liveOwned {
		t.v.live, t.liveOwned = t.v.live.Clone(), true
	}
	return t.v.live
}

// index records num as live with rec and maps its Ref to it.
func (t *txn) index(num uint32, rec record) {
	ix := t.ix
	for len(ix.recs) <= int(num) {
		ix.recs = append(ix.recs, record{})
	}
	ix.recs[num] = rec
	ix.byID[rec.id] = num
	t.liveBM().Add(num)
	if rec.ref != NoRef {
		t.refsBM().Add(rec.ref)
		t.byRef.set(&t.v.byRef, rec.ref, num, false)
	}
}

func (t *txn) refsBM() *roaring.Bitmap {
	if !t.refsOwned {
		t.v.refs, t.refsOwned = t.v.refs.Clone(), true
	}
	return t.v.refs
}

// tombstone removes num from the ID map, the live set and the Refs; its
// record stays and its graph node stays as a routing node (see package
// doc).
func (t *txn) tombstone(num uint32) {
	rec := t.ix.recs[num]
	delete(t.ix.byID, rec.id)
	t.liveBM().Remove(num)
	if n, ok := t.v.byRef.lookup(rec.ref); rec.ref != NoRef && ok && n == num {
		t.refsBM().Remove(rec.ref)
		t.byRef.set(&t.v.byRef, rec.ref, 0, true)
	}
}

// publish makes the view current.
func (t *txn) publish() {
	t.v.g, t.v.recs = *t.ix.g, t.ix.recs
	t.ix.cur.Store(&t.v)
}

// Add inserts items, replacing any existing item with the same ID (within
// one call, the last occurrence wins). All items are validated before any
// is inserted, so a bad item leaves the index unchanged: an empty ID
// (ErrEmptyID), a bad vector (ErrDim, ErrVector), a Ref that another live
// item or another ID of the call holds (ErrRef). Searches keep
// running on the previous view meanwhile and see all of the items or none.
func (ix *Index) Add(items ...Item) error {
	cfg := ix.cur.Load().cfg
	for i, it := range items {
		if it.ID == "" {
			return fmt.Errorf("add item %d: %w", i, ErrEmptyID)
		}
		if err := checkVector(&cfg, it.Vector); err != nil {
			return fmt.Errorf("add item %q: %w", it.ID, err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur.Load().closed {
		return ErrClosed
	}
	if uint64(ix.g.n)+uint64(len(items)) > math.MaxUint32 {
		return ErrFull
	}
	if err := ix.checkRefs(items); err != nil {
		return err
	}
	t := ix.begin()
	for _, it := range items {
		if old, ok := ix.byID[it.ID]; ok {
			t.tombstone(old)
		}
		num := uint32(ix.g.n)
		ix.g.grow(int(num) + 1)
		row := ix.g.vec(num)
		copy(row, it.Vector)
		simd.L2Normalize(row)
		t.index(num, record{id: it.ID, ref: it.Ref})
		ix.g.insert(num)
	}
	t.publish()
	return nil
}

// checkRefs refuses items whose Ref a live item of another ID holds, or
// two items of different IDs share. Called with ix.mu held.
func (ix *Index) checkRefs(items []Item) error {
	v := ix.cur.Load()
	var seen map[uint32]string
	for _, it := range items {
		if it.Ref == NoRef {
			continue
		}
		if num, ok := v.byRef.lookup(it.Ref); ok {
			if holder := ix.recs[num].id; holder != it.ID {
				return fmt.Errorf("add item %q: %w: Ref %d is %q's", it.ID, ErrRef, it.Ref, holder)
			}
		}
		if id, ok := seen[it.Ref]; ok && id != it.ID {
			return fmt.Errorf("add item %q: %w: Ref %d is also %q's", it.ID, ErrRef, it.Ref, id)
		}
		if seen == nil {
			seen = map[uint32]string{}
		}
		seen[it.Ref] = it.ID
	}
	return nil
}

// Delete removes the items with the given IDs; unknown IDs are ignored.
func (ix *Index) Delete(ids ...string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur.Load().closed {
		return ErrClosed
	}
	t := ix.begin()
	for _, id := range ids {
		if num, ok := ix.byID[id]; ok {
			t.tombstone(num)
		}
	}
	t.publish()
	return nil
}

// RenameIDs gives every live item the ID rename maps its ID to, in one
// new view (searches see all new IDs or none). It is meant for callers
// that change their ID scheme (the engine migrating an older snapshot).
// Every live ID must be in rename, and the new IDs must be distinct and
// non-empty (a missing or empty one is an error wrapping ErrEmptyID);
// otherwise it returns an error and changes nothing.
func (ix *Index) RenameIDs(rename map[string]string) error {
	byID := map[string]uint32{} // ix.byID is read under the lock only
	return ix.relabel(func(id string, num uint32, rec *record) error {
		to, ok := rename[id]
		if !ok || to == "" {
			return fmt.Errorf("rename: %w: no new ID for %q", ErrEmptyID, id)
		}
		if _, dup := byID[to]; dup {
			return fmt.Errorf("rename: two items renamed %q", to)
		}
		byID[to] = num
		rec.id = to
		return nil
	}, func(*txn) { ix.byID = byID })
}

// relabel calls set with every live item's ID, num and a copy of its
// record to change, then done with the txn of the new view, which it
// publishes; an error from set changes nothing. It holds the writer lock
// throughout.
func (ix *Index) relabel(set func(id string, num uint32, rec *record) error, done func(*txn)) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur.Load().closed {
		return ErrClosed
	}
	recs := slices.Clone(ix.recs)
	for id, num := range ix.byID {
		if err := set(id, num, &recs[num]); err != nil {
			return err
		}
	}
	ix.recs = recs
	t := ix.begin()
	done(t)
	t.publish()
	return nil
}

// SetRefs gives every live item the Ref refs maps its ID to, in one new
// view (searches see all new Refs or none). It is meant for callers that
// change what their numbers mean (the engine migrating a snapshot written
// before Refs existed). Every live ID must be in refs, with distinct Refs;
// otherwise it returns an error wrapping ErrRef and changes nothing.
func (ix *Index) SetRefs(refs map[string]uint32) error {
	holder := map[uint32]string{}
	return ix.relabel(func(id string, _ uint32, rec *record) error {
		ref, ok := refs[id]
		if !ok {
			return fmt.Errorf("set refs: %w: no Ref for %q", ErrRef, id)
		}
		if other, dup := holder[ref]; dup && ref != NoRef {
			return fmt.Errorf("set refs: %w: Ref %d given to %q and %q", ErrRef, ref, other, id)
		}
		holder[ref] = id
		rec.ref = ref
		return nil
	}, func(t *txn) {
		t.v.refs, t.refsOwned, t.v.byRef = roaring.New(), true, refTable{}
		it := t.v.live.Iterator()
		for it.HasNext() {
			num := it.Next()
			if ref := ix.recs[num].ref; ref != NoRef {
				t.v.refs.Add(ref)
				t.byRef.set(&t.v.byRef, ref, num, false)
			}
		}
	})
}

// Compaction rebuilds the graph from the live vectors, dropping tombstoned
// routing nodes, in bounded steps that hold no lock: searches and writers
// carry on meanwhile. Start it with StartCompaction, call Step until it
// reports done, then Finish. A Compaction is used by one goroutine.
type Compaction struct {
	ix   *Index
	base *View
	g    *graph
	it   roaring.IntPeekable
}

// StartCompaction begins rebuilding the graph from the live vectors of the
// current view.
func (ix *Index) StartCompaction() (*Compaction, error) {
	v := ix.cur.Load()
	if v.closed {
		return nil, ErrClosed
	}
	g := newHNSW(v.cfg)
	g.slabs = v.g.slabs
	g.grow(v.g.n)
	return &Compaction{ix: ix, base: v, g: g, it: v.live.Iterator()}, nil
}

// Step inserts up to max vectors into the new graph (the rows it reads
// never change) and reports whether all of the starting view's live
// vectors are in.
func (c *Compaction) Step(max int) bool {
	for i := 0; i < max && c.it.HasNext(); i++ {
		c.g.insert(c.it.Next())
	}
	return !c.it.HasNext()
}

// Finish inserts what Step has not, and the vectors added since
// StartCompaction that are still live, and publishes the new graph, under
// the writer lock (writers wait; searches do not). Vectors deleted since
// StartCompaction stay in the new graph as tombstones.
func (c *Compaction) Finish() error {
	ix := c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur.Load().closed {
		return ErrClosed
	}
	c.Step(math.MaxInt)
	cur := ix.cur.Load()
	old := c.base.g.n
	c.g.slabs = ix.g.slabs
	c.g.grow(ix.g.n)
	for num := old; num < ix.g.n; num++ {
		if cur.live.Contains(uint32(num)) {
			c.g.insert(uint32(num))
		}
	}
	ix.g = c.g
	t := ix.begin()
	t.publish()
	return nil
}

// Compact rebuilds the graph from the live vectors only, dropping
// tombstoned routing nodes (StartCompaction, Step, Finish in one call). It
// polls ctx between steps; on cancellation the old graph is kept.
// Searches run on the old graph until the new one is published.
func (ix *Index) Compact(ctx context.Context) error {
	c, err := ix.StartCompaction()
	if err != nil {
		return err
	}
	for !c.Step(1024) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	return c.Finish()
}

// Close releases the index's memory once no search holds a view of it. It
// is idempotent; later calls of other methods return ErrClosed.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	v := ix.cur.Load()
	if v.closed {
		return nil
	}
	ix.cur.Store(&View{closed: true, cfg: v.cfg, live: roaring.New(), refs: roaring.New()})
	ix.g, ix.recs, ix.byID = nil, nil, nil
	return nil
}

// candidates returns the number of live items allow admits (nil: all).
func (v *View) candidates(allow *roaring.Bitmap) int {
	if allow == nil {
		return int(v.live.GetCardinality())
	}
	return int(allow.AndCardinality(v.refs))
}

// prepareQuery validates and normalises a copy of q.
func (v *View) prepareQuery(q []float32, k int) ([]float32, error) {
	if k <= 0 {
		return nil, fmt.Errorf("%w: %d", ErrK, k)
	}
	if err := checkVector(&v.cfg, q); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	qn := slices.Clone(q)
	simd.L2Normalize(qn)
	return qn, nil
}

// Search runs v.Search on the current view.
func (ix *Index) Search(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	return ix.cur.Load().Search(ctx, q, k, allow)
}

// SearchExact runs v.SearchExact on the current view.
func (ix *Index) SearchExact(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	return ix.cur.Load().SearchExact(ctx, q, k, allow)
}

// Search returns the k items most similar to q whose Ref allow holds
// (nil: every item), best first, using the graph where that pays and exact
// search otherwise (see the package doc). Fewer than k hits come back only
// when allow admits fewer than k items. allow is read during the call
// only and must not change meanwhile.
func (v *View) Search(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	qn, err := v.prepareQuery(q, k)
	if err != nil {
		return nil, err
	}
	count, err := v.readCandidates(allow)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return []Hit{}, nil
	}
	if count <= v.cfg.FlatThreshold || count <= k {
		return v.exact(ctx, qn, k, allow)
	}
	if v.g.size > count*v.cfg.MaxOverfetch {
		return v.exact(ctx, qn, k, allow)
	}
	var accept func(uint32) bool
	tombs := v.g.size > v.Len() // tombstones in the graph
	switch {
	case allow != nil && tombs:
		// A tombstone may hold the Ref of the item that replaced it.
		accept = func(num uint32) bool { return allow.Contains(v.recs[num].ref) && v.live.Contains(num) }
	case allow != nil:
		accept = func(num uint32) bool { return allow.Contains(v.recs[num].ref) }
	case tombs:
		accept = v.live.Contains
	}
	ef := max(k, v.cfg.EfSearch)
	for try := 0; try < 3; try++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dense search: %w", err)
		}
		res := v.g.search(qn, ef, accept)
		if len(res) >= k {
			hits := make([]scored, len(res))
			for i, c := range res {
				hits[i] = scored{num: c.num, score: c.sim}
			}
			return v.toHits(hits, k), nil
		}
		ef *= 2 // the beam ran dry before finding k admitted nodes
	}
	return v.exact(ctx, qn, k, allow)
}

// SearchExact returns the k items most similar to q whose Ref allow holds
// (nil: every item) by scanning every candidate vector; ties are broken by
// ID.
func (v *View) SearchExact(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	qn, err := v.prepareQuery(q, k)
	if err != nil {
		return nil, err
	}
	count, err := v.readCandidates(allow)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return []Hit{}, nil
	}
	return v.exact(ctx, qn, k, allow)
}

// readCandidates is the common start of both searches: ErrClosed after
// Close, else the number of items allow admits (see candidates).
func (v *View) readCandidates(allow *roaring.Bitmap) (int, error) {
	if v.closed {
		return 0, ErrClosed
	}
	return v.candidates(allow), nil
}

type scored struct {
	num   uint32
	score float32
}

// topK keeps the k best (num, score) pairs seen, as a min-heap on
// (score, then reverse ID) so the root is the worst kept.
type topK struct {
	k    int
	h    []scored
	recs []record
}

// worse reports whether a ranks below b: lower score, or equal score and
// larger ID.
func (t *topK) worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return t.recs[a.num].id > t.recs[b.num].id
}

func (t *topK) push(s scored) {
	if len(t.h) < t.k {
		t.h = append(t.h, s)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !t.worse(t.h[0], s) {
		return
	}
	t.h[0] = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.worse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && t.worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// exact scans the live items allow admits (nil: all of them).
func (v *View) exact(ctx context.Context, qn []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	// k may exceed the index by far (any positive k is valid): size the
	// heap by what can be found.
	t := &topK{k: k, h: make([]scored, 0, min(k, v.Len())), recs: v.recs}
	d := v.cfg.Dim
	if allow == nil {
		// Whole slabs through DotBatch, skipping tombstones.
		next := uint32(v.g.n)
		dense := int(v.live.GetCardinality()) == int(next)
		out := make([]float32, slabRows)
		for s, slab := range v.g.slabs {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dense exact search: %w", err)
			}
			base := uint32(s * slabRows)
			if base >= next {
				break
			}
			rows := min(slabRows, int(next-base))
			simd.DotBatch(qn, slab, d, out[:rows])
			for r, sc := range out[:rows] {
				num := base + uint32(r)
				if dense || v.live.Contains(num) {
					t.push(scored{num: num, score: sc})
				}
			}
		}
		return v.toHits(t.h, k), nil
	}
	buf := make([]uint32, 256)
	it := allow.ManyIterator()
	for seen := 0; ; {
		n := it.NextMany(buf)
		if n == 0 {
			break
		}
		for _, ref := range buf[:n] {
			if num, ok := v.byRef.lookup(ref); ok {
				t.push(scored{num: num, score: simd.Dot(qn, v.g.vec(num))})
			}
		}
		if seen += n; seen >= 1024 {
			seen = 0
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dense exact search: %w", err)
			}
		}
	}
	return v.toHits(t.h, k), nil
}

// toHits sorts s best first (ties by ID) and returns at most k hits.
func (v *View) toHits(s []scored, k int) []Hit {
	sort.Slice(s, func(i, j int) bool {
		if s[i].score != s[j].score {
			return s[i].score > s[j].score
		}
		return v.recs[s[i].num].id < v.recs[s[j].num].id
	})
	s = s[:min(k, len(s))]
	out := make([]Hit, len(s))
	for i, x := range s {
		out[i] = Hit{ID: v.recs[x.num].id, Score: x.score}
	}
	return out
}

// SetEfSearch changes Config.EfSearch for later searches (a serving knob
// trading recall for latency; benchmarks sweep it on one build).
func (ix *Index) SetEfSearch(ef int) error {
	if ef < 1 {
		return fmt.Errorf("%w: EfSearch %d must be positive", ErrConfig, ef)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.cur.Load().closed {
		return ErrClosed
	}
	t := ix.begin()
	t.v.cfg.EfSearch = ef
	t.publish()
	return nil
}

// refChunk is the number of Refs per chunk of a refTable.
const refChunk = 1024

// refTable maps the live items' Refs to their nums: chunks[ref/refChunk]
// holds num+1 at ref%refChunk (0: no live item has the Ref; a nil chunk:
// none of its Refs). A published table is never changed: a txn copies the
// chunk slice and each chunk it writes (refWriter), so a commit of k items
// copies at most k chunks and one pointer per refChunk Refs. Callers that
// filter number their items densely (the engine does), so the slice stays
// about a pointer per 1,024 items.
type refTable struct {
	chunks []*[refChunk]uint32
}

// lookup returns the num of the live item holding ref, if any.
func (t refTable) lookup(ref uint32) (uint32, bool) {
	c := int(ref / refChunk)
	if c >= len(t.chunks) || t.chunks[c] == nil {
		return 0, false
	}
	n := t.chunks[c][ref%refChunk]
	return n - 1, n != 0
}

// refWriter tracks what a txn has copied of its view's refTable.
type refWriter struct {
	sliceOwned bool
	owned      map[int]bool // chunks copied
}

// set maps ref to num in *t (unset when clear), copying on first write.
func (w *refWriter) set(t *refTable, ref, num uint32, clear bool) {
	c := int(ref / refChunk)
	if !w.sliceOwned {
		t.chunks = slices.Clone(t.chunks)
		w.sliceOwned, w.owned = true, map[int]bool{}
	}
	if c >= len(t.chunks) {
		if clear {
			return
		}
		t.chunks = append(t.chunks, make([]*[refChunk]uint32, c+1-len(t.chunks))...)
	}
	ch := t.chunks[c]
	if ch == nil && clear {
		return
	}
	if !w.owned[c] {
		nch := new([refChunk]uint32)
		if ch != nil {
			*nch = *ch
		}
		ch, t.chunks[c], w.owned[c] = nch, nch, true
	}
	if clear {
		ch[ref%refChunk] = 0
	} else {
		ch[ref%refChunk] = num + 1
	}
}
