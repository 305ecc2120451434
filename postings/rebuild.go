package postings

import (
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// dropped marks a doc num that a rebuild leaves out (deleted).
const dropped = math.MaxUint32

// Rebuilding is a Rebuild done in bounded steps that hold no lock, so
// that commits (and searches, which never wait) carry on while it runs:
// StartRebuild takes the current snapshot, Step builds the compacted
// snapshot from it a bounded amount at a time, and Finish, under the
// writer mutex, adds what was committed since the start and publishes it.
// A Rebuilding is used by one goroutine.
type Rebuilding struct {
	ix    *Index
	s     *snapshot // the snapshot rebuilt (immutable)
	ns    *snapshot // the rebuilt one, private until Finish
	remap []uint32  // s's doc nums → ns's, or dropped
	byID  map[string]uint32
	phase int // rebuildDocs, rebuildTerms, rebuildIDs, rebuildDone
	pos   int // next doc num, term id or doc num of the phase
	maxDL int
	buf   []uint32
	nbuf  []uint32
}

const (
	rebuildDocs = iota
	rebuildTerms
	rebuildIDs
	rebuildDone
)

func newRebuilding(ix *Index, s *snapshot) *Rebuilding {
	ns := &snapshot{sc: s.sc, dict: newTermDict()}
	ns.avgdlBuild = s.avgdl()
	return &Rebuilding{ix: ix, s: s, ns: ns, remap: make([]uint32, s.numDocs), byID: make(map[string]uint32, s.liveDocs),
		buf: make([]uint32, 4096), nbuf: make([]uint32, 0, 4096)}
}

// StartRebuild begins a stepwise Rebuild of the current snapshot.
func (ix *Index) StartRebuild() *Rebuilding { return newRebuilding(ix, ix.cur.Load()) }

// Step does about limit units of work — documents renumbered, postings
// copied, IDs mapped (a term's list is never split, so a step may exceed limit by one list) — and reports
// whether the snapshot of StartRebuild is fully rebuilt.
func (r *Rebuilding) Step(limit int) bool {
	s, ns := r.s, r.ns
	for work := 0; work < limit && r.phase != rebuildDone; {
		switch r.phase {
		case rebuildDocs:
			if r.pos == int(s.numDocs) {
				ns.extendNorms(r.maxDL)
				r.phase, r.pos = rebuildTerms, 0
				continue
			}
			d := uint32(r.pos)
			r.pos++
			work++
			if s.isDead(d) {
				r.remap[d] = dropped
				continue
			}
			r.remap[d] = ns.numDocs
			ns.numDocs++
			ns.docIDs = append(ns.docIDs, s.docIDs[d])
			ns.refs = append(ns.refs, s.refs[d])
			ns.docLen = append(ns.docLen, s.docLen[d])
			ns.hashes = append(ns.hashes, s.hashes[d])
			ns.liveDocs++
			ns.liveLen += uint64(s.docLen[d])
			r.maxDL = max(r.maxDL, int(s.docLen[d]))
		case rebuildTerms:
			if r.pos == s.terms.len() {
				r.phase, r.pos = rebuildIDs, 0
				continue
			}
			tid := r.pos
			r.pos++
			work += 1 + r.copyTerm(tid)
		case rebuildIDs:
			if r.pos == int(ns.numDocs) {
				r.phase = rebuildDone
				continue
			}
			r.byID[ns.docIDs[r.pos]] = uint32(r.pos)
			r.pos++
			work++
		}
	}
	return r.phase == rebuildDone
}

// copyTerm copies term tid's live postings, renumbered, into the rebuilt
// snapshot and returns the number of postings it read.
func (r *Rebuilding) copyTerm(tid int) int {
	s, ns := r.s, r.ns
	tp := s.terms.get(uint32(tid))
	if tp == nil || len(tp.tf) == 0 {
		return 0
	}
	out := &termPostings{docs: roaring.New(), tf: make([]uint8, 0, len(tp.tf))}
	var it postingIter
	it.init(tp)
	pos := 0
	for {
		docs := it.next(r.buf)
		if len(docs) == 0 {
			break
		}
		r.nbuf = r.nbuf[:0]
		for _, d := range docs {
			if nd := r.remap[d]; nd != dropped {
				out.appendPosting(ns, nd, tp.tfAt(pos))
				r.nbuf = append(r.nbuf, nd)
			}
			pos++
		}
		out.docs.AddMany(r.nbuf)
	}
	if out.docs.IsEmpty() {
		return pos
	}
	out.docs.RunOptimize()
	out.tf = slices.Clip(out.tf)
	ns.dict.getOrAdd(s.dict.name(uint32(tid)))
	ns.terms.append(out)
	ns.postings += int64(len(out.tf))
	ns.numTerms++
	return pos
}

// appendPosting appends the frequency of doc num nd (above every doc num
// of tp, so rank order is kept) and raises the pruning bound; the caller
// adds nd to the bitmap.
func (tp *termPostings) appendPosting(ns *snapshot, nd, tf uint32) {
	if tf >= 255 {
		tp.big = append(tp.big, bigTF{pos: uint32(len(tp.tf)), tf: tf})
		tp.tf = append(tp.tf, 255)
	} else {
		tp.tf = append(tp.tf, uint8(tf))
	}
	if c := ns.sc.tfc(float64(tf), ns.norm(nd)); c > tp.maxTfc {
		tp.maxTfc = c
	}
}

// Finish completes the rebuild under the writer mutex (commits wait,
// searches do not): it runs the steps left, then applies to the rebuilt
// snapshot what was committed since StartRebuild — documents deleted
// since are marked deleted (Rebuild drops them next time), documents added
// since are appended with their postings, at the norms of the
// rebuild — and publishes it. The drift left is what those additions
// moved avgdl. It returns ErrRebuildStale, changing nothing, if the index
// was rebuilt meanwhile (by Rebuild, another Rebuilding, or a commit into
// an empty index) or its IDs renamed (RenameIDs). Call it once.
func (r *Rebuilding) Finish() error {
	r.ix.mu.Lock()
	defer r.ix.mu.Unlock()
	return r.finishLocked()
}

// Rebuild recomputes everything at the current statistics: deleted
// documents are dropped and live ones renumbered densely (compaction), the
// build avgdl becomes the current avgdl (drift 0), norms and pruning bounds
// are recomputed, and terms without postings disappear. It holds the
// writer mutex throughout (commits wait; searches do not); StartRebuild
// does the same work in steps.
func (ix *Index) Rebuild() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.StartRebuild().finishLocked()
}

