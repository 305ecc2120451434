// Package atomicfile writes files crash-safely: the content goes to a
// temporary file in the target directory, which is fsynced, closed and
// renamed over the target name, and the directory is then fsynced. After a
// crash at any point the target name holds either its previous content or
// the complete new content, never a mix; a leftover temporary (named
// name+"."+random+TempSuffix) may remain and callers are expected to
// remove stray TempSuffix files when they clean up a directory. MkdirAll
// creates directories durably (each new entry fsynced in its parent).
// Every call goes through the vfs.FS passed in (vfs.OS in production,
// errorfs in fault tests).
//
// Concurrency: the functions are safe for concurrent use, also on one
// name: each write has its own temporary file, and the last rename wins.
//
// Ownership: the write callback's io.Writer is valid only during the call;
// it is buffered and flushed by Write after the callback returns. Checksums
// are the caller's business: wrap the writer with io.MultiWriter(w, hash).
//
// Invariants: on any error the temporary file is removed and an existing
// file named name is left untouched (unless the error came from the final
// directory fsync, after the rename took place).
package atomicfile
