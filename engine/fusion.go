package engine

import (
	"math"
	"sort"
)

// scored is one retriever hit, in the retriever's rank order.
type scored struct {
	id    string
	score float64
}

// candidate is a document moving through the pipeline after fusion.
type candidate struct {
	id  string
	rec *record

	bm25Score, denseScore float64
	bm25Rank, denseRank   int // 1-based; 0 = absent

	fused     float64
	fusedRank int
	origin    Origin

	reranked bool
	rerank   float64
	// span is the best window of a chunked rerank (spanned set), in
	// Document.Text.
	spanned bool
	span    Span
	// first and firstScore are a cascade's first-stage score.
	first      bool
	firstScore float64
}

// minMax maps the scores of list to [0, 1] by (s − min)/(max − min). A list
// whose scores are all equal maps to 1 for every entry: each of them is the
// best that retriever found.
func minMax(list []scored) []float64 {
	out := make([]float64, len(list))
	if len(list) == 0 {
		return out
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range list {
		lo = math.Min(lo, s.score)
		hi = math.Max(hi, s.score)
	}
	for i, s := range list {
		if hi == lo {
			out[i] = 1
		} else {
			out[i] = (s.score - lo) / (hi - lo)
		}
	}
	return out
}

// fuse combines the BM25 and dense lists (each best first, IDs unique within
// a list) into one candidate list, best first.
//
//   - rrf: Σ over lists 1/(rrfK + rank), rank 1-based;
//   - weighted: (1−alpha)·minmax(bm25) + alpha·minmax(dense), a document
//     missing from a list contributes 0 for it;
//   - relative: minmax(bm25) + minmax(dense).
//
// Ties are broken by the rank in the dominant list (dense when the method is
// weighted with alpha > 0.5, BM25 otherwise), then the rank in the other list
// (absent counts as worst), then ID, so the order is deterministic and
// weighted fusion with alpha 0 (1) reproduces the BM25 (dense) order.
func fuse(method Fusion, bm25, dense []scored, rrfK, alpha float64) []*candidate {
	byID := make(map[string]*candidate, len(bm25)+len(dense))
	out := make([]*candidate, 0, len(bm25)+len(dense))
	get := func(id string) *candidate {
		c := byID[id]
		if c == nil {
			c = &candidate{id: id, origin: Origin{Kind: OriginRetrieved}}
			byID[id] = c
			out = append(out, c)
		}
		return c
	}
	bmNorm, dnNorm := minMax(bm25), minMax(dense)
	for i, s := range bm25 {
		c := get(s.id)
		c.bm25Score, c.bm25Rank = s.score, i+1
		switch method {
		case FusionWeighted:
			c.fused += (1 - alpha) * bmNorm[i]
		case FusionRelative:
			c.fused += bmNorm[i]
		default:
			c.fused += 1 / (rrfK + float64(i+1))
		}
	}
	for i, s := range dense {
		c := get(s.id)
		c.denseScore, c.denseRank = s.score, i+1
		switch method {
		case FusionWeighted:
			c.fused += alpha * dnNorm[i]
		case FusionRelative:
			c.fused += dnNorm[i]
		default:
			c.fused += 1 / (rrfK + float64(i+1))
		}
	}
	denseFirst := method == FusionWeighted && alpha > 0.5
	rank := func(r int) int {
		if r == 0 {
			return math.MaxInt
		}
		return r
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.fused != b.fused {
			return a.fused > b.fused
		}
		a1, a2, b1, b2 := rank(a.bm25Rank), rank(a.denseRank), rank(b.bm25Rank), rank(b.denseRank)
		if denseFirst {
			a1, a2, b1, b2 = a2, a1, b2, b1
		}
		if a1 != b1 {
			return a1 < b1
		}
		if a2 != b2 {
			return a2 < b2
		}
		return a.id < b.id
	})
	for i, c := range out {
		c.fusedRank = i + 1
	}
	return out
}
