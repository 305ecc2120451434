package postings

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// Filter restricts a search to documents of a tenant and with all the given
// metadata key=value pairs (equality, AND). Empty Tenant means any tenant. A
// nil *Filter means all documents.
type Filter struct {
	Tenant string
	Meta   map[string]string
}

// Query is one search request. Terms are analysed terms; a term repeated n
// times weighs n times (as in bm25s, which sums the score of each query
// token). K is the number of hits wanted (0 returns none). Exhaustive
// forces scoring every posting instead of MaxScore pruning; the results are
// identical, only slower.
type Query struct {
	Terms      []string
	K          int
	Filter     *Filter
	Exhaustive bool
}

// Hit is one result. Score is the bm25s score (float32).
type Hit struct {
	ID    string
	Score float32
}

// qterm is one distinct query term prepared for scoring.
type qterm struct {
	tp   *termPostings
	tid  uint32
	w    float32 // multiplicity in the query
	tw   termWeights
	ub   float64 // upper bound of this term's contribution
	docs []uint32
	pos  int
}

type searchScratch struct {
	it      roaring.ManyIntIterator
	terms   []qterm
	arena   []uint32
	cum     []float64
	contrib []float32
	present []bool
	acc     []float32
	touched []uint32
	heap    topK
}

// topK is a fixed-capacity min-heap of (score, doc): the root is the worst
// kept hit (lowest score, then highest doc num).
type topK struct {
	k     int
	items []scored
	ids   []string // doc num → external ID, for ties
}

type scored struct {
	score float32
	doc   uint32
}

// worse reports whether a ranks after b: lower score, or equal score and
// greater external ID.
func (h *topK) worse(a, b scored) bool {
	return a.score < b.score || (a.score == b.score && h.ids[a.doc] > h.ids[b.doc])
}

func (h *topK) reset(k int, ids []string) { h.k = k; h.items = h.items[:0]; h.ids = ids }
func (h *topK) full() bool  { return len(h.items) >= h.k }

// push offers a hit; it reports whether the kept set changed.
func (h *topK) push(x scored) bool {
	it := h.items
	if len(it) < h.k {
		it = append(it, x)
		i := len(it) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !h.worse(it[i], it[p]) {
				break
			}
			it[i], it[p] = it[p], it[i]
			i = p
		}
		h.items = it
		return true
	}
	if !h.worse(it[0], x) {
		return false
	}
	it[0] = x
	i, n := 0, len(it)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.worse(it[r], it[l]) {
			m = r
		}
		if !h.worse(it[m], it[i]) {
			break
		}
		it[i], it[m] = it[m], it[i]
		i = m
	}
	return true
}

// Search returns the top Query.K documents by BM25 score, best first, ties
// by ascending external ID. Documents
// that match no query term, deleted documents and (with a Filter) documents
// outside the filter are never returned. Safe for concurrent use; it reads
// one atomic snapshot. ctx is polled every 1024 candidates.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if q.K < 0 {
		return nil, fmt.Errorf("search: %w: k %d < 0", ErrBadQuery, q.K)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := ix.cur.Load()
	if q.K == 0 || len(q.Terms) == 0 || s.liveDocs == 0 {
		return nil, nil
	}
	var filter *roaring.Bitmap
	if q.Filter != nil {
		var ok bool
		if filter, ok = s.filterBitmap(q.Filter); !ok {
			return nil, nil
		}
	}
	sc, _ := ix.scratch.Get().(*searchScratch)
	if sc == nil {
		sc = &searchScratch{}
	}
	defer func() {
		sc.heap.ids = nil // do not pin the snapshot's tables from the pool
		ix.scratch.Put(sc)
	}()
	constant := s.prepare(sc, q.Terms)
	if len(sc.terms) == 0 {
		return nil, nil
	}
	k := min(q.K, s.liveDocs)
	sc.heap.reset(k, s.docIDs)
	var err error
	if q.Exhaustive {
		err = s.exhaustive(ctx, sc, filter)
	} else {
		err = s.maxScore(ctx, sc, filter)
	}
	if err != nil {
		return nil, err
	}
	items := sc.heap.items
	slices.SortFunc(items, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(s.docIDs[a.doc], s.docIDs[b.doc])
	})
	hits := make([]Hit, len(items))
	for i, it := range items {
		hits[i] = Hit{ID: s.docIDs[it.doc], Score: it.score + constant}
	}
	return hits, nil
}

