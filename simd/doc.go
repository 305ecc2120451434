// Package simd holds the numeric kernels of hybrank's hot paths: dot
// product, L2 normalisation and masked mean-pool accumulation over float32
// slices.
//
// Each kernel has a pure-Go reference (the *Generic functions, always
// compiled) and, on amd64, an assembly version chosen once at start-up from
// the CPU's features (github.com/klauspost/cpuid/v2). Build with the tag
// `purego` to force the generic path everywhere. Tests compare both
// implementations over edge lengths.
//
// Concurrency: every function is pure and safe for concurrent use; none
// retains the slices passed in.
package simd
