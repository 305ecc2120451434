//go:build !linux

package vfs

import "os"

// syncData makes f's written data durable (fsync where fdatasync is not
// at hand).
func syncData(f *os.File) error { return f.Sync() }
