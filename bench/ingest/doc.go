// Package ingest is the driver of `bench ingest`: the engine's write path
// on real text, on disk. Two measurements, each on a fresh engine in a
// temporary directory:
//
//   - Sync: Committers goroutines commit one document per Commit (BM25
//     only, so no embedding cost hides the log's) for SyncDocs documents,
//     once with an fsync per commit (engine.SyncEveryCommit; concurrent
//     commits share fsyncs: group commit) and once with interval syncing
//     (the no-fsync baseline), Rounds times, alternating the two (one run
//     of each swung the ratio between 0.56 and 0.77 on a 2-core machine;
//     the check compares the medians). Docs/s, fsyncs, commits per fsync
//     and commits per apply group (Commits queued while one applies are
//     applied together: engine.Commit). SweepCommitters repeats it at
//     other committer counts: fsync per commit is bound by latency (a
//     committer waits for its fsync), so its ratio to interval syncing
//     grows with the committers that share each fsync.
//   - Search during ingest: an engine holding the corpus (hashing embedder,
//     so HNSW inserts are real work) answers the dataset's queries back to
//     back, first idle, then while one goroutine commits Ingest more
//     documents in batches of Batch. Latency p50/p99 of both.
//
// Documents are the dataset's, cycled under new IDs when more are needed.
// Targets: fsync-per-commit docs/s ≥ MinSyncRatio × interval's (0.8), and
// search p99 during ingest ≤ MaxP99Ratio × idle p99 (1.5).
//
// # Concurrency
//
// Config, Result and the rows are plain values. Run measures one thing at
// a time; concurrent Runs would disturb each other's figures.
package ingest
