package ort

import (
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

// planBatches groups the indices of seqs into batches whose padded size
// (count × longest sequence) is at most maxTokens. Sequences are sorted by
// length (ties in input order) so each batch holds similar lengths and
// little padding; a sequence longer than maxTokens gets a batch of its own.
func planBatches(lens []int, maxTokens int) [][]int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return lens[a] - lens[b] })
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
