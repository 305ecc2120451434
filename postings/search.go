package postings

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// Query is one search request. Terms are analysed terms; a term repeated n
// times weighs n times (as in bm25s, which sums the score of each query
// token). K is the number of hits wanted (0 returns none). Exhaustive
// forces scoring every posting instead of MaxScore pruning; the results are
// identical (pruning is only tried where a cost model expects it to pay).
//
// Allow, when not nil, is the allow-list of the search: the Doc.Refs a hit
// may have. Documents whose Ref it lacks are never returned, however many
// hits K asks for. nil allows every document. The bitmap is read during
// the search only (not retained) and must not change meanwhile.
type Query struct {
	Terms      []string
	K          int
	Allow      *roaring.Bitmap
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
	it      postingIter
	buf     [1024]uint32
	terms   []qterm
	rem     []float64
	acc     []float32
	cand    []bool   // continue-mode candidates
	mark    []bool   // sparse mode: already in touched
	touched []uint32 // sparse mode: doc nums with a contribution
	remPost []int    // postings of terms i.. (pruning cost gate)
	polled  int      // postings since ctx was last polled
	gate    int      // Index.pruneGate of the current search
	keys    []uint64 // sort keys of the hits
	keys2   []uint64 // radix sort scratch
	vvals   []uint32 // vector gather output: score bits
	vdocs   []uint32 // vector gather output: doc nums
	maxima  []uint32 // block maxima (float bits) for top-k selection
	tids    []uint32 // the query's term ids (MaxUint32: unknown)
	cands   []uint32 // candidates in continue mode (touched order)
	// Counters of the last search, for white-box tests: terms handled in
	// continue mode by scanning and by probing.
	scanned, probed int
	vals            []float32
	top             topK
}

// topK holds the selected hits of one search: k, and at least the top k
// items (with any ties of the k-th score) once the search is done.
type topK struct {
	k     int
	items []scored
	ids   []string // doc num → external ID, for ties
}

type scored struct {
	score float32
	doc   uint32
}

func (h *topK) reset(k int, ids []string) { h.k = k; h.items = h.items[:0]; h.ids = ids }

// Search returns the top Query.K documents by BM25 score, best first, ties
// by ascending external ID. For BM25L and BM25+ the ranking is made before
// the variant's per-query constant is added to every score, in float32:
// two scores one rounding step apart can come out equal and keep the order
// of their scores before the addition (and a cut at K follows that order),
// not the ID order. Documents
// that match no query term, deleted documents and (with an allow-list)
// documents outside Query.Allow are never returned. Safe for concurrent use; it reads
// one atomic snapshot (View().Search). ctx is polled about every 1024
// postings.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	return ix.View().Search(ctx, q)
}

// View is one published state of an Index: immutable, searchable without
// locks while commits build later states. Callers that search several
// indexes as one keep a View of each. A View is safe for concurrent use.
type View struct {
	ix *Index
	s  *snapshot
}

// View returns the current state.
func (ix *Index) View() *View { return &View{ix: ix, s: ix.cur.Load()} }

// Docs returns the number of live documents in v.
func (v *View) Docs() int { return v.s.liveDocs }

