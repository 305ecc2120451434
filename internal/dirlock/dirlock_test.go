package dirlock

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestAcquireRelease(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder — another open file, as another process would have —
	// is refused with the directory and our PID in the message.
	_, err = Acquire(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Acquire = %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil { // idempotent
		t.Fatal(err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

func TestAcquireMissingDir(t *testing.T) {
	if _, err := Acquire(t.TempDir() + "/missing"); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire on a missing dir = %v", err)
	}
}
