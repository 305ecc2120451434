// Package queue is the one model-call path of a served model: a queue in
// front of one reranker or embedder that every caller submits to — the
// HTTP routes of package server and the engine's /search alike — and that
// merges the items of concurrent calls into shared model calls.
//
// Reranker and Embedder are decorators: each is a models.Reranker
// (models.Embedder) over one, and keeps its Capabilities. A reranker's
// Cost, seen through its queue, adds the wait a call submitted now is
// predicted to have (the items ahead of it, priced by the model's own
// cost model, spread over the workers, plus the time until a busy worker
// frees), so the engine's latency budget, which sizes its batches with
// Cost, sees the queue too. A deadline on a call's context is the deadline
// of the queued job: its items not dispatched by then are dropped and the
// call returns the context's error; items already in a model call finish
// for the others in it.
//
// Batching: items are capped per model call by count (MaxItems) and by
// estimated tokens (MaxTokens); every call is split into chunks of
// ChunkItems and a batch takes one chunk per waiting call in round-robin
// order, so a call of 10,000 pairs delays one of 8 by at most a chunk per
// batch. A batch waits at most MaxWait to fill once a worker is free;
// Workers model calls run at once. Results are written back by (call,
// index): each call gets exactly its own outputs in its input order.
// MaxQueueItems bounds what waits (ErrFull beyond it; a call on an empty
// queue is always admitted). With Enabled false every call goes to the
// model on its own, still at most Workers at once.
//
// Caveats: chunked calls (ScoreSpans, EmbedSpans) run the model's own
// windowing in a worker slot, not merged with other calls. A batch of
// texts of several input kinds makes one model call per kind. The wait
// prediction assumes round robin and knows nothing of a model call that
// has no cost model (embedders): their Cost stays nil. Put a cache
// (models/cache) in front of the queue, so that hits do not wait.
package queue
