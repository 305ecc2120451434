// Package engine is hybrank's hybrid retrieval engine, the one type services
// embed: BM25 over roaring postings (package postings) and, with an
// embedder attached, dense HNSW search (package dense), fused, expanded over
// document links, reranked by a cross-encoder under a latency budget,
// diversified and packed into a token budget, with provenance for every hit.
//
// The engine does not construct models. It takes a models.Embedder
// (WithEmbedder), named models.Rerankers (WithReranker("fast", r), ...) and a
// TokenCounter (WithTokenCounter) at Open; package enginetest has small
// deterministic fakes for tests. Open loads every model (Load of the
// models contracts: models/ort's CrossEncoder and BiEncoder load lazily) and fails
// with ErrModelLoad if one cannot, so no search pays a model load inside
// its budget or folds one into the rerank cost estimate; Warm then runs one
// small inference per model (not measured), for what a model does on its
// first call besides loading.
//
// # Documents and tenants
//
// A document is identified by its Tenant and its ID together: the same ID
// in two tenants is two documents, Batch.Add replaces only the document
// with the same tenant and ID, Batch.DeleteIn and Engine.GetIn name the
// tenant, and Links resolve within the linking document's tenant. No call
// takes an ID alone.
//
// The engine is the one owner of tenancy and filters. Every stored
// document has a number (from 1; a replaced document keeps its own), and
// the document store holds the one filter index: a roaring bitmap of
// numbers per tenant and per metadata key=value pair. A search turns
// req.Tenant and req.Filter into one allow-list of numbers (nil when the
// request's tenant is the only one and there is no filter: the indexes
// then search everything at no cost) and hands it to the postings and
// dense indexes, which know each document by its number (their Ref) and
// by a string key made of tenant and ID (indexKey, which orders a tenant's
// documents by ID), and nothing of tenants or metadata. A write-ahead log written by
// an older version may still delete IDs in every tenant (the meaning IDs
// had when they were global, and of the removed Batch.Delete); Open
// replays such records with that meaning.
//
// # Batches
//
// A Batch is one atomic change; its operations apply in order and the last
// one on a document (tenant and ID) wins: an Add after an Add replaces, a
// DeleteIn after an Add deletes, an Add after a DeleteIn stores. This is
// the one batch rule: the HTTP server's POST /documents maps its body onto
// it (documents in order, then its delete list) instead of a rule of its
// own. Batch.Validate is the one validation of a batch (each document's
// Validate, no empty ID deleted); Commit runs it, and the server runs it
// before admitting a request, to answer 400 with its message.
//
// Request, Result and Document are also the HTTP server's wire types: their
// JSON tags are the API, with durations in milliseconds (Request.Budget as
// "budget_ms", Timings as fractional milliseconds).
//
// # Pipeline
//
// Search(ctx, req) runs, recording each stage's wall time in
// Result.Timings:
//
//  1. analysis: the query is analyzed with the index's analyzer;
//  2. dense (query embedding) and bm25: each retriever returns up to
//     req.Candidates documents of req.Tenant passing req.Filter. The tenant
//     and the filter are applied inside both retrievers, before their top-k,
//     never to a truncated list;
//  3. fusion: rrf (Σ 1/(k+rank), k = 60), weighted ((1−α)·bm25' + α·dense'
//     over min-max normalised scores; α = 0 is BM25 order, α = 1 dense
//     order) or relative (Weaviate's relativeScoreFusion: bm25' + dense').
//     A list whose scores are all equal normalises to 1. Ties go to the
//     better rank in the dominant list, then the other list, then the ID.
//     Candidates below req.ScoreThreshold (on the fused scale) are dropped;
//  4. expansion: from the best req.Expand.Seeds candidates, Links are
//     followed for req.Expand.Hops steps; a document reached at hop h from
//     parent p scores fused(p)·Decay. Only stored documents of the same
//     tenant that pass the filter are admitted; each appears once;
//  5. rerank (when req.Rerank names a registered profile): candidates are
//     scored in fused order under the latency budget (below). With
//     req.Chunking a candidate longer than the reranker's window is scored
//     in overlapping windows (Reranker.ScoreSpans; the windows of a batch's
//     candidates are batched together), its score is their aggregate and
//     Provenance.RerankSpan is the best window's bytes in Document.Text; a
//     reranker that cannot chunk truncates, with a chunking_unsupported
//     fallback;
//  6. mmr (when req.MMRLambda > 0): TopK hits are selected by maximal
//     marginal relevance, cosine on embeddings, Jaccard on analyzed terms
//     when a document has no embedding; otherwise the first TopK are kept;
//  7. packing: hits are taken greedily in final order while their text fits
//     TokenBudget − Reserve (a hit that does not fit is skipped, later ones
//     may still fit); the taken hits of one Source whose Spans touch or
//     overlap coalesce into one Passage (union span, merged text, every part
//     listed). Tokens are counted with the TokenCounter or, without one,
//     estimated by models.EstimateTokens (an approximate WordPiece count).
//
// # Final order and scores
//
// Reranked candidates come first, ordered by rerank score (ties by fused
// rank); the candidates the budget left unreranked follow in fused order.
// Hit.Score is the rerank score for the former and the fused score for the
// latter, so scores are comparable only within a tier; Provenance.Reranked
// says which. With a cascade, what only its first stage scored sits
// between the two, by the first stage's score. MMR keeps the tiers: with
// T of them present, each tier's min-max normalised scores fill its own
// 1/T of [0, 1], best tier on top (two tiers: [0.5, 1] and [0, 0.5]), so
// λ = 1 keeps the final order.
//
// # Latency budget
//
// The deadline is min(ctx's deadline, start + req.Budget); running out of
// it is a result, not an error. The query embedding and the dense search
// stop at it: the search goes on BM25 only, with Result.Degraded set and a
// retrieval_budget fallback. BM25 retrieval always runs to the end, under
// ctx alone, so a budget shorter than retrieval still returns BM25 (or
// fused) hits, late; only ctx itself ending — cancellation or ctx's own
// deadline, the hard limit — makes Search return an error (wrapping
// context.Canceled or context.DeadlineExceeded) during retrieval. From
// reranking on the budget is met by doing less: each batch is sized to the
// time left minus a margin for MMR and packing (RerankConfig.Margin +
// MarginFraction × Budget), at most MaxBatch documents. A reranker that
// predicts its own cost (models.Capabilities Cost; the ONNX Runtime
// cross-encoder does, from the cost model its batches are planned with,
// and its queue (models/queue) adds the predicted wait behind other work)
// predicts each run of the next candidates from their estimated token
// lengths, and the batch is the longest run that fits; the loop keeps, per
// profile, an EWMA of the ratio of observed to predicted wall time and of
// its deviation, and scales predictions by their sum (tokenization,
// waiting behind other searches and a busier machine are in the ratio;
// the deviation keeps batches whose time varies from being cut). Otherwise (and when scoring in
// windows) the loop keeps, per profile, an EWMA of the wall time per
// document; the first batch of an unmeasured profile is small
// (RerankConfig.FirstBatch). When not even MinBatch documents are
// predicted to fit, reranking stops without a call. A batch that overruns
// anyway is cut at deadline − margin (the reranker gets a context with
// that deadline; ONNX Runtime's terminate flag fires on it) and discarded,
// and the profile's estimates are raised to at least twice the cut batch's
// time per document (a predicted batch: its ratio to 1.25 × its time over
// the prediction), so later searches predict smaller batches or none; each search that skips
// reranking for lack of time lowers the estimates by 15 %, so a later one
// probes again.
// Result.Degraded is then set and Result.Reranked says how many candidates
// (a prefix in fused order) were scored. MMR, a similarity per remaining
// candidate per place, runs under the same deadline: when it passes, the
// places MMR has not chosen yet take the remaining candidates in final
// order (an mmr_budget fallback, Degraded).
//
// # Fallbacks
//
// Degradations the engine chooses instead of failing are listed in
// Result.Fallbacks: no embedder, no vectors in the index, a failing query
// embedding or dense search, or a budget spent before either finished
// (BM25 only); an unknown rerank profile, a failing reranker (fused order,
// partial scores discarded; a NaN or infinite score is a failure), no time
// left to rerank at all, or none left to finish MMR.
//
// # Atomicity and concurrency
//
// An Engine is safe for concurrent use, and searches never wait for
// writers. The engine publishes its contents as an immutable state — a
// view of the postings index, a view of the dense index and a document
// store, all as of one commit — through an atomic pointer; a Search loads
// it once and reads only it, so it sees every document of a batch or none
// of them, and it takes no lock. Commit validates, analyzes and embeds a
// whole Batch first, with no lock held (concurrent Commits prepare in
// parallel); then, serialised with other Commits, Snapshot, maintenance
// and Close, it logs the batch, writes it into the indexes beside the
// published state (postings builds its next snapshot copy-on-write, dense
// appends vectors and graph nodes that older views do not see, the
// document store copies the shards it touches) and publishes the next
// state with one atomic swap. Commits that queue while one applies are
// applied together (group commit): one of them leads, logs each batch as
// its own record and applies them in order, exactly as one after another,
// and publishes once; the others wait for it on a channel of their own. A large batch therefore costs searches only
// the CPU it shares with them. Records are immutable, so the stages after
// retrieval keep using them whatever is committed meanwhile.
//
// If the dense index refuses a write after the postings index accepted the
// batch (which validation makes unexpected), the engine cannot roll back:
// it marks itself broken, Commit and Snapshot return ErrBroken, and Search
// keeps serving the state as it is. Reopen from the last snapshot.
//
// # Persistence
//
// Open(dir, ...) locks dir (flock on dir/LOCK, internal/dirlock: a second
// Open of the same directory, in this process or another, fails with
// ErrLocked until Close or the holder's death), loads the newest snapshot
// in dir, then replays the write-ahead log (dir/wal) from the snapshot's
// log position. Snapshot
// writes a new generation directory (snap-NNNNNN with lexical/, dense/ and
// docs.gob, each file written to a temp name, fsynced, renamed, directory
// fsynced), then MANIFEST the same way, last, after copying the MANIFEST
// it replaces to MANIFEST.prev; older generations but the previous one are
// deleted only after that (internal/manifest, the scheme postings and
// dense use too). A crash leaves the old or the new snapshot. The manifest
// carries the format version, the index-shaping configuration, the size
// and crc32c of the document file and the log position, and ends with the
// crc32c of its own JSON. Directories written by version 1 (MANIFEST.json,
// BLAKE3, no log) still open; the next Snapshot converts them.
// Directories of versions 1 and 2, written while IDs were global, open by
// renaming every document in both indexes to its tenant-scoped key (the
// indexes are not rebuilt), and their log records replay with the meaning
// IDs had then.
//
// # Durability
//
// Commit writes its batch (reduced to the final operation per document,
// with the tenant of every deletion and the vectors it computed) as one
// checksummed record to the write-ahead
// log before applying it, and returns once the record is durable under
// Config.Durability.Sync:
//
//   - SyncEveryCommit (the default): after an fsync covering the record.
//     Concurrent Commits share fsyncs (group commit): each waits outside
//     the commit lock for the next fsync, which one of them leads, running
//     fsyncs back to back while records keep arriving and waking only the
//     Commits each covered. The log's active segment is filled with zeros
//     ahead of its records (Durability.PreallocateBytes, default 1 MiB),
//     so those fsyncs (fdatasync) write the records without a new file
//     size, but for one per PreallocateBytes that writes the zeros and
//     the size.
//   - SyncInterval: after the write to the operating system; the log is
//     fsynced every Durability.SyncInterval (default 100 ms). A killed
//     process loses nothing acknowledged; a power failure can lose that
//     interval.
//
// A search may see a batch as soon as it is applied, before Commit
// returns. A crash mid-write leaves a torn record at the log's tail; Open
// cuts it off and reports it (Durability().Recovery), as it does for a
// tail record that fails its checksum; preallocated zeros after the last
// record are a clean end, cut off without a report. Replay does not call the embedder.
//
// The engine snapshots by itself, in the background, when the log passes
// Durability.SnapshotLogBytes (default 256 MiB) or when it holds commits
// and the last snapshot is Durability.SnapshotAge old (default 10
// minutes); either trigger is disabled by 0 (the size trigger measures
// the log's growth since the last snapshot). After a snapshot the log
// segments the previous snapshot covers are deleted: the log keeps the
// commits since the previous generation, which Open falls back to when
// the newest one fails its checksums (see Failures). A snapshot holds the
// commit lock while it writes (commits wait; searches do not). Close
// stops the background work and flushes the log; it does not snapshot.
//
// # Failures
//
// Every filesystem call of the log and of snapshots goes through one
// vfs.FS (the operating system's; WithFS gives tests an error-injecting
// one, internal/vfs/errorfs). What the engine does when the disk fails:
//
//   - A failed write or fsync of the write-ahead log (a full disk, an I/O
//     error) fails the Commits of its group and turns the engine
//     read-only: Commit and Snapshot return ErrReadOnly wrapping the log's
//     error from then on, until the engine is reopened (a sticky error:
//     after a failed fsync the kernel may have dropped the pages it could
//     not write, so nothing is acknowledged on top of a log that cannot
//     be trusted, and the fsync is never retried as if it had succeeded).
//     Searches keep working on the state as it is, which may include the
//     failed group's batches. ReadOnly and DurabilityStats.ReadOnly say
//     why; the HTTP server answers writes with 503 and /readyz reports
//     not ready. After a reopen every acknowledged commit is present, and
//     a failed one is present as a whole or absent, never in part.
//   - A failed preallocation of the log (a full disk) is not an error:
//     records are written without zeros ahead until the next segment.
//   - A failed snapshot (a full disk during any of its files) removes
//     what it wrote of the new generation and leaves the previous
//     snapshots and the log intact; the engine stays writable, the error
//     is in DurabilityStats.LastSnapshotError and the background snapshot
//     is retried at its next trigger.
//   - At Open, a snapshot whose manifest or a file it names fails its
//     checksum (or is missing, or does not decode) is replaced by the
//     previous generation (MANIFEST.prev) plus the log from that
//     generation's position, and Recovery.FellBack names the file and
//     what was wrong. If no generation is valid, Open fails with
//     ErrCorrupt naming the file; it never opens empty over a directory
//     that had a snapshot. A directory with neither manifest opens from
//     the log alone (as a new or never-snapshotted one does), and a log
//     that does not reach back to the position Open needs is ErrCorrupt.
//
// # Maintenance
//
// A background goroutine keeps the indexes in shape (MaintenanceConfig;
// Config.Maintenance.Interval 0 turns it off). Every Interval it checks the
// published state and, once the engine holds Maintenance.MinDocs
// documents, starts one task at a time:
//
//   - a BM25 rebuild when the average document length has drifted more
//     than RebuildDrift from the one the document norms were built with,
//     or deleted documents exceed RebuildDeleted of the postings index:
//     norms at the current avgdl, deleted postings dropped, doc numbers
//     compacted (postings.Rebuilding);
//   - a compaction of the dense graph when the nodes of deleted or
//     replaced vectors exceed CompactTombstones of its nodes
//     (dense.Compaction).
//
// A task runs as a sequence of steps, one per Interval, each bounded
// (RebuildStep documents and postings, CompactStep vectors) and holding no
// lock: it reads an immutable state and builds the new index beside it,
// while searches and commits carry on. Its last step takes the commit lock,
// adds what was committed since the task started and publishes the result
// as the next state (the documents are the same; scores change by the new
// norms). Rebuilds are not logged: after a restart the norms are those of
// the last snapshot until maintenance rebuilds again, so a rebuild asks
// for a background snapshot. Close abandons a task in progress.
//
// Stats reports documents, tenants, both indexes' sizes, deleted
// documents, tombstones and avgdl drift, maintenance (task running, counts,
// last times, last error), the write-ahead log and recovery (Durability)
// and the snapshot generation.
//
// # Ownership
//
// Documents are copied into a Batch and copied out into a Result; callers
// never share memory with the store.
package engine
