// Package dirlock takes an exclusive advisory lock on a directory, so that
// two processes (or two opens in one process) never write one index at
// once.
//
// Acquire creates dir/LOCK and flocks it (LOCK_EX|LOCK_NB): a second
// Acquire on the same directory fails at once with ErrLocked, naming the
// directory and the process ID recorded in the file by the holder. The
// lock belongs to the open file: it is released by Release, or by the
// kernel when the holder dies (kill -9 included), so a crash never leaves
// a stale lock; the LOCK file itself is left in place.
//
// flock is used on Linux, macOS and the BSDs; elsewhere Acquire only
// records the process ID and does not exclude (see lock_other.go). On
// network file systems flock may be local to one machine.
//
// A Lock is safe for concurrent use; Release is idempotent.
package dirlock