// filterBitmap intersects the filter's bitmaps; ok is false when the filter
// can match nothing.
func (s *snapshot) filterBitmap(f *Filter) (*roaring.Bitmap, bool) {
	var parts []*roaring.Bitmap
	if f.Tenant != "" {
		bm := s.filters[tenantKey(f.Tenant)]
		if bm == nil {
			return nil, false
		}
		parts = append(parts, bm)
	}
	for k, v := range f.Meta {
		bm := s.filters[metaKey(k, v)]
		if bm == nil {
			return nil, false
		}
		parts = append(parts, bm)
	}
	switch len(parts) {
	case 0:
		return nil, true // empty filter: everything
	case 1:
		return parts[0], true
	}
	out := roaring.FastAnd(parts...)
	return out, !out.IsEmpty()
}

// prepare resolves, de-duplicates, weighs and decodes the query terms into
// sc.terms sorted by ascending upper bound (ties by term id) — the canonical
// summation order of both search paths. It returns the constant that
// bm25l/bm25+ add to every document.
func (s *snapshot) prepare(sc *searchScratch, terms []string) float32 {
	sc.terms = sc.terms[:0]
	var constant float32
	total := 0
	for _, t := range terms {
		tid, ok := s.dict.lookup(t)
		if !ok || int(tid) >= len(s.terms) || s.terms[tid] == nil {
			continue
		}
		dup := false
		for i := range sc.terms {
			if sc.terms[i].tid == tid {
				sc.terms[i].w++
				constant += float32(sc.terms[i].tw.nonOcc)
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		tp := s.terms[tid]
		df := len(tp.tf)
		if s.deadBM != nil {
			df -= int(tp.docs.AndCardinality(s.deadBM))
		}
		if df <= 0 {
			continue
		}
		tw := s.sc.weights(df, s.liveDocs)
		constant += float32(tw.nonOcc)
		sc.terms = append(sc.terms, qterm{tp: tp, tid: tid, w: 1, tw: tw})
		total += len(tp.tf)
	}
	for i := range sc.terms {
		t := &sc.terms[i]
		t.ub = float64(t.w) * float64(float32(t.tw.idf*t.tp.maxTfc-t.tw.nonOcc))
	}
	slices.SortFunc(sc.terms, func(a, b qterm) int {
		if c := cmp.Compare(a.ub, b.ub); c != 0 {
			return c
		}
		return cmp.Compare(a.tid, b.tid)
	})
	if cap(sc.arena) < total {
		sc.arena = make([]uint32, total+total/4)
	}
	arena := sc.arena[:total]
	off := 0
	for i := range sc.terms {
		t := &sc.terms[i]
		n := len(t.tp.tf)
		t.docs = arena[off : off+n : off+n]
		off += n
		sc.it.Initialize(t.tp.docs)
		for got := 0; got < n; {
			m := sc.it.NextMany(t.docs[got:])
			if m == 0 {
				break
			}
			got += m
		}
		t.pos = 0
	}
	return constant
}

// contribution is the weighted float32 score of posting pos of term t in doc
// d. The explicit conversions forbid fused multiply-adds so both search
// paths compute bit-identical values.
func (s *snapshot) contribution(t *qterm, pos int, d uint32) float32 {
	v := s.sc.posting(t.tw, t.tp.tfAt(pos), s.normB[d])
	return float32(t.w * v)
}

// exhaustive scores every posting term-at-a-time into a dense accumulator.
func (s *snapshot) exhaustive(ctx context.Context, sc *searchScratch, filter *roaring.Bitmap) error {
	if cap(sc.acc) < int(s.numDocs) {
		sc.acc = make([]float32, s.numDocs)
	}
	acc := sc.acc[:s.numDocs]
	sc.touched = sc.touched[:0]
	n := 0
	for i := range sc.terms {
		t := &sc.terms[i]
		for pos, d := range t.docs {
			if n++; n&1023 == 0 {
				if err := ctx.Err(); err != nil {
					for _, d := range sc.touched {
						acc[d] = 0
					}
					return err
				}
			}
			if s.dead != nil && s.isDead(d) {
				continue
			}
			old := acc[d]
			nv := old + s.contribution(t, pos, d)
			acc[d] = nv
			if old == 0 && nv != 0 {
				sc.touched = append(sc.touched, d)
			}
		}
	}
	for _, d := range sc.touched {
		v := acc[d]
		acc[d] = 0
		if v > 0 && (filter == nil || filter.Contains(d)) {
			sc.heap.push(scored{score: v, doc: d})
		}
	}
	return nil
}

// maxScore is document-at-a-time MaxScore: terms sorted by upper bound; the
// longest prefix whose bounds sum below the current threshold is
// "non-essential" and only probed (by galloping) for candidates coming from
// the essential lists, and only while the candidate can still reach the
// threshold. Bounds carry a relative slack covering float32 summation error
// so pruning never drops a document the exhaustive path would keep.
func (s *snapshot) maxScore(ctx context.Context, sc *searchScratch, filter *roaring.Bitmap) error {
	terms := sc.terms
	n := len(terms)
	sc.cum = sc.cum[:0]
	sum := 0.0
	for i := range terms {
		sum += terms[i].ub
		sc.cum = append(sc.cum, sum)
	}
	cum := sc.cum
	if cap(sc.contrib) < n {
		sc.contrib = make([]float32, n)
		sc.present = make([]bool, n)
	}
	contrib, present := sc.contrib[:n], sc.present[:n]
	slack := 1 + float64(n+8)*1.2e-7
	theta := 0.0 // scores must exceed 0; raised to the heap's worst once full
	e := 0       // terms[e:] are essential
	h := &sc.heap
	checked := 0
	for e < n {
		// Next candidate: smallest current doc among the essential lists.
		d := uint32(math.MaxUint32)
		for i := e; i < n; i++ {
			t := &terms[i]
			if t.pos < len(t.docs) && t.docs[t.pos] < d {
				d = t.docs[t.pos]
			}
		}
		if d == math.MaxUint32 {
			break
		}
		if checked++; checked&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		skip := (s.dead != nil && s.isDead(d)) || (filter != nil && !filter.Contains(d))
		partial := 0.0
		for i := e; i < n; i++ {
			t := &terms[i]
			present[i] = false
			if t.pos < len(t.docs) && t.docs[t.pos] == d {
				if !skip {
					c := s.contribution(t, t.pos, d)
					contrib[i], present[i] = c, true
					partial += float64(c)
				}
				t.pos++
			}
		}
		if skip {
			continue
		}
		for i := range e {
			present[i] = false
		}
		pruned := false
		for i := e - 1; i >= 0; i-- {
			if (partial+cum[i])*slack < theta {
				pruned = true
				break
			}
			t := &terms[i]
			t.pos = gallop(t.docs, t.pos, d)
			if t.pos < len(t.docs) && t.docs[t.pos] == d {
				c := s.contribution(t, t.pos, d)
				contrib[i], present[i] = c, true
				partial += float64(c)
			}
		}
		if pruned {
			continue
		}
		var score float32
		for i := range n {
			if present[i] {
				score += contrib[i]
			}
		}
		if score > 0 && h.push(scored{score: score, doc: d}) && h.full() {
			theta = float64(h.items[0].score)
			for e < n && cum[e]*slack < theta {
				e++
			}
		}
	}
	return nil
}

// gallop returns the first index ≥ from with docs[i] ≥ d (len(docs) if none).
func gallop(docs []uint32, from int, d uint32) int {
	if from >= len(docs) || docs[from] >= d {
		return from
	}
	step := 1
	lo, hi := from, from+1
	for hi < len(docs) && docs[hi] < d {
		lo = hi
		step <<= 1
		hi = from + step
	}
	if hi > len(docs) {
		hi = len(docs)
	}
	// docs[lo] < d, and docs[hi] ≥ d or hi == len.
	for lo+1 < hi {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < d {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}
