// Package onnx runs ONNX models with ONNX Runtime (through
// github.com/yalue/onnxruntime_go). It is the only package of hybrank that
// uses cgo.
//
// # Setup
//
// Init loads the ONNX Runtime shared library once per process. The library
// path comes from RuntimeConfig.LibraryPath, else $HYBRANK_ORT_LIB, else
// <module root>/.deps/ort/libonnxruntime.so.1, where the module root is
// found by walking up from the executable's folder and from the working
// directory. `make runtime` fetches the pinned library.
//
// NewSession opens a model file as a pool of SessionConfig.PoolSize ONNX
// Runtime sessions. With Provider "auto" it tries CUDA and falls back to the
// CPU; the process logs the choice once, as one INFO line naming the
// provider and why ("cuda" fails with ErrProviderUnavailable instead).
// Real Hugging Face ONNX exports and the models written by models/bertgen
// load the same way.
//
// # Concurrency
//
// A Session is safe for concurrent use. Run takes one pooled ORT session
// (waiting, while honouring ctx, when all are busy) and gives it back when
// the run is over, so at most PoolSize runs execute at once. Close is
// idempotent, refuses new runs with ErrClosed, waits for runs in flight and
// then releases every native resource.
//
// # Cgo lifetimes
//
// Input slices are handed to ONNX Runtime without a copy: the caller must not
// modify them until Run returns; Run keeps no reference to them afterwards.
// Output slices are Go memory owned by the caller.
//
// Cancellation never frees memory under a running kernel: each run has its
// own OrtRunOptions; when ctx is done, context.AfterFunc sets the terminate
// flag, ONNX Runtime stops at the next node boundary, and only after the
// native Run call has returned (and the AfterFunc callback has finished) are
// the input tensors, output tensors and run options destroyed. A context that
// is already done when Run starts returns ctx.Err() without running.
//
// # Input validation
//
// Everything that could make cgo read out of bounds is checked in Go before
// any tensor is created: input names, one data slice per input, element type
// against the model's declared type, rank and fixed dimensions against the
// model, positive dimensions (an empty batch is an error: skip the call), and
// the product of the shape against the data length. Violations return
// ErrBadInput; Run never panics on bad input.
package onnx
