package dense

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/simd"
)

// Item is one vector to index. Add copies Vector; Meta is copied too.
type Item struct {
	ID     string
	Vector []float32
	Tenant string
	Meta   map[string]string
}

// Filter restricts a search to one tenant (exact match, "" included) and
// to vectors whose metadata holds every pair of Meta. A nil *Filter means
// no restriction at all.
type Filter struct {
	Tenant string
	Meta   map[string]string
}

// Hit is one search result: an item ID and its cosine similarity to the
// query. Results come best first.
type Hit struct {
	ID    string
	Score float32
}

// slabRows is the number of vector rows per slab. Slabs are never
// reallocated, so rows handed out stay valid.
const slabRows = 1024

// record is what the index knows about one num besides its vector.
type record struct {
	id     string
	tenant string
	meta   map[string]string
}

// Index is a dense vector index. It is safe for concurrent use; see the
// package documentation for the locking model.
type Index struct {
	cfg Config

	// saveMu serialises Save calls (which only need mu.RLock otherwise).
	saveMu sync.Mutex

	// mu guards every field below: readers (Search, Len, Save) take RLock,
	// writers (Add, Delete, Compact, Close) take Lock.
	mu      sync.RWMutex
	closed  bool
	g       *graph // nodes: live plus tombstoned nums
	slabs   [][]float32
	next    uint32   // next unused num
	recs    []record // by num; zero record for tombstones
	byID    map[string]uint32
	live    *roaring.Bitmap
	tenants map[string]*roaring.Bitmap
	meta    map[string]map[string]*roaring.Bitmap // key -> value -> live nums
}

// New returns an empty index.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ix := &Index{
		cfg:     cfg,
		byID:    make(map[string]uint32),
		live:    roaring.New(),
		tenants: make(map[string]*roaring.Bitmap),
		meta:    make(map[string]map[string]*roaring.Bitmap),
	}
	ix.g = newHNSW(cfg, ix.rowAt)
	return ix, nil
}

// Config returns the index's configuration.
func (ix *Index) Config() Config {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cfg
}

// Len returns the number of live vectors.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return int(ix.live.GetCardinality())
}

// row returns the slab row of num, allocating its slab if needed (callers
// hold the write lock for new nums).
func (ix *Index) row(num uint32) []float32 {
	s, r := int(num/slabRows), int(num%slabRows)
	for len(ix.slabs) <= s {
		ix.slabs = append(ix.slabs, make([]float32, slabRows*ix.cfg.Dim))
	}
	d := ix.cfg.Dim
	return ix.slabs[s][r*d : (r+1)*d : (r+1)*d]
}

// rowAt returns the slab row of an existing num (callers hold mu).
func (ix *Index) rowAt(num uint32) []float32 {
	s, r, d := int(num/slabRows), int(num%slabRows), ix.cfg.Dim
	return ix.slabs[s][r*d : (r+1)*d : (r+1)*d]
}