// Search is Index.Search on v's state.
func (v *View) Search(ctx context.Context, q Query) ([]Hit, error) {
	if q.K < 0 {
		return nil, fmt.Errorf("search: %w: k %d < 0", ErrBadQuery, q.K)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix, s := v.ix, v.s
	if q.K == 0 || len(q.Terms) == 0 || s.liveDocs == 0 {
		return nil, nil
	}
	if q.Allow != nil && q.Allow.IsEmpty() {
		return nil, nil
	}
	sc, _ := ix.scratch.Get().(*searchScratch)
	if sc == nil {
		sc = &searchScratch{}
	}
	defer func() {
		sc.top.ids = nil // do not pin the snapshot's tables from the pool
		ix.scratch.Put(sc)
	}()
	constant := s.prepare(sc, q.Terms)
	if len(sc.terms) == 0 {
		return nil, nil
	}
	k := min(q.K, s.liveDocs)
	sc.top.reset(k, s.docIDs)
	sc.gate = ix.pruneGate
	var err error
	err = s.search(ctx, sc, q.Allow, k, !q.Exhaustive)
	if err != nil {
		return nil, err
	}
	items := sc.top.items
	s.sortHits(sc, items)
	items = items[:min(len(items), k)]
	hits := make([]Hit, len(items))
	for i, it := range items {
		hits[i] = Hit{ID: s.docIDs[it.doc], Score: it.score + constant}
	}
	return hits, nil
}

// sortHits sorts items best first: descending score, ties by ascending
// external ID. Scores are > 0, so descending score is ascending inverted
// float bits: the items sort as packed uint64 keys, and only runs of equal
// scores need the ID comparison.
func (s *snapshot) sortHits(sc *searchScratch, items []scored) {
	keys := sc.keys[:0]
	for _, it := range items {
		keys = append(keys, uint64(^math.Float32bits(it.score))<<32|uint64(it.doc))
	}
	if len(keys) >= radixMin {
		sc.keys2 = radixSortHigh32(keys, sc.keys2)
	} else {
		slices.Sort(keys)
	}
	sc.keys = keys
	for i, key := range keys {
		items[i] = scored{score: math.Float32frombits(^uint32(key >> 32)), doc: uint32(key)}
	}
	ids := s.docIDs
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].score == items[i].score {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(items[i:j], func(a, b scored) int { return strings.Compare(ids[a.doc], ids[b.doc]) })
		}
		i = j
	}
}

// radixMin is the number of hits from which sortHits bucket-sorts (below
// it, a comparison sort is cheaper than the counting pass).
const radixMin = 48

// radixSortHigh32 sorts keys ascending: one counting pass into 256
// buckets linear in the high 32 bits between their min and max (the hits'
// scores span a narrow range), then an insertion sort, which finds the
// keys nearly sorted (only keys of one bucket are out of order) and has
// predictable branches, unlike a comparison sort from scratch. tmp is
// scratch, returned grown.
func radixSortHigh32(keys, tmp []uint64) []uint64 {
	const nb = 256
	tmp = slices.Grow(tmp[:0], len(keys))[:len(keys)]
	if len(keys) < 2 {
		return tmp
	}
	lo, hi := uint32(keys[0]>>32), uint32(keys[0]>>32)
	for _, k := range keys {
		h := uint32(k >> 32)
		lo, hi = min(lo, h), max(hi, h)
	}
	// b = (h-lo)·mul >> 32 < nb for h-lo ≤ hi-lo, and monotone in h.
	mul := (uint64(nb) << 32) / (uint64(hi-lo) + 1)
	var cnt [nb]int32
	for _, k := range keys {
		cnt[(uint64(uint32(k>>32)-lo)*mul>>32)&(nb-1)]++
	}
	sum := int32(0)
	for i, c := range cnt {
		cnt[i] = sum
		sum += c
	}
	for _, k := range keys {
		b := (uint64(uint32(k>>32)-lo) * mul >> 32) & (nb - 1)
		tmp[cnt[b]] = k
		cnt[b]++
	}
	for i := 1; i < len(tmp); i++ {
		k := tmp[i]
		j := i
		for j > 0 && tmp[j-1] > k {
			tmp[j] = tmp[j-1]
			j--
		}
		tmp[j] = k
	}
	copy(keys, tmp)
	return tmp
}

// allows reports whether allow (nil: every document) admits doc num d.
func (s *snapshot) allows(allow *roaring.Bitmap, d uint32) bool {
	return allow == nil || allow.Contains(s.refs[d])
}

