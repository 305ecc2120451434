package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/internal/testenv"
)

// run calls the dispatcher in process and returns its exit status and
// output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = dispatch(context.Background(), &cli{stdout: &o, stderr: &e}, args)
	return code, o.String(), e.String()
}

// jsonLines decodes every stdout line as one JSON object.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rows = append(rows, m)
	}
	return rows
}

func TestHelpExitsZero(t *testing.T) {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			code, _, stderr := run(t, n, "-h")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "-json") {
				t.Errorf("no --json flag:\n%s", stderr)
			}
		})
	}
	for _, args := range [][]string{{"help"}, {"-h"}} {
		if code, _, stderr := run(t, args...); code != 0 || !strings.Contains(stderr, "lexical") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	for _, args := range [][]string{{}, {"nope"}, {"lexical", "--no-such-flag"}, {"lexical", "stray"}, {"lexical"}} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestLexicalSubcommand(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := run(t, "lexical", "--synthetic", "2000", "--synthetic-queries", "20", "--rounds", "1",
		"--json", "--out", out, "--note", "test run, no figures")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rows := jsonLines(t, stdout)
	if len(rows) != 1 || rows[0]["dataset"] != "synthetic-2000" || rows[0]["queries"] != 20.0 {
		t.Fatalf("rows %v", rows)
	}
	md, err := os.ReadFile(filepath.Join(out, "lexical.md"))
	if err != nil || !strings.Contains(string(md), "test run, no figures") || !strings.Contains(string(md), "| dataset | docs |") {
		t.Fatalf("report: %v\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(out, "lexical.svg")); err != nil { // named after the report
		t.Fatal(err)
	}
	// Without --json the table is printed.
	code, stdout, _ = run(t, "lexical", "--synthetic", "2000", "--synthetic-queries", "5", "--rounds", "1", "--out", "")
	if code != 0 || !strings.HasPrefix(stdout, "| dataset | docs |") {
		t.Fatalf("exit %d, table:\n%s", code, stdout)
	}
}

func TestDenseSubcommand(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := run(t, "dense", "--peers=false", "--n", "300", "--dim", "8", "--queries", "10", "--clusters", "4", "--rank", "2",
		"--m", "4", "--ef", "8,16", "--efc", "16", "--json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rows := jsonLines(t, stdout)
	if len(rows) != 3 || rows[0]["kind"] != "flat" || rows[2]["ef_search"] != 16.0 {
		t.Fatalf("rows %v", rows)
	}
	if _, err := os.Stat(filepath.Join(out, "dense.md")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, "dense", "--m", "4,x"); code != 2 {
		t.Errorf("bad --m: exit %d", code)
	}
}

// TestAllStepsParse checks every step of the main job against its
// subcommand's flags: with -h last, the flag package reads every flag
// before it and stops at -h (exit 0) only when all were known and valid.
func TestAllStepsParse(t *testing.T) {
	for _, quick := range []bool{false, true} {
		for _, data := range []bool{true, false} {
			for _, s := range allSteps("/data", "/out", "/models", quick, data) {
				args := append(append([]string{s.cmd}, s.args...), "--json", "-h")
				if code, _, stderr := run(t, args...); code != 0 {
					t.Errorf("quick=%v data=%v step %s: exit %d\n%s", quick, data, s.name, code, stderr)
				}
			}
		}
	}
	if code, _, _ := run(t, "all", "--only", "none-of-them", "--datasets", t.TempDir(), "--json"); code != 0 {
		t.Errorf("all with no step selected: exit %d", code)
	}
}

// TestAllPlan: bench all --plan prints every step with its estimate and
// stops; a step that the last run in --out finished takes that run's time.
func TestAllPlan(t *testing.T) {
	out := t.TempDir()
	noData := t.TempDir()
	code, _, stderr := run(t, "all", "--plan", "--quick", "--datasets", noData, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	steps := allSteps(noData, out, ".deps/models", true, false)
	for _, want := range []string{"plan: ", "1. models", "(built-in)", "lexical (synthetic scaling)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "== [1/") {
		t.Errorf("--plan ran a step:\n%s", stderr)
	}
	plan := measure.NewPlan(io.Discard, planSteps(steps, filepath.Join(out, "all-quick.md")), nil)
	if err := writeAllReport(&cli{stdout: io.Discard, stderr: io.Discard}, out, "all-quick", nil,
		[]stepRow{newStepRow(steps[0], 42*time.Second, nil), newStepRow(steps[1], time.Hour, errors.New("boom"))}, plan); err != nil {
		t.Fatal(err)
	}
	got := planSteps(steps, filepath.Join(out, "all-quick.md"))
	if got[0].Estimate != 42*time.Second || !strings.HasPrefix(got[0].Source, "last run ") {
		t.Errorf("step finished last run: %+v", got[0])
	}
	if got[1].Estimate != steps[1].est || got[1].Source != "built-in" { // it failed: its time says nothing
		t.Errorf("step failed last run: %+v", got[1])
	}
}

// TestServeBatchMaxWait: --batch-max-wait 0 (no wait, a valid max_wait)
// is used as given, where it had fallen back to the 2 ms default, and a
// negative wait is refused.
func TestServeBatchMaxWait(t *testing.T) {
	if code, _, stderr := run(t, "serve", "--batch-max-wait", "-1ms", "--curve=false", "--batching", "on", "--models-root", t.TempDir(), "--out", t.TempDir()); code == 0 || !strings.Contains(stderr, "max_wait") {
		t.Fatalf("--batch-max-wait -1ms: exit %d\n%s", code, stderr)
	}
	testenv.NeedORT(t)
	testenv.NeedVocabTxt(t)
	if testing.Short() {
		t.Skip("serves a generated model for 300 ms")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := t.TempDir()
	code, _, stderr := run(t, "serve", "--profile", "fast", "--models-root", t.TempDir(), "--batching", "on", "--curve=false",
		"--duration", "300ms", "--warmup", "0s", "--clients", "1", "--docs", "1", "--threads", "1", "--batch-max-wait", "0", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "serve.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_wait": "0s"`) {
		t.Fatalf("--batch-max-wait 0: the report's config has no \"max_wait\": \"0s\"")
	}
}

// TestDenseModesConflict: --beir and --passages together are refused (only
// --beir had run).
func TestDenseModesConflict(t *testing.T) {
	if code, _, stderr := run(t, "dense", "--beir", "--passages"); code == 0 || !strings.Contains(stderr, "two modes") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}

// TestReportFromSaysReRendered: a report re-rendered from saved JSON lines
// says that its header and config are the re-rendering's (the rows came
// from elsewhere, a GPU machine say).
func TestReportFromSaysReRendered(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "rows.jsonl")
	row := `{"impl":"hybrank","profile":"embed","kind":"embedder","provider":"cuda","threads":1,"pool_size":1,"batch_pairs":32,"pairs":32,"pairs_per_s":900,"real_weights":true,"data":"synthetic"}`
	if err := os.WriteFile(lines, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := run(t, "embed", "--report-from", lines, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "embed.md"))
	if err != nil || !strings.Contains(string(md), "Re-rendered from the JSON lines of "+lines) || !strings.Contains(string(md), "| cuda |") {
		t.Fatalf("report: %v\n%s", err, md)
	}
}
