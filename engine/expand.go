package engine

import "sort"

// expansion is one request's link expansion.
type expansion struct {
	tenant string
	filter map[string]string
	hops   int
	decay  float64
	seeds  int
	// minScore is the request's ScoreThreshold (0: none): a reached
	// document scoring below it is not admitted.
	minScore float64
	// dropped holds the retrieved documents the threshold dropped: a
	// link does not bring them back with a score of their parent's.
	dropped map[string]bool
}

// expand follows Links from the best x.seeds candidates for x.hops steps
// and returns the candidate list with the reached documents merged in,
// best first.
//
// A document reached at hop h from parent p scores p.fused·decay; since the
// frontier is visited best first, the first parent to reach a document gives
// it its highest possible score at that hop. A document already in the list
// (retrieved or reached at an earlier hop), or dropped by the score
// threshold, is never added; nor is one whose score would be below the
// threshold. Tenant isolation and the request filter are enforced on every
// reached document: lookup returns the stored record, and only records of
// x.tenant that match x.filter are admitted, whatever the links say.
func expand(cands []*candidate, lookup func(id string) *record, x expansion) []*candidate {
	hops, decay, seeds := x.hops, x.decay, x.seeds
	if hops <= 0 || len(cands) == 0 {
		return cands
	}
	seen := make(map[string]bool, len(cands)+len(x.dropped))
	for _, c := range cands {
		seen[c.id] = true
	}
	for id := range x.dropped {
		seen[id] = true
	}
	if seeds <= 0 || seeds > len(cands) {
		seeds = len(cands)
	}
	frontier := append([]*candidate(nil), cands[:seeds]...)
	out := cands
	for hop := 1; hop <= hops && len(frontier) > 0; hop++ {
		var next []*candidate
		for _, p := range frontier {
			if p.rec == nil {
				continue
			}
			score := p.fused * decay
			if x.minScore != 0 && score < x.minScore {
				continue // and so are the documents reached through it
			}
			for _, id := range p.rec.doc.Links {
				if seen[id] {
					continue
				}
				r := lookup(id)
				if r == nil || !r.doc.matches(x.tenant, x.filter) {
					continue
				}
				seen[id] = true
				c := &candidate{
					id:     id,
					rec:    r,
					fused:  score,
					origin: Origin{Kind: OriginExpanded, From: p.id, Hop: hop},
				}
				next = append(next, c)
			}
		}
		out = append(out, next...)
		// Visit the next frontier best first (stable: link order breaks ties).
		sort.SliceStable(next, func(i, j int) bool { return next[i].fused > next[j].fused })
		frontier = next
	}
	// Re-rank the whole list; retrieved candidates keep their relative
	// order, and an expanded one sits after any candidate with the same
	// score that was there first.
	sort.SliceStable(out, func(i, j int) bool { return out[i].fused > out[j].fused })
	for i, c := range out {
		c.fusedRank = i + 1
	}
	return out
}
