package eval

import (
	"maps"
	"math"
	"slices"
	"sort"
)

// topDistinct returns the first k distinct ids of ranked: a run is a set
// of scored documents (pytrec_eval's is a dict), so an id repeated in
// ranked counts once, at its first rank, and takes no rank of its own.
func topDistinct(ranked []string, k int) []string {
	if k <= 0 {
		return nil
	}
	out := make([]string, 0, min(k, len(ranked)))
	seen := make(map[string]struct{}, min(k, len(ranked)))
	for _, id := range ranked {
		if len(out) == k {
			break
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		out = append(out, id)
	}
	return out
}

// NDCG returns nDCG@k of a ranked list of document ids against one query's
// judgments, with trec_eval's ndcg_cut convention: gain = judged score,
// discount 1/log2(rank+1) with ranks from 1, ideal DCG from all judged
// documents with score > 0 (not only retrieved ones). A query without a
// relevant judgment scores 0. Ids repeated in ranked count once (as in
// Recall and MRR).
func NDCG(ranked []string, qrels map[string]int, k int) float64 {
	if k <= 0 {
		return 0
	}
	var dcg float64
	for rank, id := range topDistinct(ranked, k) {
		if g := qrels[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(rank)+2)
		}
	}
	gains := make([]int, 0, len(qrels))
	for _, g := range qrels {
		if g > 0 {
			gains = append(gains, g)
		}
	}
	if len(gains) == 0 {
		return 0
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gains)))
	var idcg float64
	for i, g := range gains {
		if i >= k {
			break
		}
		idcg += float64(g) / math.Log2(float64(i)+2)
	}
	return dcg / idcg
}

// Recall returns the fraction of relevant (score > 0) judged documents found
// in the first k distinct ids of ranked (trec_eval recall.k). 0 without
// relevant docs.
func Recall(ranked []string, qrels map[string]int, k int) float64 {
	rel := 0
	for _, g := range qrels {
		if g > 0 {
			rel++
		}
	}
	if rel == 0 || k <= 0 {
		return 0
	}
	found := 0
	for _, id := range topDistinct(ranked, k) {
		if qrels[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(rel)
}

// MRR returns 1/rank of the first relevant (score > 0) document within the
// first k distinct ids of ranked, 0 if there is none (BEIR's mrr@k).
func MRR(ranked []string, qrels map[string]int, k int) float64 {
	for i, id := range topDistinct(ranked, k) {
		if qrels[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Run maps a query id to its ranked document ids, best first.
type Run map[string][]string

// Options selects evaluation conventions. The zero value is
// trec_eval's (pytrec_eval's): every retrieved document counts.
type Options struct {
	// DropIdenticalIDs drops retrieved documents whose id equals the query
	// id before scoring, as BEIR's EvaluateRetrieval.evaluate does by
	// default (ignore_identical_ids=True). It matters where query and
	// document ids share a namespace (cisi, cran: both small integers).
	// bm25s's published figures (ANCHORS.md) keep them, so the default
	// does too.
	DropIdenticalIDs bool
}

// Scores are mean metrics over the judged queries of a run.
type Scores struct {
	NDCG10    float64 `json:"ndcg@10"`
	Recall100 float64 `json:"recall@100"`
	MRR10     float64 `json:"mrr@10"`
	Queries   int     `json:"queries"`
}

// Evaluate averages nDCG@10, Recall@100 and MRR@10 over every query of
// run that has judgments. Queries missing from run are not counted, as
// with pytrec_eval; a query present with an empty list scores 0.
func Evaluate(qrels Qrels, run Run, opt Options) Scores {
	var s Scores
	// In query-id order, so that the sums (and the figures' last bits)
	// are the same in every run.
	for _, qid := range slices.Sorted(maps.Keys(run)) {
		ranked := run[qid]
		rel, ok := qrels[qid]
		if !ok {
			continue
		}
		if opt.DropIdenticalIDs {
			ranked = dropID(ranked, qid)
		}
		s.NDCG10 += NDCG(ranked, rel, 10)
		s.Recall100 += Recall(ranked, rel, 100)
		s.MRR10 += MRR(ranked, rel, 10)
		s.Queries++
	}
	if s.Queries > 0 {
		n := float64(s.Queries)
		s.NDCG10 /= n
		s.Recall100 /= n
		s.MRR10 /= n
	}
	return s
}

// dropID returns ranked without id, copying only when id occurs.
func dropID(ranked []string, id string) []string {
	for i, d := range ranked {
		if d == id {
			out := make([]string, 0, len(ranked)-1)
			out = append(out, ranked[:i]...)
			for _, d2 := range ranked[i+1:] {
				if d2 != id {
					out = append(out, d2)
				}
			}
			return out
		}
	}
	return ranked
}