// checkVector validates v's length and finiteness.
func (ix *Index) checkVector(v []float32) error {
	if len(v) != ix.cfg.Dim {
		return fmt.Errorf("%w: got %d, want %d", ErrDim, len(v), ix.cfg.Dim)
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

// Add inserts items, replacing any existing item with the same ID (within
// one call, the last occurrence wins). All items are validated before any
// is inserted, so a bad item leaves the index unchanged.
func (ix *Index) Add(items ...Item) error {
	for i, it := range items {
		if it.ID == "" {
			return fmt.Errorf("add item %d: %w", i, ErrEmptyID)
		}
		if err := ix.checkVector(it.Vector); err != nil {
			return fmt.Errorf("add item %q: %w", it.ID, err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	if uint64(ix.next)+uint64(len(items)) > math.MaxUint32 {
		return ErrFull
	}
	for _, it := range items {
		if old, ok := ix.byID[it.ID]; ok {
			ix.tombstone(old)
		}
		num := ix.next
		ix.next++
		row := ix.row(num)
		copy(row, it.Vector)
		simd.L2Normalize(row)
		ix.index(num, record{id: it.ID, tenant: it.Tenant, meta: cloneMeta(it.Meta)})
		ix.g.insert(num)
	}
	return nil
}

func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// index records num as live with rec and adds it to the filter bitmaps.
func (ix *Index) index(num uint32, rec record) {
	for len(ix.recs) <= int(num) {
		ix.recs = append(ix.recs, record{})
	}
	ix.recs[num] = rec
	ix.byID[rec.id] = num
	ix.live.Add(num)
	bm := ix.tenants[rec.tenant]
	if bm == nil {
		bm = roaring.New()
		ix.tenants[rec.tenant] = bm
	}
	bm.Add(num)
	for k, v := range rec.meta {
		vals := ix.meta[k]
		if vals == nil {
			vals = make(map[string]*roaring.Bitmap)
			ix.meta[k] = vals
		}
		bm := vals[v]
		if bm == nil {
			bm = roaring.New()
			vals[v] = bm
		}
		bm.Add(num)
	}
}

// tombstone removes num from every bitmap and forgets its record; its
// graph node stays as a routing node (see package doc).
func (ix *Index) tombstone(num uint32) {
	rec := ix.recs[num]
	delete(ix.byID, rec.id)
	ix.live.Remove(num)
	if bm := ix.tenants[rec.tenant]; bm != nil {
		bm.Remove(num)
		if bm.IsEmpty() {
			delete(ix.tenants, rec.tenant)
		}
	}
	for k, v := range rec.meta {
		if bm := ix.meta[k][v]; bm != nil {
			bm.Remove(num)
			if bm.IsEmpty() {
				delete(ix.meta[k], v)
				if len(ix.meta[k]) == 0 {
					delete(ix.meta, k)
				}
			}
		}
	}
	ix.recs[num] = record{}
}

// Delete removes the items with the given IDs; unknown IDs are ignored.
func (ix *Index) Delete(ids ...string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	for _, id := range ids {
		if num, ok := ix.byID[id]; ok {
			ix.tombstone(num)
		}
	}
	return nil
}

// Tombstones returns the number of graph nodes that no longer back a live
// item (deleted or replaced); Compact drops them.
func (ix *Index) Tombstones() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.g.size - int(ix.live.GetCardinality())
}

// Compact rebuilds the graph from the live vectors only, dropping
// tombstoned routing nodes. It holds the write lock throughout (searches
// wait) and polls ctx; on cancellation the old graph is kept.
func (ix *Index) Compact(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	g := newHNSW(ix.cfg, ix.rowAt)
	it := ix.live.Iterator()
	for i := 0; it.HasNext(); i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
		}
		num := it.Next()
		g.insert(num)
	}
	ix.g = g
	return nil
}

// Close releases the index's memory. It is idempotent; later calls of
// other methods return ErrClosed.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.g, ix.slabs, ix.recs, ix.byID = nil, nil, nil, nil
	ix.live, ix.tenants, ix.meta = roaring.New(), nil, nil
	return nil
}

// candidates returns the live nums passing f, or nil meaning all live nums,
// and their count. Callers hold mu.
func (ix *Index) candidates(f *Filter) (*roaring.Bitmap, int) {
	if f == nil {
		return nil, int(ix.live.GetCardinality())
	}
	tb := ix.tenants[f.Tenant]
	if tb == nil {
		return roaring.New(), 0
	}
	bms := []*roaring.Bitmap{tb}
	for k, v := range f.Meta {
		bm := ix.meta[k][v]
		if bm == nil {
			return roaring.New(), 0
		}
		bms = append(bms, bm)
	}
	if len(bms) == 1 {
		return tb, int(tb.GetCardinality())
	}
	out := roaring.FastAnd(bms...)
	return out, int(out.GetCardinality())
}

// prepareQuery validates and normalises a copy of q.
func (ix *Index) prepareQuery(q []float32, k int) ([]float32, error) {
	if k <= 0 {
		return nil, fmt.Errorf("%w: %d", ErrK, k)
	}
	if err := ix.checkVector(q); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	qn := slices.Clone(q)
	simd.L2Normalize(qn)
	return qn, nil
}

// Search returns the k items most similar to q that pass f, best first,
// using the graph where that pays and exact search otherwise (see the
// package doc). Fewer than k hits come back only when fewer than k items
// pass f.
func (ix *Index) Search(ctx context.Context, q []float32, k int, f *Filter) ([]Hit, error) {
	qn, err := ix.prepareQuery(q, k)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	cand, count, err := ix.readCandidates(f)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return []Hit{}, nil
	}
	if count <= ix.cfg.FlatThreshold || count <= k {
		return ix.exact(ctx, qn, k, cand)
	}
	if ix.g.size > count*ix.cfg.MaxOverfetch {
		return ix.exact(ctx, qn, k, cand)
	}
	var accept func(uint32) bool
	switch {
	case cand != nil:
		accept = cand.Contains
	case ix.g.size > count: // tombstones in the graph
		accept = ix.live.Contains
	}
	ef := max(k, ix.cfg.EfSearch)
	for try := 0; try < 3; try++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dense search: %w", err)
		}
		res := ix.g.search(qn, ef, accept)
		if len(res) >= k {
			hits := make([]scored, len(res))
			for i, c := range res {
				hits[i] = scored{num: c.num, score: c.sim}
			}
			return ix.toHits(hits, k), nil
		}
		ef *= 2 // the beam ran dry before finding k admitted nodes
	}
	return ix.exact(ctx, qn, k, cand)
}

