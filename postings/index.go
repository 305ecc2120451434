package postings

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"lukechampine.com/blake3"
)

// Doc is one document to index: its ID, its Ref and its already-analysed
// terms (duplicates count as term frequency; len(Terms) is the document
// length). Ref is the caller's number for the document, what an allow-list
// (Query.Allow) names; the index only stores it. Several documents may
// share a Ref (the caller decides what a number means); the engine gives
// each of its documents one of its own.
type Doc struct {
	ID    string
	Ref   uint32
	Terms []string
}

// NoRef is the Ref of the documents of a snapshot written before Refs
// existed (format 2 and older), until SetRefs gives them theirs. To the
// allow-list it is a number like any other: callers that filter (the
// engine) number their documents from 1.
const NoRef = 0

// bigTF records an exact term frequency ≥ 255 at a rank position; the u8
// side array holds 255 there.
type bigTF struct{ pos, tf uint32 }

// termPostings is the posting list of one term: the set of doc nums as a
// roaring bitmap followed by a tail of the newest doc nums (ascending, all
// above the bitmap's maximum) and, aligned to that order, the term
// frequencies (u8, with exact overflow for tf ≥ 255). Immutable once
// published in a snapshot, except that tail, tf and big may be appended to
// beyond the published lengths (readers never look past their lengths).
//
// The tail makes small commits cheap: a commit appends a term's new doc
// nums to its tail, where extending the bitmap would copy the bitmap's
// last container (up to 8 KiB) for every term of every commit, as the
// published bitmap may be in use. The tail is merged into a copy-on-write
// clone of the bitmap when it would pass maxTail, so that copy is paid
// once per maxTail postings of a term, not once per commit.
type termPostings struct {
	docs   *roaring.Bitmap
	tail   []uint32
	tf     []uint8
	big    []bigTF
	maxTfc float64 // max tfc over the postings at the snapshot's build avgdl; upper bound for pruning
}

// maxTail is the longest tail of a posting list (see termPostings).
const maxTail = 1024

// find returns the position of doc num d in the list, if it is there.
func (tp *termPostings) find(d uint32) (int, bool) {
	if n := len(tp.tail); n > 0 && d >= tp.tail[0] {
		i, ok := slices.BinarySearch(tp.tail, d)
		return len(tp.tf) - n + i, ok
	}
	if tp.docs.Contains(d) {
		return int(tp.docs.Rank(d)) - 1, true
	}
	return 0, false
}

// since returns the doc nums from n on, in order, and the position of the
// first of them (the number of postings below n).
func (tp *termPostings) since(n uint32) (pos int, docs []uint32) {
	if n > 0 {
		pos = int(tp.docs.Rank(n - 1))
	}
	it := tp.docs.Iterator()
	it.AdvanceIfNeeded(n)
	for it.HasNext() {
		docs = append(docs, it.Next())
	}
	i, _ := slices.BinarySearch(tp.tail, n)
	return pos + i, append(docs, tp.tail[i:]...)
}

// deadCount returns how many postings belong to documents of dead.
func (tp *termPostings) deadCount(dead *roaring.Bitmap) int {
	c := int(tp.docs.AndCardinality(dead))
	for _, d := range tp.tail {
		if dead.Contains(d) {
			c++
		}
	}
	return c
}

// bitmap returns the list's doc nums as one bitmap: the bitmap itself when
// the tail is empty, else a merged copy. The copy is built by iteration,
// not Clone: cloning a copy-on-write bitmap writes its shared-container
// flags, which only the writer may do.
func (tp *termPostings) bitmap() *roaring.Bitmap {
	if len(tp.tail) == 0 {
		return tp.docs
	}
	bm := roaring.New()
	var it postingIter
	it.init(tp)
	var buf [256]uint32
	for docs := it.next(buf[:]); len(docs) > 0; docs = it.next(buf[:]) {
		bm.AddMany(docs)
	}
	return bm
}

// postingIter yields a posting list's doc nums in order, in chunks: the
// bitmap's, then the tail's.
type postingIter struct {
	it   roaring.ManyIntIterator
	tail []uint32
	bits bool // still in the bitmap
}

func (p *postingIter) init(tp *termPostings) {
	p.it.Initialize(tp.docs)
	p.tail, p.bits = tp.tail, true
}

