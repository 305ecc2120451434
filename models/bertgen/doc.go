// Package bertgen writes BERT models in the Hugging Face ONNX-export
// directory layout, with seeded random weights for any BERT configuration
// or with real weights imported from a safetensors checkpoint; and computes
// the same models' forward pass in float64 pure Go as a reference.
//
// It exists so that reranking and embedding can be built, tested and
// benchmarked end to end without downloading model weights: a generated
// MiniLM-L12 cross-encoder costs exactly what the real one costs per token,
// though its scores mean nothing. Every generated directory carries
// MarkerFile (hybrank_generated.json, real_weights=false) so that benchmarks
// can say so. Real Hugging Face exports (config.json, vocab.txt,
// tokenizer.json, onnx/model.onnx) load unchanged through the same code;
// the generated ones mimic them.
//
// # The ONNX graph
//
// Inputs input_ids, attention_mask and token_type_ids are int64
// [batch_size, sequence_length]. The graph follows torch.onnx's export of
// transformers' BertModel: word, token-type and position embedding Gathers
// (positions sliced from a constant position_ids table by the input's
// sequence length) summed and layer-normalised; the extended additive mask
// (1 - mask[:, None, None, :]) * finfo(float32).min; per layer Q/K/V
// MatMul+Add, Reshape/Transpose to heads, Q·Kᵀ, Div √d, Add mask, Softmax,
// ·V, Transpose/Reshape back, output MatMul+Add, residual Add, LayerNorm,
// FFN MatMul+Add, erf GELU x·0.5·(1+erf(x/√2)), MatMul+Add, residual Add,
// LayerNorm. A CrossEncoder adds BertForSequenceClassification's head
// (token 0 → dense → tanh → classifier) with output logits [batch_size, 1];
// a BiEncoder outputs last_hidden_state [batch_size, sequence_length,
// hidden]. Differences from a real export: opset 17 with the
// LayerNormalization operator (exports at opset 14 spell it out as
// ReduceMean/Sub/Pow/Sqrt/Div, which ONNX Runtime fuses back into the same
// kernel); constant Reshape targets [0, 0, heads, head_dim] instead of ones
// computed with Shape/Concat; initializers named after the torch parameters
// instead of onnx::MatMul_NNN. With GraphOptimization "all", ONNX Runtime
// 1.29 rewrites a generated graph with LayerNormalization, BiasGelu,
// FusedMatMul (Q·Kᵀ with the 1/√d scale folded in) and FusedGemm (pooler
// with tanh); it fuses neither Attention nor SkipLayerNormalization with a
// dynamic sequence length, in generated models or in real exports.
//
// # Weights
//
// GenerateWeights draws dense weights and embeddings from N(0, InitStd²)
// (0.02), biases from N(0, (InitStd/2)²), LayerNorm gamma 1 and beta 0.
// Each tensor has its own generator seeded by (Seed, parameter name), so a
// Config determines the model file byte for byte. BuildModel, WriteWeights
// and Reference all take a *Weights, so tests can compare ONNX Runtime with
// Reference on exactly the same numbers (and perturb weights first).
//
// # Importing safetensors checkpoints
//
// Import turns a Hugging Face BERT directory (config.json,
// model.safetensors, tokenizer files, optional sentence-transformers files)
// into the same layout with real weights, in pure Go: ConfigFromHF reads
// config.json (BertModel → BiEncoder, BertForSequenceClassification with
// one label → CrossEncoder; model_type bert, erf GELU and absolute
// positions, else ErrUnsupported), WeightsFromSafetensors maps the
// checkpoint's tensors (package models/safetensors; F32, F16, BF16, F64) to
// Weights by their Hugging Face names, with or without the "bert." prefix of
// task models, transposing nn.Linear weights [out, in] into the MatMul
// layout [in, out], and BuildModel writes the graph. A missing, unexpected
// or misshapen tensor is an error wrapping ErrCheckpoint that lists them
// all; only position_ids (checked to be 0, 1, 2, …) and a BertModel's pooler
// may be left unused. Sentence-transformers modules other than
// Transformer, Pooling and Normalize are refused: their weights would be
// missing from the graph. The directory gets ImportFile (the checkpoint's
// sha256) instead of MarkerFile, so it counts as real weights.
//
// ImportRandomHead imports a BertModel checkpoint's encoder as a
// cross-encoder under a seeded random head (AddRandomHead): real
// activations, scores that rank nothing. It gets both ImportFile and
// MarkerFile (real_weights false, the note naming the checkpoint), for the
// int8 fidelity check of bench rerank: a generated model's score hardly
// depends on the document, this one's moves with the text.
//
// # Concurrency
//
// Functions are safe for concurrent use; Weights are read-only once built.
package bertgen
