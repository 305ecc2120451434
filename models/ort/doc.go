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
// for the model's queue (models/queue); ScoreSpans scores long documents
// in windows (below). BiEncoder implements models.Embedder:
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
// ScorePairs ignores MaxDocs: its caller, the queue, bounds the size.
//
// # Long documents
//
// CrossEncoder.ScoreSpans and BiEncoder.EmbedSpans (models.Capabilities
// Chunking) score texts longer than the window instead of
// truncating them. Each text is tokenized once with byte offsets (the
// model's own tokenizer: wordpiece.TokenSpans, or Hugging Face's offsets)
// and split by models.Chunking into overlapping windows of the tokens that
// fit beside the query (or prefix) and the special tokens, edges at
// whitespace where there is some near the cut; each window's text
// tokenizes alone to at most the window's tokens (one cut inside a long
// run without spaces, which can tokenize alone to more pieces, is
// shortened at its end until it fits), so the span named is what the
// model read. The windows of all texts of the call then go through the same
// path as ordinary pairs or texts: one tokenization, one batch plan (the
// cost model sees windows as the pairs they are), so a window scores
// exactly as ScorePairs scores (query, window text). ScoreSpans aggregates
// each document's window scores (max or mean of the top k) and names the
// best window's byte span; EmbedSpans returns every window's vector with
// its span. Config.MaxChars does not cut chunked texts (the windows cover
// them; Chunking.MaxChunks bounds the model's work).
//
// # Batching
//
// The texts of one call are tokenized, sorted by token length and cut into
// runs of similar length; each batch is padded only to its own longest
// sequence and results are written back in input order. Scores do not
// depend on batch mates: padding is masked. Config.Batching says where the
// cuts go.
//
// Cost mode (models.BatchingCost, the default) minimises the predicted time
// of the call. A cost model T(batch, padded length) gives the time of one
// runtime call; dynamic programming over the sorted lengths picks the
// contiguous cuts with the least total T, O(n × largest batch), which is
// optimal over all groupings because T never decreases with the length.
// Big padded batches are not free: attention memory grows with batch ×
// heads × length², and once it falls out of cache a batch of 43 real
// 375-token pairs was measured at half the pairs/s of one pair per call,
// while short pairs gain from sharing one call's fixed overhead. The model
// sees both.
// Batches also stay within MaxBatchTokens padded tokens and MaxBatchBytes of
// estimated activation memory (models.HFConfig.ActivationBytes: one
// layer's hidden states, FFN and batch × heads × length² attention scores);
// a single sequence always runs.
//
// The cost table comes from Config.CostTable (a CallTimeTable JSON file)
// or from a calibration at load: dummy batches on the loaded session over
// a grid of batch sizes 1…128 and lengths 8…MaxLength, cheapest cell first,
// one warm-up and at least two timed runs each (the fastest counts), until
// the next cell would pass Config.CalibrationMillis (default 2 s; a run that
// passes it is terminated). The table is only the start: every runtime
// call the planner made refines the model with the time the model ran
// (CallTimeModel.Observe; the wait for a free session is not counted),
// and a batch size up to twice the largest measured at a length is
// proposed as if 10 % cheaper per sequence than that one
// (CallTimeModel.Optimistic), so the batches of one request measure it;
// doubling stops once the largest measured size is more than about 11 %
// costlier per sequence than the best plan without it. A size measured at
// shorter lengths predicts up to 25 % longer calls (its time scaled with
// the length) and is bounded above beyond (CallTimeModel.UpperBound)
// rather than forgotten; a new size between measured ones starts from
// their interpolation, worth two calls, so that one lucky call does not
// make it the favourite (with ±10 % noise per call and many sizes of
// nearly equal cost, plans had wandered between sizes). While it
// explores, a plan is the cheapest under those estimates, not yet under
// the true costs. On a 2-core CPU a 2 s calibration measures batches of 1
// and 2 at 128-token pairs, where a batch of 32 is a quarter faster per
// pair; the calls a workload makes (its lengths, its shapes one after
// another, the load on the machine) also correct a table that was
// measured fast and fit (calibration keeps the fastest run of one
// repeated shape). What is learned is written over the cache file the
// table came from when the model is closed (CallTimeModel.Table: the
// observed calls become cells, replacing the calibrated ones in their
// range), so the next load with the same key starts from the workload's
// own timings; where that file cannot be written the next cache place
// takes it, a load reads the newest table for its key, a save skips a file
// another process rewrote since the load, and a table from
// Config.CostTable is never written. Otherwise batches of two or more are planned only
// where their batch size and length were measured or observed, or up to
// 25 % longer (CallTimeModel says how the table is fitted). The table
// is cached as hybrank_cost_<key>.json beside the model, or under the user
// cache directory when the model directory is read-only
// (Config.CalibrationCache chooses another directory or none). The key
// covers everything that changes the timings: provider, intra/inter-op
// threads, pool size, graph optimisation, the model's plan (Plan.Key) and
// what its rewrites did (package onnx/fuse),
// arena and spinning, MaxLength and
// the caps, the budget, the ONNX Runtime version, the CPU model, flags and
// count, and the model file's size and modification time; a cache that is
// corrupt or was measured under another key is ignored and rewritten. A
// calibration that fails, or a cache that cannot be written, is reported
// (CrossEncoder.Batching, BiEncoder.Batching and a log line) and never
// fails the load: without a cost model batching falls back to tokens mode.
// The table is measured with one run at a time; with PoolSize > 1 the
// batches of a call still run concurrently.
//
// The same model predicts whole calls: CrossEncoder.EstimateScore
// (models.Capabilities Cost) plans the batches a Score call would make for
// pairs of given token lengths and sums their predicted times (divided
// among the pool's sessions), without tokenizing or running anything.
// The engine sizes its budgeted rerank batches with it.
//
// Tokens mode (models.BatchingTokens) is the older rule, kept exactly: cut
// the sorted run whenever a batch would pass MaxBatchTokens padded tokens
// (batch size × longest sequence; default 16,384, as Text Embeddings
// Inference). MaxBatchBytes does not apply.
//
// # The acceleration plan
//
// Each load decides one Plan (NewPlan, from the Config and the Machine:
// the CPU's features, read once by package internal/cpu, and whether
// package onnx's operators run their AMX paths): the provider asked for,
// the quantized copy's weight and activation codes and smoothing, the
// graph rewrites per provider and the attention's arithmetic, each
// choice with its reason (Plan.Why). Plan.Key names it, versioned by
// PlanVersion; the quantized copy's folder name (Plan.CopySuffix), the
// cost table's cache key, bench/vcache's key and the benchmark reports
// consume it. CrossEncoder.Plan and BiEncoder.Plan return the loaded
// model's, with what the load made of it (Plan.Loaded); PlanFor gives it
// without loading.
//
// Config.Quantize "int8" or "fp16" loads a copy of the model converted by
// package onnx/quantize, made once into Config.QuantizeCache (a
// directory already of that type loads as it is). Int8 copies have 8-bit
// weights where the CPU's integer kernels sum in 32 bits (Plan.WeightBits)
// and are smoothed only where their products will run with 8-bit
// per-token codes (Plan.Smooth). WriteCopy writes the same copy
// elsewhere.
//
// Every load then runs the file through package onnx/fuse into a
// temporary copy, unless Config.DisableFusion: for the CPU provider
// fuse.ForCPU, plus AttentionBF16 and QuantMatMulAMX for int8 graphs on
// CPUs with AMX-BF16 and AMX-INT8 (the latter unless Config.Int8PerTensor;
// Config.Int8ActivationBits chooses its code width); for the CUDA
// provider fuse.ForCUDA (Plan.CPU, Plan.CUDA). A rewritten copy that the
// runtime refuses, or that fails on a padded probe batch at load, is
// dropped with a warning and the file loads as it is.
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
// sessions load (and, in cost mode, calibrate or read the cost table) on
// first use (or Load), once; concurrent first callers wait
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
