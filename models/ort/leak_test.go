package ort_test

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// residentBytes reads the resident set size from /proc/self/statm.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestRerankMemoryFlat runs 10,000 consecutive rerank calls on the fast
// profile and checks that resident memory stays flat after warm-up: every
// call creates and frees native input and output tensors, so a leak of one
// tensor per call would add megabytes.
func TestRerankMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 calls: skipped with -short")
	}
	if raceEnabled {
		t.Skip("10,000 calls are too slow under -race; run without -race")
	}
	cfg := cpuConfig(fastDir(t), models.ProfileFast)
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	ctx := context.Background()
	docs := []string{
		strings.Repeat("memory leak check with a few more words ", 2),
		"second document",
	}
	call := func(n int) {
		for i := range n {
			if _, err := ce.Score(ctx, "query "+strconv.Itoa(i%7), docs); err != nil {
				t.Fatal(err)
			}
		}
	}
	call(1000)
	debug.FreeOSMemory()
	before := residentBytes(t)
	call(10000)
	debug.FreeOSMemory()
	after := residentBytes(t)
	growth := after - before
	t.Logf("RSS before %.1f MiB, after 10,000 calls %.1f MiB (growth %+.2f MiB)",
		float64(before)/(1<<20), float64(after)/(1<<20), float64(growth)/(1<<20))
	// Each call allocates ~1.5 KB of native tensors (3 inputs of 2×~24
	// int64 plus the output); leaking them would grow RSS by ≥ 20 MiB.
	if growth > 8<<20 {
		t.Fatalf("RSS grew by %.1f MiB over 10,000 calls", float64(growth)/(1<<20))
	}
}
