// Package embed is the driver of `bench embed`: bi-encoder texts/s,
// tokens/s, latency and effective GFLOP/s against the measured peak for
// the embed profile (all-MiniLM-L6-v2 shape, or any model directory), once
// or over a sweep of batch size × threads × text length. The measuring
// itself is package throughput's, shared with `bench rerank`.
//
// Run(ctx, Config) returns one row per measurement; Report renders
// bench/results/embed.md and embed.svg.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures one model at a time
// and shares nothing with other calls.
package embed
