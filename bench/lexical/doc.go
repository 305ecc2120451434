// Package lexical is the driver of `bench lexical`: BM25 quality (nDCG@10,
// Recall@100, MRR@10 with trec_eval conventions) and speed (index build,
// single-goroutine QPS, latency percentiles, bytes per posting) of the
// postings index, on BEIR datasets and on seeded synthetic corpora of any
// size, once per BM25 variant.
//
// Run(ctx, Config) returns one Row per corpus × variant; Report renders
// them as bench/results/lexical.md (with lexical_scaling.svg for synthetic
// corpora). With Config.Peers, bm25s (package peers) indexes and queries
// every BEIR dataset × variant right after hybrank; its run file is scored
// by package eval exactly as hybrank's hits, its row (impl=bm25s) follows
// hybrank's, and Targets.Check requires the two nDCG@10 to agree to 4
// decimals: the anchor of the whole lexical path.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures on one goroutine, one
// corpus at a time, so latencies do not interfere; concurrent Runs would
// disturb each other's figures but share nothing.
package lexical
