// Package simd holds the numeric kernels of hybrank's hot paths: dot
// product (single and batched against a row-major matrix, the inner loop of
// exact vector search), L2 normalisation and masked mean-pool accumulation
// over float32 slices.
//
// Each kernel has a pure-Go reference (the *Generic functions, always
// compiled) and, on amd64, an assembly version chosen once at start-up from
// the CPU's features (package internal/cpu). Build with the tag
// `purego` to force the generic path everywhere. Dispatch names the choice
// ("avx512" needs AVX-512F+VL and FMA, "avx2" needs AVX2 and FMA).
// Tests flip the unexported switch (setImpl) and compare every
// implementation with the generic one over edge lengths and unaligned
// sub-slices; the assembly uses fused multiply-add and several
// accumulators, so results differ from the generic ones by float
// reassociation only.
//
// Concurrency: every function is pure and safe for concurrent use; none
// retains the slices passed in.
package simd
