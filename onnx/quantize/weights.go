package quantize

import (
	"fmt"
	"math"
)

// Matrix is a K×N weight matrix (the B of y = x·B: K inputs, N output
// channels) quantized per output channel, symmetrically: column n holds
// B[k][n] ≈ Q[k·N+n] · Scale[n], with |Q| ≤ the bit width's QMax and no
// zero point. A plain value; safe for concurrent reads.
type Matrix struct {
	K, N  int
	Q     []int8    // row-major K×N
	Scale []float32 // per column, > 0
}

// QMax is the largest quantized magnitude for a weight bit width: 63 for 7
// bits, 127 for 8. The range is symmetric (−QMax…QMax), so −128 and −64 are
// never used and negating a weight negates its code exactly.
func QMax(bits int) int {
	return 1<<(bits-1) - 1
}

// QuantizeMatrix quantizes the row-major K×N matrix w per column with the
// given bit width (7 or 8): Scale[n] = max_k |w[k][n]| / QMax, rounded to
// float32, and Q = round-half-even(w / Scale) clamped to ±QMax. Every
// element then differs from Q·Scale by at most Scale[n]/2 (plus float32
// rounding of the scale). A column of zeros, or one so small that its
// scale rounds to zero in float32, gets Scale 1 and all-zero codes. A NaN or infinite weight is an error wrapping
// ErrNonFinite.
func QuantizeMatrix(w []float32, k, n, bits int) (Matrix, error) {
	if k <= 0 || n <= 0 || len(w) != k*n {
		return Matrix{}, fmt.Errorf("%w: %d weights for a %d×%d matrix", ErrBadConfig, len(w), k, n)
	}
	if bits != 7 && bits != 8 {
		return Matrix{}, fmt.Errorf("%w: weight bits %d (want 7 or 8)", ErrBadConfig, bits)
	}
	qmax := float64(QMax(bits))
	maxAbs := make([]float64, n)
	for i, v := range w {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Matrix{}, fmt.Errorf("%w: element [%d][%d] is %v", ErrNonFinite, i/n, i%n, v)
		}
		maxAbs[i%n] = max(maxAbs[i%n], math.Abs(f))
	}
	m := Matrix{K: k, N: n, Q: make([]int8, len(w)), Scale: make([]float32, n)}
	inv := make([]float64, n)
	for c, a := range maxAbs {
		s := float32(a / qmax)
		if s == 0 {
			m.Scale[c] = 1 // all codes 0: the column dequantizes to exact zeros
			continue
		}
		m.Scale[c] = s
		inv[c] = 1 / float64(s)
	}
	for i, v := range w {
		q := math.RoundToEven(float64(v) * inv[i%n])
		m.Q[i] = int8(max(-qmax, min(qmax, q)))
	}
	return m, nil
}

// Dequantize returns Q·Scale as a row-major K×N float32 matrix.
func (m Matrix) Dequantize() []float32 {
	out := make([]float32, len(m.Q))
	for i, q := range m.Q {
		out[i] = float32(q) * m.Scale[i%m.N]
	}
	return out
}

// MaxAbsError is max |w − Q·Scale| over the matrix, for reports; w must be
// the matrix m was made from.
func (m Matrix) MaxAbsError(w []float32) float32 {
	var e float32
	for i, q := range m.Q {
		e = max(e, float32(math.Abs(float64(w[i])-float64(q)*float64(m.Scale[i%m.N]))))
	}
	return e
}

// Bytes returns Q as raw bytes (two's complement, one byte per weight), the
// layout of an int8 ONNX initializer.
func (m Matrix) Bytes() []byte {
	b := make([]byte, len(m.Q))
	for i, q := range m.Q {
		b[i] = byte(q)
	}
	return b
}

// transpose returns the row-major transpose of the r×c matrix w.
func transpose(w []float32, r, c int) []float32 {
	t := make([]float32, len(w))
	for i := range r {
		for j := range c {
			t[j*r+i] = w[i*c+j]
		}
	}
	return t
}
