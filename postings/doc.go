// Package postings is hybrank's lexical index: BM25 over roaring-bitmap
// posting lists, with the five scoring variants of bm25s, exact pruned
// top-k, allow-lists, atomic incremental batches and crash-safe snapshots.
//
// The package takes already-analysed terms (it does not import the
// analyzer); Config.AnalyzerVersion records which analyzer produced them.
//
// # Data layout
//
// External string IDs map to dense uint32 doc nums, assigned in commit
// order and never reused until Rebuild. Per term:
//
//   - docs: a roaring bitmap of doc nums (github.com/RoaringBitmap/roaring/v2),
//     run-optimised, followed by a tail: the newest doc nums (at most 1,024,
//     ascending, all above the bitmap's) as a plain slice, merged into the
//     bitmap when it would grow past that (see Concurrency);
//   - tf: one byte per posting, aligned to that order (the bitmap's rank
//     order, then the tail: the i-th posting's frequency is tf[i]);
//     frequencies ≥ 255 store 255 and the exact value in a small sorted
//     overflow list;
//   - maxTfc: the largest tf component over the term's postings, the
//     per-term upper bound used for pruning.
//
// Per doc: length (uint32), external ID, the caller's Ref (uint32) and a
// 128-bit blake3 content hash (over the terms). Per distinct length: the norm
// (1-b)+b·dl/avgdl_build (float64) and, for lengths below 4096, the search
// kernel's tf component for tf 1..15 (16 float64s: one gather instead of
// a division per posting). Deleted doc nums are a bitset (and the same set as a
// bitmap, to count live df) until Rebuild compacts them away.
// Stats.IndexBytes counts the bitmaps' serialized sizes, the tails (4 bytes
// a posting), the tf arrays and
// overflow, bounds, the length, norm and tf-component tables and deleted
// sets; IDs, Refs and hashes are DocTableBytes.
//
// # Allow-lists
//
// The index knows no tenants or metadata. A caller that filters gives each
// document a Ref (its own document number; package engine gives every
// stored document one) and passes Query.Allow, a roaring bitmap of the Refs
// a hit may have, built from its own filter index; nil allows everything,
// at no cost. A doc num's Ref is checked where a hit or a pruning
// candidate is taken (one table load and a bitmap probe), never per
// posting.
//
// # Scoring
//
// Scores follow bm25s/scoring.py exactly: idf from the live N and df at
// query time, rounded to float32 like bm25s's idf array; the tf component
// in float64; each posting's score rounded to float32; bm25l and bm25+
// subtract idf·tfc(0) per posting and add Σ idf·tfc(0) over the query
// tokens to every hit. A query term repeated n times counts n times (bm25s
// sums every query token). Document norms use the avgdl of the last full
// build (the first commit into an empty index, or Rebuild): until Rebuild,
// scores are those of a bm25s index built with that avgdl. Stats.Drift is
// |avgdl_now − avgdl_build| / avgdl_build and NeedsRebuild reports drift
// above Config.RebuildDrift (or more than a quarter of doc nums deleted).
//
// # Search
//
// Term-at-a-time over a dense float32 accumulator, terms in descending
// upper-bound order — the canonical order in which every path sums a
// document's contributions, so pruned and exhaustive scores are
// bit-identical. Per posting the kernel does one tf-component table gather
// and no call (postings outside the table — long documents, tf ≥ 16,
// overflow — are computed by the same formula). On amd64 with AVX-512 the
// tabled postings go 8 at a time through an assembly kernel (gathers of
// lengths, table entries and accumulators, one scatter: a list's doc nums
// are distinct) doing the same operations in the same order, so its
// scores are bit-identical to the Go loop's (tested). Deleted documents
// are accumulated like live ones and dropped when candidates and hits are
// taken. A query whose postings are at least a quarter of the doc nums is
// "dense": touched documents are not tracked, the accumulator is scanned
// at the end. Hits are selected without a heap: a lower bound of the k-th
// score — the k-th largest of the maxima of disjoint blocks of the
// accumulator (with AVX-512, 16 strided blocks per 256 entries: a
// vertical max; otherwise contiguous blocks of 16) — discards most
// documents in one pass (a vector compress pass, or a branch-free rescan
// of the blocks that reach it); a bucketed bound of the k-th score among
// the gathered cuts them to at most 2k, and those are sorted as packed
// (score, doc) keys (a counting pass into 256 buckets, then an insertion
// sort), ties by external ID. The accumulator is padded to a multiple of
// 256 entries and all zero between searches.
//
// The pruned path is exact quit/continue MaxScore: once the remaining
// terms' bounds fall below θ (a lower bound of the k-th final score of
// filtered live documents; contributions are non-negative so partial
// scores only grow), unseen documents cannot reach the top k and the rest
// of the lists are only scanned (or probed, when the candidates are few)
// for the surviving candidates. Bounds carry a float32-rounding slack, so
// pruning never drops a document exhaustive scoring ranks. It is gated by
// cost — θ is only tried when the postings left are many compared with
// the documents a try visits, and continue mode is entered only with at
// most one candidate per 8 remaining postings — so on small or
// evenly-spread queries it is exhaustive scoring plus a few checks.
// Query.Exhaustive disables pruning. The allow-list is applied to
// candidates and hits; documents that match no query term (score 0) are never hits; ties
// rank by external ID. ctx is polled about every 1024 postings.
//
// # Concurrency
//
// An Index is safe for concurrent use. Search and Stats read one immutable
// snapshot through an atomic pointer and never block on writers; View
// hands that snapshot out, so a caller can search a state it pinned
// together with other indexes (the engine does, for atomic batches). Commit,
// Rebuild, Save and Has serialise on one mutex. Commit builds the next
// snapshot copy-on-write — doc tables, tails and tf arrays are only
// appended past the lengths older snapshots read; the term table is
// copied in chunks of 32 entries, only those a commit changes; a bitmap
// (a term's, when its tail is merged; the deleted set's) is
// cloned copy-on-write, sharing every container the commit does not
// change — and publishes it with one pointer swap, so readers see a batch
// entirely or not at all. A commit's cost is thus about its own postings,
// whatever the size of the index: the tail exists because even one
// container copy (up to 8 KiB) per touched term made small commits into a
// large index cost hundreds of kilobytes each. CommitGroup applies several
// batches as one commit, with the result of committing them in turn. A
// Batch belongs to one goroutine and is committed once; Batch.Add hashes
// and counts the document's terms, so batches prepared concurrently do
// that in parallel.
//
// Rebuild holds the mutex for its whole O(postings) run. StartRebuild does
// the same work in bounded steps with no lock (it reads one immutable
// snapshot), so commits carry on; Rebuilding.Finish then appends, under the
// mutex, what was committed since the start — later snapshots of one build
// only ever append doc nums and postings (at the end of each list's rank
// order), and mark deletions — and publishes. Summary
// is the O(1) part of Stats that decides when to rebuild.
//
// # Snapshot format and crash safety
//
// SaveFS(fsys, dir) is Save through a vfs.FS (Save uses vfs.OS; fault
// tests pass errorfs); a save that fails removes the files of its partial
// generation and leaves the previous generation as it was.
//
// Save(dir) writes generation g as docs-g.bin (IDs, Refs, lengths, hashes,
// deleted set) and postings-g.bin (per term: name, bound,
// tf bytes, overflow, roaring bitmap), both with a magic and FormatVersion
// header, through internal/manifest (the generation scheme shared with
// package dense and the engine): each file is written to a .tmp file,
// fsynced and renamed; the directory is fsynced; then MANIFEST — JSON
// naming the format version, generation, analyzer version, scoring config,
// build avgdl and every file's size and crc32c, followed by the crc32c of
// that JSON — is written the same way and the directory fsynced again.
// Only then are other generations' files and stray temporaries deleted.
// The MANIFEST rename is the commit point: a crash before it leaves the
// old MANIFEST, whose files are untouched (a new generation is numbered
// above every one named in the directory); a crash after it finds every
// file of the new generation durable. Open reads whole files in bulk and
// verifies every checksum before decoding. Version 1 snapshots (ten-digit
// generation names) open unchanged.
//
// # Errors
//
// ErrConfig, ErrBadDoc, ErrBadQuery, ErrBatchUsed for bad input;
// ErrNoSnapshot, ErrCorrupt (missing, truncated or altered files),
// ErrVersion (written by a newer format) and ErrAnalyzerMismatch (built by
// another analyzer version: rebuild from source documents) from Open.
package postings
