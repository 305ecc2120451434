// Package wal is the engine's write-ahead log: an append-only sequence of
// checksummed, length-prefixed records in segment files, with group
// commit, a configurable sync policy, torn-tail recovery and truncation
// below a snapshot's log position.
//
// # Format
//
// A log is a directory of segment files named by the sequence number of
// their first record (00000000000000000001.wal, zero-padded so names sort
// in log order). A record is a 16-byte header — crc32c (Castagnoli) u32,
// payload length u32, sequence number u64, little endian; the checksum
// covers the length, the sequence number and the payload — followed by
// the payload. Sequence numbers start at 1 (or at the caller's start
// position) and increase by one per record, across segments.
//
// # Durability and group commit
//
// Write hands a record to the operating system and returns a Ticket; Wait
// returns once the record is durable under Config.Sync: SyncEveryCommit
// waits for an fsync covering it, SyncInterval only for the write (a
// background flusher fsyncs every Config.Interval, so a power loss can
// lose up to that much; a killed process loses nothing). Append is Write
// then Wait. Under SyncEveryCommit the first waiter not yet covered
// becomes the leader and fsyncs everything written so far without holding
// the log's lock; writers that arrive meanwhile append and queue behind it
// and one of them leads the next fsync, so N concurrent committers share
// far fewer than N fsyncs.
//
// # Failures
//
// A failed or short write (a full disk, an I/O error) is cut back off the
// file and returned; the log stays usable. A failed fsync is sticky
// (ErrFailed): the log cannot know what reached the disk — after a failed
// fsync the kernel may have dropped the pages it could not write, so
// retrying the fsync and treating its success as covering them would
// acknowledge lost records — and it refuses every later Write, Wait and
// Sync until reopened; a failed cut-back of a failed write, a failed
// rotation (fsync, close or creation of the next segment) and a failed
// cut of the preallocated zeros are sticky the same way. A failed
// preallocation (a full disk) is not an error: the record is written
// without zeros ahead, and preallocation resumes with the next segment.
// The engine above turns read-only on any log write or fsync failure.
//
// # Filesystem
//
// Every filesystem call goes through the vfs.FS given to Open (vfs.OS in
// production; tests inject faults with internal/vfs/errorfs). Records is
// a read-only diagnostic and reads the operating system's filesystem.
//
// # Recovery
//
// Open checks every record of every segment. An invalid record in the last
// segment — torn by a crash mid-write, or failing its checksum or sequence
// check — ends the log: Open cuts the file there and reports the bytes
// dropped, the offset and the reason in Recovery. Damage in an older
// segment, or segments that do not follow each other, is ErrCorrupt (a
// segment is fsynced before the next one is created, so a crash cannot
// tear it). Replay then hands the records from a given position to the
// caller.
//
// # Truncation
//
// A caller that made its state durable elsewhere (a snapshot) up to log
// position P = Next() calls TruncateBefore(P), which deletes the segments
// whose records are all below P (moving to a new segment first when that
// includes the active one); the engine passes the position of the
// snapshot before its newest, so that its fallback to that generation
// finds the log it needs. Open(fsys, dir, cfg, P) with P from the snapshot
// starts an empty log at P, and refuses a log that begins after P.
//
// Records lists a log's valid records (segment, offset, size, sequence
// number) without opening it for writing: for diagnostics, and for tests
// that damage a log on purpose.
//
// # Concurrency
//
// A Log is safe for concurrent use. Close fsyncs what was written, stops
// the flusher and is idempotent. Replay is meant to run once, after Open
// and before the first Write.
package wal