// prepare resolves, de-duplicates and weighs the query terms into sc.terms
// sorted by descending upper bound (ties by term id): the canonical
// term-at-a-time order of both search paths, so that they sum every
// document's contributions in the same order and get bit-identical scores.
// It returns the constant that bm25l/bm25+ add to every document.
func (s *snapshot) prepare(sc *searchScratch, terms []string) float32 {
	sc.terms = sc.terms[:0]
	var constant float32
	// Resolve every term under one read lock of the dictionary.
	tids := sc.tids[:0]
	s.dict.mu.RLock()
	for _, t := range terms {
		tid, ok := s.dict.ids[t]
		if !ok {
			tid = math.MaxUint32
		}
		tids = append(tids, tid)
	}
	s.dict.mu.RUnlock()
	sc.tids = tids
	for _, tid := range tids {
		tp := s.terms.get(tid)
		if tp == nil {
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
		df := len(tp.tf)
		if s.deadBM != nil {
			df -= tp.deadCount(s.deadBM)
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
	tfcTab      []float64
}

func (s *snapshot) kernel(t *qterm) kernel {
	return kernel{kind: s.sc.kind, fast: s.sc.kind == kLucene || s.sc.kind == kRobertson, k1: s.sc.k1, dlta: s.sc.dlta, idf: t.tw.idf, nonOcc: t.tw.nonOcc,
		w: t.w, tfs: t.tp.tf, tp: t.tp, docLen: s.docLen, normTab: s.normTab, tfcTab: s.tfcTab}
}

// slowTfc handles overflowed frequencies and the variants other than
// lucene/robertson (kept out of score so that score inlines).
func (k *kernel) slowTfc(pos int, tfi uint32, nb float64) float64 {
	if tfi == 255 {
		tfi = k.tp.bigAt(pos)
	}
	return kernelTfc(k.kind, k.k1, k.dlta, float64(tfi), nb)
}

// kernelTfc is the tf component of the search kernel for tf ≥ 1 and
// nb > 0: scorer.tfc's formulas in the same operation order, with explicit
// float64 conversions against fused multiply-adds. The tf-component table
// (snapshot.tfcTab) is filled by it, so tabled and computed postings round
// alike.
func kernelTfc(kind variantKind, k1, dlta, tf, nb float64) float64 {
	switch kind {
	case kATIRE:
		return (tf * (k1 + 1)) / (tf + float64(k1*nb))
	case kBM25L:
		c := tf / nb
		return ((k1 + 1) * (c + dlta)) / (k1 + c + dlta)
	case kBM25Plus:
		return ((k1 + 1) * tf / (float64(k1*nb) + tf)) + dlta
	default:
		return tf / (float64(k1*nb) + tf)
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
// Bounds carry a relative slack covering float32 rounding, and θ is
// lowered by the rounding of the sums still to be added, so pruning never
// drops a document that exhaustive scoring would rank.
//
// Deleted documents are scored like live ones (keeping the per-posting
// loop free of the check) and dropped when θ, the candidates and the hits
// are taken. When the query's postings are many compared with the number
// of doc nums ("dense"), touched documents are not tracked per posting:
// the accumulator is scanned once at the end instead.
func (s *snapshot) search(ctx context.Context, sc *searchScratch, allow *roaring.Bitmap, k int, prune bool) error {
	terms := sc.terms
	n := len(terms)
	nd := int(s.numDocs)
	sc.rem = append(sc.rem[:0], make([]float64, n+1)...)
	sc.remPost = append(sc.remPost[:0], make([]int, n+1)...)
	for i := n - 1; i >= 0; i-- {
		sc.rem[i] = sc.rem[i+1] + terms[i].ub
		sc.remPost[i] = sc.remPost[i+1] + len(terms[i].tp.tf)
	}
	dense := nd <= denseFactor*sc.remPost[0]
	if cap(sc.acc) < padded(nd) {
		// Zero past nd up to a multiple of accPad, for the vector scans
		// (the whole accumulator is zero between searches).
		sc.acc = make([]float32, padded(nd))
		sc.cand = make([]bool, padded(nd))
		sc.mark = make([]bool, padded(nd))
	}
	acc, cand, mark := sc.acc[:nd], sc.cand[:nd], sc.mark[:nd]
	sc.touched = sc.touched[:0]
	sc.cands = sc.cands[:0]
	sc.scanned, sc.probed = 0, 0
	sc.polled = 0
	slack := 1 + float64(n+8)*1.2e-7
	continuing := false
	processed, triedAt := 0.0, 0.0
	theta := 0.0
	// below is θ lowered by the rounding of the float32 sum itself: each
	// of the (at most n) additions still to come may round up by half an
	// ulp of the sum, so a partial score short of θ by less than that can
	// end on θ (and win the tie by id) or above it.
	below := func() float64 { return theta * (1 - float64(n+2)*1.2e-7) }
	var err error
	for i := range terms {
		t := &terms[i]
		kn := s.kernel(t)
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
			r, lo := sc.rem[i]*slack, below()
			kept := sc.cands[:0]
			for _, d := range sc.cands {
				if float64(acc[d])+r >= lo {
					kept = append(kept, d)
				} else {
					cand[d] = false
				}
			}
			sc.cands = kept
			if len(kept)*32 < len(kn.tfs) {
				sc.probed++
				for _, d := range kept {
					if pos, ok := t.tp.find(d); ok {
						acc[d] += kn.score(pos, d)
					}
				}
			} else {
				sc.scanned++
				err = sc.scoreList(ctx, &kn, acc, cand, nil)
			}
		} else if dense {
			err = sc.scoreList(ctx, &kn, acc, nil, nil)
		} else {
			err = sc.scoreList(ctx, &kn, acc, nil, mark)
		}
		if err != nil {
			break
		}
		processed += t.ub
		r := sc.rem[i+1]
		// θ can have grown since the last try by at most the bounds
		// processed since: only try when that could be enough, and only
		// when the postings left are many enough to pay for the try.
		if prune && !continuing && i+1 < n && r*slack < theta+(processed-triedAt) &&
			sc.remPost[i+1] >= sc.gate*s.tryCost(sc, dense, k) {
			triedAt = processed
			theta = s.kthLowerBound(sc, acc, allow, k, dense)
			if lo := below(); r*slack < lo {
				continuing = true
				sc.cands = sc.cands[:0]
				add := func(d uint32, v float32) {
					if v > 0 && float64(v)+r*slack >= lo && !s.isDead(d) && s.allows(allow, d) {
						cand[d] = true
						sc.cands = append(sc.cands, d)
					}
				}
				if dense {
					for d, v := range acc {
						add(uint32(d), v)
					}
				} else {
					for _, d := range sc.touched {
						add(d, acc[d])
					}
				}
				if len(sc.cands)*candRatio > sc.remPost[i+1] {
					// Too many candidates: filtering the remaining lists
					// by them would cost about what scoring them does.
					// Stay exhaustive (a later try may find θ higher).
					for _, d := range sc.cands {
						cand[d] = false
					}
					sc.cands = sc.cands[:0]
					continuing = false
				}
			}
		}
	}
	if err == nil {
		switch {
		case continuing:
			sel := sc.top.items[:0]
			for _, d := range sc.cands {
				sel = append(sel, scored{score: acc[d], doc: d})
			}
			sc.top.items, sc.maxima = selectTop(sel, k, sc.maxima)
		case dense:
			sc.collect(s, acc, allow, nil)
		default:
			sc.collect(s, acc, allow, sc.touched)
		}
	}
	for _, d := range sc.cands {
		cand[d] = false
	}
	sc.cands = sc.cands[:0]
	if dense {
		clear(acc)
	} else {
		for _, d := range sc.touched {
			acc[d] = 0
			mark[d] = false
		}
	}
	return err
}

const (
	// denseFactor: a query is dense when numDocs ≤ denseFactor × its
	// postings; then the accumulator is scanned instead of tracking
	// touched documents.
	denseFactor = 4
	// defaultPruneGate: a θ attempt is made only when the postings left
	// are at least this × its cost in documents visited (Index.pruneGate).
	defaultPruneGate = 2
	// candRatio: continue mode is entered only with at most 1/candRatio
	// candidates per remaining posting.
	candRatio = 8
)

// tryCost estimates the cost of a θ attempt and of the switch to continue
// mode, in postings scored: dense, two passes over the accumulator (block
// maxima, candidates); sparse, a visit of the touched documents.
func (s *snapshot) tryCost(sc *searchScratch, dense bool, k int) int {
	if dense {
		return 2 * int(s.numDocs)
	}
	return len(sc.touched) + 8*k
}

// collect selects into sc.top.items the best hits among the documents in
// docs (all doc nums when docs is nil): at least min(k, hits) of them,
// including every hit that scores at least the k-th score, so that sorting
// them and keeping k gives exactly the top k. Zero scores, deleted and
// documents outside the allow-list are skipped.
func (sc *searchScratch) collect(s *snapshot, acc []float32, allow *roaring.Bitmap, docs []uint32) {
	k := sc.top.k
	sel := sc.top.items[:0]
	if docs == nil {
		// Dense: without deletes and allow-list, every positive accumulator is
		// a hit, so the k-th largest block maximum is a lower bound of the
		// k-th score, and only the blocks whose maximum reaches it are
		// scanned again. With deletes or an allow-list, lb stays 0 (every
		// positive entry is gathered).
		lb := float32(0)
		bs := topBlock(len(acc), k)
		if hasAVX512 && s.dead == nil && allow == nil {
			// Strided blocks (16 per 256 entries) in vector loops: a
			// vertical max per group, then one compress pass over acc.
			accP := acc[:padded(len(acc))]
			if len(accP)/16 >= k {
				sc.maxima = groupMaxima(accP, sc.maxima)
				lb = math.Float32frombits(kthLowerU32(sc.maxima, k))
			}
			t := int32(max(math.Float32bits(lb), 1)) // lb ≥ 0; 1: positive only
			sel, sc.vvals, sc.vdocs = gatherVec(sel, accP, t, sc.vvals, sc.vdocs)
		} else if s.dead == nil && allow == nil && bs > 0 {
			lb, sc.maxima = blockMaxLowerBound(acc, k, sc.maxima)
			sel = gatherBlocks(sel, acc, sc.maxima, bs, lb)
		} else {
			sel = gatherAtLeast(sel, acc, math.SmallestNonzeroFloat32)
		}
	} else {
		for _, d := range docs {
			if v := acc[d]; v > 0 {
				sel = append(sel, scored{score: v, doc: d})
			}
		}
	}
	if s.dead != nil || allow != nil {
		kept := sel[:0]
		for _, x := range sel {
			if !s.isDead(x.doc) && s.allows(allow, x.doc) {
				kept = append(kept, x)
			}
		}
		sel = kept
	}
	sc.top.items, sc.maxima = selectTop(sel, k, sc.maxima)
}

// gatherAtLeast appends to sel the entries of acc that are ≥ lb (a leaf
// loop: the caller's live values stay out of its registers).
//
//go:noinline
func gatherAtLeast(sel []scored, acc []float32, lb float32) []scored {
	for d, v := range acc {
		if v >= lb {
			sel = append(sel, scored{score: v, doc: uint32(d)})
		}
	}
	return sel
}

// accPad: the accumulator's length is rounded up to a multiple of accPad
// (zeros past the doc nums), so the vector scans have no tail.
const accPad = 256

func padded(n int) int { return (n + accPad - 1) / accPad * accPad }

// topBlock is the block size of the dense block-maxima bound for n
// accumulator entries and k hits: 16 when that gives at least 2k blocks,
// 4 when it gives at least k, else 0 (no bound).
func topBlock(n, k int) int {
	switch {
	case n >= 32*k:
		return 16
	case n >= 4*k:
		return 4
	}
	return 0
}

// int32Bits views acc's float bits as int32s, which order non-negative
// floats like the floats and put negative ones below them.
func int32Bits(acc []float32) []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(acc))), len(acc))
}

