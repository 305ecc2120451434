// Package vfs is the filesystem seam under the engine's durable state: the
// write-ahead log (internal/wal), snapshot manifests (internal/manifest),
// crash-safe file writes (internal/atomicfile) and the postings and dense
// snapshot writers make every filesystem call through an FS, so that tests
// can put an error-injecting one (internal/vfs/errorfs) under them. OS is
// the real operating-system implementation, the one production code uses.
//
// # What goes through an FS
//
// The calls that change what is on disk — create, write, fsync, rename,
// remove, preallocate, truncate, mkdir — and the directory listings that
// decide what to change (ReadDir). Plain reads (Open, ReadFile, Stat) go
// through it too, so one FS value describes one view of the disk, but the
// injector does not fail them: reading back is what recovery tests check
// on the real filesystem.
//
// # Concurrency
//
// OS and its Files are safe for concurrent use as far as the operating
// system's calls are (a File's writes at distinct offsets may run at
// once; Close while another call runs is the caller's bug). An FS
// implementation must be safe for concurrent use.
//
// # Caveats
//
// File.SyncData is fdatasync on Linux and fsync elsewhere. File.Preallocate
// writes zeros (it does not call fallocate): an fdatasync over space the
// file already holds writes only the data, which is what the write-ahead
// log preallocates for, while fallocate's unwritten extents would still
// need a metadata update on first write.
package vfs
