package postings

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	crashEnv   = "HYBRANK_POSTINGS_CRASH_DIR"
	crashBatch = 10
)

func crashDoc(i int) Doc {
	return Doc{
		ID:    fmt.Sprintf("c%d", i),
		Terms: []string{fmt.Sprint("w", i%50), fmt.Sprint("x", i%7), fmt.Sprint("id", i), fmt.Sprint("w", i%13)},
		Ref:   uint32(i % 3),
	}
}

func crashCfg() Config {
	c := DefaultConfig()
	c.AnalyzerVersion = "crash-test"
	return c
}

// TestCrashChild is the child process of TestCrashSafety: it opens the
// snapshot (if any), then forever commits crashBatch more docs and saves,
// printing "saved N" after each completed Save. It is skipped unless run
// by the parent.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashSafety")
	}
	ix, err := Open(dir, crashCfg())
	if errors.Is(err, ErrNoSnapshot) {
		ix, err = New(crashCfg())
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for {
		n := ix.Stats().Docs
		b := ix.NewBatch()
		for i := n; i < n+crashBatch; i++ {
			b.Add(crashDoc(i))
		}
		if err := ix.Commit(b); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		if err := ix.Save(dir); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("saved", n+crashBatch)
	}
}

// TestCrashSafety SIGKILLs a child that saves in a loop at random points, 50
// times; after each kill Open must return the last completed snapshot or
// the one being written (never an error, never a loss of documents saved
// before the last completed Save).
func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in child")
	}
	runs := 50
	if testing.Short() {
		runs = 10
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	durable := 0 // docs in the last snapshot known to be complete
	deadline := time.Now().Add(25 * time.Second)
	killsDuringSave := 0
	for run := 0; run < runs && time.Now().Before(deadline); run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Wait for the child to have opened the snapshot, then kill it
		// after a random delay (several saves fit in the window).
		select {
		case l := <-lines:
			if l != "ready" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: child said %q", run, l)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child did not start", run)
		}
		time.Sleep(time.Duration(r.IntN(25000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		printed := durable
		for l := range lines {
			if strings.HasPrefix(l, "error") {
				t.Fatalf("run %d: child %s", run, l)
			}
			if n, ok := strings.CutPrefix(l, "saved "); ok {
				v, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("bad line %q", l)
				}
				if v > printed {
					printed = v
				}
			}
		}
		cmd.Wait()

		ix, err := Open(dir, crashCfg())
		if errors.Is(err, ErrNoSnapshot) && printed == 0 {
			continue // killed before the first save finished
		}
		if err != nil {
			t.Fatalf("run %d: Open after kill: %v", run, err)
		}
		got := ix.Stats().Docs
		// Either the last completed save, or the one in flight whose
		// manifest landed before "saved" could be printed.
		if got != printed && got != printed+crashBatch {
			t.Fatalf("run %d: reopened %d docs, last completed save had %d", run, got, printed)
		}
		if got != printed {
			killsDuringSave++
		}
		for i := 0; i < got; i++ {
			if !ix.Has(fmt.Sprint("c", i)) {
				t.Fatalf("run %d: doc c%d lost", run, i)
			}
		}
		if got > 0 {
			hits := search(t, ix, Query{Terms: []string{fmt.Sprint("id", got-1)}, K: 3})
			if len(hits) != 1 || hits[0].ID != fmt.Sprint("c", got-1) {
				t.Fatalf("run %d: search for the newest doc: %v", run, hits)
			}
		}
		durable = got
	}
	t.Logf("%d docs durable at the end; %d kills landed between manifest rename and report", durable, killsDuringSave)
	if durable == 0 {
		t.Fatal("no save ever completed: the test exercised nothing")
	}
}
