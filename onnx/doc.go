// Package onnx runs ONNX models with ONNX Runtime (through
// github.com/yalue/onnxruntime_go), and holds hybrank's own operators for
// it (below). It uses cgo, as does models/hftok behind the build tag
// hftokenizers; the engine, the server and the packages below them do not
// (internal/layering tests it), so only programs that run models link it.
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
// # Custom operators
//
// Every CPU session registers the domain onnx/ops.Domain ("ai.hybrank"), whose operators are
// C code in this package (hybrank_ops.c) run by ONNX Runtime through its
// custom-operator C API: ai.hybrank.Attention, a BERT layer's
// self-attention after the Q, K and V projections in one kernel, one
// (batch, head) per task on the session's intra-op threads (the API's
// KernelContext_ParallelFor), the scores of 16 queries at a time in cache.
// Its attribute bf16 = 1 computes Q·Kᵀ and P·V in bfloat16 on AMX tiles
// (tdpbf16ps; float32 sums, softmax and mask in float32, AVX-512), except
// for a single query row (a last layer narrowed to [CLS] by
// fuse.FirstToken): that runs a float32 AVX-512 path, since packing K and
// V into bfloat16 tiles costs more than one row's products; no batch of
// whole sequences takes it (a real sequence has at least two tokens). 0 is
// a plain float32 loop, the reference the tests hold the tile path to
// (TestAttentionKernel: both against a float64 definition, float32 to
// 1e-5 and bfloat16 to 3e-2 of the outputs' scale). Package onnx/fuse
// writes it, with bf16 = 1, into int8 graphs (fuse.AttentionBF16) when
// AttentionBF16 reports a CPU with AMX-BF16 and AVX512-BF16 and a kernel
// that granted the tile state (arch_prctl at Init). The C code finds the
// runtime's API in the library Init loaded (dlopen with RTLD_NOLOAD), and
// registers on the OrtSessionOptions that onnxruntime_go keeps unexported
// (read through its one-pointer layout, checked with reflect at Init;
// CustomOps reports why the operators are off if that ever changes). The
// C API headers in ortcapi/ are ONNX Runtime's own (MIT), as
// onnxruntime_go v1.27.0 ships them (C API version 24).
//
// ai.hybrank.QuantMatMul (hybrank_qmatmul.c) is com.microsoft's
// DynamicQuantizeMatMul with one activation scale per row, a token,
// instead of one per tensor: each row of A (times an optional per-channel
// a_mul, where onnx/quantize's smoothing lands) is quantized to uint8
// with its own scale and zero point into a cache-resident block of 32
// rows, the integer products run on AMX tiles (tdpbusd, u8 × s8 summed in
// int32, 32 × 32 outputs a step against weights packed into tile order
// when the session builds the kernel), and the epilogue subtracts the zero
// point's column sums and applies both scales and the bias. Attribute
// a_bits = 16 quantizes a row to 16 bits instead and runs the products on
// the codes' two bytes (two integer products; the
// default onnx/fuse writes: TestQuantMatMulWide). Attribute gelu = 1
// applies GELU (erf form) in the epilogue; split = [N0, N1, N2] hands the
// columns out as up to three outputs (a layer's Q, K and V from one
// quantization of their input). Attribute amx
// = 0 runs plain loops on the same integers and the same float epilogue:
// the two paths agree to the bit (TestQuantMatMulKernel, which also holds
// the reference to a float64 definition). Per-token scales make a pair's
// score independent of its batch mates and keep one outlier token from
// coarsening every other token's steps. onnx/fuse writes it over every
// DynamicQuantizeMatMul when QuantMatMulAMX reports AMX-INT8.
//
// BenchmarkAttentionForms and BenchmarkMatMulForms (package
// onnx/quantize) and BenchmarkAttentionKernel and
// BenchmarkQuantMatMulKernel (here) time the operators against the
// runtime's; bench/results/rerank_int8_profile.md has the figures.
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
