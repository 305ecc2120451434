package simd

// Until assembly kernels are selected (see dispatch_amd64.go once present),
// the generic implementations serve every call.
var (
	dotImpl      = DotGeneric
	scaleImpl    = ScaleGeneric
	axpyImpl     = AxpyGeneric
	dispatchName = "generic"
)
