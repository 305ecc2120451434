package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// edgeLengths covers every tail shape of the 8-, 16-, 32- and 64-wide loops.
func edgeLengths() []int {
	var ls []int
	for n := 0; n <= 70; n++ {
		ls = append(ls, n)
	}
	return append(ls, 127, 128, 129, 255, 256, 257, 383, 384, 385, 1023, 1024, 1025)
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// withImpl runs f with every kernel set to impl, restoring the default after.
func withImpl(t testing.TB, impl string, f func()) {
	t.Helper()
	prev := dispatchName
	if !setImpl(impl) {
		t.Fatalf("setImpl(%q) failed", impl)
	}
	defer setImpl(prev)
	f()
}

func TestDispatchNamesAnAvailableImpl(t *testing.T) {
	impls := implementations()
	if Dispatch() != impls[len(impls)-1] {
		t.Fatalf("Dispatch() = %q, want best available %q (of %v)", Dispatch(), impls[len(impls)-1], impls)
	}
	if setImpl("no-such-impl") {
		t.Fatal("setImpl accepted an unknown name")
	}
}

func TestKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, impl := range implementations() {
		for _, n := range edgeLengths() {
			for off := 0; off <= 3; off++ {
				name := fmt.Sprintf("%s/n=%d/off=%d", impl, n, off)
				a := randVec(r, n+off)[off:]
				b := randVec(r, n+off+5)[off:] // longer b must be accepted
				alpha := float32(r.NormFloat64())

				// Reference in float64; tolerance scales with sum|a_i b_i|.
				var want, mag float64
				for i := range a {
					p := float64(a[i]) * float64(b[i])
					want += p
					mag += math.Abs(p)
				}
				withImpl(t, impl, func() {
					got := Dot(a, b)
					if d := math.Abs(float64(got) - want); d > 1e-5*mag+1e-6 {
						t.Errorf("%s Dot = %v, want %v (|diff| %g)", name, got, want, d)
					}

					dst := randVec(r, n+off)[off:]
					wantAxpy := append([]float32(nil), dst...)
					AxpyGeneric(wantAxpy, alpha, a)
					guard := append(dst[:n:n], 42) // writes must stop at len(dst)
					Axpy(guard[:n], alpha, a)
					for i := range wantAxpy {
						if !close32(guard[i], wantAxpy[i], float64(alpha*a[i])) {
							t.Fatalf("%s Axpy[%d] = %v, want %v", name, i, guard[i], wantAxpy[i])
						}
					}
					if guard[n] != 42 {
						t.Fatalf("%s Axpy wrote past len(dst)", name)
					}

					x := append(append([]float32(nil), a...), 42)
					wantScale := append([]float32(nil), a...)
					ScaleGeneric(wantScale, alpha)
					Scale(x[:n], alpha)
					for i := range wantScale {
						if x[i] != wantScale[i] { // one rounding either way: exact
							t.Fatalf("%s Scale[%d] = %v, want %v", name, i, x[i], wantScale[i])
						}
					}
					if x[n] != 42 {
						t.Fatalf("%s Scale wrote past len(x)", name)
					}
				})
			}
		}
	}
}

func close32(got, want float32, term float64) bool {
	return math.Abs(float64(got)-float64(want)) <= 1e-6*(math.Abs(float64(want))+math.Abs(term))+1e-7
}

func TestDotBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, impl := range implementations() {
		for _, dim := range []int{1, 7, 64, 384, 385} {
			rows := 37
			q := randVec(r, dim)
			m := randVec(r, rows*dim)
			got := make([]float32, rows)
			withImpl(t, impl, func() { DotBatch(q, m, dim, got) })
			for i := range got {
				row := m[i*dim : (i+1)*dim]
				var want, mag float64
				for j := range row {
					want += float64(q[j]) * float64(row[j])
					mag += math.Abs(float64(q[j]) * float64(row[j]))
				}
				if d := math.Abs(float64(got[i]) - want); d > 1e-5*mag+1e-6 {
					t.Fatalf("%s dim=%d row %d: %v want %v", impl, dim, i, got[i], want)
				}
			}
		}
	}
}

func TestShortOperandPanics(t *testing.T) {
	for _, impl := range implementations() {
		withImpl(t, impl, func() {
			for name, f := range map[string]func(){
				"dot":  func() { Dot(make([]float32, 9), make([]float32, 8)) },
				"axpy": func() { Axpy(make([]float32, 9), 1, make([]float32, 8)) },
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s %s: short operand did not panic", impl, name)
						}
					}()
					f()
				}()
			}
		})
	}
}

