// Package layering holds no code: its tests keep the import rules of the
// module that the compiler does not check.
//
//   - The retrieval engine, the server and the packages below them build
//     without cgo, so a Go service that embeds the engine with its own
//     embedder does not link ONNX Runtime. Only onnx/ (and models/ort,
//     which wraps it, and models/bertgen/berttest, a helper of tests) and
//     models/hftok (Hugging Face tokenizers, with the build tag
//     hftokenizers; a stub without it) use cgo; the offline toolchain
//     below onnx (onnx/onnxpb, onnx/quantize, onnx/fuse, onnx/ops) does
//     not.
//   - Imports point one way in the ONNX subtree: models/ort → onnx and
//     the toolchain; the toolchain never imports onnx (cgo) or models/ort,
//     and onnx may import of it only onnx/ops, the operators' contract
//     (today it imports none: its C follows the table, which onnx/ops's
//     test checks; TestONNXSubtreeOneWay).
//   - The README's Layout table names every package directory of the
//     module, and every directory it names exists (TestReadmeLayout).
//   - Only internal/cpu reads cpuid: every kernel choice and model plan
//     sees one reading of the CPU (TestOneCPUDetection).
//   - bench packages run models through models/ort and bench/modeldir:
//     none but bench/modeldir imports models/bertgen, none imports onnx
//     or the ONNX toolchain (TestBenchGoesThroughModelAPIs).
//   - Commands link no test code: cmd/* do not depend on package testing.
//   - bench/loadgen does not import the server, so that the server's tests
//     can use it.
//
// The tests run the go command, so they need the Go toolchain on PATH
// (skipped with a message otherwise).
package layering
