package wal

import "errors"

// Errors returned by this package; callers test them with errors.Is.
var (
	// ErrConfig is returned by Config.Validate and Open for a bad Config.
	ErrConfig = errors.New("wal: invalid config")
	// ErrCorrupt is returned by Open and Replay when a record before the
	// log's tail fails its checksum or sequence check, or the segments do
	// not follow each other (a damaged tail is cut off and reported
	// instead, see Recovery).
	ErrCorrupt = errors.New("wal: corrupt log")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("wal: closed")
	// ErrTooLarge is returned by Append for a payload over MaxRecord.
	ErrTooLarge = errors.New("wal: record too large")
	// ErrFailed is returned once a write or fsync failed: the log can no
	// longer tell what is durable, so it refuses further work; reopen it.
	ErrFailed = errors.New("wal: an earlier write or fsync failed")
)
