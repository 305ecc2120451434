package engine

import (
	"math"

	"github.com/hybrank/hybrank/simd"
)

// similarity is the MMR redundancy measure between two candidates: cosine of
// their embeddings when both have one, otherwise the Jaccard index of their
// analyzed term sets (record.termSet: term hashes, sorted and unique).
func similarity(a, b *candidate) float64 {
	if a.rec == nil || b.rec == nil {
		return 0
	}
	if va, vb := a.rec.vec, b.rec.vec; len(va) > 0 && len(va) == len(vb) {
		return simd.Cosine(va, vb)
	}
	return jaccard(a.rec.termSet, b.rec.termSet)
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted, duplicate-free slices; two
// empty sets have similarity 0.
func jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// mmr selects up to k of cands (ordered best first, with relevances rel in
// [0, 1]) by maximal marginal relevance and returns them in selection order:
// each step takes argmax λ·rel(d) − (1−λ)·max_{s∈selected} sim(d, s), ties to
// the earlier candidate. λ = 1 reproduces the input order.
func mmr(cands []*candidate, rel []float64, k int, lambda float64) []*candidate {
	if k > len(cands) {
		k = len(cands)
	}
	maxSim := make([]float64, len(cands)) // max similarity to the selected set
	taken := make([]bool, len(cands))
	out := make([]*candidate, 0, k)
	for len(out) < k {
		best, bestScore := -1, math.Inf(-1)
		for i := range cands {
			if taken[i] {
				continue
			}
			s := lambda*rel[i] - (1-lambda)*maxSim[i]
			if s > bestScore {
				best, bestScore = i, s
			}
		}
		taken[best] = true
		out = append(out, cands[best])
		for i := range cands {
			if !taken[i] {
				maxSim[i] = math.Max(maxSim[i], similarity(cands[i], cands[best]))
			}
		}
	}
	return out
}

// relevance maps a final-ordered list (reranked tier first, then unreranked)
// to MMR relevances in [0, 1] that respect the tiers: when some candidates
// are reranked, their min-max normalised rerank scores land in [0.5, 1] and
// the rest's normalised fused scores in [0, 0.5]; otherwise the normalised
// fused scores span [0, 1].
func relevance(cands []*candidate) []float64 {
	rel := make([]float64, len(cands))
	split := 0
	for split < len(cands) && cands[split].reranked {
		split++
	}
	norm := func(part []*candidate, score func(*candidate) float64, lo, hi float64, dst []float64) {
		list := make([]scored, len(part))
		for i, c := range part {
			list[i] = scored{c.id, score(c)}
		}
		for i, v := range minMax(list) {
			dst[i] = lo + v*(hi-lo)
		}
	}
	fused := func(c *candidate) float64 { return c.fused }
	if split == 0 {
		norm(cands, fused, 0, 1, rel)
		return rel
	}
	norm(cands[:split], func(c *candidate) float64 { return c.rerank }, 0.5, 1, rel[:split])
	norm(cands[split:], fused, 0, 0.5, rel[split:])
	return rel
}
