//go:build amd64 && !purego

package postings

import (
	"math"
	"slices"

	"github.com/hybrank/hybrank/internal/cpu"
)

// hasAVX512 selects the AVX-512 scoring kernel (8 postings per step:
// gathers of lengths, table entries and accumulators, one scatter). It is
// written again only by tests, to compare both kernels.
var hasAVX512 = cpu.Detect().AVX512F && cpu.Detect().AVX512VL

// addTabledVec is addTabled on whole groups of 8 postings: it stops before
// the first group with a posting outside the table (or a doc num beyond
// acc or docLen, left to the Go loop to report), and returns how many
// postings it added (a multiple of 8; 0 without AVX-512). Its arithmetic
// is addTabled's, operation for operation (no fused multiply-add; the
// packed double→float conversion rounds to nearest like the scalar one),
// so the scores are bit-identical.
func addTabledVec(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int {
	if !hasAVX512 {
		return 0
	}
	tf = tf[:len(docs)]
	return addTabledAVX512(acc, docs, tf, docLen, tab, idf, nonOcc, w)
}

//go:noescape
func addTabledAVX512(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int

//go:noescape
func groupMaxAVX512(acc []float32, maxima []uint32)

//go:noescape
func gatherAtLeastAVX512(acc []float32, t int32, vals, docs []uint32) int

// groupMaxima sets maxima to the maxima of the strided blocks of acc
// (groupMaxAVX512); len(acc) must be a multiple of accPad.
func groupMaxima(acc []float32, maxima []uint32) []uint32 {
	n := len(acc) / 16
	maxima = slices.Grow(maxima[:0], n)[:n]
	if len(acc)%accPad != 0 {
		panic("postings: groupMaxima: unpadded accumulator")
	}
	groupMaxAVX512(acc, maxima)
	return maxima
}

// gatherVec appends to sel the entries of acc (len a multiple of accPad)
// whose int32 bits are ≥ t, using vals and docs as scratch (returned).
func gatherVec(sel []scored, acc []float32, t int32, vals, docs []uint32) ([]scored, []uint32, []uint32) {
	if len(acc)%16 != 0 {
		panic("postings: gatherVec: unpadded accumulator")
	}
	n := len(acc) + 16
	vals = slices.Grow(vals[:0], n)[:n]
	docs = slices.Grow(docs[:0], n)[:n]
	m := gatherAtLeastAVX512(acc, t, vals, docs)
	for i, v := range vals[:m] {
		sel = append(sel, scored{score: math.Float32frombits(v), doc: docs[i]})
	}
	return sel, vals, docs
}