func TestL2NormalizeAndPool(t *testing.T) {
	for _, impl := range implementations() {
		withImpl(t, impl, func() {
			x := []float32{3, 4}
			if n := L2Normalize(x); n != 5 || math.Abs(float64(x[0])-0.6) > 1e-6 || math.Abs(float64(x[1])-0.8) > 1e-6 {
				t.Fatalf("%s: L2Normalize gave norm %v vec %v", impl, n, x)
			}
			z := []float32{0, 0}
			if n := L2Normalize(z); n != 0 || z[0] != 0 {
				t.Fatalf("%s: zero vector changed", impl)
			}
			// Sums of squares past float32's range either way: still unit
			// length (they had been left as they were).
			for _, v := range [][]float32{{3e20, 4e20}, {3e-25, 4e-25}, {3e-16, 4e-16}} {
				if n := L2Normalize(v); math.Abs(float64(v[0])-0.6) > 1e-6 || math.Abs(float64(v[1])-0.8) > 1e-6 || n <= 0 {
					t.Fatalf("%s: L2Normalize of an extreme vector gave norm %v vec %v", impl, n, v)
				}
			}
			nan := []float32{float32(math.NaN()), 1}
			if L2Normalize(nan); nan[1] != 1 {
				t.Fatalf("%s: a non-finite vector changed: %v", impl, nan)
			}
			h := []float32{1, 2, 100, 100, 3, 4}
			dst := make([]float32, 2)
			MaskedMeanPool(dst, h, []int64{1, 0, 1})
			if dst[0] != 2 || dst[1] != 3 {
				t.Fatalf("%s: pool = %v, want [2 3]", impl, dst)
			}
		})
	}
}

var sink float32

func BenchmarkKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{384, 1536, 4096} {
		x := randVec(r, n)
		y := randVec(r, n)
		for _, impl := range implementations() {
			b.Run(fmt.Sprintf("Dot/%s/%d", impl, n), func(b *testing.B) {
				withImpl(b, impl, func() {
					b.SetBytes(int64(8 * n))
					b.ReportAllocs()
					for b.Loop() {
						sink += Dot(x, y)
					}
				})
			})
			b.Run(fmt.Sprintf("Axpy/%s/%d", impl, n), func(b *testing.B) {
				withImpl(b, impl, func() {
					b.SetBytes(int64(8 * n))
					b.ReportAllocs()
					for b.Loop() {
						Axpy(x, 1e-9, y)
					}
				})
			})
			b.Run(fmt.Sprintf("Scale/%s/%d", impl, n), func(b *testing.B) {
				withImpl(b, impl, func() {
					b.SetBytes(int64(4 * n))
					b.ReportAllocs()
					for b.Loop() {
						Scale(x, 1)
					}
				})
			})
		}
	}
}

func BenchmarkDotBatch(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim, rows = 384, 4096
	q := randVec(r, dim)
	m := randVec(r, dim*rows)
	out := make([]float32, rows)
	for _, impl := range implementations() {
		b.Run(impl, func(b *testing.B) {
			withImpl(b, impl, func() {
				b.SetBytes(int64(4 * dim * rows))
				b.ReportAllocs()
				for b.Loop() {
					DotBatch(q, m, dim, out)
				}
			})
		})
	}
}

func TestCosine(t *testing.T) {
	if got := Cosine([]float32{1, 1}, []float32{1, 0}); math.Abs(got-math.Sqrt2/2) > 1e-6 {
		t.Errorf("Cosine = %v, want √2/2", got)
	}
	if got := Cosine([]float32{0, 0}, []float32{1, 0}); got != 0 {
		t.Errorf("Cosine with a zero vector = %v, want 0", got)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := make([]float32, 37), make([]float32, 37)
	for i := range a {
		a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	var dot, na, nb float64
	for i := range a {
		dot, na, nb = dot+float64(a[i])*float64(b[i]), na+float64(a[i])*float64(a[i]), nb+float64(b[i])*float64(b[i])
	}
	if got, want := Cosine(a, b), dot/math.Sqrt(na*nb); math.Abs(got-want) > 1e-5 {
		t.Errorf("Cosine = %v, want %v", got, want)
	}
}
