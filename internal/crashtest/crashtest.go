// Package crashtest holds what hybrank's crash tests share: re-executing
// the test binary as a child process that runs one test (the writer or the
// server), SIGKILLing it, and damaging the tail of a write-ahead log as a
// crash mid-write or a bad sector would. It is for tests only.
package crashtest

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/wal"
)

// Child is the test binary re-executed to run one child test.
type Child struct {
	cmd    *exec.Cmd
	stderr strings.Builder
	// Done is closed when the child's standard output reaches EOF.
	Done chan struct{}
}

// Start runs the test named test in a child process with env added,
// calling onLine for each line it prints (from one goroutine; what onLine
// writes may be read after Kill returns).
func Start(t testing.TB, test string, env []string, onLine func(string)) *Child {
	t.Helper()
	c := &Child{Done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	pipe, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.Done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			onLine(sc.Text())
		}
	}()
	return c
}

// Kill SIGKILLs the child, reads the rest of its output and fails t unless
// the kill is what ended it.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	_ = c.cmd.Process.Kill()
	<-c.Done
	err := c.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("child did not die by the kill (%v); stderr:\n%s", err, c.stderr.String())
	}
}

// DamageLastRecord cuts the log's last record at a random byte or flips
// one random bit in it, as a crash mid-write or a bad sector at the tail
// would; it reports false when the newest segment holds no record (a
// completed older segment is fsynced before the next one starts, so damage
// there is not a torn tail but corruption, which wal's own tests cover).
func DamageLastRecord(t testing.TB, walDir string, flip bool, rng *rand.Rand) bool {
	t.Helper()
	recs, err := wal.Records(walDir)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs)
	if len(recs) == 0 || len(segs) == 0 || recs[len(recs)-1].Segment != segs[len(segs)-1] {
		return false
	}
	last := recs[len(recs)-1]
	if !flip {
		// Inside the record (a cut at its first byte would remove it
		// cleanly, which no crash does to an acknowledged record).
		at := last.Offset + 1 + rng.Int64N(last.Size-1)
		if err := os.Truncate(last.Segment, at); err != nil {
			t.Fatal(err)
		}
		return true
	}
	at := last.Offset + rng.Int64N(last.Size)
	b, err := os.ReadFile(last.Segment)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 1 << rng.IntN(8)
	if err := os.WriteFile(last.Segment, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}