// blockMaxLowerBound returns a lower bound of the k-th largest entry of
// acc — the k-th largest of the maxima of its blocks of topBlock entries
// (k distinct entries reach it) — and the maxima (as max(0, block max)
// float bits, for gatherBlocks). A result of 0 is no bound.
func blockMaxLowerBound(acc []float32, k int, maxima []uint32) (float32, []uint32) {
	bs := topBlock(len(acc), k)
	if bs == 0 {
		return 0, maxima
	}
	maxima = blockMaxima(int32Bits(acc), bs, maxima)
	return math.Float32frombits(kthLowerU32(maxima, k)), maxima
}

// blockMaxima sets maxima to max(0, max of each block of bs entries of
// bits) (the last block may be shorter). Blocks of 16 take an unrolled
// loop of four independent chains without bounds checks.
func blockMaxima(bits []int32, bs int, maxima []uint32) []uint32 {
	nb := (len(bits) + bs - 1) / bs
	maxima = slices.Grow(maxima[:0], nb)[:nb]
	i := 0
	if bs == 16 {
		for ; len(bits) >= 16 && i < len(maxima); i++ {
			b := bits[:16:16]
			m0 := max(b[0], b[4], b[8], b[12])
			m1 := max(b[1], b[5], b[9], b[13])
			m2 := max(b[2], b[6], b[10], b[14])
			m3 := max(b[3], b[7], b[11], b[15])
			maxima[i] = uint32(max(max(m0, m1), max(m2, m3), 0))
			bits = bits[16:]
		}
	}
	for ; len(bits) > 0 && i < len(maxima); i++ {
		b := bits[:min(bs, len(bits))]
		maxima[i] = uint32(maxInt32(b))
		bits = bits[len(b):]
	}
	return maxima
}

