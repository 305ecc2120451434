package postings

import (
	"cmp"
	"context"
	"fmt"
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
	tp  *termPostings
	tid uint32
	w   float32 // multiplicity in the query
	tw  termWeights
	ub  float64 // upper bound of this term's contribution to any document
}

type searchScratch struct {
	it      roaring.ManyIntIterator
	buf     [256]uint32
	terms   []qterm
	rem     []float64
	acc     []float32
	cand    []bool
	touched []uint32
	cands   []uint32 // candidates in continue mode (touched order)
	// Counters of the last search, for white-box tests: terms handled in
	// continue mode by scanning and by probing.
	scanned, probed int
	vals            []float32
	heap            topK
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
func (h *topK) full() bool                { return len(h.items) >= h.k }

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
// one atomic snapshot. ctx is polled about every 1024 postings.
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
	err = s.search(ctx, sc, filter, k, !q.Exhaustive)
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

// prepare resolves, de-duplicates and weighs the query terms into sc.terms
// sorted by descending upper bound (ties by term id): the canonical
// term-at-a-time order of both search paths, so that they sum every
// document's contributions in the same order and get bit-identical scores.
// It returns the constant that bm25l/bm25+ add to every document.
func (s *snapshot) prepare(sc *searchScratch, terms []string) float32 {
	sc.terms = sc.terms[:0]
	var constant float32
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
	}
	for i := range sc.terms {
		t := &sc.terms[i]
		t.ub = float64(t.w) * float64(float32(t.tw.idf*t.tp.maxTfc-t.tw.nonOcc))
	}
	slices.SortFunc(sc.terms, func(a, b qterm) int {
		if c := cmp.Compare(b.ub, a.ub); c != 0 {
			return c
		}
		return cmp.Compare(a.tid, b.tid)
	})
	return constant
}

// kernel scores the postings of one query term. Its formulas are
// scorer.tfc's, written out with the same operation order (tf ≥ 1 and
// norms > 0 here, so no zero guards are needed); explicit float32
// conversions forbid fused multiply-adds so every path rounds alike.
type kernel struct {
	kind        variantKind
	fast        bool // lucene or robertson: the inlined formula
	k1, dlta    float64
	idf, nonOcc float64
	w           float32
	tfs         []uint8
	tp          *termPostings
	docLen      []uint32
	normTab     []float64
}

func (s *snapshot) kernel(t *qterm) kernel {
	return kernel{kind: s.sc.kind, fast: s.sc.kind == kLucene || s.sc.kind == kRobertson, k1: s.sc.k1, dlta: s.sc.dlta, idf: t.tw.idf, nonOcc: t.tw.nonOcc,
		w: t.w, tfs: t.tp.tf, tp: t.tp, docLen: s.docLen, normTab: s.normTab}
}

// slowTfc handles overflowed frequencies and the variants other than
// lucene/robertson (kept out of score so that score inlines).
func (k *kernel) slowTfc(pos int, tfi uint32, nb float64) float64 {
	if tfi == 255 {
		tfi = k.tp.bigAt(pos)
	}
	tf := float64(tfi)
	switch k.kind {
	case kATIRE:
		return (tf * (k.k1 + 1)) / (tf + k.k1*nb)
	case kBM25L:
		c := tf / nb
		return ((k.k1 + 1) * (c + k.dlta)) / (k.k1 + c + k.dlta)
	case kBM25Plus:
		return ((k.k1 + 1) * tf / (k.k1*nb + tf)) + k.dlta
	default:
		return tf / (k.k1*nb + tf)
	}
}

// score is the weighted contribution of the posting at rank pos, doc d.
func (k *kernel) score(pos int, d uint32) float32 {
	tfi, nb := uint32(k.tfs[pos]), k.normTab[k.docLen[d]]
	var tfc float64
	if tfi < 255 && k.fast {
		tf := float64(tfi)
		tfc = tf / (float64(k.k1*nb) + tf)
	} else {
		tfc = k.slowTfc(pos, tfi, nb)
	}
	v := float32(k.idf*tfc - k.nonOcc)
	return float32(k.w * v)
}

