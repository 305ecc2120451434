package quantize_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hybrank/hybrank/onnx/quantize"
)

func TestQMax(t *testing.T) {
	if quantize.QMax(7) != 63 || quantize.QMax(8) != 127 {
		t.Fatalf("QMax(7), QMax(8) = %d, %d", quantize.QMax(7), quantize.QMax(8))
	}
}

// TestQuantizeMatrixRoundTrip checks the per-column scale and the error
// bound |w − Q·Scale| ≤ Scale/2 on random matrices of several shapes.
func TestQuantizeMatrixRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{7, 8} {
		for _, shape := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {16, 16}, {384, 33}} {
			k, n := shape[0], shape[1]
			w := make([]float32, k*n)
			for i := range w {
				// Columns of very different magnitudes: per-channel
				// scales must follow each column.
				w[i] = float32(r.NormFloat64() * math.Pow(10, float64(i%n%5-2)))
			}
			m, err := quantize.QuantizeMatrix(w, k, n, bits)
			if err != nil {
				t.Fatal(err)
			}
			if m.K != k || m.N != n || len(m.Q) != k*n || len(m.Scale) != n {
				t.Fatalf("shape %d×%d: got K=%d N=%d |Q|=%d |Scale|=%d", k, n, m.K, m.N, len(m.Q), len(m.Scale))
			}
			qmax := quantize.QMax(bits)
			deq := m.Dequantize()
			for c := range n {
				var maxAbs float64
				for row := range k {
					maxAbs = max(maxAbs, math.Abs(float64(w[row*n+c])))
				}
				want := float32(maxAbs / float64(qmax))
				if m.Scale[c] != want {
					t.Fatalf("%d bits, %d×%d, column %d: scale %g, want max|w|/%d = %g", bits, k, n, c, m.Scale[c], qmax, want)
				}
			}
			var worst, maxScale float64
			for i, q := range m.Q {
				if int(q) > qmax || int(q) < -qmax {
					t.Fatalf("code %d outside ±%d", q, qmax)
				}
				s := float64(m.Scale[i%n])
				maxScale = max(maxScale, s)
				e := math.Abs(float64(w[i]) - float64(deq[i]))
				if e > s/2*(1+1e-6)+1e-30 {
					t.Fatalf("%d bits, element %d: error %g > scale/2 = %g", bits, i, e, s/2)
				}
				worst = max(worst, e)
			}
			if got := m.MaxAbsError(w); math.Abs(float64(got)-worst) > maxScale*1e-5 { // float32 vs float64 products
				t.Fatalf("MaxAbsError = %g, want %g", got, worst)
			}
			// The largest magnitude of each column maps to ±QMax exactly.
			for c := range n {
				hit := false
				for row := range k {
					hit = hit || int(m.Q[row*n+c]) == qmax || int(m.Q[row*n+c]) == -qmax
				}
				if !hit {
					t.Fatalf("column %d never reaches ±%d", c, qmax)
				}
			}
		}
	}
}

func TestQuantizeMatrixSymmetric(t *testing.T) {
	w := []float32{0.5, -0.25, -0.5, 0.25, 0.125, -0.125}
	m, err := quantize.QuantizeMatrix(w, 3, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	// Column 0 is {0.5, -0.5, 0.125}: codes 127, -127, round(31.75) = 32.
	if m.Q[0] != 127 || m.Q[2] != -127 || m.Q[4] != 32 {
		t.Fatalf("column 0 codes %d %d %d", m.Q[0], m.Q[2], m.Q[4])
	}
	if b := m.Bytes(); b[2] != 0x81 || len(b) != 6 {
		t.Fatalf("Bytes() = %x", b)
	}
}

func TestQuantizeMatrixZeroColumns(t *testing.T) {
	// Column 0 is all zeros, column 1 so small its scale underflows.
	w := []float32{0, 1e-45, 2.2, 0, 0, -4}
	m, err := quantize.QuantizeMatrix(w, 2, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	if m.Scale[0] != 1 || m.Scale[1] != 1 || m.Q[0] != 0 || m.Q[3] != 0 || m.Q[1] != 0 || m.Q[4] != 0 {
		t.Fatalf("degenerate columns: scales %v, codes %v", m.Scale, m.Q)
	}
	for i, v := range m.Dequantize() {
		if i%3 != 2 && v != 0 {
			t.Fatalf("degenerate column element %d dequantizes to %g", i, v)
		}
	}
	if m.Q[2] != 35 || m.Q[5] != -63 {
		t.Fatalf("column 2 codes %d %d, want 35 -63", m.Q[2], m.Q[5])
	}
}

func TestQuantizeMatrixErrors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	tests := []struct {
		name    string
		w       []float32
		k, n, b int
		want    error
	}{
		{"NaN", []float32{1, nan, 3, 4}, 2, 2, 7, quantize.ErrNonFinite},
		{"-Inf", []float32{1, 2, inf, 4}, 2, 2, 8, quantize.ErrNonFinite},
		{"shape mismatch", []float32{1, 2, 3}, 2, 2, 7, quantize.ErrBadConfig},
		{"empty", nil, 0, 4, 7, quantize.ErrBadConfig},
		{"bad bits", []float32{1}, 1, 1, 4, quantize.ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := quantize.QuantizeMatrix(tc.w, tc.k, tc.n, tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*quantize.Config)
		ok   bool
	}{
		{"default", func(*quantize.Config) {}, true},
		{"8 bits standard", func(c *quantize.Config) { c.WeightBits, c.Form = 8, quantize.FormStandard }, true},
		{"no excludes", func(c *quantize.Config) { c.Exclude = nil }, true},
		{"6 bits", func(c *quantize.Config) { c.WeightBits = 6 }, false},
		{"zero value form", func(c *quantize.Config) { c.Form = "" }, false},
		{"4-bit form", func(c *quantize.Config) { c.Form = "MatMulNBits" }, false},
		{"empty pattern", func(c *quantize.Config) { c.Exclude = []string{"pooler", " "} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := quantize.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, quantize.ErrBadConfig) {
				t.Fatalf("%v does not wrap ErrBadConfig", err)
			}
		})
	}
}
