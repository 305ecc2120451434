package engine

import (
	"context"
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
// the earlier candidate. λ = 1 reproduces the input order. A step costs a
// similarity per remaining candidate, so k steps over thousands of
// candidates take a while: when ctx ends, the remaining places go to the
// remaining candidates in input order and cut is the number of steps taken
// (-1 when all ran).
func mmr(ctx context.Context, cands []*candidate, rel []float64, k int, lambda float64) (_ []*candidate, cut int) {
	if k > len(cands) {
		k = len(cands)
	}
	maxSim := make([]float64, len(cands)) // max similarity to the selected set
	taken := make([]bool, len(cands))
	out := make([]*candidate, 0, k)
	for len(out) < k {
		if ctx.Err() != nil {
			steps := len(out)
			for i := 0; len(out) < k; i++ {
				if !taken[i] {
					out = append(out, cands[i])
				}
			}
			return out, steps
		}
		best, bestScore := -1, math.Inf(-1)
		for i := range cands {
			if taken[i] {
				continue
			}
			s := lambda * rel[i]
			if len(out) > 0 { // a maximum over the empty set is no term
				s -= (1 - lambda) * maxSim[i]
			}
			if best < 0 || s > bestScore { // the first untaken one even if its score is NaN
				best, bestScore = i, s
			}
		}
		taken[best] = true
		out = append(out, cands[best])
		for i := range cands {
			if !taken[i] {
				sim := similarity(cands[i], cands[best])
				if len(out) > 1 {
					sim = math.Max(maxSim[i], sim)
				}
				maxSim[i] = sim // a cosine may be negative: no floor at 0
			}
		}
	}
	return out, -1
}

// relevance maps a final-ordered list to MMR relevances in [0, 1] that
// respect its tiers, best first: what the (last) reranker scored, by its
// score; what only a cascade's first stage scored, by that score; the
// rest, by fused score. With T tiers present, tier t's min-max normalised
// scores land in [1 − (t+1)/T, 1 − t/T], so λ = 1 keeps the final order.
func relevance(cands []*candidate) []float64 {
	tiers := []struct {
		in    func(*candidate) bool
		score func(*candidate) float64
	}{
		{func(c *candidate) bool { return c.reranked }, func(c *candidate) float64 { return c.rerank }},
		{func(c *candidate) bool { return c.first }, func(c *candidate) float64 { return c.firstScore }},
		{func(*candidate) bool { return true }, func(c *candidate) float64 { return c.fused }},
	}
	type run struct {
		from, to int
		score    func(*candidate) float64
	}
	var runs []run
	for i, t := 0, 0; i < len(cands); t++ {
		j := i
		for j < len(cands) && tiers[t].in(cands[j]) {
			j++
		}
		if j > i {
			runs = append(runs, run{i, j, tiers[t].score})
		}
		i = j
	}
	rel := make([]float64, len(cands))
	for r, run := range runs {
		part := cands[run.from:run.to]
		list := make([]scored, len(part))
		for i, c := range part {
			list[i] = scored{c.id, run.score(c)}
		}
		lo, hi := 1-float64(r+1)/float64(len(runs)), 1-float64(r)/float64(len(runs))
		for i, v := range minMax(list) {
			rel[run.from+i] = lo + v*(hi-lo)
		}
	}
	return rel
}
