// Package rerank is the driver of `bench rerank`: cross-encoder pairs/s,
// tokens/s, latency and effective GFLOP/s against the measured peak, for
// the profiles fast, balanced and accurate (or any model directory), once
// or over a sweep of batch size × threads × document length. The
// measuring itself is package throughput's, shared with `bench embed`.
//
// Run(ctx, Config) returns one row per measurement; Report renders
// bench/results/rerank.md and rerank.svg.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures one model at a time
// and shares nothing with other calls.
package rerank