func (r *Rebuilding) finishLocked() error {
	cur := r.ix.cur.Load()
	if r.ns == nil || cur.dict != r.s.dict || cur.renames != r.s.renames {
		return ErrRebuildStale
	}
	r.Step(math.MaxInt)
	if cur != r.s {
		r.catchUp(cur)
	}
	r.ix.byID = r.byID
	r.ix.cur.Store(r.ns)
	r.ns = nil
	return nil
}

// catchUp applies to the rebuilt snapshot what cur (a later snapshot of the
// same build, so doc nums below r.s.numDocs mean the same documents and
// postings are only ever appended) has beyond r.s.
func (r *Rebuilding) catchUp(cur *snapshot) {
	s, ns := r.s, r.ns
	oldN := s.numDocs
	if cur.deadBM != nil {
		it := cur.deadBM.Iterator()
		for it.HasNext() {
			d := it.Next()
			if d >= oldN {
				break
			}
			if !s.isDead(d) {
				r.kill(r.remap[d])
				delete(r.byID, s.docIDs[d])
			}
		}
	}
	for d := oldN; d < cur.numDocs; d++ {
		if cur.isDead(d) {
			r.remap = append(r.remap, dropped)
			continue
		}
		nd := ns.numDocs
		r.remap = append(r.remap, nd)
		ns.numDocs++
		dl := cur.docLen[d]
		ns.extendNorms(int(dl))
		ns.docIDs = append(ns.docIDs, cur.docIDs[d])
		ns.refs = append(ns.refs, cur.refs[d])
		ns.docLen = append(ns.docLen, dl)
		ns.hashes = append(ns.hashes, cur.hashes[d])
		ns.liveDocs++
		ns.liveLen += uint64(dl)
		r.byID[cur.docIDs[d]] = nd
	}
	for tid, tp := range cur.terms.all {
		if tp == nil || tp == s.terms.get(uint32(tid)) || len(tp.tf) == 0 {
			continue // unchanged since the start: nothing added
		}
		// The postings of documents added since the start: doc nums from
		// oldN on, in the bitmap's last containers and the tail.
		pos, added := tp.since(oldN)
		var out *termPostings
		for j, d := range added {
			nd := r.remap[d]
			if nd == dropped {
				continue
			}
			if out == nil {
				out = r.term(cur.dict.name(uint32(tid)))
			}
			out.appendPosting(ns, nd, tp.tfAt(pos+j))
			out.docs.Add(nd)
			ns.postings++
		}
	}
}

