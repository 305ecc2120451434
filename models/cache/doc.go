// Package cache puts byte-bounded LRU caches in front of models: Reranker
// remembers cross-encoder scores by (query, document), Embedder remembers
// embeddings of queries and raw texts by (input kind, text) (documents,
// embedded once at ingest, are not cached). Both are decorators: they wrap
// a models.Reranker or models.Embedder, are one themselves and keep its
// Capabilities, so the engine and the server use them unchanged: a
// repeated query then skips the query embedding, and a repeated (query,
// candidate) pair skips the cross-encoder. Put the cache in front of the
// model's queue (models/queue), so that a hit does not wait in it.
//
// Keys are 128-bit hashes (sha256, truncated) of the texts, so memory does
// not grow with text length; a cache holds one model's results (wrap each
// model in its own). Each cache is bounded in bytes, counting the key, the
// value and a fixed per-entry overhead, and evicts least recently used
// entries. Stats reports hits, misses, evictions, entries and bytes.
//
// Chunked scoring of long documents (ScoreSpans, EmbedSpans) passes
// through to the wrapped model uncached; the server chunks in front of the
// model and scores the windows as pairs, which are cached.
//
// Only what the wrapped model computed successfully is cached; an error
// returns as it was and caches nothing. Usage (EmbedPooled, ScorePairs)
// counts only the work the model did, not the hits.
//
// # Concurrency
//
// Reranker and Embedder are safe for concurrent use when the wrapped model
// is. Concurrent misses of the same key are computed once: the first
// caller's model call computes it and the others wait for that call
// (single-flight; Stats.Shared counts them): concurrent searches of one
// popular query, or a retry while the first request still runs, cost one
// model call. (Weaviate's hybrid search with a reranker scores its hits
// twice, one call after the other: the second is answered from the cache.)
// A waiter whose context ends stops waiting; when the call it
// waited for fails (its caller's context ended, say), the waiter computes
// the key itself. A key that lands in the cache just after a caller missed
// it may still be computed twice.
package cache
