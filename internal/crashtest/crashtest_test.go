package crashtest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/wal"
)

func TestDamageFor(t *testing.T) {
	type combo struct {
		d      Damage
		policy int
	}
	seen := map[combo]bool{}
	for run := range 8 {
		if run < 4 {
			for prev := range run {
				if DamageFor(prev) == DamageFor(run) {
					t.Errorf("runs %d and %d both %s: want every damage in the first four", prev, run, DamageFor(run))
				}
			}
		}
		seen[combo{DamageFor(run), run % 2}] = true
	}
	if len(seen) != 2*len(Damages) {
		t.Errorf("eight runs cover %d damage × policy pairs, want %d: %v", len(seen), 2*len(Damages), seen)
	}
}

// Every damage to a preallocated log's last record (as a kill leaves it:
// zeros after the records) is dropped and reported when the log opens,
// and only that record is lost.
func TestDamageLastRecord(t *testing.T) {
	cfg := wal.DefaultConfig()
	cfg.PreallocateBytes = 4 << 10
	for _, d := range Damages[1:] {
		t.Run(string(d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(d)), 3))
			for i := range 40 {
				dir := crashedLog(t, cfg, 5)
				seg := filepath.Join(dir, mustGlob(t, dir))
				before := size(t, seg)
				if !DamageLastRecord(t, dir, d, rng) {
					t.Fatal("nothing damaged")
				}
				if after := size(t, seg); (d == Cut) != (after < before) {
					t.Fatalf("%s: segment %d bytes before, %d after", d, before, after)
				}
				l, err := wal.Open(dir, cfg, 1)
				if err != nil {
					t.Fatal(err)
				}
				if rec := l.Recovery(); rec.DroppedBytes == 0 || rec.Next != 5 {
					t.Errorf("try %d: recovery %+v, want record 5 dropped and reported", i, rec)
				}
				l.Close()
			}
		})
	}
	if DamageLastRecord(t, crashedLog(t, cfg, 2), None, rand.New(rand.NewPCG(1, 1))) {
		t.Error("None reported damage")
	}
}

// crashedLog writes records 1..n of 100 bytes and returns a copy of the log
// taken before Close.
func crashedLog(t *testing.T, cfg wal.Config, n int) string {
	t.Helper()
	src := t.TempDir()
	l, err := wal.Open(src, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 100)
	for i := range n {
		payload[0] = byte(i + 1)
		if _, err := l.Append(payload); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "wal")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func mustGlob(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil || len(m) != 1 {
		t.Fatalf("segments %v (%v), want one", m, err)
	}
	return filepath.Base(m[0])
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
