package postings

import "errors"

// Errors returned by this package. Callers compare with errors.Is; the
// returned errors wrap these with what was being done.
var (
	// ErrConfig: the Config is invalid (see Config.Validate).
	ErrConfig = errors.New("postings: invalid config")
	// ErrBadDoc: a Doc or a Delete in a Batch is invalid (empty ID, empty term).
	ErrBadDoc = errors.New("postings: invalid document")
	// ErrBadQuery: a Query is invalid (negative K).
	ErrBadQuery = errors.New("postings: invalid query")
	// ErrBatchUsed: the Batch was already committed, or belongs to another Index.
	ErrBatchUsed = errors.New("postings: batch already committed or foreign")
	// ErrAnalyzerMismatch: the snapshot was built with another analyzer
	// version than Config.AnalyzerVersion; the index needs a rebuild from the
	// source documents.
	ErrAnalyzerMismatch = errors.New("postings: analyzer version mismatch, index needs rebuild")
	// ErrCorrupt: a snapshot file is missing, truncated, fails its checksum or
	// does not decode.
	ErrCorrupt = errors.New("postings: corrupt snapshot")
	// ErrVersion: the snapshot was written by a newer format version.
	ErrVersion = errors.New("postings: snapshot format version is newer than supported")
	// ErrRebuildStale: Rebuilding.Finish found the index rebuilt since
	// StartRebuild (by Rebuild, another Rebuilding or a commit into an
	// empty index) or its IDs renamed; nothing was changed. Start again if
	// still needed.
	ErrRebuildStale = errors.New("postings: index rebuilt since the rebuild started")
	// ErrNoSnapshot: the directory holds no snapshot (no manifest).
	ErrNoSnapshot = errors.New("postings: no snapshot in directory")
)