// gatherBlocks appends to sel the positive entries of acc that are ≥ lb,
// visiting only the blocks (of bs ≤ 16 entries, maxima from blockMaxima)
// whose maximum reaches lb. Both loops are branch-free (a conditional
// increment of the output length): which entries pass is unpredictable.
//
//go:noinline
func gatherBlocks(sel []scored, acc []float32, maxima []uint32, bs int, lb float32) []scored {
	t := int32(max(math.Float32bits(lb), 1)) // lb ≥ 0; 1: positive only
	bits := int32Bits(acc)
	// The blocks reaching t, compacted in place into the front of maxima's
	// spare room would alias it: use a small stack buffer per 256 blocks.
	var blocks [256]uint32
	for base := 0; base < len(maxima); base += len(blocks) {
		nbk := 0
		for b, m := range maxima[base:min(base+len(blocks), len(maxima))] {
			blocks[nbk&255] = uint32(base + b)
			if int32(m) >= t {
				nbk++
			}
		}
		for _, b := range blocks[:nbk] {
			lo := int(b) * bs
			blk := bits[lo:min(lo+bs, len(bits))]
			n := len(sel)
			sel = slices.Grow(sel, len(blk))[:n+len(blk)]
			out := sel[n:]
			m := 0
			for j, v := range blk {
				out[m] = scored{score: math.Float32frombits(uint32(v)), doc: uint32(lo + j)}
				if v >= t {
					m++
				}
			}
			sel = sel[:n+m]
		}
	}
	return sel
}

