package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReportMarkdown(t *testing.T) {
	type row struct {
		Dataset string  `json:"dataset" table:""`
		NDCG10  float64 `json:"ndcg@10" table:""`
		QPS     float64 `json:"qps" table:""`
	}
	r := Report{
		Title: "lexical", Command: "bench lexical", Notes: []string{"note"},
		Config:  map[string]any{"k1": 1.2},
		Columns: Columns(row{}),
		Rows:    []any{row{Dataset: "scifact", NDCG10: 0.68021, QPS: 35123.4}},
	}
	var b bytes.Buffer
	if err := r.Markdown(&b, MachineInfo{CPU: "cpu"}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"# lexical", "| dataset | ndcg@10 | qps |", "| scifact | 0.6802 | 35123 |", `"k1": 1.2`, `{"dataset":"scifact","ndcg@10":0.68021,"qps":35123.4}`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// The JSON lines parse back.
	start := strings.Index(out, "```json\n{\"dataset\"")
	line := strings.SplitN(out[start+8:], "\n", 2)[0]
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Errorf("json line %q: %v", line, err)
	}
}

func TestRenderSVG(t *testing.T) {
	tests := []struct {
		name string
		p    Plot
	}{
		{"logx", Plot{Title: "QPS <scaling>", XLabel: "docs", YLabel: "qps", LogX: true,
			Series: []Series{{Name: "lucene", X: []float64{1e4, 1e5, 1e6}, Y: []float64{50000, 20000, 3000}}}}},
		{"linear two series", Plot{Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1, 4}}, {Name: "b", X: []float64{1, 2}, Y: []float64{2, 3}}}}},
		{"empty", Plot{}},
		{"nonpositive on log", Plot{LogX: true, LogY: true, Series: []Series{{Name: "z", X: []float64{0, 10}, Y: []float64{-1, 5}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			RenderSVG(&b, tt.p, tt.p)
			out := b.String()
			d := xml.NewDecoder(strings.NewReader(out))
			for {
				_, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("invalid XML: %v", err)
					}
					break
				}
			}
			if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
				t.Errorf("NaN in output")
			}
		})
	}
}

func TestMachine(t *testing.T) {
	m := Machine()
	if m.GOMAXPROCS < 1 || m.Go == "" || m.Arch == "" {
		t.Errorf("incomplete: %+v", m)
	}
	if !strings.Contains(m.String(), m.Go) {
		t.Errorf("String() = %q", m.String())
	}
}

// TestCheckStringShowsTheDifference: a value that four digits would print
// as its target is printed in full.
func TestCheckStringShowsTheDifference(t *testing.T) {
	if got := AtLeast("x", 2.4996, 2.5, "").String(); got != "FAIL x: 2.4996 >= 2.5" {
		t.Fatalf("got %q", got)
	}
	if got := AtLeast("y", 1.23456, 1, "").String(); got != "PASS y: 1.235 >= 1" {
		t.Fatalf("got %q", got)
	}
	if got := Verdict([]Check{AtMost("rss", 352.04, 352.03, "")}); got != "FAIL: rss 352.04 > 352.03" {
		t.Fatalf("verdict %q", got)
	}
}

// TestWriteRead: Read gets back what Write wrote (time, machine, rows), and
// refuses a file that is not a report.
func TestWriteRead(t *testing.T) {
	type row struct {
		Step  string  `json:"step" table:""`
		WallS float64 `json:"wall_s" table:""`
	}
	dir := t.TempDir()
	before := time.Now().Add(-time.Second)
	path, err := Write(dir, "all", Report{Title: "bench all", Columns: Columns(row{}), Notes: []string{"Raw results are below."},
		Rows: []any{row{"models", 12.5}, row{"lexical", 61}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Generated.Before(before) || w.Generated.After(time.Now()) || !strings.Contains(w.Machine, "commit=") {
		t.Errorf("generated %v, machine %q", w.Generated, w.Machine)
	}
	var got []row
	for _, r := range w.Rows {
		var x row
		if err := json.Unmarshal(r, &x); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if len(got) != 2 || got[0] != (row{"models", 12.5}) || got[1] != (row{"lexical", 61}) {
		t.Errorf("rows %+v", got)
	}
	bad := filepath.Join(dir, "bad.md")
	if err := os.WriteFile(bad, []byte("# not a report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bad); err == nil {
		t.Error("Read of a file without raw results: no error")
	}
	if _, err := Read(filepath.Join(dir, "missing.md")); err == nil {
		t.Error("Read of a missing file: no error")
	}
}
