package ort_test

import (
	"context"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
)

// TestCalibrationRealRuntime calibrates a small generated model on ONNX
// Runtime, checks that the table is usable and grows with the length, that
// a second load reads it from the cache, and that scoring in cost mode runs.
func TestCalibrationRealRuntime(t *testing.T) {
	g := generated(t, smallConfig(bertgen.CrossEncoder))
	cfg := cpuConfig(g.dir, models.ProfileFast)
	cfg.Batching = models.BatchingCost
	cfg.CalibrationMillis = 3000
	cfg.CalibrationCache = t.TempDir()
	load := func() ort.BatchingInfo {
		t.Helper()
		ce, err := ort.NewCrossEncoder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ce.Close()
		info, err := ce.Batching()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ce.Score(context.Background(), "what do cross encoders score", testDocs); err != nil {
			t.Fatal(err)
		}
		return info
	}
	info := load()
	t.Logf("calibrated in %v, %d cells, fit residual %.2f, notes %q", info.Calibration, info.Table.Measured(), info.Residual, info.Notes)
	if info.Mode != models.BatchingCost || info.Source != ort.CostCalibrated || info.Path == "" || info.Table == nil {
		t.Fatalf("first load: %+v", info)
	}
	tab := info.Table
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	// Monotone-ish: with the 8-token run as the floor, a 512-token
	// sequence (64 times the work in the linear layers, 4096 times in
	// attention) must be the slower, whatever the noise of the machine.
	row := tab.Millis[0]
	first, last := row[0], row[len(row)-1]
	if first == 0 || last == 0 {
		t.Skipf("the machine is too slow to measure a single 512-token sequence in 3 s: %v", row)
	}
	if last <= first {
		t.Fatalf("batch 1: %v ms at %d tokens, %v ms at %d tokens", first, tab.Lens[0], last, tab.Lens[len(tab.Lens)-1])
	}
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxBatch() < 2 {
		t.Fatalf("no batch of two measured: %v", tab.Millis)
	}
	again := load()
	if again.Source != ort.CostCached || again.Path != info.Path || again.Calibration != 0 {
		t.Fatalf("second load: %+v", again)
	}
}
