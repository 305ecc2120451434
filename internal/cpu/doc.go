// Package cpu reads the CPU's features once, for every package that picks
// a kernel or plans a model by them: simd and postings choose their
// assembly, onnx its AMX operators, models/ort its acceleration plan, and
// bench reports print them. No other package asks cpuid.
//
// Detect returns the features read at the first call; the value is plain
// data, so a test that needs another CPU builds a Features value (or
// edits a copy of Detect's) and passes it where the features are an input
// (models/ort.NewPlan), as klauspost/reedsolomon's options override its
// cpuid reading. Packages that choose their kernels at initialisation
// (simd, postings) read Detect once then; their own test switches flip
// the choice afterwards.
//
// # Concurrency
//
// Detect is safe for concurrent use; a Features value is immutable once
// returned (Flags is shared: do not modify it).
package cpu
