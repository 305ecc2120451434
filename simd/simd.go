package simd

// Dot returns the dot product of a and b[:len(a)]; b must be at least as long as a.
func Dot(a, b []float32) float32 { return dotImpl(a, b) }

// Scale multiplies x by s in place.
func Scale(x []float32, s float32) { scaleImpl(x, s) }

// Axpy computes dst[i] += alpha*x[i]; x must be at least as long as dst.
func Axpy(dst []float32, alpha float32, x []float32) { axpyImpl(dst, alpha, x) }

// L2Normalize scales x to unit length in place and returns its former norm.
// A zero (or non-finite) vector is left as it is.
func L2Normalize(x []float32) float32 { return l2NormalizeWith(x, dotImpl, scaleImpl) }

// MaskedMeanPool writes into dst the mean of the rows of h (row-major,
// len(dst) columns, len(mask) rows) whose mask value is non-zero.
func MaskedMeanPool(dst, h []float32, mask []int64) { poolWith(dst, h, mask, axpyImpl, scaleImpl) }

// Dispatch names the implementation in use ("generic", "avx2", "avx512").
func Dispatch() string { return dispatchName }
