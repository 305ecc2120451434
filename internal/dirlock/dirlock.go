package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Name is the lock file's name inside the locked directory.
const Name = "LOCK"

// ErrLocked is returned by Acquire when another holder has the directory.
var ErrLocked = errors.New("dirlock: directory is in use")

// Lock is a held directory lock.
type Lock struct {
	mu sync.Mutex // guards f
	f  *os.File   // nil once released
}

// Acquire locks dir (which must exist). It fails with an error wrapping
// ErrLocked, naming dir and the holder's process ID when known, if the
// directory is already locked.
func Acquire(dir string) (*Lock, error) {
	p := filepath.Join(dir, Name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			holder := "another process"
			if b, rerr := os.ReadFile(p); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "process " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("%w: %s is locked by %s (%s)", ErrLocked, dir, holder, p)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Record the holder for the next one's error message (best effort:
	// the lock, not the content, is what excludes).
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release unlocks the directory. It is safe to call more than once.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	// Closing the file releases the flock.
	err := l.f.Close()
	l.f = nil
	return err
}
