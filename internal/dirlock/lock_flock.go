//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package dirlock

import (
	"os"
	"syscall"
)

// errWouldBlock is flock's answer when another open file holds the lock.
var errWouldBlock = syscall.EWOULDBLOCK

// flock takes an exclusive lock on f without blocking.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
