package engine

import "errors"

// Errors returned by the engine. Callers test them with errors.Is; the
// engine wraps them with what it was doing.
var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("engine: closed")
	// ErrInvalidDocument is returned by Commit when a document in the batch
	// is malformed (empty ID, ID too long, invalid UTF-8, ...).
	ErrInvalidDocument = errors.New("engine: invalid document")
	// ErrInvalidRequest is returned by Search (and Request.Validate) for a
	// malformed request.
	ErrInvalidRequest = errors.New("engine: invalid request")
	// ErrInvalidConfig is returned by Open and Config.Validate.
	ErrInvalidConfig = errors.New("engine: invalid config")
	// ErrNoDir is returned by Snapshot on an in-memory engine (Open with "").
	ErrNoDir = errors.New("engine: in-memory engine has no directory")
	// ErrCorrupt is returned by Open when the snapshot on disk cannot be
	// read back (bad manifest, checksum mismatch, unknown format version)
	// and neither can the previous generation it keeps as a fallback, or
	// when the write-ahead log cannot be replayed; the error names the
	// file.
	ErrCorrupt = errors.New("engine: corrupt snapshot")
	// ErrBroken is returned by Commit and Snapshot after an earlier commit
	// failed half-way through applying a validated batch (an index refused
	// a write it had accepted in validation). Searches keep working on the
	// state as it is; reopen from the last snapshot to recover.
	ErrBroken = errors.New("engine: a previous commit failed while applying; reopen from snapshot")
	// ErrReadOnly is returned by Commit and Snapshot once a write or
	// fsync of the write-ahead log failed (a full disk, an I/O error):
	// the log can no longer tell what reached the disk, so the engine
	// acknowledges nothing more until it is reopened (a failed fsync is
	// never retried as if it had succeeded: the kernel may have dropped
	// the pages it could not write). The error wraps the log's. Searches
	// keep working on the state as it is; Engine.ReadOnly reports the
	// cause. Reopen (after freeing space or fixing the disk) to recover:
	// Open replays the log, which holds every acknowledged commit.
	ErrReadOnly = errors.New("engine: read-only after a failed write-ahead log write or fsync; reopen to recover")
	// ErrLocked is returned by Open when another Engine, in this process
	// or another, has the directory open; the error names the directory
	// and, when known, the holder's process ID. The lock is released by
	// Close or when the holding process dies.
	ErrLocked = errors.New("engine: index directory is in use by another engine")
	// ErrModelLoad is returned by Open when a registered model that loads
	// ahead of use (models.Reranker.Load) fails to load, and by Warm when a model
	// fails its warm-up; the error names the model.
	ErrModelLoad = errors.New("engine: model failed to load")
	// ErrEmbed is returned by Commit when the attached embedder fails or
	// returns vectors of the wrong shape or that the dense index cannot
	// hold (all zero, NaN or infinite: dense.CheckVector); nothing of the
	// batch is logged or applied.
	ErrEmbed = errors.New("engine: embedding failed")
	// ErrFull is returned by Commit when the engine has no document
	// numbers left to give new documents (2³²−2 distinct documents over
	// its life; a replaced document keeps its number).
	ErrFull = errors.New("engine: document numbers exhausted")
)