// term returns the rebuilt snapshot's postings of a term, adding an empty
// list for a new one.
func (r *Rebuilding) term(name string) *termPostings {
	ns := r.ns
	tid := ns.dict.getOrAdd(name)
	if int(tid) == ns.terms.len() {
		ns.terms.append(&termPostings{docs: roaring.New()})
		ns.numTerms++
	}
	return ns.terms.get(tid)
}

// kill marks doc num nd of the rebuilt snapshot deleted.
func (r *Rebuilding) kill(nd uint32) {
	ns := r.ns
	if ns.deadBM == nil {
		ns.deadBM = roaring.New()
	}
	ns.deadBM.Add(nd)
	if w := int(nd >> 6); w >= len(ns.dead) {
		ns.dead = append(ns.dead, make([]uint64, w+1-len(ns.dead))...)
	}
	ns.dead[nd>>6] |= 1 << (nd & 63)
	ns.numDead++
	ns.liveDocs--
	ns.liveLen -= uint64(ns.docLen[nd])
}

// RenameIDs gives every live document the external ID rename maps its ID
// to, in one new snapshot (searches see all new IDs or none); deleted
// documents keep theirs. It is meant for callers that change their ID
// scheme (the engine migrating an older snapshot). Every live ID must be
// in rename, and the new IDs must be distinct and non-empty; otherwise it
// returns an error wrapping ErrBadDoc and changes nothing.
func (ix *Index) RenameIDs(rename map[string]string) error {
	byID := map[string]uint32{} // ix.byID is read under the lock only
	return ix.relabel(func(ns *snapshot, id string, num uint32) error {
		to, ok := rename[id]
		if !ok || to == "" {
			return fmt.Errorf("rename: %w: no new ID for %q", ErrBadDoc, id)
		}
		if _, dup := byID[to]; dup {
			return fmt.Errorf("rename: %w: two documents renamed %q", ErrBadDoc, to)
		}
		byID[to] = num
		ns.docIDs[num] = to
		return nil
	}, func() { ix.byID = byID })
}

// relabel publishes a copy of the current snapshot, with its own ID and
// Ref tables, that set changed for every live document (given its ID and
// doc num), after done; an error from set changes nothing. It holds the
// writer mutex throughout and counts as a rename (snapshot.renames: a
// Rebuilding started before it is stale).
func (ix *Index) relabel(set func(ns *snapshot, id string, num uint32) error, done func()) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.cur.Load()
	ns := *s
	ns.docIDs = slices.Clone(s.docIDs[:s.numDocs])
	ns.refs = slices.Clone(s.refs[:s.numDocs])
	for id, num := range ix.byID {
		if err := set(&ns, id, num); err != nil {
			return err
		}
	}
	ns.renames++
	done()
	ix.cur.Store(&ns)
	return nil
}

// SetRefs gives every live document the Ref refs maps its ID to, in one
// new snapshot (searches see all new Refs or none); deleted documents
// keep theirs. It is meant for callers that change what their numbers
// mean (the engine migrating a snapshot written before Refs existed).
// Every live ID must be in refs; otherwise it returns an error wrapping
// ErrBadDoc and changes nothing.
func (ix *Index) SetRefs(refs map[string]uint32) error {
	return ix.relabel(func(ns *snapshot, id string, num uint32) error {
		ref, ok := refs[id]
		if !ok {
			return fmt.Errorf("set refs: %w: no Ref for %q", ErrBadDoc, id)
		}
		ns.refs[num] = ref
		return nil
	}, func() {})
}
