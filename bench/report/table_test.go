package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type inner struct {
	P50 float64 `json:"p50_ms" table:""`
	P90 float64 `json:"p90_ms"`
}

type rowA struct {
	Run      string         `json:"run" table:""`
	Docs     int            `json:"docs" table:""`
	M        int            `json:"m,omitempty" table:""`
	PerS     float64        `json:"pairs_per_s" table:"pairs/s"`
	Errors   map[string]int `json:"errors" table:""`
	Hidden   string         `json:"-" table:""`
	Postings int            `json:"postings"`
	inner
	Real bool `json:"real_weights" table:""`
}

type rowB struct {
	Run   string  `json:"run" table:""`
	Batch int     `json:"batch_size" table:""`
	PerS  float64 `json:"pairs_per_s" table:"pairs/s"`
	RSS   float64 `json:"rss_mib" table:""`
	Real  bool    `json:"real_weights" table:""`
}

func TestColumnsMerge(t *testing.T) {
	got := Columns(rowA{}, &rowB{}, 42)
	want := []string{"run", "docs", "m", "batch_size", "pairs/s", "errors", "p50_ms", "rss_mib", "real_weights"}
	if !slices.Equal(got, want) {
		t.Fatalf("columns\n%v\nwant\n%v", got, want)
	}
	if got := Columns(); len(got) != 0 {
		t.Fatalf("no types: %v", got)
	}
}

func TestCellsAndTable(t *testing.T) {
	a := rowA{Run: "serve", Docs: 8, PerS: 59.25, Errors: map[string]int{"429": 3, "200": 1}, Postings: 7, inner: inner{P50: 1.5}, Real: true}
	c, err := Cells(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c["m"]; ok {
		t.Error("zero omitempty field has a cell")
	}
	if c["pairs/s"] != 59.25 || c["postings"] != 7 || c["p50_ms"] != 1.5 || c["p90_ms"] != 0.0 {
		t.Errorf("cells %v", c)
	}
	if _, err := Cells(3); err == nil {
		t.Error("non-struct row accepted")
	}
	var b bytes.Buffer
	rows := []any{a, rowB{Run: "library", Batch: 4, PerS: 1234.5}}
	if err := WriteTable(&b, Columns(rowA{}, rowB{}), rows); err != nil {
		t.Fatal(err)
	}
	want := "| run | docs | m | batch_size | pairs/s | errors | p50_ms | rss_mib | real_weights |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		`| serve | 8 | – | – | 59.2 | {"200":1,"429":3} | 1.5000 | – | true |` + "\n" +
		"| library | – | – | 4 | 1234 | – | – | 0.0000 | false |\n"
	if b.String() != want {
		t.Errorf("table\n%s\nwant\n%s", b.String(), want)
	}
}

func TestChecks(t *testing.T) {
	cs := []Check{
		AtLeast("batching gain", 0.91, 2, "59.2 / 65.2 pairs/s"),
		AtMost("p99 ms", 101.6, 110, ""),
		Inform("curve gain", 1.01, "best at batch 16"),
		AtLeast("share", 0.9, 0.85, ""),
	}
	if cs[0].Passed() || !cs[1].Passed() || !cs[2].Passed() || cs[2].Verdict != Info {
		t.Fatalf("verdicts %+v", cs)
	}
	if s := cs[0].String(); s != "FAIL batching gain: 0.91 >= 2 (59.2 / 65.2 pairs/s)" {
		t.Errorf("String() = %q", s)
	}
	if s := cs[2].String(); s != "INFO curve gain: 1.01 (best at batch 16)" {
		t.Errorf("String() = %q", s)
	}
	if f := Failed(cs); len(f) != 1 || f[0].Name != "batching gain" {
		t.Errorf("failed %+v", f)
	}
	if v := Verdict(cs); v != "FAIL: batching gain 0.91 < 2" {
		t.Errorf("verdict %q", v)
	}
	if v := Verdict(cs[1:]); v != Pass {
		t.Errorf("verdict %q", v)
	}
	if c := AtMost("x", 3, 2, ""); c.Verdict != Fail || Verdict([]Check{c}) != "FAIL: x 3 > 2" {
		t.Errorf("at most %+v", c)
	}
}

func TestWriteWithFigures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := Report{
		Title: "t", Checks: []Check{AtLeast("qps", 10, 5, "")},
		Columns: Columns(rowB{}), Rows: []any{rowB{Run: "x"}},
		Figures: []Figure{{Alt: "a plot", Panels: []Plot{{Title: "p"}}}},
	}
	path, err := Write(dir, "t", r)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- PASS qps: 10 >= 5", "![a plot](t.svg)", `{"run":"x","batch_size":0,"pairs_per_s":0,"rss_mib":0,"real_weights":false}`} {
		if !strings.Contains(string(md), want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "t.svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("figure: %v", err)
	}
	var b bytes.Buffer
	if err := (Report{Rows: []any{1}, Columns: []string{"x"}}).Markdown(&b, MachineInfo{}, time.Time{}); err == nil {
		t.Error("non-struct row rendered")
	}
}

func TestLine(t *testing.T) {
	got := Line(rowB{Run: "x", Batch: 2, PerS: 12.5})
	if want := "run=x batch_size=2 pairs/s=12.5 rss_mib=0.0000 real_weights=false"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}
