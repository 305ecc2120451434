// Package rerank is the driver of `bench rerank`: cross-encoder pairs/s,
// tokens/s, latency and effective GFLOP/s against the measured peak, for
// the profiles fast, balanced and accurate (or any model directory).
//
// Real-length pairs come first: the BM25 top-k candidates (lexical.TopK)
// of real queries of a BEIR dataset (scifact when present), each query
// scored against its own candidates in one call at the model's whole
// length, with the distribution of sequence lengths on the row. With
// Config.Peers, ONNX Runtime's Python package with HF tokenizers (package
// peers) scores the same pairs with the same ONNX file at fixed batch
// sizes (16, 32); its rows (PeerRow) carry the speed ratio and the largest
// score difference, which Targets.Check bounds (1e-3). Config.Peer
// "torch" runs PyTorch instead (float16 on CUDA by default: the GPU
// peer), whose score difference is reported, not bounded. Config.Quant
// measures each profile again as int8 or float16 and compares speed and
// per-query Spearman with float32 (QuantCheck). The synthetic
// shapes of the embedded throughput.Config (once or over a sweep of batch
// size × threads × document length) follow as extra rows. The measuring
// itself is package throughput's, shared with `bench embed`.
//
// Run(ctx, Config) returns the rows; Report renders bench/results/rerank.md
// and rerank.svg (the synthetic rows' plot); ReadResult reads `--json`
// lines back.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures one model at a time,
// the peer after hybrank, and shares nothing with other calls.
package rerank