// search runs term-at-a-time over a dense accumulator, terms in canonical
// order. With prune it is exact "quit/continue" MaxScore: once the bounds
// of the terms still to come (rem) fall below θ — a lower bound of the
// final k-th score, taken as the k-th best partial score of filtered live
// documents seen so far (contributions are ≥ 0, so partial scores only
// grow) — no unseen document can reach the top k, and neither can a seen
// one whose partial + rem < θ. The remaining lists are then only scanned
// for the surviving candidates, skipping the scoring of everything else.
// Bounds carry a relative slack covering float32 rounding, so pruning never
// drops a document that exhaustive scoring would rank.
func (s *snapshot) search(ctx context.Context, sc *searchScratch, filter *roaring.Bitmap, k int, prune bool) error {
	terms := sc.terms
	n := len(terms)
	sc.rem = append(sc.rem[:0], make([]float64, n+1)...)
	for i := n - 1; i >= 0; i-- {
		sc.rem[i] = sc.rem[i+1] + terms[i].ub
	}
	if cap(sc.acc) < int(s.numDocs) {
		sc.acc = make([]float32, s.numDocs)
		sc.cand = make([]bool, s.numDocs)
	}
	acc, cand := sc.acc[:s.numDocs], sc.cand[:s.numDocs]
	sc.touched = sc.touched[:0]
	sc.scanned, sc.probed = 0, 0
	slack := 1 + float64(n+8)*1.2e-7
	continuing := false
	processed, triedAt := 0.0, 0.0
	theta := 0.0
	var err error
	polled := 0
	for i := range terms {
		t := &terms[i]
		kn := s.kernel(t)
		fast, tfs, docLen, normTab := kn.fast, kn.tfs, s.docLen, s.normTab
		if continuing {
			// Tighten θ on the candidates' partial scores, drop those that
			// can no longer reach it, and probe long lists per candidate
			// instead of scanning them.
			if len(sc.cands) >= k {
				sc.vals = sc.vals[:0]
				for _, d := range sc.cands {
					sc.vals = append(sc.vals, acc[d])
				}
				theta = max(theta, float64(quickselectDesc(sc.vals, k-1)))
			}
			r := sc.rem[i] * slack
			kept := sc.cands[:0]
			for _, d := range sc.cands {
				if float64(acc[d])+r >= theta {
					kept = append(kept, d)
				} else {
					cand[d] = false
				}
			}
			sc.cands = kept
			if len(kept)*32 < len(tfs) {
				bm := t.tp.docs
				sc.probed++
				for _, d := range kept {
					if bm.Contains(d) {
						acc[d] += kn.score(int(bm.Rank(d))-1, d)
					}
				}
				processed += t.ub
				continue
			}
		}
		if continuing {
			sc.scanned++
		}
		sc.it.Initialize(t.tp.docs)
		pos := 0
		for {
			m := sc.it.NextMany(sc.buf[:])
			if m == 0 {
				break
			}
			if polled += m; polled >= 1024 {
				polled = 0
				if err = ctx.Err(); err != nil {
					break
				}
			}
			docs := sc.buf[:m]
			if continuing {
				for j, d := range docs {
					if cand[d] {
						var c float32
						if tfi := uint32(tfs[pos+j]); fast && tfi < 255 {
							tf := float64(tfi)
							c = float32(kn.w * float32(kn.idf*(tf/(float64(kn.k1*normTab[docLen[d]])+tf))-kn.nonOcc))
						} else {
							c = kn.score(pos+j, d)
						}
						acc[d] += c
					}
				}
			} else {
				for j, d := range docs {
					if s.dead != nil && s.isDead(d) {
						continue
					}
					var c float32
					if tfi := uint32(tfs[pos+j]); fast && tfi < 255 {
						// kernel.score's lucene/robertson path, inlined by hand.
						tf := float64(tfi)
						c = float32(kn.w * float32(kn.idf*(tf/(float64(kn.k1*normTab[docLen[d]])+tf))-kn.nonOcc))
					} else {
						c = kn.score(pos+j, d)
					}
					old := acc[d]
					nv := old + c
					acc[d] = nv
					if old == 0 && nv != 0 {
						sc.touched = append(sc.touched, d)
					}
				}
			}
			pos += m
		}
		if err != nil {
			break
		}
		processed += t.ub
		r := sc.rem[i+1]
		// θ can have grown since the last try by at most the bounds
		// processed since: only try when that could be enough.
		if prune && !continuing && i+1 < n && len(sc.touched) >= k && r*slack < theta+(processed-triedAt) {
			triedAt = processed
			theta = s.kthLowerBound(sc, acc, filter, k)
			if r*slack < theta {
				continuing = true
				sc.cands = sc.cands[:0]
				for _, d := range sc.touched {
					v := acc[d]
					if v > 0 && float64(v)+r*slack >= theta && (filter == nil || filter.Contains(d)) {
						cand[d] = true
						sc.cands = append(sc.cands, d)
					}
				}
			}
		}
	}
	for _, d := range sc.touched {
		v := acc[d]
		acc[d] = 0
		keep := cand[d]
		cand[d] = false
		if err != nil {
			continue
		}
		if continuing {
			if !keep {
				continue
			}
		} else if v <= 0 || (filter != nil && !filter.Contains(d)) {
			continue
		}
		sc.heap.push(scored{score: v, doc: d})
	}
	return err
}

// kthLowerBound returns the k-th largest partial score among (at most 8k
// of) the touched documents that pass the filter, or 0 if fewer than k do.
// Any subset gives a valid lower bound of the final k-th score.
func (s *snapshot) kthLowerBound(sc *searchScratch, acc []float32, filter *roaring.Bitmap, k int) float64 {
	vals := sc.vals[:0]
	limit := 8 * k
	for _, d := range sc.touched {
		if filter == nil || filter.Contains(d) {
			vals = append(vals, acc[d])
			if len(vals) >= limit {
				break
			}
		}
	}
	sc.vals = vals
	if len(vals) < k {
		return 0
	}
	return float64(quickselectDesc(vals, k-1))
}

// quickselectDesc returns the element that would be at index i if v were
// sorted in descending order (v is reordered).
func quickselectDesc(v []float32, i int) float32 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		p := v[lo+(hi-lo)/2]
		l, r := lo, hi
		for l <= r {
			for v[l] > p {
				l++
			}
			for v[r] < p {
				r--
			}
			if l <= r {
				v[l], v[r] = v[r], v[l]
				l++
				r--
			}
		}
		switch {
		case i <= r:
			hi = r
		case i >= l:
			lo = l
		default:
			return v[i]
		}
	}
	return v[i]
}