// maxInt32 is max(0, max(b)), in a loop with two independent chains and
// no bounds checks.
func maxInt32(b []int32) int32 {
	m0, m1 := int32(0), int32(0)
	for len(b) >= 2 {
		m0 = max(m0, b[0])
		m1 = max(m1, b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		m0 = max(m0, b[0])
	}
	return max(m0, m1)
}

// selectTop returns items of sel (reordered in place) including every one
// whose score is at least the k-th largest score (the top k and any ties
// of the k-th), and at least min(k, len(sel)) of them; up to 2k (or the
// ties) may remain: sorting a few more costs less than another round. Scores here are > 0, so their bits order like them. It filters
// by the bucketed lower bound of the k-th score (predictable branches,
// unlike a quickselect) until at most 2k remain or a round gains nothing.
// keys is scratch.
func selectTop(sel []scored, k int, keys []uint32) ([]scored, []uint32) {
	for len(sel) > 2*k {
		keys = keys[:0]
		for _, x := range sel {
			keys = append(keys, math.Float32bits(x.score))
		}
		lb := math.Float32frombits(kthLowerU32(keys, k))
		kept := sel[:0]
		for _, x := range sel {
			if x.score >= lb {
				kept = append(kept, x)
			}
		}
		done := len(kept) <= 2*k || len(kept) == len(sel)
		sel = kept
		if done {
			break
		}
	}
	return sel, keys
}

// kthLowerU32 returns a value v of vals (bits of non-negative float32s)
// such that at least k values are ≥ v, and v ≤ the k-th largest value (a
// lower bound of it, nearly tight). It buckets the values linearly (as
// floats) between their min and max and walks the buckets from the top:
// predictable branches, unlike a quickselect. Bucket indexes are monotone
// in the value, so every value of a higher bucket exceeds every value of a
// lower one, and the smallest value of the bucket where the count reaches
// k is the bound. Requires len(vals) ≥ k ≥ 1.
func kthLowerU32(vals []uint32, k int) uint32 {
	const nb = 64
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return lo
	}
	flo := float64(math.Float32frombits(lo))
	scale := float64(nb) / (float64(math.Float32frombits(hi)) - flo)
	var cnt [nb + 1]int32
	var bmin [nb + 1]uint32
	for i := range bmin {
		bmin[i] = math.MaxUint32
	}
	for _, v := range vals {
		b := min(uint(int((float64(math.Float32frombits(v))-flo)*scale)), nb)
		cnt[b]++
		bmin[b] = min(bmin[b], v)
	}
	n := int32(0)
	for b := nb; b >= 0; b-- {
		if n += cnt[b]; int(n) >= k {
			return bmin[b]
		}
	}
	return lo
}

