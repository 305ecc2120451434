//go:build amd64 && !purego

package postings

import "github.com/klauspost/cpuid/v2"

// hasAVX512 selects the AVX-512 scoring kernel (8 postings per step:
// gathers of lengths, table entries and accumulators, one scatter). It is
// written again only by tests, to compare both kernels.
var hasAVX512 = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512VL)

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
