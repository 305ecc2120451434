// Package errorfs is an error-injecting vfs.FS for tests of what the
// durable packages do when the disk fails: it passes every call to a base
// FS (normally vfs.OS) and fails the calls its Faults pick, with ENOSPC,
// EIO or a short write, modelled on the faults storage engines are known
// to mishandle (a full disk, a failed fsync, a write cut short).
//
// # Faults
//
// A Fault names an operation kind (Op: create, write, sync, rename,
// remove, preallocate, readdir, truncate, mkdir), which call of that kind
// to fail (N, counted from when the fault is armed, 1 being the next one),
// optionally only calls on paths containing Path, the error (Err, default
// syscall.ENOSPC), and whether a write is cut short (Short: half the bytes
// reach the base FS, then the error, as a disk that fills mid-write
// does). Mode says what happens after the Nth call: Once fails it alone,
// Every fails it and every later call of the kind, and All fails it and
// every later call of every kind above (a disk that is gone). Plain reads
// (Open, ReadFile, Stat) are never failed. Reset disarms every fault (the
// disk has space again); Calls and Injected count calls per kind, so a
// test can first count a script's calls, then fail each of them in turn.
//
// Injected errors are *fs.PathError values whose Err wraps both the
// chosen errno and ErrInjected, so errors.Is(err, syscall.ENOSPC) holds as
// for a real full disk and a test can still tell its own faults apart.
//
// A failed sync does not drop written data from the base FS (it cannot:
// the page cache is the kernel's). Callers must behave as if it had, which
// is the point of the tests: after a failed fsync nothing written since
// the last good one may be acknowledged.
//
// # Concurrency
//
// An FS is safe for concurrent use; calls are counted in the order they
// take its lock, so under concurrency which call is the Nth is the
// scheduler's choice (tests that need determinism make calls from one
// goroutine at a time).
package errorfs
