package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// A run that fails after measuring rows prints them and writes them as a
// partial report beside (not over) the complete one, and still fails; one
// that measured nothing writes nothing.
func TestFailedKeepsMeasuredRows(t *testing.T) {
	type row struct {
		Profile string  `json:"profile" table:"profile"`
		PairsS  float64 `json:"pairs_s" table:"pairs/s"`
	}
	dir := t.TempDir()
	complete, figure := filepath.Join(dir, "rerank.md"), filepath.Join(dir, "rerank.svg")
	if err := os.WriteFile(complete, []byte("the last complete report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(figure, []byte("the last complete figure"), 0o644); err != nil {
		t.Fatal(err)
	}
	peerErr := errors.New("peer: No module named 'torch'")
	var stdout, stderr bytes.Buffer
	cl := &cli{stdout: &stdout, stderr: &stderr}
	o := output{json: true, out: dir}
	rep := report.Report{Title: "Reranker", Columns: report.Columns(row{}), Rows: []any{row{"fast", 248.7}},
		Figures: []report.Figure{{Alt: "partial rows", Panels: []report.Plot{{Title: "p"}}}}}
	if err := o.failed(cl, "rerank", rep, peerErr); !errors.Is(err, peerErr) {
		t.Fatalf("err %v, want the run's", err)
	}
	if !strings.Contains(stdout.String(), `"pairs_s":248.7`) {
		t.Errorf("stdout %q: want the measured row", stdout.String())
	}
	partial, err := os.ReadFile(filepath.Join(dir, "rerank-partial.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partial", "No module named 'torch'", "248.7"} {
		if !strings.Contains(string(partial), want) {
			t.Errorf("partial report lacks %q:\n%s", want, partial)
		}
	}
	if b, _ := os.ReadFile(complete); string(b) != "the last complete report" {
		t.Errorf("the complete report was overwritten: %q", b)
	}
	// Its figure too (the partial one is rerank-partial.svg).
	if b, _ := os.ReadFile(figure); string(b) != "the last complete figure" {
		t.Errorf("the complete report's figure was overwritten")
	}
	if !strings.Contains(string(partial), "(rerank-partial.svg)") {
		t.Errorf("the partial report does not link its own figure:\n%s", partial)
	}

	empty := t.TempDir()
	o.out = empty
	if err := o.failed(cl, "rerank", report.Report{Title: "Reranker"}, peerErr); !errors.Is(err, peerErr) {
		t.Fatalf("err %v", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a run with no rows wrote %v", ents)
	}
}

// TestSweepOneModelDir: a sweep of one --model-dir measures it under its
// --profile only (every profile name would have measured the same model
// three times, labelled as three); --sweep-profiles still chooses.
func TestSweepOneModelDir(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--sweep", "--model-dir", "/m", "--profile", "fast"}, []string{"fast"}},
		{[]string{"--sweep", "--model-dir", "/m", "--sweep-profiles", "fast,balanced"}, []string{"fast", "balanced"}},
		{[]string{"--sweep"}, []string{"fast", "balanced", "accurate"}},
	} {
		cfg := throughput.DefaultConfig(models.KindCrossEncoder)
		fs := flag.NewFlagSet("rerank", flag.ContinueOnError)
		f := registerThroughput(fs, &cfg, "rerank", throughput.Sweep{Profiles: []string{"fast", "balanced", "accurate"}})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		f.apply(fs, &cfg, &output{})
		if !slices.Equal(cfg.Sweep.Profiles, tc.want) {
			t.Errorf("%q: sweeps %v, want %v", tc.args, cfg.Sweep.Profiles, tc.want)
		}
	}
}