// next returns the next chunk of at most len(buf) doc nums (in buf, or a
// read-only piece of the tail), or nothing at the end.
func (p *postingIter) next(buf []uint32) []uint32 {
	if p.bits {
		if m := p.it.NextMany(buf); m > 0 {
			return buf[:m]
		}
		p.bits = false
	}
	n := min(len(buf), len(p.tail))
	out := p.tail[:n:n]
	p.tail = p.tail[n:]
	return out
}

func (tp *termPostings) tfAt(pos int) uint32 {
	t := uint32(tp.tf[pos])
	if t < 255 {
		return t
	}
	return tp.bigAt(pos)
}

// bigAt finds the exact frequency of an overflowed posting (kept out of
// tfAt so that tfAt inlines).
func (tp *termPostings) bigAt(pos int) uint32 {
	i := sort.Search(len(tp.big), func(i int) bool { return tp.big[i].pos >= uint32(pos) })
	if i < len(tp.big) && tp.big[i].pos == uint32(pos) {
		return tp.big[i].tf
	}
	return 255
}

// termDict maps term strings to dense term ids. It is append-only and shared
// by the snapshots of one build generation: an id beyond a snapshot's
// len(terms) is absent from that snapshot.
type termDict struct {
	mu    sync.RWMutex // guards ids and names
	ids   map[string]uint32
	names []string
}

func newTermDict() *termDict { return &termDict{ids: make(map[string]uint32)} }

// getOrAdd is called by the single writer only. It reads without the
// lock: only this goroutine ever mutates the map.
func (d *termDict) getOrAdd(t string) uint32 {
	if id, ok := d.ids[t]; ok {
		return id
	}
	d.mu.Lock()
	id := uint32(len(d.names))
	d.ids[t] = id
	d.names = append(d.names, t)
	d.mu.Unlock()
	return id
}

func (d *termDict) name(id uint32) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.names[id]
}

// snapshot is an immutable, consistent state of the index. Readers load it
// with one atomic pointer read and never lock (except termDict lookups).
type snapshot struct {
	sc   scorer
	dict *termDict
	// terms is indexed by term id; nil or empty entries have no postings.
	terms termTable
	// Doc tables, indexed by doc num, valid up to numDocs. Appended by later
	// commits beyond numDocs in place (never rewritten below it).
	numDocs uint32
	docIDs  []string
	refs    []uint32 // Doc.Ref by doc num
	docLen  []uint32
	// renames counts RenameIDs and SetRefs calls since the index was built: a
	// Rebuilding copied the IDs of its start and must not publish them
	// over renamed ones.
	renames int
	// normTab[dl] is (1-b)+b·dl/avgdlBuild for every length dl up to the
	// longest document: one small table instead of 8 bytes per doc.
	// Appended in place (values never change within a build).
	normTab []float64
	// tfcTab[dl<<tfcTabShift | tf] is the search kernel's tf component
	// (kernelTfc) for lengths dl < tfcTabLens and 1 ≤ tf < tfcTabTF: one
	// gather instead of a division per posting. Appended with normTab.
	tfcTab []float64
	hashes [][16]byte
	// dead is a bitset of deleted doc nums (copy-on-write; nil when none).
	dead    []uint64
	deadBM  *roaring.Bitmap // the same set as a bitmap, for live df counts
	numDead int
	// Live statistics.
	liveDocs int
	liveLen  uint64
	// avgdlBuild is the avgdl at the last full build; norms use it.
	avgdlBuild float64
	postings   int64
	numTerms   int
}

func (s *snapshot) isDead(d uint32) bool {
	w := int(d >> 6)
	return w < len(s.dead) && s.dead[w]&(1<<(d&63)) != 0
}

// norm is document d's length normalisation.
func (s *snapshot) norm(d uint32) float64 { return s.normTab[s.docLen[d]] }

// Shape of snapshot.tfcTab: frequencies below tfcTabTF, lengths below
// tfcTabLens (at most 4096·16·8 B = 512 KiB).
const (
	tfcTabShift = 4
	tfcTabTF    = 1 << tfcTabShift
	tfcTabLens  = 4096
)

// extendNorms makes normTab (and tfcTab, up to tfcTabLens) cover lengths
// up to dl.
func (s *snapshot) extendNorms(dl int) {
	for l := len(s.normTab); l <= dl; l++ {
		nb := s.sc.normB(l, s.avgdlBuild)
		s.normTab = append(s.normTab, nb)
		if l < tfcTabLens {
			for tf := range tfcTabTF {
				c := 0.0
				if tf > 0 && nb > 0 {
					c = kernelTfc(s.sc.kind, s.sc.k1, s.sc.dlta, float64(tf), nb)
				}
				s.tfcTab = append(s.tfcTab, c)
			}
		}
	}
}