// SearchExact returns the k items most similar to q that pass f by scanning
// every candidate vector; ties are broken by ID.
func (ix *Index) SearchExact(ctx context.Context, q []float32, k int, f *Filter) ([]Hit, error) {
	qn, err := ix.prepareQuery(q, k)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	cand, count, err := ix.readCandidates(f)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return []Hit{}, nil
	}
	return ix.exact(ctx, qn, k, cand)
}

// readCandidates is the common start of both searches, under ix.mu held
// for reading: ErrClosed after Close, else the candidate set of f and its
// size (see candidates).
func (ix *Index) readCandidates(f *Filter) (*roaring.Bitmap, int, error) {
	if ix.closed {
		return nil, 0, ErrClosed
	}
	cand, count := ix.candidates(f)
	return cand, count, nil
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

// exact scans the candidates (nil: all live nums). Callers hold mu.
func (ix *Index) exact(ctx context.Context, qn []float32, k int, cand *roaring.Bitmap) ([]Hit, error) {
	t := &topK{k: k, h: make([]scored, 0, k), recs: ix.recs}
	d := ix.cfg.Dim
	if cand == nil {
		// Whole slabs through DotBatch, skipping tombstones.
		dense := int(ix.live.GetCardinality()) == int(ix.next)
		out := make([]float32, slabRows)
		for s, slab := range ix.slabs {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dense exact search: %w", err)
			}
			base := uint32(s * slabRows)
			rows := min(slabRows, int(ix.next-base))
			simd.DotBatch(qn, slab, d, out[:rows])
			for r, sc := range out[:rows] {
				num := base + uint32(r)
				if dense || ix.live.Contains(num) {
					t.push(scored{num: num, score: sc})
				}
			}
		}
		return ix.toHits(t.h, k), nil
	}
	buf := make([]uint32, 256)
	it := cand.ManyIterator()
	for seen := 0; ; {
		n := it.NextMany(buf)
		if n == 0 {
			break
		}
		for _, num := range buf[:n] {
			t.push(scored{num: num, score: simd.Dot(qn, ix.rowAt(num))})
		}
		if seen += n; seen >= 1024 {
			seen = 0
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("dense exact search: %w", err)
			}
		}
	}
	return ix.toHits(t.h, k), nil
}

// toHits sorts s best first (ties by ID) and returns at most k hits.
func (ix *Index) toHits(s []scored, k int) []Hit {
	sort.Slice(s, func(i, j int) bool {
		if s[i].score != s[j].score {
			return s[i].score > s[j].score
		}
		return ix.recs[s[i].num].id < ix.recs[s[j].num].id
	})
	s = s[:min(k, len(s))]
	out := make([]Hit, len(s))
	for i, x := range s {
		out[i] = Hit{ID: ix.recs[x.num].id, Score: x.score}
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
	ix.cfg.EfSearch = ef
	return nil
}
