//go:build amd64 && !purego

package simd

import "github.com/hybrank/hybrank/internal/cpu"

// Kernel selection happens once, at package initialisation, from the CPU's
// features. The variables are written again only by setImpl (tests).
var (
	dotImpl      = DotGeneric
	scaleImpl    = ScaleGeneric
	axpyImpl     = AxpyGeneric
	dispatchName = "generic"
)

var (
	hasAVX2   = cpu.Detect().AVX2 && cpu.Detect().FMA3
	hasAVX512 = cpu.Detect().AVX512F && cpu.Detect().AVX512VL && cpu.Detect().FMA3
)

func init() {
	impls := implementations()
	setImpl(impls[len(impls)-1])
}

// implementations lists the kernel sets usable on this CPU, best last.
func implementations() []string {
	out := []string{"generic"}
	if hasAVX2 {
		out = append(out, "avx2")
	}
	if hasAVX512 {
		out = append(out, "avx512")
	}
	return out
}

// setImpl switches every kernel to the named implementation; it reports
// false if the name is unknown or unsupported by this CPU. Not safe to call
// while kernels run: tests and benchmarks only.
func setImpl(name string) bool {
	switch {
	case name == "generic":
		dotImpl, scaleImpl, axpyImpl = DotGeneric, ScaleGeneric, AxpyGeneric
	case name == "avx2" && hasAVX2:
		dotImpl, scaleImpl, axpyImpl = dotAVX2Checked, scaleAVX2, axpyAVX2Checked
	case name == "avx512" && hasAVX512:
		dotImpl, scaleImpl, axpyImpl = dotAVX512Checked, scaleAVX512, axpyAVX512Checked
	default:
		return false
	}
	dispatchName = name
	return true
}

// The checked wrappers re-slice the second operand so that a short b/x
// panics with an index error in Go instead of reading past it in assembly.

func dotAVX2Checked(a, b []float32) float32 { return dotAVX2(a, b[:len(a)]) }

func dotAVX512Checked(a, b []float32) float32 { return dotAVX512(a, b[:len(a)]) }

func axpyAVX2Checked(dst []float32, alpha float32, x []float32) {
	axpyAVX2(dst, alpha, x[:len(dst)])
}

func axpyAVX512Checked(dst []float32, alpha float32, x []float32) {
	axpyAVX512(dst, alpha, x[:len(dst)])
}
