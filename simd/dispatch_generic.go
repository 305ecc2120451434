//go:build !amd64 || purego

package simd

// Without amd64 assembly (or with the purego tag) the generic
// implementations serve every call.
var (
	dotImpl      = DotGeneric
	scaleImpl    = ScaleGeneric
	axpyImpl     = AxpyGeneric
	dispatchName = "generic"
)

// implementations lists the kernel sets usable on this CPU, best last.
func implementations() []string { return []string{"generic"} }

// setImpl switches every kernel to the named implementation; it reports
// false if the name is unknown or unsupported here. Not safe to call while
// kernels run: tests only.
func setImpl(name string) bool { return name == "generic" }
