// Package quantize rewrites a BERT-family ONNX model to int8 (or float16,
// below), in pure Go:
// per-output-channel symmetric int8 weights for the encoder's MatMul and
// Gemm layers, activations quantized dynamically by ONNX Runtime on every
// call. Dir turns a model directory (Hugging Face layout: config.json,
// tokenizer files, onnx/model.onnx) into a quantized copy that package
// models loads unchanged (same inputs, same float32 outputs); Rewrite does
// the graph part on an onnxpb.Model; QuantizeMatrix the arithmetic.
//
// # What is quantized
//
// Every MatMul whose B is a 2-D float32 initializer, and every Gemm that is
// a MatMul plus a bias (transA 0, alpha and beta 1), unless Config.Exclude
// names it (by default the pooler and the classifier: the head sees one
// token per sequence, so quantizing it saves nothing, and the score comes
// straight out of it). Attention's Q·Kᵀ and P·V multiply two activations
// and stay float32, as do embeddings (Gather), LayerNorm and everything
// element-wise. Weights are quantized per output column n with scale
// max_k |W[k][n]| / 63 and codes round(W/scale) in −63…63 (7 bits,
// Config.WeightBits; 8 gives −127…127), no zero point.
//
// # The operator form, and why
//
// ONNX Runtime 1.29's CPU provider offers three ways to run such a layer:
//
//   - com.microsoft DynamicQuantizeMatMul(A, B int8, B_scale[N], –, bias)
//     (FormFused, the default). One kernel: min/max of A, quantization of
//     A to uint8 (per tensor, asymmetric, range widened to include 0), MLAS
//     integer GEMM (MlasGemmBatch) against B packed once at session start,
//     and the per-column scale and the bias applied in the GEMM's output
//     stage. The bias Add that follows the MatMul in an export is folded
//     into it.
//   - DynamicQuantizeLinear → MatMulInteger → Cast → Mul(A_scale·B_scale)
//     (FormStandard), standard ONNX, what onnxruntime.quantization's
//     quantize_dynamic writes and what published int8 exports contain.
//     With graph optimisation "extended" or "all" (hybrank's default) the
//     runtime fuses it itself (MatMulIntegerToFloatFusion, then
//     DynamicQuantizeMatMulFusion when the DynamicQuantizeLinear feeds a
//     single MatMul) into the same MLAS kernels; its bias fusion only
//     takes an Add whose second input is the bias, while exports write
//     Add(bias, x), so the Add stays. At "basic" it runs node by node.
//   - MatMulNBits with bits 8 and accuracy_level 4 quantizes A per row in
//     blocks of 16–256 along K, much finer than per tensor, and so
//     per token: a sequence's result no longer depends on its batch
//     mates. Not offered, because its kernel is slow: on the AMD EPYC
//     with AVX-512 VNNI below (balanced, 8 × 384 tokens, 2 threads,
//     ONNX Runtime 1.29's profiler) the weight GEMMs took 244 ms as
//     MatMulNBits (blocks of 128; 32, 64 and 256 no faster) against
//     103 ms as DynamicQuantizeMatMul and 331 ms in float32, so int8
//     balanced ran 1.05–1.25× float32. What it buys: the worst
//     per-query Spearman on scifact lists rose from about 0.85 to
//     0.916 (mean 0.958), still short of 0.99. Measured with a trial
//     rewrite on 2026-11-27, not kept.
//
// The two forms compute bit-identical results at every optimisation level
// (TestRuntimeForms) and run at the same speed (below). The fused form is
// the default because it does not depend on the session's optimisation
// level and folds the bias; the standard form is there for runtimes
// without contrib operators.
//
// # Why 7-bit codes
//
// On x86 CPUs without VNNI, MLAS's u8×s8 kernel multiplies with
// vpmaddubsw, which adds pairs of u8·s8 products into a saturating 16-bit
// lane: 255·127·2 overflows it, 255·63·2 does not. ONNX Runtime only
// avoids this when a session sets session.x64quantprecision (then it
// converts the weights to uint8 and runs the slower u8×u8 kernels).
// TestKernelExact compares the runtime with an exact Go emulation of the
// integer arithmetic: with 7-bit codes every output matches to the last
// bit; with 8-bit codes, on this machine, 22 of 1,920 outputs are off by
// up to 0.15. VNNI (vpdpbusd) and AMX (tdpbusd) sum in 32 bits and lose
// nothing to saturation; there 7 bits only cost weight precision, which
// barely reaches the ranking: the float32 model with every quantized
// weight replaced by its dequantized 7-bit value keeps every scifact
// query's Spearman correlation ≥ 0.99 (TestFidelityScifact).
//
// # This CPU
//
// The development machine is an AMD EPYC of family 23 model 1 (Zen 1,
// under KVM) with AVX2 and FMA but no AVX-512, no VNNI and no AMX. Zen 1
// issues about as many int8 multiply-adds per cycle through vpmaddubsw and
// vpmaddwd as float32 ones through its two 128-bit FMA pipes, so int8 buys
// nothing here. One thread, activations [5·375, K] (five scifact-length
// pairs), best of ten, float32 / fused / standard: K×N 384×384 16.9 /
// 16.5 / 16.8 ms; 384×1536 75.0 / 63.1 / 63.0 ms; 1536×384 65.2 / 64.2 /
// 64.7 ms (float32 at 30–34 GFLOP/s, near this core's peak). Whole
// MiniLM-L6 on scifact lists (BenchmarkScifactPairs): float32 3.0 pairs/s,
// int8 2.9 in either form. Both measured on a shared machine, other
// engineers' jobs running. The quantized files are portable; on a VNNI or
// AMX CPU the same kernels dispatch to those instructions, which is where
// int8 pays.
//
// On an AMD EPYC with AVX-512 VNNI (no AMX; the machine of 2026-11-26),
// `bench rerank --int8` on 320 real scifact pairs, 2 threads, quiet box:
// int8 / float32 pairs/s fast 1.34–1.44, balanced 1.38–1.91, accurate
// 1.35–2.06 over two runs (bench/results/rerank.md). The MatMuls run in
// VNNI, but attention's two activation × activation MatMuls (a sixth of
// the FLOPs at 375 tokens), softmax, GELU and LayerNorm stay float32, and
// the per-call quantization of every activation costs a pass over it:
// that caps the gain well below the 4× of vpdpbusd over vfmadd. On this
// CPU 8-bit codes would be exact too (VNNI sums in 32 bits); the default
// stays 7 bits so one quantized file is exact on every x86 CPU.
//
// Why 2.5× is out of reach there, per operator (bench/peers/ort_profile.py,
// 8 sequences × 384 tokens, 2 threads, kernel time per timed run, median
// of three rounds; bench/results/rerank_int8_profile.md). Balanced
// float32: 580 ms, of which the weight MatMuls take about 354 and the
// rest 226: attention's Q·Kᵀ (FusedMatMul, 41 ms) and P·V (40), the mask
// Add over the batch × heads × seq² scores (most of 35), LayerNormalization
// (41), Softmax (29), bias + GELU (30), Transpose. int8: 307 ms, the
// weight products 114 (DynamicQuantizeMatMul: 65 GOP at 570 GOP/s, about
// 74 % of vpdpbusd's ~770 GOP/s on these two cores, a peak four times the
// ~190 GFLOP/s float32 MatMul peak measured in the same runtime; float32
// ran them at 184 GFLOP/s) and the rest 193, as in float32 less the bias
// adds folded into the int8 kernel: 1.89×. 2.5× needs int8 at 232 ms, so
// the weight products at 39 ms, 1,660 GOP/s, over twice the
// instruction's peak; even free ones would give 580 / 193 = 3.0×. For
// fast (TinyBERT-L2, 128 wide) the weight products are about 14 of 35.7
// ms in float32 and 5.0 of 22.0 in int8 (1.62×): free ones would give
// 2.1×. Getting closer would need attention, softmax and layer norm in
// integer kernels, which ONNX Runtime's CPU provider does not have. A
// fused float kernel takes the same time off both sides, which helps the
// ratio only a little: ONNX Runtime's MultiHeadAttention runs its
// flash-attention path only without a mask, and there it does one layer's
// attention for 8 × 384 tokens in 16.1 ms against the export's operators'
// 22.9 (19.9 without the mask Add; one sequence: 1.80 against 2.27;
// BenchmarkAttentionForms). For balanced that is about 41 ms of 580 per
// batch of eight, so int8 would go from 1.89× to about 2.0×, and only for
// batches without padding.
//
// On an Intel Xeon with AMX-INT8 (2 cores, 2026-11-27) MLAS runs these
// GEMMs with tdpbusd: one u8 × s8 [3072 × 384] · [384 × 1536] product at
// 3.3 TOP/s, 9.3 times the float32 GEMM and 2.5 times vpdpbusd's ceiling
// on those cores. The weight products of balanced at 8 × 384 tokens took
// 46 ms of int8's 186 (float32: 355), and the float32 rest set the ratio:
// 1.84–1.90× per batch, 1.77× on scifact lists (`bench rerank --int8`).
// With package models/fuse's SkipLayerNormalization (on by default on the
// CPU, both sides alike) 1.90× for balanced, 2.11× accurate, 1.17× fast
// (1.90–1.98×, 1.95–2.02×, 1.23–1.26× in two more runs); with its
// FirstToken too (the last layer for [CLS] only, both sides alike) 1.94×,
// 1.88×, 1.27× (bench/results/rerank.md); 2.5× would need the weight
// products at 9 ms, twice the measured AMX rate, unless the float32 rest
// shrinks. bench/results/rerank_int8_profile.md has the per-operator
// tables.
//
// It does now: the largest part of that rest was attention (the two
// activation products, the mask Add over batch × heads × seq² scores,
// Softmax, the Transposes: about 85 of int8's 163 ms), and models/fuse's
// AttentionBF16 replaces it in int8 graphs with package onnx's
// ai.hybrank.Attention, one kernel with both products in bfloat16 on AMX
// tiles (5.3 ms a layer at 8 × 384 tokens against the export's 22.3).
// bench rerank --int8 on scifact pairs, same machine, three runs: int8 /
// float32 fast 1.72–1.86×, balanced 3.03–3.12×, accurate 3.06–3.25×
// (balanced 92.7 vs 29.8 pairs/s in the last, bench/results/rerank.md). Float32 keeps float32 attention; given the same bfloat16
// attention it runs 1.2× faster (balanced, 29.4–29.6 → 35.1–36.2 pairs/s
// in two rounds), so of int8's 3.1× about 2.5× is the integer products and
// the rest the attention kernel. Fast (hidden 128, two layers, the last
// narrowed to [CLS]) stays below 2.5×: its DynamicQuantizeMatMuls, with K
// = 128, run at about a fifth of the AMX rate (1.4 GOP in 2.3 ms for 8 ×
// 384 tokens), and the embeddings, norms and GELU cost both models alike.
//
// # Fidelity, and generated weights
//
// In ONNX Runtime's kernel the activation scale is one per tensor, taken
// over the whole batch (every token of every sequence), recomputed on
// every call (on CPUs with AMX-INT8 hybrank now runs them per token:
// "Per-token scales and smoothing" below). Two consequences. Scores of an int8 model depend slightly on batch mates,
// which float32 scores do not: e5-small-v2's int8 vectors of 64 scifact
// queries embedded alone and in batches of 32 have cosines down to
// 0.9959 (float32: 1), and the same int8 files gave scifact nDCG@10
// deltas against float32 of −0.0076 and −0.0038 (e5), +0.0020 and
// −0.0005 (all-MiniLM-L6-v2) in two runs that formed different batches
// (bench/results/dense_real*.md). And the quantization noise of an
// activation is about 1 % of its range: fine for trained rerankers, whose
// logits over a candidate list spread over several units, but not for the
// generated (random-weight) models of package bertgen, whose score barely
// depends on the document (spread over 16 BM25 candidates about 0.008 on a
// logit). Mean per-query Spearman against float32 on 8 scifact queries ×
// 16 BM25 candidates, generated MiniLM-L6 (BenchmarkScifactPairs): the
// default int8 0.883 (worst query 0.81); attention projections only
// (ExcludeFFN) 0.984; dequantized 7-bit weights in float32 0.997 (worst
// 0.991). The feed-forward layers' activation noise lands on the [CLS]
// token's residual stream and goes straight to the score; keeping the
// last layer in float32 did not help. The error is the activations', not
// the weights'. On real weights (cosine scores of all-MiniLM-L6-v2
// embeddings, 6 scifact queries × 20 BM25 candidates, measured once by
// hand) this package's int8 kept a mean Spearman of 0.970 against float32;
// the int8 export shipped with langchain4j (quantize_dynamic's form,
// uint8 per-tensor weights) 0.964. TestInt8RealEmbedder now checks this
// (8 queries × 16 candidates, token-capped batches): min cosine 0.9888,
// Spearman mean 0.986, worst query 0.971 on the EPYC with AVX-512 VNNI
// below; 0.9891, 0.986, 0.965 on the Intel Xeon with AMX, the graph fused
// by models/fuse (both sides).
//
// A trained encoder under a random head (bertgen.ImportRandomHead:
// all-MiniLM-L6-v2's, balanced's shape) has a score that moves with the
// text, spreading over 0.13 on a 32-candidate scifact list against the
// generated model's 0.015; bench rerank --int8 measures it too: int8 1.92×
// float32, worst per-query Spearman 0.936, mean 0.977 (generated balanced,
// same run: 0.883, 0.942). In numpy (bench/peers/int8_sim.py, 10 queries ×
// 32 candidates) the same encoder with activations scaled per token
// instead of per tensor reaches worst 0.982, mean 0.988 (8-bit weights:
// 0.984, 0.991): most of the gap, for a kernel ONNX Runtime's CPU provider
// does not have (bench/results/rerank_int8_profile.md).
//
// Why real activations lose that much: their ranges are set by a few
// tokens. e5-small-v2 on eight scifact documents, layers 2–9 of 12
// (2026-11-27, a throwaway script reading the MatMuls' inputs): the input
// of each feed-forward layer (the attention block's LayerNorm output) has
// max |x| 21–32 while the median token's largest value is 3.6–4.1 and the
// rms 0.57–0.69, the largest always in channel 99; GELU's output, the
// second feed-forward MatMul's input, reaches 14–22 in layers 2–6 with an
// rms of about 0.17, so its 255 steps are 0.06–0.09 apart. Tried and not
// kept:
//
//   - SmoothQuant's per-channel migration (a throwaway Python prototype):
//     activation channel j divided by s_j = max|X_j|^α / max|W_j|^(1−α)
//     and weight row j multiplied by it (the float32 model unchanged to
//     cosine 1.000000), calibrated on 32 scifact documents, then ONNX
//     Runtime's quantize_dynamic with per-channel weights. The mean cosine
//     error against float32 on 64 documents went from 0.0017 without it to
//     0.0036 at α 0.5, 0.0046 at 0.8 and 0.06–0.09 at 0.15–0.3: scaling up
//     the outlier channels' weight rows coarsens every column's int8 steps
//     more than it refines the activations'.
//   - Keeping layers in float32 (throwaway variants of the test harness).
//     On the lists of TestInt8RealEmbedder (all-MiniLM-L6-v2: min cosine,
//     Spearman mean, worst) and on 40 queries × 32 candidates with
//     e5-small-v2 (mean cosine, Spearman mean, worst, embedding time):
//     default 0.9888, 0.986, 0.971 / 0.99777, 0.983, 0.966, 134 s; 8-bit
//     weights 0.9915, 0.9875, 0.965 / 0.99833, 0.983, 0.962, 135 s; the
//     second feed-forward MatMul in float32 0.9949, 0.989, 0.968 / 0.99870,
//     0.989, 0.971, 167 s; both feed-forward MatMuls (ExcludeFFN) 0.9976,
//     0.992, 0.977. 8-bit weights cost nothing on VNNI but buy little;
//     float32 layers cost a quarter or more of int8's time.
//   - MatMulNBits' per-block activation scales (above): slow kernels.
//
// # Per-token scales and smoothing
//
// Where the CPU has AMX-INT8, models/fuse's QuantMatMulAMX runs every
// DynamicQuantizeMatMul as package onnx's ai.hybrank.QuantMatMul: one
// activation scale per token, the integer products on AMX tiles (faster
// than the runtime's kernel: int8 balanced 3.1× float32 became 3.7–3.9×).
// There SmoothQuant pays, where per tensor it did not (above): each
// token's range is its own, so shrinking the outlier channels refines
// every token's steps, while per tensor the batch's outlier tokens still
// set them. Config.Smooth carries the migration; models/ort measures it
// (Smoothing: 24 built-in query/passage pairs through the float32 model,
// every quantized activation's channel maxima, about a second) and makes
// its int8 copies with it and with 8-bit weights (VNNI and AMX sum in 32
// bits) only where the products run per token with 8-bit codes
// (ort.SmoothInt8; models.Config.Int8ActivationBits 8: since session 30
// the default codes are 16 bits, which need no smoothing, below). A
// trained encoder under a random head (all-MiniLM-L6-v2's, balanced's
// shape) on 10 scifact queries × BM25 top 32, bench rerank --int8, worst /
// mean per-query Spearman against float32: per tensor 0.957 / 0.982;
// per token 0.981 / 0.989; per token with 8-bit weights and smoothing at
// α 0.5 0.990 / 0.994 (0.982 / 0.992 once GELU moved into the kernel and
// the embeddings' normalisation was fused: the worst query is a near tie
// that small changes flip), at α 0.75 (models/ort's) 0.9897 / 0.9938, and
// over 30 queries 0.988 / 0.9946 (α 0.5: 0.982 / 0.9938); smoothing with
// per-tensor scales 0.957 / 0.969 (worse). numpy agrees
// (bench/peers/int8_sim.py, the 10 lists, α 0.5): per token 8-bit 0.984 /
// 0.991, smoothed with calibration 0.991 / 0.996 (7-bit weights 0.989),
// smoothed with channel maxima guessed from the LayerNorms' γ and β (no
// calibration) 0.988 worst over the 7 queries run, and bfloat16 operands
// 0.999. Real embedders (α 0.5; bench dense --int8, scifact / cisi / cran): the
// nDCG@10 Δ against float32 stays within 0.0023 (e5 on cisi: 0.0050), and
// the per-query Spearman of cosine scores over the exact top 32 rose from
// a mean of 0.89–0.94 to 0.978–0.991 (bench/results/dense_real_int8_pertoken.md).
// Generated weights stay below 0.99 (0.89–0.94 worst): their scores over
// a list spread over about 1e-3 of a logit, so any rounding reorders them.
//
// 16-bit activation codes (session 30) closed what was left: QuantMatMul
// with a_bits = 16 quantizes each token to 16 bits and runs the product on
// the codes' two bytes against the same 8-bit weights (two integer
// products). Where the error of 8-bit codes sat (numpy, bfloat16 in one
// kind of product at a time, α 0.75, worst over 10 lists: all 8-bit
// 0.9916, the second feed-forward product 0.9963, the first 0.9912, Q/K/V
// 0.9923, attention's output 0.9927) pointed at the second feed-forward
// product, but on the trained encoder over 30 lists that product alone in
// 16 bits left the worst at 0.988–0.989; every product in 16 bits,
// unsmoothed: 0.9941 / 0.9975 (smoothed 0.9912 / 0.9962: the migration
// only coarsens the weights once the activations have 16 bits), and
// generated weights pass too (0.993–0.998). That is models/ort's default
// (models.Config.Int8ActivationBits); 8-bit codes on smoothed copies stay
// an option.
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
// this package cannot read. On an H100 it runs balanced and accurate about
// 2× float32 (bench/results/gpu.md); on real all-MiniLM-L6-v2 weights the
// vectors keep cosine ≥ 0.999998 and rankings are unchanged
// (TestFP16RealEmbedder). ONNX Runtime's x86 CPU provider runs such a
// graph too, about 4× slower than float32.
//
// # Output directory
//
// Dir copies the source directory's top-level files except framework
// checkpoints and other ONNX files, writes the rewritten model to the same
// relative path, and writes MarkerFile (hybrank_quantized.json) last: the
// quantizer, the source's path and the SHA-256 of its ONNX file, and the
// Report (configuration, every quantized and skipped node). A generated
// source's hybrank_generated.json is copied too.
//
// # Concurrency
//
// QuantizeMatrix, Dir and ReadMarker are safe for concurrent use (Dir on
// distinct destinations). Rewrite modifies the model it is given, which
// must not be used concurrently. Config, Report and Matrix are plain
// values.
package quantize
