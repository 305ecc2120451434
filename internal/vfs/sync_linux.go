package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's written data durable with fdatasync, which commits
// the file's metadata only where reading the data needs it (a new size),
// not its modification time.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
