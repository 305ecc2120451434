package simd

import "math"

// DotGeneric is the pure-Go dot product of a and b[:len(a)].
func DotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// ScaleGeneric multiplies every element of x by s in place.
func ScaleGeneric(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// AxpyGeneric computes dst[i] += alpha * x[i] for i < len(dst).
func AxpyGeneric(dst []float32, alpha float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += alpha * x[i]
	}
}

// l2NormalizeWith scales x to unit Euclidean length using dot for the norm;
// a zero or non-finite vector is left unchanged. It returns the norm before
// scaling. A sum of squares that leaves float32's normal range (components
// beyond about 1e19, or all below about 1e-15) is redone in float64, so
// such vectors come out unit length too.
func l2NormalizeWith(x []float32, dot func(a, b []float32) float32, scale func([]float32, float32)) float32 {
	if ss := dot(x, x); ss >= minSumSquares && ss <= math.MaxFloat32 {
		n := float32(math.Sqrt(float64(ss)))
		scale(x, 1/n)
		return n
	}
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	n := math.Sqrt(ss)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return float32(n)
	}
	for i, v := range x {
		x[i] = float32(float64(v) / n)
	}
	return float32(n)
}

// minSumSquares is the smallest float32 sum of squares normalised in
// float32: below it the squares may have lost precision (subnormals) or
// vanished.
const minSumSquares = 1e-30

// L2NormalizeGeneric is the pure-Go L2 normalisation.
func L2NormalizeGeneric(x []float32) float32 {
	return l2NormalizeWith(x, DotGeneric, ScaleGeneric)
}

// MaskedMeanPoolGeneric writes into dst (length hidden) the mean over the
// rows of hidden-state matrix h (seq rows of len(dst) floats, row-major)
// whose mask entry is non-zero. With no unmasked rows dst is all zero.
func MaskedMeanPoolGeneric(dst, h []float32, mask []int64) {
	poolWith(dst, h, mask, AxpyGeneric, ScaleGeneric)
}

func poolWith(dst, h []float32, mask []int64, axpy func([]float32, float32, []float32), scale func([]float32, float32)) {
	hidden := len(dst)
	clear(dst)
	var n int
	for r, m := range mask {
		if m == 0 {
			continue
		}
		axpy(dst, 1, h[r*hidden:(r+1)*hidden])
		n++
	}
	if n > 0 {
		scale(dst, 1/float32(n))
	}
}