// scoreList adds one term's contributions to acc. With cand non-nil only
// candidates are scored; with mark non-nil newly touched documents are
// appended to sc.touched. ctx is polled about every 1024 postings.
func (sc *searchScratch) scoreList(ctx context.Context, kn *kernel, acc []float32, cand, mark []bool) error {
	it := &sc.it
	it.init(kn.tp)
	tfs, docLen := kn.tfs, kn.docLen
	tab, idf, nonOcc, w := kn.tfcTab, kn.idf, kn.nonOcc, kn.w
	pos := 0
	for {
		docs := it.next(sc.buf[:])
		m := len(docs)
		if m == 0 {
			return nil
		}
		if sc.polled += m; sc.polled >= 1024 {
			sc.polled = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tf := tfs[pos : pos+m]
		switch {
		case cand != nil:
			for j := 0; ; j++ {
				j += addTabledCand(acc, docs[j:], tf[j:], docLen, tab, cand, idf, nonOcc, w)
				if j >= len(docs) {
					break
				}
				acc[docs[j]] += kn.score(pos+j, docs[j])
			}
		case hasAVX512:
			// Groups of 8 tabled postings in the vector kernel; a group
			// with another posting in the Go loop, the others one by one.
			for j := 0; j < len(docs); {
				j += addTabledVec(acc, docs[j:], tf[j:], docLen, tab, idf, nonOcc, w)
				e := min(j+8, len(docs))
				j += addTabled(acc, docs[j:e], tf[j:e], docLen, tab, idf, nonOcc, w)
				if j < e {
					acc[docs[j]] += kn.score(pos+j, docs[j])
					j++
				}
			}
			if mark != nil {
				sc.markTouched(docs, mark)
			}
		default:
			// The tabled postings in a call-free loop; the few others
			// (frequency ≥ tfcTabTF, long documents, overflow) one by one.
			for j := 0; ; j++ {
				j += addTabled(acc, docs[j:], tf[j:], docLen, tab, idf, nonOcc, w)
				if j >= len(docs) {
					break
				}
				acc[docs[j]] += kn.score(pos+j, docs[j])
			}
			if mark != nil {
				sc.markTouched(docs, mark)
			}
		}
		pos += m
	}
}

// markTouched appends to sc.touched the docs not yet marked, marking them.
func (sc *searchScratch) markTouched(docs []uint32, mark []bool) {
	for _, d := range docs {
		if !mark[d] {
			mark[d] = true
			sc.touched = append(sc.touched, d)
		}
	}
}

// addTabled adds the contributions of a block of postings whose tf
// component is in the table, stopping at the first one that is not; it
// returns how many it added. kernel.score's arithmetic, written out in a
// leaf loop that keeps everything in registers (not inlined, so that the
// caller's register pressure does not spill it).
//
//go:noinline
func addTabled(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int {
	tf = tf[:len(docs)]
	for j, d := range docs {
		t := uint(tf[j])
		i := uint(docLen[d])<<tfcTabShift | t
		if t >= tfcTabTF || i >= uint(len(tab)) {
			return j
		}
		acc[d] += float32(w * float32(idf*tab[i]-nonOcc))
	}
	return len(docs)
}

// addTabledCand is addTabled for the candidates only (cand[d]); it stops
// at the first candidate whose tf component is not in the table.
//
//go:noinline
func addTabledCand(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, cand []bool, idf, nonOcc float64, w float32) int {
	tf = tf[:len(docs)]
	for j, d := range docs {
		if !cand[d] {
			continue
		}
		t := uint(tf[j])
		i := uint(docLen[d])<<tfcTabShift | t
		if t >= tfcTabTF || i >= uint(len(tab)) {
			return j
		}
		acc[d] += float32(w * float32(idf*tab[i]-nonOcc))
	}
	return len(docs)
}

// kthLowerBound returns a lower bound of the final k-th score: the k-th
// largest partial score among (at most 8k of) the touched live documents
// that pass the allow-list, or 0 if fewer than k do (any subset gives a valid
// bound), or, dense without deletes and allow-list, the block-maxima bound
// over all documents.
func (s *snapshot) kthLowerBound(sc *searchScratch, acc []float32, allow *roaring.Bitmap, k int, dense bool) float64 {
	if hasAVX512 && dense && s.dead == nil && allow == nil && padded(len(acc))/16 >= k {
		sc.maxima = groupMaxima(acc[:padded(len(acc))], sc.maxima)
		return float64(math.Float32frombits(kthLowerU32(sc.maxima, k)))
	}
	if dense && s.dead == nil && allow == nil && len(acc) >= 4*k {
		// Every positive partial score is a candidate: the block-maxima
		// bound over all of them.
		var lb float32
		lb, sc.maxima = blockMaxLowerBound(acc, k, sc.maxima)
		return float64(lb)
	}
	vals := sc.vals[:0]
	limit := 8 * k
	add := func(d uint32, v float32) bool {
		if v > 0 && !s.isDead(d) && s.allows(allow, d) {
			vals = append(vals, v)
		}
		return len(vals) < limit
	}
	if dense {
		for d, v := range acc {
			if v > 0 && !add(uint32(d), v) {
				break
			}
		}
	} else {
		for _, d := range sc.touched {
			if !add(d, acc[d]) {
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
