package crashtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/internal/wal"
)

func TestDamageFor(t *testing.T) {
	type combo struct {
		d      Damage
		policy int
	}
	if got := []Damage{DamageFor(0), DamageFor(1), DamageFor(2)}; !slices.Equal(got, []Damage{Cut, Flip, Zeros}) {
		t.Errorf("runs 0-2 get %v, want every real damage", got)
	}
	seen := map[combo]bool{}
	for run := range 8 {
		seen[combo{DamageFor(run), run % 2}] = true
		if DamageFor(run+8) != DamageFor(run) {
			t.Errorf("run %d gets %s, run %d %s: want the pattern to repeat", run, DamageFor(run), run+8, DamageFor(run+8))
		}
	}
	if len(seen) != 2*len(Damages) {
		t.Errorf("runs 0-7 cover %d damage × policy pairs, want %d: %v", len(seen), 2*len(Damages), seen)
	}
}

// Every damage to a log's last record (as a kill leaves it: with
// preallocation, zeros after the records) is dropped and reported when the
// log opens, and only that record is lost: payloads random or mostly zero
// bytes, the log preallocated or not.
func TestDamageLastRecord(t *testing.T) {
	for _, prealloc := range []int64{4 << 10, 0} {
		for _, sparse := range []bool{false, true} {
			cfg := wal.DefaultConfig()
			cfg.PreallocateBytes = prealloc
			for i, d := range Damages[1:] {
				t.Run(fmt.Sprintf("%s prealloc %d sparse %v", d, prealloc, sparse), func(t *testing.T) {
					damageAndOpen(t, cfg, d, sparse, rand.New(rand.NewPCG(uint64(i), 3)))
				})
			}
		}
	}
	if DamageLastRecord(t, crashedLog(t, wal.DefaultConfig(), 2, false), None, rand.New(rand.NewPCG(1, 1))) {
		t.Error("None reported damage")
	}
}

// damageAndOpen damages the last of 5 records with d, 40 times over, and
// checks what the log reports when it opens.
func damageAndOpen(t *testing.T, cfg wal.Config, d Damage, sparse bool, rng *rand.Rand) {
	t.Helper()
	for i := range 40 {
		dir := crashedLog(t, cfg, 5, sparse)
		seg := filepath.Join(dir, mustGlob(t, dir))
		before := size(t, seg)
		if !DamageLastRecord(t, dir, d, rng) {
			t.Fatal("nothing damaged")
		}
		if after := size(t, seg); (d == Cut) != (after < before) {
			t.Fatalf("%s: segment %d bytes before, %d after", d, before, after)
		}
		l, err := wal.Open(vfs.OS, dir, cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if rec := l.Recovery(); rec.DroppedBytes == 0 || rec.Next != 5 {
			t.Errorf("try %d: recovery %+v, want record 5 dropped and reported", i, rec)
		}
		l.Close()
	}
}

// crashedLog writes records 1..n of 100 bytes (random, or zeros but for
// the first byte when sparse) and returns a copy of the log taken before
// Close.
func crashedLog(t *testing.T, cfg wal.Config, n int, sparse bool) string {
	t.Helper()
	src := t.TempDir()
	l, err := wal.Open(vfs.OS, src, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 5))
	payload := make([]byte, 100)
	for i := range n {
		if !sparse {
			for j := range payload {
				payload[j] = byte(rng.IntN(256))
			}
		}
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
