// Package quantize rewrites a BERT-family ONNX model to int8 or to float16,
// in pure Go. Dir turns a model directory (Hugging Face layout: config.json,
// tokenizer files, onnx/model.onnx) into a converted copy that package
// models loads unchanged (same inputs, same float32 outputs); Rewrite does
// the graph part on an onnxpb.Model; QuantizeMatrix the arithmetic of one
// weight matrix. Package models/ort calls Dir for models.Config.Quantize,
// once per model, into a cache.
//
//	rep, err := quantize.Dir(ctx, "models/balanced", "models/balanced-int8", quantize.DefaultConfig())
//
// # What is quantized (int8)
//
// Every MatMul whose B is a 2-D float32 initializer, and every Gemm that is
// a MatMul plus a bias (transA 0, alpha and beta 1), unless Config.Exclude
// names it (by default the pooler and the classifier: the head sees one
// token per sequence, so quantizing it saves nothing, and the score comes
// straight out of it). Attention's Q·Kᵀ and P·V multiply two activations
// and stay float32, as do embeddings (Gather), LayerNorm and everything
// element-wise. Weights are quantized per output column n with scale
// max_k |W[k][n]| / QMax(bits) and codes round(W/scale), no zero point:
// Config.WeightBits 7 gives −63…63 (the default), 8 gives −127…127.
//
// Activations are not quantized in the file: the rewritten operator
// quantizes them on every call. Config.Form says which operator it is:
//
//   - FormFused (the default): com.microsoft DynamicQuantizeMatMul(A, B
//     int8, B_scale[N], –, bias), one kernel in ONNX Runtime's CPU
//     provider: A quantized to uint8 with one scale for the whole tensor
//     (the batch), an integer GEMM against B packed at session start, the
//     scales and the bias (the export's following Add, folded in) in its
//     output stage.
//   - FormStandard: DynamicQuantizeLinear → MatMulInteger → Cast →
//     Mul(A_scale·B_scale), standard ONNX, as onnxruntime.quantization's
//     quantize_dynamic writes it, for runtimes without contrib operators.
//     ONNX Runtime fuses it back into the same kernels at graph
//     optimisation "extended" and up (the bias Add stays).
//
// The two forms give bit-identical results (TestRuntimeForms). On a CPU
// with AMX-INT8, package onnx/fuse then rewrites every
// DynamicQuantizeMatMul into package onnx's ai.hybrank.QuantMatMul at load
// (fuse.QuantMatMulAMX, on by default in models/ort): one activation scale
// per token instead of per tensor, 16-bit activation codes by default
// (models.Config.Int8ActivationBits), a layer's Q, K and V as one product.
// The file this package writes is the same either way.
//
// # Why 7-bit weights by default
//
// On x86 CPUs without VNNI, ONNX Runtime's u8×s8 kernel multiplies with
// vpmaddubsw, which adds pairs of u8·s8 products into a saturating 16-bit
// lane: 255·127·2 overflows it, 255·63·2 does not (TestKernelExact
// compares the runtime with an exact emulation of the integer arithmetic).
// VNNI (vpdpbusd) and AMX (tdpbusd) sum in 32 bits, so there 8-bit
// weights are exact too; models/ort writes 8-bit copies on those CPUs
// (ort.Plan.WeightBits). A 7-bit file is exact on every x86 CPU.
//
// # Smoothing
//
// Config.Smooth migrates activation outliers into the weights
// (SmoothQuant): one Mul by 1/s per activation channel in front of the
// products, the weight rows multiplied by s, calibrated channel maxima
// (Activations lists the activations they are measured on). It only helps
// where the products run per token with 8-bit codes; models/ort smooths
// its copies only then (ort.Plan.Smooth, models.Config.Int8ActivationBits
// 8). With per-tensor scales or 16-bit codes it costs fidelity.
//
// # Caveats
//
//   - With ONNX Runtime's per-tensor kernel an int8 score depends slightly
//     on its batch mates (the scale covers the whole batch); with
//     QuantMatMul's per-token scales it does not.
//   - The generated (random-weight) models of package models/bertgen score
//     a list within about 1e-3 of a logit, so small roundings reorder it:
//     their int8 fidelity says little about real models. Measure fidelity
//     on real weights or on a trained encoder under a random head
//     (bertgen.ImportRandomHead; `bench rerank --int8`).
//   - Speed depends on the CPU: int8 pays on VNNI and far more on AMX;
//     on a CPU with neither it runs at about float32's speed.
//
// Measurements (speed by CPU and operator, fidelity, the forms and
// variants tried and not kept) are in bench/results/rerank_int8_profile.md,
// rerank.md and dense_real_int8_*.md.
//
// # float16 (Config.Type TypeFP16)
//
// For the CUDA provider, Rewrite can instead turn the whole graph into
// float16: every float32 initializer rounded to the nearest float16 (ties
// to even; Float16), values beyond ±65504 clamped (a BERT export's
// attention-mask constant is float32's lowest; −65504 masks as well, as
// Hugging Face does in float16), every Cast to float32 made a Cast to
// float16, and a Cast at each float32 graph input and output so callers
// keep float32 tensors. Only the operators of BERT-family graphs are
// accepted (fp16Ops); anything else is refused with onnxpb.ErrUnsupported
// rather than converted blindly, and so are Constant nodes, whose values
// this package cannot read. ONNX Runtime's x86 CPU provider runs such a
// graph too, but far slower than float32 (bench/results/gpu.md has the
// GPU figures; TestFP16RealEmbedder checks real vectors against float32).
//
// # Output directory
//
// Dir copies the source directory's top-level files except framework
// checkpoints and other ONNX files, writes the rewritten model to the same
// relative path, and writes MarkerFile (hybrank_quantized.json) last: the
// quantizer, the source's path and the SHA-256 of its ONNX file, and the
// Report (configuration, every quantized and skipped node). A generated
// source's hybrank_generated.json is copied too. A directory without the
// marker was not written by Dir (or not finished).
//
// # Concurrency
//
// QuantizeMatrix, Dir and ReadMarker are safe for concurrent use (Dir on
// distinct destinations). Rewrite modifies the model it is given, which
// must not be used concurrently. Config, Report and Matrix are plain
// values.
package quantize
