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
	// PreallocateBytes is how far ahead of its records the active
	// segment is filled with zeros (0 = not at all; never past
	// SegmentBytes but for a record that needs it). An fsync of records
	// written over space the file already holds writes only the data
	// (fdatasync), while one that grows the file must also commit its new
	// size to the file system's journal: on the development machine
	// (ext4, virtio disk) the former took about 60 µs of CPU and 105 µs
	// against 90 µs and 145 µs, and fsync per commit at 16 committers ran
	// about 30 % more commits. Zeros after the last record are a clean
	// end of the log at Open, and Close cuts them off.
	PreallocateBytes int64 `json:"preallocate_bytes"`
}

// DefaultConfig is fsync per commit, a 100 ms interval for SyncInterval,
// 64 MiB segments and 1 MiB preallocated ahead.
func DefaultConfig() Config {
	return Config{Sync: SyncEveryCommit, Interval: 100 * time.Millisecond, SegmentBytes: 64 << 20, PreallocateBytes: 1 << 20}
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
	case c.PreallocateBytes < 0:
		return fmt.Errorf("%w: preallocate_bytes %d is negative", ErrConfig, c.PreallocateBytes)
	}
	return nil
}
