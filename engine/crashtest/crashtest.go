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

// Damage is what DamageLastRecord does to a log's last record.
type Damage string

// The damages.
const (
	// None leaves the log alone.
	None Damage = "none"
	// Cut truncates the file inside the record: a crash mid-write that
	// extended the file.
	Cut Damage = "cut"
	// Flip flips one bit of the record: a bad sector.
	Flip Damage = "flip"
	// Zeros turns the record's bytes from a point inside it on to zeros,
	// keeping the file's size: a crash mid-write into preallocated space
	// (the log's zeros ahead of its records).
	Zeros Damage = "zeros"
)

// Damages lists every Damage, None first.
var Damages = []Damage{None, Cut, Flip, Zeros}

// DamageFor returns the damage of a crash test's run: runs 0, 1 and 2 get
// the three real damages (Cut, Flip, Zeros: a short test of three kills
// sees each), run 3 None, and with runs alternating between two sync
// policies (run%2), runs 0–7 give every damage under both. Later runs
// repeat the pattern.
func DamageFor(run int) Damage {
	return Damages[(run+1+run%8/4)%len(Damages)]
}

// DamageLastRecord damages the log's last record as d says, with rng
// choosing the byte or bit, as a crash mid-write or a bad sector at the
// tail would; it reports false when it changed nothing: d is None, or the
// newest segment holds no record (a completed older segment is fsynced
// before the next one starts, so damage there is not a torn tail but
// corruption, which wal's own tests cover).
func DamageLastRecord(t testing.TB, walDir string, d Damage, rng *rand.Rand) bool {
	t.Helper()
	if d == None {
		return false
	}
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
	if d == Cut {
		// Inside the record (a cut at its first byte would remove it
		// cleanly, which no crash does to an acknowledged record).
		at := last.Offset + 1 + rng.Int64N(last.Size-1)
		if err := os.Truncate(last.Segment, at); err != nil {
			t.Fatal(err)
		}
		return true
	}
	b, err := os.ReadFile(last.Segment)
	if err != nil {
		t.Fatal(err)
	}
	rec := b[last.Offset : last.Offset+last.Size]
	switch d {
	case Flip:
		rec[rng.Int64N(last.Size)] ^= 1 << rng.IntN(8)
	case Zeros:
		// Keep at least the record's first nonzero byte (its sequence
		// number is never 0): a record whose written part is all zeros
		// is no record, indistinguishable from preallocated space, which
		// no crash does to an acknowledged one. Zero at least its last
		// nonzero byte, so that the record changes.
		first := slices.IndexFunc(rec, func(c byte) bool { return c != 0 })
		end := len(rec) - 1
		for end >= 0 && rec[end] == 0 {
			end--
		}
		if first < 0 || end <= first {
			t.Fatalf("record at %s:%d has fewer than two nonzero bytes", last.Segment, last.Offset)
		}
		at := first + 1 + rng.IntN(end-first) // first < at ≤ end
		clear(rec[at:])
	default:
		t.Fatalf("unknown damage %q", d)
	}
	if err := os.WriteFile(last.Segment, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}
