package wal

import (
	"fmt"
	"time"
)

// SyncPolicy says when an appended record becomes durable.
type SyncPolicy string

const (
	// SyncEveryCommit makes Wait (and Append) return only after an fsync
	// that covers the record. Concurrent committers share fsyncs (group
	// commit).
	SyncEveryCommit SyncPolicy = "commit"
	// SyncInterval makes Wait return once the record is written to the
	// operating system; a background flusher fsyncs every Config.Interval.
	// A killed process loses nothing; an operating-system crash or power
	// loss can lose up to Interval of acknowledged records.
	SyncInterval SyncPolicy = "interval"
)

// MaxRecord is the largest payload Append accepts.
const MaxRecord = 1 << 30

// Config configures a Log. The zero value is not valid; start from
// DefaultConfig. A Config is a plain value.
type Config struct {
	// Sync is the durability policy.
	Sync SyncPolicy `json:"sync"`
	// Interval is how often the SyncInterval flusher fsyncs; unused
	// under SyncEveryCommit (but must still be positive).
	Interval time.Duration `json:"interval"`
	// SegmentBytes is the size past which the log closes its segment
	// file and starts a new one; truncation removes whole segments.
	SegmentBytes int64 `json:"segment_bytes"`
}

// DefaultConfig is fsync per commit, a 100 ms interval for SyncInterval,
// and 64 MiB segments.
func DefaultConfig() Config {
	return Config{Sync: SyncEveryCommit, Interval: 100 * time.Millisecond, SegmentBytes: 64 << 20}
}

// Validate reports why c is unusable, wrapping ErrConfig.
func (c Config) Validate() error {
	switch {
	case c.Sync != SyncEveryCommit && c.Sync != SyncInterval:
		return fmt.Errorf("%w: sync policy %q (want %q or %q)", ErrConfig, c.Sync, SyncEveryCommit, SyncInterval)
	case c.Interval <= 0:
		return fmt.Errorf("%w: interval %v must be positive", ErrConfig, c.Interval)
	case c.SegmentBytes < 1<<10:
		return fmt.Errorf("%w: segment_bytes %d below 1 KiB", ErrConfig, c.SegmentBytes)
	}
	return nil
}