func (s *snapshot) maxDocLen() int {
	m := 0
	for _, l := range s.docLen[:s.numDocs] {
		m = max(m, int(l))
	}
	return m
}

func (s *snapshot) avgdl() float64 {
	if s.liveDocs == 0 {
		return 0
	}
	return float64(s.liveLen) / float64(s.liveDocs)
}

// Index is a BM25 index over roaring postings. Search and Stats are safe for
// concurrent use with each other and with one writer; Commit, Rebuild, Save
// and Has serialise on an internal mutex.
type Index struct {
	cfg Config
	cur atomic.Pointer[snapshot]

	mu   sync.Mutex        // serialises writers; guards byID and batch ownership
	byID map[string]uint32 // live external ID → doc num

	scratch sync.Pool // *searchScratch
	// pruneGate scales the cost gate of MaxScore θ attempts (0: always
	// try, as tests do to exercise pruning on small corpora).
	pruneGate int
}

// New returns an empty index.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.normalized()
	ix := &Index{cfg: cfg, byID: make(map[string]uint32), pruneGate: defaultPruneGate}
	ix.cur.Store(&snapshot{sc: newScorer(cfg), dict: newTermDict()})
	return ix, nil
}

// Config returns the configuration (with defaults filled in).
func (ix *Index) Config() Config { return ix.cfg }

// Has reports whether a live document with this ID is indexed.
func (ix *Index) Has(id string) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	_, ok := ix.byID[id]
	return ok
}

type batchOp struct {
	del  bool
	doc  Doc
	hash [16]byte // content hash (additions)
	tfs  []termTF // distinct terms and their frequencies (additions), in first-occurrence order
}

// termTF is one distinct term of a document and its frequency.
type termTF struct {
	term string
	tf   uint32
}

// Batch collects additions, updates and deletions to commit atomically. A
// Batch is not safe for concurrent use; it may be committed once.
type Batch struct {
	ix   *Index
	ops  []batchOp
	used bool
	at   map[string]int // Add's scratch: a term's index in its op's tfs
}

// NewBatch starts an empty batch for this index.
func (ix *Index) NewBatch() *Batch { return &Batch{ix: ix} }

// Add queues a document. Re-adding an existing ID replaces it (an update);
// re-adding identical content (same content hash) is a no-op. The Doc's
// slices and map are copied at Commit, not here: do not modify them until
// Commit returns.
//
// Add hashes the document and counts its terms here, so that callers
// preparing batches concurrently do that work in parallel rather than
// under the index's writer lock.
func (b *Batch) Add(d Doc) {
	hs := hashScratch.Get().(*hashState)
	op := batchOp{doc: d, hash: contentHash(hs.h, &hs.buf, &d)}
	if cap(hs.buf) > 1<<20 {
		hs.buf = nil // do not pin a huge document's buffer
	}
	hashScratch.Put(hs)
	if b.at == nil {
		b.at = map[string]int{}
	}
	clear(b.at)
	for _, t := range d.Terms {
		if i, ok := b.at[t]; ok {
			op.tfs[i].tf++
			continue
		}
		b.at[t] = len(op.tfs)
		op.tfs = append(op.tfs, termTF{term: t, tf: 1})
	}
	op.tfs = slices.Clip(op.tfs)
	b.ops = append(b.ops, op)
}

// hashState is contentHash's hasher and scratch buffer.
type hashState struct {
	h   *blake3.Hasher
	buf []byte
}

var hashScratch = sync.Pool{New: func() any { return &hashState{h: blake3.New(32, nil)} }}

// Delete queues the deletion of a document by ID; unknown IDs are ignored.
func (b *Batch) Delete(id string) { b.ops = append(b.ops, batchOp{del: true, doc: Doc{ID: id}}) }

// Len is the number of queued operations.
func (b *Batch) Len() int { return len(b.ops) }

// blake3ChunkSize is BLAKE3's chunk length.
const blake3ChunkSize = 1024

