// Package dense is the driver of `bench dense`: HNSW build time, recall@K,
// single-goroutine QPS and latency percentiles of the dense index over a
// sweep of M × efSearch, next to exact flat search, on the vectors of
// Config.Vectors (base and queries, e.g. real embeddings) or, without
// them, seeded clustered vectors (synth.Vectors).
//
// Run(ctx, Config) returns the flat row and one row per M × ef; Report
// renders them as bench/results/dense.md. With Config.Peers, faiss's
// IndexHNSWFlat (package peers) is built with each M on the same
// normalised vectors and searched at the same ef values; its rows
// (impl=faiss) have recall against the same exact truth and the QPS ratio,
// and Targets.Check compares the two at a recall bar.
//
// RunQuality(ctx, QualityConfig) is `bench dense --beir`: retrieval quality
// of real embedders (model directories with sentence-transformers files)
// on BEIR datasets. The corpus (title + " " + text, stripped, as MTEB
// does) is embedded as documents and the judged queries as queries, the
// vectors cached on disk under a key of the ONNX file, the settings and
// the texts; exact cosine, the HNSW graph at its defaults and (with Peers)
// faiss's HNSW rank the top 100, scored by bench/eval (nDCG@10, Recall@100,
// MRR@10). QualityTargets.Check compares scifact with the published MTEB
// figures (PublishedMTEB) and each int8 "-q" model with its float32
// original; QualityReport renders bench/results/dense_real.md.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run builds and searches on one
// goroutine so figures are not disturbed by the harness; it shares nothing
// with other calls.
package dense
