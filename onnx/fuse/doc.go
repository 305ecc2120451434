// Package fuse rewrites a BERT-family ONNX graph at load so that ONNX
// Runtime runs it faster, where the runtime's own graph optimiser does
// not. Four rewrites, each a function over an onnxpb.Model:
//
//   - SkipLayerNorm turns each residual Add and the LayerNormalization
//     after it (and the bias Add before it) into one com.microsoft
//     SkipLayerNormalization (CPU kernels).
//   - FirstToken narrows a cross-encoder's last layer to the one token its
//     classification head reads (any provider).
//   - AttentionBF16 replaces each self-attention chain of an int8 graph
//     with package onnx's ai.hybrank.Attention kernel, both products in
//     bfloat16 on AMX tiles (CPUs with AMX-BF16).
//   - QuantMatMulAMX runs every int8 product of an int8 graph as package
//     onnx's ai.hybrank.QuantMatMul: one activation scale per token,
//     16-bit activation codes by default, a layer's Q, K and V as one
//     product, GELU in its epilogue (CPUs with AMX-INT8).
//
// WriteFile applies the rewrites a Rewrites value selects to a file.
// Package models/ort does so when it loads a model, into a temporary copy
// the runtime loads: for the CPU provider ForCPU (SkipLayerNorm and
// FirstToken), with RewriteAttentionBF16 and RewriteQuantMatMulAMX added
// where the CPU has AMX-BF16 and AMX-INT8 (they change int8 graphs only);
// for the CUDA provider ForCUDA (FirstToken).
// models.Config.DisableFusion turns them all off, models.Config.Int8PerTensor
// QuantMatMulAMX alone, and models.Config.Int8ActivationBits = 8 makes it
// write 8-bit codes (QuantMatMulA8). A copy the runtime refuses or fails
// to run on a probe batch falls back to the file (models/ort logs it).
//
// Measurements of each rewrite are in bench/results: fusion.md
// (SkipLayerNorm), first_token.md and gpu.md (FirstToken),
// rerank_int8_profile.md and rerank.md (AttentionBF16, QuantMatMulAMX).
//
// # QuantMatMulAMX
//
// ONNX Runtime's DynamicQuantizeMatMul quantizes its whole input with one
// scale: every token of every sequence in the batch. A BERT's activations
// have a few tokens ([CLS], [SEP], punctuation) whose one or two channels
// reach 20–30 where a median token stays under 5, and they set everybody's
// step; a score also depends on its batch mates. Package onnx's QuantMatMul
// takes the same weights, scales and bias and quantizes each token on its
// own, in 16-bit codes by default (the product run on their two bytes);
// 8-bit codes are faster and lose more of a trained encoder's ranking. The
// rewrite also folds onnx/quantize's smoothing Mul (a constant
// per-channel factor in front of the product, read by nothing else) into
// the operator's a_mul and an export's GELU after a product into its
// epilogue, and groups products that read the same activations (a layer's
// Q, K and V) into one operator with split outputs, so those activations
// are quantized once.
//
// # AttentionBF16
//
// An export computes attention as Reshape and Transpose per head, Q·Kᵀ,
// the scale, the padding mask's Add over batch × heads × seq² scores,
// Softmax, P·V, Transpose and Reshape back: four passes over the scores
// tensor besides the two products, which ONNX Runtime's CPU provider runs
// as separate kernels (its MultiHeadAttention takes a padding mask only on
// its slow path). In an int8 model whose weight products run on AMX, that
// float32 chain is most of what is left. The kernel keeps 16 queries'
// scores in cache and does both products in bfloat16 tiles; a narrowed
// last layer's single query row (FirstToken) runs a float32 path in the
// same kernel instead, since packing K and V into tiles costs more than
// one row's products. Float32 graphs keep their float32 attention: in
// bfloat16 they would no longer be float32, so the speed-up stays a
// property of the quantized model, whose activations are rounded anyway.
// Only chains whose values nothing else reads, with constant head shapes
// and a head size of 32 or 64, are fused; the mask must have batch × keys
// elements, which the kernel checks at run time (models/ort's load probe
// falls back to the file if it does not).
//
// # FirstToken
//
// BertForSequenceClassification scores a pair from the last layer's
// output at [CLS] only (the pooler's Gather of index 0), yet the exported
// graph computes that layer for every token. Past the keys and values,
// which every token contributes to [CLS]'s attention, nothing of the other
// positions is read: FirstToken slices position 0 out of the previous
// layer's output and of the attention mask, and the last layer's query
// projection, attention row (Q·Kᵀ, mask, softmax, P·V), output projection,
// feed-forward block and normalisations run on one row per sequence. The
// logits are those of the whole graph to float rounding (2e-9 on a
// generated model; TestFirstTokenRuntime). Work saved per sequence of s
// tokens: of the last layer's 2s(4H² + 2HI) + 4s²H FLOPs all but the keys
// and values' 4sH² and one token's rest (bertgen.NarrowedFLOPs): on
// scifact-length pairs (375 tokens) 44 % of TinyBERT-L2's FLOPs (fast),
// 14 % of MiniLM-L6's (balanced), 7 % of MiniLM-L12's (accurate); with
// only the feed-forward part narrowed (below) 25, 11 and 5 %.
//
// The analysis is general, not a pattern: from every Gather of a constant
// index 0 it walks back through operators that treat positions along the
// gathered axis independently (element-wise arithmetic with numpy
// broadcasting, the contrib GELUs, MatMul's rows and batch axes and the
// contrib MatMuls, layer normalisation, softmax and reductions over later
// axes, Transpose, Reshape to a shape that copies the leading
// dimensions), tracking the axis through them, and stops at values
// something else reads whole, where it inserts a Slice. Constants are
// never sliced: one that varies along the axis (a token-mixing matrix,
// say) stops the walk at its reader. Ranks come from a small inference
// over the graph (the declared input ranks, constants, shapes computed
// with Shape, Slice, Gather, Unsqueeze and Concat).
//
// torch.onnx exports compute every Reshape target from the tensor itself
// (x.view(x.size()[:-1] + (h, d)) becomes Concat(Unsqueeze(Gather(
// Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)), h, d)); such a shape,
// read by nothing else, is replaced by the constant that means the same
// ([0, 0, h, d]: 0 copies x's dimension) and its computation dropped, so
// the real exports of `make models` (opsets 11 and 14, normalisations
// spelled out) narrow the whole last layer as generated models do, to
// 3e-6 of [CLS]'s vector (TestFirstTokenRealExports, given a [CLS] read).
// A shape computation something else reads too stops the walk at the
// attention: there only the output projection and the feed-forward block
// are narrowed (Narrowed.Attention false). Embedders, whose every token is
// output, are left as they are.
//
// Int8 models (onnx/quantize) narrow the same way; their narrowed
// DynamicQuantizeMatMuls quantize their activations over the rows they
// compute, so int8 scores move a little (|Δ| 1e-5 against a logit span
// of 0.02 on a generated model), towards float32's if anything.
//
// # Why SkipLayerNorm
//
// ONNX Runtime has this fusion (SkipLayerNormFusion, graph optimisation
// "extended" and up), but it only fires when both inputs of the residual
// Add have a static hidden size and a static sequence length in the
// graph's shapes; exports for reranking and embedding declare the
// sequence length dynamic, so the runtime keeps the Add and runs
// LayerNormalization's own CPU kernel, which is slow. The fused graph's
// float32 logits equal the file's to float rounding.
//
// # The pattern
//
//	LN(Add(x, r))         → SkipLayerNormalization(x, r, γ, β)
//	LN(Add(Add(y, b), r)) → SkipLayerNormalization(y, r, γ, β, b)
//
// where LN is a layer normalisation over the last axis with scale γ and
// offset β, written either as a LayerNormalization node (float32
// statistics, no other outputs; opset 17 exports) or spelled out, as
// exports of opsets 11 to 16 write it (ONNX Runtime's LayerNormFusion
// turns that into LayerNormalization at load, and stops there):
//
//	m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2))
//	LN = Div(d, Sqrt(Add(v, ε))) · γ + β
//
// (ReduceMean over axis −1 keeping it, the Sub possibly written twice,
// Mul and Add in either order, the exponent and ε constants or Constant
// nodes, every intermediate read inside the pattern only). r is the
// output of another layer normalisation (the residual stream, as every
// BERT layer's attention and feed-forward blocks read it), x and y are
// activations, b, γ and β float32 vectors stored in the model, and each
// Add's result is read by the next node only. SkipLayerNormalization adds
// its inputs element by element (only skip may broadcast, from [1, S, H]
// or [S, H]), and the graph says nothing of shapes without inference:
// requiring r to be normalised makes it a residual stream of the full
// shape, so r is the fused node's input (whose shape the output takes)
// and the sublayer output its skip (the full shape in every BERT layer;
// a broadcast one is fine). The stream is taken to be of rank 2 or 3, as
// BERT's [batch, sequence, hidden] is: the runtime refuses to run other
// ranks (a graph normalising rank-4 tensors would load and then fail to
// run; models.Config.DisableFusion is the way out). γ and β must have
// more than one element. The embeddings' normalisation fuses too: there r
// is the sum of the word and token-type embeddings (Gathers of stored 2-D
// tables by graph inputs, so of the full shape; or one of them alone) and
// x the position embeddings, [1, S, H], which skip broadcasts. An unset epsilon is
// written as LayerNormalization's default, 1e-5 (SkipLayerNormalization's
// own default is 1e-12). The real exports of `make models` (all-MiniLM-L6-v2
// at opsets 14 and 17, bge-small-en-v1.5 and e5-small-v2 at 11, and their
// int8 copies) all fuse every layer (TestFusionRealModels in models/ort).
//
// The int8 models of package onnx/quantize fold their biases into
// DynamicQuantizeMatMul, so there only the first form occurs. Float16
// models run on the CUDA provider, for which models/ort applies
// FirstToken only.
//
// # Cost at load
//
// WriteFile decodes and re-encodes the whole file, holding the decoded
// model in memory (about twice the file's size); BenchmarkWriteFile times
// it. Every load pays it again (the copy is temporary).
//
// # Concurrency
//
// SkipLayerNorm, FirstToken, AttentionBF16 and QuantMatMulAMX modify the
// model they are given, which must not be used concurrently. WriteFile is
// safe for concurrent use on distinct destinations. Report and Narrowed
// are plain values.
package fuse
