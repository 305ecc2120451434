//go:build amd64 && !purego

package simd

// Assembly kernels in kernels_amd64.s. Each requires b/x to be at least as
// long as a/dst; the exported wrappers guarantee it by re-slicing first.

//go:noescape
func dotAVX2(a, b []float32) float32

//go:noescape
func axpyAVX2(dst []float32, alpha float32, x []float32)

//go:noescape
func scaleAVX2(x []float32, s float32)

//go:noescape
func dotAVX512(a, b []float32) float32

//go:noescape
func axpyAVX512(dst []float32, alpha float32, x []float32)

//go:noescape
func scaleAVX512(x []float32, s float32)
