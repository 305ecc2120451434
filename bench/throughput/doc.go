// Package throughput measures how fast a model runs: repeated calls of a
// cross-encoder (pairs) or bi-encoder (texts) on prepared text of exact
// token lengths, reporting pairs/s, tokens/s, latency percentiles and
// effective GFLOP/s against the machine's MatMul peak through the same
// runtime. It is the shared engine of the `bench rerank` and `bench embed`
// drivers (packages rerank and embed), and MakeText and Spec serve `bench
// serve`'s model too.
//
// A Config is a Spec run once, or once per combination of a Sweep (models
// × doc tokens × threads × batch sizes); each Row is one measurement, the
// table row of rerank.md / embed.md. MeasureText measures text prepared by
// the caller (the rerank driver's real candidate lists, Text.PerQuery) and
// returns the scores too.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures one model at a time on
// the calling goroutine (the runtime uses Spec.Threads intra-op threads); it
// shares nothing with other calls, which would only disturb each other's
// figures.
package throughput