// contentHash is blake3 over the terms, with length prefixes so that
// different splits cannot collide. buf is scratch.
func contentHash(h *blake3.Hasher, buf *[]byte, d *Doc) [16]byte {
	b := (*buf)[:0]
	put := func(s string) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(d.Terms)))
	for _, t := range d.Terms {
		put(t)
	}
	*buf = b
	h.Reset()
	// One chunk per Write: the hasher compresses a Write of several
	// chunks in goroutines with a 16 KiB scratch buffer each time, which
	// made content hashing a tenth of an ingest's allocations. The digest
	// does not depend on how the input is split.
	for len(b) > 0 {
		n := min(len(b), blake3ChunkSize)
		h.Write(b[:n])
		b = b[n:]
	}
	var sum [32]byte
	var out [16]byte
	copy(out[:], h.Sum(sum[:0]))
	return out
}

// Commit applies the batch atomically: concurrent searches see either none
// or all of it. Operations apply in order (a later Add of the same ID wins).
// An invalid document fails the whole batch before anything changes.
func (ix *Index) Commit(b *Batch) error {
	return ix.CommitGroup(b)
}

// CommitGroup applies batches in order, with the result of committing them
// one after another, and publishes the result once: searches see none of
// them or all. It is for callers that gather concurrent commits (group
// commit): the copies a commit makes of what searches may be reading
// (the term table, the containers of each posting list it extends) are
// made once per group instead of once per batch. If any batch is invalid
// nothing changes and the error names the batch.
func (ix *Index) CommitGroup(bs ...*Batch) error {
	// The distinct terms of the group bound the posting lists a writer
	// touches (hint): its maps are sized for them once instead of growing.
	var ops, hint int
	for k, b := range bs {
		if b == nil || b.ix != ix {
			return ErrBatchUsed
		}
		for i := range b.ops {
			hint += len(b.ops[i].tfs)
			var err error
			if b.ops[i].doc.ID == "" {
				err = fmt.Errorf("commit op %d: %w: empty ID", i, ErrBadDoc)
			} else if len(b.ops[i].doc.Terms) > math.MaxUint32/2 {
				err = fmt.Errorf("commit op %d: %w: too many terms", i, ErrBadDoc)
			}
			if err != nil {
				if len(bs) > 1 {
					err = fmt.Errorf("batch %d: %w", k, err)
				}
				return err
			}
		}
		ops += len(b.ops)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k, b := range bs {
		if b.used || slices.Index(bs, b) != k {
			return ErrBatchUsed
		}
	}
	if uint64(ix.cur.Load().numDocs)+uint64(ops) >= math.MaxUint32 {
		return fmt.Errorf("commit: %w: doc num space exhausted, Rebuild first", ErrBadDoc)
	}
	hint = min(hint, 1<<15)
	var w *writer
	cur := ix.cur.Load()
	for _, b := range bs {
		b.used = true
		// A batch committed alone into an index without live documents
		// is built at its own statistics (see finish): such a batch gets
		// a writer of its own, so that a group gives what the batches
		// give one by one (and what replaying them one by one gives).
		if w != nil && w.ns.liveDocs == 0 {
			cur, w = w.finish(ix), nil
		}
		if w == nil {
			w = newWriter(cur, hint)
		}
		w.apply(ix, b.ops)
		if w.old.liveDocs == 0 {
			cur, w = w.finish(ix), nil
		}
	}
	if w != nil {
		cur = w.finish(ix)
	}
	ix.cur.Store(cur)
	return nil
}

// writer is the state of one commit under construction.
type writer struct {
	old, ns   *snapshot
	terms     *termTableWriter // ns.terms under construction
	touched   map[uint32]*pendingTerm
	deadOwned bool
}

// pendingTerm is a term's posting list being extended by a writer: its
// next version, whose tail ends with the writer's new doc nums.
type pendingTerm struct {
	tp    termPostings
	start int // tp.tail[start:] are the doc nums this writer added
}

func (pt *pendingTerm) added() []uint32 { return pt.tp.tail[pt.start:] }

// newWriter starts the snapshot that follows old; terms is about how many
// posting lists it will touch. The caller holds ix.mu.
func newWriter(old *snapshot, terms int) *writer {
	ns := *old
	return &writer{old: old, ns: &ns, terms: old.terms.writer(terms), touched: make(map[uint32]*pendingTerm, terms)}
}

// apply applies ops to the snapshot under construction.
func (w *writer) apply(ix *Index, ops []batchOp) {
	for i := range ops {
		op := &ops[i]
		if op.del {
			if num, ok := ix.byID[op.doc.ID]; ok {
				w.kill(num)
				delete(ix.byID, op.doc.ID)
			}
			continue
		}
		if num, ok := ix.byID[op.doc.ID]; ok {
			if w.ns.hashes[num] == op.hash && w.ns.refs[num] == op.doc.Ref {
				continue // identical content: no-op
			}
			w.kill(num)
		}
		ix.byID[op.doc.ID] = w.add(op)
	}
}

// finish returns the snapshot the writer built; the writer must not be
// used afterwards. The caller holds ix.mu.
func (w *writer) finish(ix *Index) *snapshot {
	old, ns := w.old, w.ns
	// Built at no statistics yet: an empty index, or one of empty
	// documents only now getting its first terms (norms built at average
	// length 0 normalise nothing, and no drift from 0 would ever ask for a
	// rebuild). While every document stays empty there is nothing to
	// rebuild: commits stay cheap.
	firstBuild := old.liveDocs == 0 || old.avgdlBuild == 0 && ns.avgdl() > 0
	if old.numDocs == 0 && ns.liveDocs > 0 {
		// First documents of a new index: build at their own statistics.
		// Nothing was published yet, so norms and bounds are rewritten in
		// place from the pending (uncompressed) posting lists.
		ns.avgdlBuild = ns.avgdl()
		ns.normTab, ns.tfcTab = nil, nil
		ns.extendNorms(ns.maxDocLen())
		for _, pt := range w.touched {
			pt.tp.maxTfc = 0
			for i, d := range pt.added() {
				if c := ns.sc.tfc(float64(pt.tp.tfAt(i)), ns.norm(d)); c > pt.tp.maxTfc {
					pt.tp.maxTfc = c
				}
			}
		}
		firstBuild = false
	}
	for tid, pt := range w.touched {
		tp := &pt.tp
		if len(tp.tail) > maxTail {
			// Merge the tail into a copy-on-write clone of the bitmap:
			// it shares the containers it does not change.
			tp.docs = tp.docs.Clone()
			tp.docs.SetCopyOnWrite(true)
			tp.docs.AddMany(tp.tail)
			tp.docs.RunOptimize()
			tp.tail = nil
		}
		if prev := old.terms.get(tid); prev == nil || len(prev.tf) == 0 {
			ns.numTerms++
		}
		w.terms.set(tid, tp)
	}
	ns.terms = w.terms.done()
	if firstBuild && ns.liveDocs > 0 {
		// The first documents of an empty index (or the first with terms):
		// build at their statistics.
		r := newRebuilding(ix, ns)
		r.Step(math.MaxInt)
		ix.byID = r.byID
		return r.ns
	}
	return ns
}

func (w *writer) kill(num uint32) {
	ns := w.ns
	if !w.deadOwned {
		words := (int(ns.numDocs) + 63) / 64
		nd := make([]uint64, max(words, len(ns.dead)))
		copy(nd, ns.dead)
		ns.dead = nd
		if ns.deadBM != nil {
			ns.deadBM = ns.deadBM.Clone()
		} else {
			ns.deadBM = roaring.New()
		}
		ns.deadBM.SetCopyOnWrite(true) // as filters
		w.deadOwned = true
	}
	ns.deadBM.Add(num)
	wi := int(num >> 6)
	if wi >= len(ns.dead) {
		ns.dead = append(ns.dead, make([]uint64, wi+1-len(ns.dead))...)
	}
	ns.dead[wi] |= 1 << (num & 63)
	ns.numDead++
	ns.liveDocs--
	ns.liveLen -= uint64(ns.docLen[num])
}

func (w *writer) add(op *batchOp) uint32 {
	d := &op.doc
	ns := w.ns
	num := ns.numDocs
	ns.numDocs++
	dl := len(d.Terms)
	ns.extendNorms(dl)
	nb := ns.normTab[dl]
	ns.docIDs = append(ns.docIDs[:num], d.ID)
	ns.refs = append(ns.refs[:num], d.Ref)
	ns.docLen = append(ns.docLen[:num], uint32(dl))
	ns.hashes = append(ns.hashes[:num], op.hash)
	ns.liveDocs++
	ns.liveLen += uint64(dl)
	for _, ttf := range op.tfs {
		t, tf := ttf.term, ttf.tf
		tid := ns.dict.getOrAdd(t)
		pt := w.term(tid)
		pos := uint32(len(pt.tp.tf))
		if tf >= 255 {
			pt.tp.tf = append(pt.tp.tf, 255)
			pt.tp.big = append(pt.tp.big, bigTF{pos: pos, tf: tf})
		} else {
			pt.tp.tf = append(pt.tp.tf, uint8(tf))
		}
		// Appended past the published tail's length only (finish merges
		// a tail grown past maxTail into the bitmap).
		pt.tp.tail = append(pt.tp.tail, num)
		if c := ns.sc.tfc(float64(tf), nb); c > pt.tp.maxTfc {
			pt.tp.maxTfc = c
		}
		ns.postings++
	}
	return num
}

// term returns the writable copy of a term's postings for this commit.
func (w *writer) term(tid uint32) *pendingTerm {
	if pt, ok := w.touched[tid]; ok {
		return pt
	}
	pt := &pendingTerm{}
	if old := w.terms.get(tid); old != nil {
		// The bitmap is shared until finish merges the tail into a clone
		// of it (readers iterate the old one); tail, tf and big are
		// appended past the published lengths only.
		//
		// That clone is copy-on-write: it shares the containers it does
		// not change (new doc nums are the largest, so usually all but
		// the last one) instead of copying a long posting list whole.
		// The shared containers are never modified; Clone marks them as
		// shared in the published bitmap's copy-on-write flags, which
		// searches never read (they only iterate and intersect). A bitmap
		// loaded from a snapshot or built by a rebuild is copied whole
		// once, by its first merge.
		pt.tp = *old
		pt.start = len(old.tail)
	} else {
		pt.tp.docs = roaring.New()
		pt.tp.docs.SetCopyOnWrite(true)
	}
	w.touched[tid] = pt
	return pt
}

// Stats describes the current snapshot.
type Stats struct {
	Docs     int // live documents
	Terms    int // terms with at least one posting
	Postings int // stored postings (including those of deleted docs until Rebuild)
	// IndexBytes counts the search structures honestly: serialized size of
	// every term bitmap + tf side arrays (+ overflow) + per-term bound +
	// doc length table, the per-length norm table + the deleted bitset.
	IndexBytes int64
	// DocTableBytes counts external IDs, Refs and content hashes (not in IndexBytes).
	DocTableBytes int64
	DeletedDocs   int     // deleted doc nums awaiting compaction by Rebuild
	AvgDL         float64 // current average document length (live docs)
	BuildAvgDL    float64 // avgdl used by the norms (last full build)
	Drift         float64 // |AvgDL - BuildAvgDL| / BuildAvgDL
	NeedsRebuild  bool    // Drift > Config.RebuildDrift
}

// Stats reports sizes and statistics of the current snapshot: v.Stats on
// View(). It walks the term and doc tables (O(terms + docs)); safe for
// concurrent use.
func (ix *Index) Stats() Stats { return ix.View().Stats() }

// Summary is Stats without the sizes (IndexBytes and DocTableBytes are
// 0), in O(1): what decides a Rebuild.
func (ix *Index) Summary() Stats { return ix.View().Summary() }

// Summary is Index.Summary of v's snapshot.
func (v *View) Summary() Stats {
	s := v.s
	st := Stats{Docs: s.liveDocs, Terms: s.numTerms, Postings: int(s.postings), DeletedDocs: s.numDead,
		AvgDL: s.avgdl(), BuildAvgDL: s.avgdlBuild}
	if s.avgdlBuild > 0 {
		st.Drift = math.Abs(st.AvgDL-s.avgdlBuild) / s.avgdlBuild
	}
	st.NeedsRebuild = st.Drift > v.ix.cfg.RebuildDrift || (s.numDead > 0 && s.numDead*4 > int(s.numDocs))
	return st
}

// Stats is Index.Stats of v's snapshot.
func (v *View) Stats() Stats {
	s, st := v.s, v.Summary()
	for _, tp := range s.terms.all {
		if tp == nil || len(tp.tf) == 0 {
			continue
		}
		st.IndexBytes += int64(tp.docs.GetSerializedSizeInBytes()) + int64(4*len(tp.tail)) + int64(len(tp.tf)) + int64(8*len(tp.big)) + 8
	}
	st.IndexBytes += int64(s.numDocs)*4 + int64(8*len(s.normTab)) + int64(8*len(s.tfcTab))
	if s.dead != nil {
		st.IndexBytes += int64(s.numDocs+63) / 64 * 8
	}
	if s.deadBM != nil {
		st.IndexBytes += int64(s.deadBM.GetSerializedSizeInBytes())
	}
	for i := uint32(0); i < s.numDocs; i++ {
		st.DocTableBytes += int64(len(s.docIDs[i])) + 16 + 4
	}
	return st
}
