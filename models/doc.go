// Package models holds the contracts of hybrank's neural models and the
// plain types around them: the Reranker (cross-encoder) and Embedder
// (bi-encoder) contracts that every model and every decorator in front of
// one (models/cache, the per-model queue models/queue) implements, with
// what a model can do as a value, Capabilities (its window, whether it
// chunks, whether its vectors are normalised, and a cost estimate of a
// call, which the engine sizes budgeted batches with), so no caller finds
// a capability by type assertion; Score and Embed, the one-query and
// normalised calls over the contracts; RerankFunc and EmbedFunc, adapters
// for stand-ins; Pair and Usage, the documented errors, the model
// Config with its profiles and ModelDir, the reader of a model directory.
// (The measured time of a runtime call that cost-mode batching plans with,
// and its fit, are models/ort's CallTimeTable and CallTimeModel.) It also holds
// the two small numeric definitions the runtime, the engine and the server
// share: Sigmoid (logit to relevance probability) and EstimateTokens (an
// approximate WordPiece count for when no tokenizer is at hand).
//
// It has no cgo and no runtime: the engine and the server depend on it
// alone, so a Go service that embeds the engine with its own models does not
// link ONNX Runtime. The ONNX Runtime implementation is package models/ort;
// models/wordpiece is the tokenizer, models/bertgen and onnx/onnxpb write
// architecture-exact ONNX graphs.
//
// # Profiles
//
//	fast      cross-encoder/ms-marco-TinyBERT-L-2-v2   2 layers, hidden 128, 2 heads, FFN 512
//	balanced  cross-encoder/ms-marco-MiniLM-L-6-v2     6 layers, hidden 384, 12 heads, FFN 1536
//	accurate  cross-encoder/ms-marco-MiniLM-L-12-v2   12 layers, hidden 384, 12 heads, FFN 1536
//	embed     sentence-transformers/all-MiniLM-L6-v2   6 layers, hidden 384, 12 heads, FFN 1536
//
// A profile names a model and its default directory ($HYBRANK_MODELS/NAME
// when Config.Dir is empty); the directory's config.json decides what runs.
// `bench models --out DIR` writes a generated (random-weight) directory for
// every profile in that layout.
//
// # Model directory layout
//
// The Hugging Face ONNX-export layout, so real exports load unchanged:
//
//	config.json            hidden_size, max_position_embeddings (required), architectures, …
//	tokenizer.json         preferred when present (its normaliser and special tokens are used)
//	vocab.txt              otherwise, with do_lower_case from tokenizer_config.json (default true)
//	onnx/model.onnx        or model.onnx at the root
//
// The ONNX model must take int64 input_ids and attention_mask; token_type_ids
// is fed only when the model declares it (some exports drop it). A
// cross-encoder must output `logits` [batch, 1]; an embedder
// `sentence_embedding` [batch, hidden] (preferred), `last_hidden_state` or
// `token_embeddings` [batch, seq, hidden]. Anything else is an error
// wrapping ErrModelDir or ErrUnsupportedModel that names the file.
//
// # Sentence-transformers semantics
//
// A bi-encoder directory may carry the sentence-transformers files:
// modules.json (Transformer, then Pooling and optionally Normalize),
// 1_Pooling/config.json (mean, CLS, max or mean-sqrt-len),
// sentence_bert_config.json (max_seq_length, which caps the input as
// sentence-transformers does) and config_sentence_transformers.json (the
// "query" and "document"/"passage" prompts). ModelDir.Sentence holds what
// they say and ModelDir.Embedding resolves it against a Config, whose
// Pooling, QueryPrefix and DocumentPrefix override the directory. A text is
// embedded as an Input: InputQuery and InputDocument get their prefix
// (e5: "query: " / "passage: "; bge: an instruction before queries only),
// InputRaw none. Directories without these files (bare ONNX exports) are
// mean-pooled and normalised when Config.Normalize is set.
//
// # Long documents
//
// A cross-encoder or bi-encoder sees at most its window (512 tokens, 256
// for all-MiniLM-L6-v2); longer inputs are truncated. Chunking turns on
// scoring in windows instead: Chunking.Plan splits each document into
// overlapping windows of the model tokenizer's tokens (Stride tokens
// apart, edges at whitespace, at most MaxChunks per document, evenly
// spread), all windows go to the model as ordinary inputs (so they share
// batches), and ChunkPlan.Scores aggregates each document's window scores
// (max, or mean of the top k) and names the best window's byte span.
// Reranker.ScoreSpans and Embedder.EmbedSpans do this inside the model
// (models/ort's, where Capabilities says Chunking); the server chunks with
// the same plan in front of the model's queue.
// Span is the one range type, shared with package engine.
//
// # Batch memory
//
// HFConfig.ActivationBytes estimates a batch's activation memory for
// Config.MaxBatchBytes.
package models
