// Package serve is the driver of `bench serve`: the HTTP server's rerank
// throughput and latency with its dynamic batcher on and off, against the
// library in process on the same model and documents, and an overload
// check (many clients against small limits: only 200 and 429 with
// Retry-After, healthy afterwards, bounded memory).
//
// Run(ctx, Config) loads the cross-encoder once, starts a real server on
// 127.0.0.1 for each run and drives it with bench/loadgen; Targets and
// OverloadTargets turn the figures into PASS/FAIL checks. Report renders
// bench/results/serve.md.
//
// The model adapter in adapter.go mirrors cmd/serve's until the server
// exports its own (see the TODO there).
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run owns its server, clients and
// model; concurrent Runs share nothing but would disturb each other's
// figures.
package serve
