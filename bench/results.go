package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is one benchmark's results as written to bench/results/NAME.md.
type Report struct {
	// Title is the heading.
	Title string
	// Command is the command line that produced the report.
	Command string
	// Notes are paragraphs printed under the heading (conventions, caveats).
	Notes []string
	// Config is printed as indented JSON (nil to omit).
	Config any
	// Columns are the table's columns, in order: keys of Rows.
	Columns []string
	// Rows are the results, one JSON object each; values are printed in
	// the table and the rows are repeated verbatim as JSON lines.
	Rows []map[string]any
}

// WriteReport writes r as dir/name.md (creating dir) with machine info
// from Machine, and returns the file's path.
func WriteReport(dir, name string, r Report) (string, error) {
	var b bytes.Buffer
	if err := r.Markdown(&b, Machine(), time.Now()); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write report %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".md")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, nil
}

// Markdown renders the report.
func (r Report) Markdown(b *bytes.Buffer, m MachineInfo, at time.Time) error {
	fmt.Fprintf(b, "# %s\n\n", r.Title)
	fmt.Fprintf(b, "Generated %s on: %s\n\n", at.UTC().Format(time.RFC3339), m)
	if r.Command != "" {
		fmt.Fprintf(b, "Command: `%s`\n\n", r.Command)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "%s\n\n", n)
	}
	if r.Config != nil {
		cj, err := json.MarshalIndent(r.Config, "", "  ")
		if err != nil {
			return fmt.Errorf("report config: %w", err)
		}
		fmt.Fprintf(b, "Config:\n\n```json\n%s\n```\n\n", cj)
	}
	if len(r.Columns) > 0 {
		fmt.Fprintf(b, "| %s |\n|", strings.Join(r.Columns, " | "))
		for range r.Columns {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, row := range r.Rows {
			cells := make([]string, len(r.Columns))
			for i, c := range r.Columns {
				cells[i] = FormatValue(row[c])
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		}
		b.WriteString("\n")
	}
	b.WriteString("Raw results (JSON lines):\n\n```json\n")
	for _, row := range r.Rows {
		j, err := json.Marshal(row)
		if err != nil {
			return fmt.Errorf("report row: %w", err)
		}
		b.Write(j)
		b.WriteString("\n")
	}
	b.WriteString("```\n")
	return nil
}

// FormatValue prints a table cell: floats with 4 decimals below 10, 1
// decimal below 1000 and none above; nil as "–".
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "–"
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	default:
		return strings.ReplaceAll(fmt.Sprint(v), "|", `\|`)
	}
}

func formatFloat(x float64) string {
	a := math.Abs(x)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprint(x)
	case a == 0 || a < 10:
		return fmt.Sprintf("%.4f", x)
	case a < 1000:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

// Round rounds x to n decimals, for tidy JSON output.
func Round(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}
