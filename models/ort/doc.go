// Package ort runs BERT cross-encoders (rerankers) and bi-encoders
// (embedders) exported to ONNX, through ONNX Runtime (package onnx, cgo)
// with the WordPiece tokenizer of package models/wordpiece. A tokenizer.json
// that tokenizer does not support (BPE, Unigram: RoBERTa, XLM-R) is loaded
// through Hugging Face's library (package models/hftok) in builds with the
// hftokenizers tag; other builds fail on first use with hftok.ErrUnavailable,
// which names the tag and the make target. The contracts it
// implements, its Config and the model directory layout live in the cgo-free
// package models; only programs that run models link this package.
//
// CrossEncoder implements models.Reranker: Score(ctx, query, docs) returns one
// logit (or sigmoid, Config.Sigmoid) per document in input order, and
// ScorePairs scores (query, document) pairs from several requests at once
// for the server's cross-request batcher. BiEncoder implements models.Embedder:
// Embed returns one vector per text, mean-pooled over the attention mask
// (or the model's own `sentence_embedding` output) and L2-normalised when
// Config.Normalize is set.
//
// # Text handling and truncation
//
// Before tokenizing, invalid UTF-8 is replaced (each run of bad bytes
// becomes one U+FFFD, which the BERT normaliser drops) and every text is cut
// to Config.MaxChars characters (default 20,000: about 4,000 tokens, far
// beyond any model's 512, so nothing that could reach the model is lost; the
// cap only bounds tokenizer time on megabyte inputs). Sequences are then
// truncated to MaxLength tokens (0 = max_position_embeddings, at most 512),
// special tokens included. For pairs the query is cut first to at most half
// the budget ((MaxLength-3)/2 word pieces), the same prefix for every
// document so all documents of a ranking see the same query; then only the
// document is cut (only_second). For queries within half the budget — all
// real ones — this equals HF's longest_first, which sentence-transformers'
// CrossEncoder uses.
//
// Bad input is an error, never a panic: an empty query wraps models.ErrEmptyQuery,
// more than Config.MaxDocs documents (default 100) in one Score or Embed
// wraps models.ErrTooManyDocs (raise MaxDocs for more); no documents give an empty
// result and no error; an empty document is scored as [CLS] q [SEP] [SEP].
// ScorePairs ignores MaxDocs: its caller, the batcher, bounds the size.
//
// # Batching
//
// The texts of one call are tokenized, sorted by token length and cut into
// batches whose padded size (batch size × longest sequence in the batch) is
// at most Config.MaxBatchTokens (default 16,384, as Text Embeddings
// Inference); each batch is padded only to its own longest sequence.
// Results are written back in input order. Scores do not depend on batch
// mates: padding is masked.
//
// # Concurrency
//
// CrossEncoder and BiEncoder are safe for concurrent use. They hold one
// onnx.Session with Config.PoolSize runtime sessions; concurrent calls share
// them, and the batches of one call run concurrently on up to PoolSize
// goroutines. With PoolSize > 1, set IntraOpThreads so that PoolSize ×
// IntraOpThreads is about the number of cores.
//
// # Lazy loading and lifetime
//
// New* only validates the Config. The model directory, tokenizer and runtime
// sessions load on first use (or Load), once; concurrent first callers wait
// for that load. A failed load is not remembered: the next call tries again,
// so a directory written or a runtime installed later is picked up (each
// failing call pays for one load attempt). Close waits for in-flight calls,
// frees the sessions and is idempotent; calls after Close return models.ErrClosed.
//
// # Ownership
//
// Inputs are not retained. Returned slices belong to the caller; the
// vectors of one Embed call share one backing array.
package ort
