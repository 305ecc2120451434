// Package hybrid is the driver of `bench hybrid`: the hybrid engine's
// quality (nDCG@10, Recall@100, MRR@10) and latency over a matrix of
// setups on BEIR datasets — bm25, dense, the fusions (RRF, weighted α,
// relative), each followed by a cross-encoder under a latency budget, and
// MMR — plus a sweep of rerank budgets whose target (p99 within the budget
// plus slack, every cut-short search marked Degraded, no retrieval
// timeout) is checked.
//
// Run(ctx, Config) commits each dataset once into a BM25-only engine and,
// when a setup needs dense retrieval, a hybrid one with the embedder; the
// models come from bench/modeldir. Report renders bench/results/hybrid.md
// and hybrid_budget.svg. With Config.TuneOn, FusionChoice picks the
// fusion with the best nDCG@10 on that one dataset and checks it,
// unchanged, against the better single retriever on each other dataset;
// the report names the winning fusion per dataset. Real embedders come in
// through EmbedDir (MaxDocTokens 0: the model's own max_seq_length).
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run searches sequentially so
// latencies do not interfere; it shares nothing with other calls.
package hybrid
