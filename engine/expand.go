package engine

import "sort"

// expand follows Links from the best `seeds` candidates for `hops` steps and
// returns the candidate list with the reached documents merged in, best
// first.
//
// A document reached at hop h from parent p scores p.fused·decay; since the
// frontier is visited best first, the first parent to reach a document gives
// it its highest possible score at that hop. A document already in the list
// (retrieved or reached at an earlier hop) is never added twice. Tenant
// isolation and the request filter are enforced on every reached document:
// lookup returns the stored record, and only records of `tenant` that match
// `filter` are admitted, whatever the links say.
func expand(cands []*candidate, lookup func(id string) *record, tenant string, filter map[string]string, hops int, decay float64, seeds int) []*candidate {
	if hops <= 0 || len(cands) == 0 {
		return cands
	}
	seen := make(map[string]bool, len(cands))
	for _, c := range cands {
		seen[c.id] = true
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
			for _, id := range p.rec.doc.Links {
				if seen[id] {
					continue
				}
				r := lookup(id)
				if r == nil || !r.doc.matches(tenant, filter) {
					continue
				}
				seen[id] = true
				c := &candidate{
					id:     id,
					rec:    r,
					fused:  p.fused * decay,
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
