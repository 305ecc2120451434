package ort

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// cleanText makes s valid UTF-8 (each run of invalid bytes becomes one
// U+FFFD, which the BERT normaliser then drops) and cuts it to at most
// maxChars runes.
func cleanText(s string, maxChars int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= maxChars { // bytes ≥ runes: nothing to cut
		return s
	}
	n := 0
	for i := range s {
		if n == maxChars {
			return s[:i]
		}
		n++
	}
	return s
}

// seq is one tokenized input: ids and type ids of the same length, all
// real tokens (no padding).
type seq struct {
	ids   []int32
	types []int32
}

// sortedOrder returns the indices of lens sorted by length, ties in input
// order: batches of similar lengths carry little padding.
func sortedOrder(lens []int) []int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return lens[a] - lens[b] })
	return order
}

// planBatches groups the indices of seqs into batches whose padded size
// (count × longest sequence) is at most maxTokens. Sequences are sorted by
// length (ties in input order) so each batch holds similar lengths and
// little padding; a sequence longer than maxTokens gets a batch of its own.
// This is the whole of tokens mode.
func planBatches(lens []int, maxTokens int) [][]int {
	order := sortedOrder(lens)
	var batches [][]int
	start := 0
	for i := range order {
		// Ascending order: adding order[i] makes it the longest.
		if i > start && (i-start+1)*lens[order[i]] > maxTokens {
			batches = append(batches, order[start:i:i])
			start = i
		}
	}
	if start < len(order) {
		batches = append(batches, order[start:])
	}
	return batches
}

// planCost groups the indices of lens into batches of at most maxBatch
// that minimise the predicted total time: the sum over batches of
// cost(batch size, longest length in the batch). cost reports false for a
// batch that may not run (not covered by the cost model, over a cap); it
// must accept a single sequence, which cannot be split.
//
// The sequences are sorted by length (ties in input order) and cut into
// contiguous runs by dynamic programming over prefixes: best[i] is the
// least cost of the i shortest, best[i] = min over k of best[i-k] +
// cost(k, length of the i-th), O(n × maxBatch) cost evaluations. Only
// contiguous runs are tried, and nothing is lost: when cost does not
// decrease with the length (CostModel guarantees it), any partition can be
// rearranged into a contiguous one with the same batch sizes and no
// batch's longest sequence longer (give the batch holding the longest
// sequence the longest ones, and so on down), so no costlier.
func planCost(lens []int, maxBatch int, cost func(batch, seqLen int) (float64, bool)) [][]int {
	order := sortedOrder(lens)
	n := len(order)
	if n == 0 {
		return nil
	}
	maxBatch = max(maxBatch, 1)
	best := make([]float64, n+1)
	from := make([]int, n+1) // the batch ending before i starts at from[i]
	for i := 1; i <= n; i++ {
		longest := lens[order[i-1]]
		best[i] = math.Inf(1)
		for k := 1; k <= min(maxBatch, i); k++ {
			c, ok := cost(k, longest)
			if !ok {
				if k > 1 {
					continue
				}
				c = 0 // a single sequence always runs, whatever its cost
			}
			// <=: on a tie the larger batch wins (fewer runtime calls).
			if v := best[i-k] + c; v <= best[i] {
				best[i], from[i] = v, i-k
			}
		}
	}
	var batches [][]int
	for i := n; i > 0; i = from[i] {
		batches = append(batches, order[from[i]:i:i])
	}
	slices.Reverse(batches)
	return batches
}

// batchTensors is one padded batch in the runtime's [n, seqLen] layout.
type batchTensors struct {
	n, seqLen        int
	ids, types, mask []int64
	realTokens       int
}

// pad builds the tensors for seqs[idx...], padding with padID.
func pad(seqs []seq, idx []int, padID int64) batchTensors {
	b := batchTensors{n: len(idx)}
	for _, i := range idx {
		b.seqLen = max(b.seqLen, len(seqs[i].ids))
	}
	size := b.n * b.seqLen
	b.ids = make([]int64, size)
	b.types = make([]int64, size)
	b.mask = make([]int64, size)
	for r, i := range idx {
		s := seqs[i]
		row := r * b.seqLen
		for j, id := range s.ids {
			b.ids[row+j] = int64(id)
			b.types[row+j] = int64(s.types[j])
			b.mask[row+j] = 1
		}
		for j := len(s.ids); j < b.seqLen; j++ {
			b.ids[row+j] = padID
		}
		b.realTokens += len(s.ids)
	}
	return b
}
