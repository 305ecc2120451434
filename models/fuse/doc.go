// Package fuse rewrites a BERT-family ONNX graph into the fused operators
// ONNX Runtime's CPU provider runs fastest, where the runtime's own graph
// optimiser does not: SkipLayerNorm turns each residual Add and the
// LayerNormalization after it (and the bias Add before it) into one
// com.microsoft SkipLayerNormalization. Package models/ort applies it when
// it loads a model for the CPU, into a temporary copy the runtime loads
// (models.Config.DisableFusion turns it off).
//
// # Why
//
// ONNX Runtime has this fusion (SkipLayerNormFusion, graph optimisation
// "extended" and up), but it only fires when both inputs of the residual
// Add have a static hidden size and a static sequence length in the
// graph's shapes; exports for reranking and embedding declare the
// sequence length dynamic, so the runtime keeps the Add and runs
// LayerNormalization's own CPU kernel, which is slow: on an Intel Xeon
// with AVX-512 and AMX, 2 threads, MiniLM-L6 (balanced) on 8 sequences ×
// 384 tokens, the 13 LayerNormalizations took 34 ms of 355 and the 12
// fused nodes that replace 12 of them (and their residual Adds) 7 ms
// (bench/peers/ort_profile.py; bench/results/rerank_int8_profile.md). A
// batch took 13 % less time in float32 and 17 % less in int8, with
// float32 logits equal to 2e-7; the benchmarks' pairs/s and texts/s rose
// by 7–31 % (bench/results/fusion.md).
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
// more than one element. The
// embeddings' normalisation (over word, position and token-type
// embeddings) does not match and stays as it is. An unset epsilon is
// written as LayerNormalization's default, 1e-5 (SkipLayerNormalization's
// own default is 1e-12). The real exports of `make models` (all-MiniLM-L6-v2
// at opsets 14 and 17, bge-small-en-v1.5 and e5-small-v2 at 11, and their
// int8 copies) all fuse every layer (TestFusionRealModels in models/ort).
//
// The int8 models of package models/quantize fold their biases into
// DynamicQuantizeMatMul, so there only the first form occurs; float16
// models are left to the CUDA provider, which this package is not applied
// for.
//
// # Concurrency
//
// SkipLayerNorm modifies the model it is given, which must not be used
// concurrently. Report is a plain value.
package fuse
