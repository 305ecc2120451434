package simd

import "math"

// Dot returns the dot product of a and b[:len(a)]; b must be at least as long as a.
func Dot(a, b []float32) float32 { return dotImpl(a, b) }

// Scale multiplies x by s in place.
func Scale(x []float32, s float32) { scaleImpl(x, s) }

// Axpy computes dst[i] += alpha*x[i]; x must be at least as long as dst.
func Axpy(dst []float32, alpha float32, x []float32) { axpyImpl(dst, alpha, x) }

// L2Normalize scales x to unit length in place and returns its former norm.
// A zero (or non-finite) vector is left as it is.
func L2Normalize(x []float32) float32 { return l2NormalizeWith(x, dotImpl, scaleImpl) }

// Cosine returns the cosine similarity of a and b (same length), 0 when
// either is a zero vector.
func Cosine(a, b []float32) float64 {
	n := float64(dotImpl(a, a)) * float64(dotImpl(b, b))
	if n == 0 {
		return 0
	}
	return float64(dotImpl(a, b)) / math.Sqrt(n)
}

// MaskedMeanPool writes into dst the mean of the rows of h (row-major,
// len(dst) columns, len(mask) rows) whose mask value is non-zero.
func MaskedMeanPool(dst, h []float32, mask []int64) { poolWith(dst, h, mask, axpyImpl, scaleImpl) }

// Dispatch names the implementation in use ("generic", "avx2", "avx512").
func Dispatch() string { return dispatchName }

// DotBatch writes into out[r] the dot product of q with row r of the
// row-major matrix m (rows of dim floats), for r < len(out). It is the inner
// loop of exact (flat) vector search. len(q) must be dim and m must hold at
// least len(out) rows; a shorter m or q panics like an out-of-range index.
func DotBatch(q []float32, m []float32, dim int, out []float32) {
	q = q[:dim]
	m = m[:len(out)*dim]
	dot := dotImpl
	for r := range out {
		out[r] = dot(q, m[r*dim:(r+1)*dim])
	}
}

// DotBatchGeneric is DotBatch with the pure-Go dot product.
func DotBatchGeneric(q []float32, m []float32, dim int, out []float32) {
	q = q[:dim]
	m = m[:len(out)*dim]
	for r := range out {
		out[r] = DotGeneric(q, m[r*dim:(r+1)*dim])
	}
}
