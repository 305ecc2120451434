package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Report is one benchmark's results as written to bench/results/NAME.md
// (and its figures beside it). It is a plain value; Write and Markdown only
// read it.
type Report struct {
	// Title is the heading.
	Title string
	// Command is the command line that produced the report.
	Command string
	// Checks are the benchmark's targets against what it measured, printed
	// as a list under the command.
	Checks []Check
	// Notes are paragraphs printed under the checks (conventions, caveats).
	Notes []string
	// Config is printed as indented JSON (nil to omit).
	Config any
	// Columns are the table's column headers, in order; Columns(rowTypes…)
	// derives them from the row types' struct tags.
	Columns []string
	// Rows are the results, one struct each (see Columns for the tags that
	// name their cells); each row is also printed as one JSON line.
	Rows []any
	// Figures are written as SVG files next to the report and linked from
	// it.
	Figures []Figure
}

// Figure is one SVG file of a report: panels stacked vertically.
type Figure struct {
	// File is the file name, relative to the report's folder. Write sets
	// it from the report's name (FigureFile), so that reports of other
	// names (--name, a partial run's NAME-partial) never overwrite or link
	// each other's figures.
	File string
	// Alt is the image's alternative text in the markdown link.
	Alt    string
	Panels []Plot
}

// FigureFile is the file of figure i of report name: name.svg, then
// name-2.svg, name-3.svg….
func FigureFile(name string, i int) string {
	if i == 0 {
		return name + ".svg"
	}
	return fmt.Sprintf("%s-%d.svg", name, i+1)
}

// Write writes r as dir/name.md (creating dir) with machine info from
// Machine, then each figure as dir/FigureFile(name, i), and returns the
// report's path.
func Write(dir, name string, r Report) (string, error) {
	r.Figures = slices.Clone(r.Figures)
	for i := range r.Figures {
		r.Figures[i].File = FigureFile(name, i)
	}
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
	for _, f := range r.Figures {
		if err := WriteSVGFile(filepath.Join(dir, f.File), f.Panels...); err != nil {
			return path, err
		}
	}
	return path, nil
}

// Markdown renders the report: heading, machine and time, command, checks,
// notes, figure links, config, table and the rows as JSON lines.
func (r Report) Markdown(b *bytes.Buffer, m MachineInfo, at time.Time) error {
	fmt.Fprintf(b, "# %s\n\n", r.Title)
	fmt.Fprintf(b, "%s%s on: %s\n\n", generatedPrefix, at.UTC().Format(time.RFC3339), m)
	if r.Command != "" {
		fmt.Fprintf(b, "Command: `%s`\n\n", r.Command)
	}
	if len(r.Checks) > 0 {
		b.WriteString("Checks:\n\n")
		for _, c := range r.Checks {
			fmt.Fprintf(b, "- %s\n", c)
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "%s\n\n", n)
	}
	for _, f := range r.Figures {
		fmt.Fprintf(b, "![%s](%s)\n\n", f.Alt, f.File)
	}
	if r.Config != nil {
		cj, err := json.MarshalIndent(r.Config, "", "  ")
		if err != nil {
			return fmt.Errorf("report config: %w", err)
		}
		fmt.Fprintf(b, "Config:\n\n```json\n%s\n```\n\n", cj)
	}
	if len(r.Columns) > 0 {
		if err := WriteTable(b, r.Columns, r.Rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	b.WriteString(rawHeading + "```json\n")
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

// The markers Markdown writes and Read finds.
const (
	generatedPrefix = "Generated "
	rawHeading      = "Raw results (JSON lines):\n\n"
)

// Written is what Read recovers of a report that Write wrote: when, on
// which machine, and its rows as raw JSON.
type Written struct {
	Generated time.Time
	// Machine is the machine line as written (MachineInfo.String).
	Machine string
	Rows    []json.RawMessage
}

// Read parses the report at path (written by Write) back into its time,
// machine and raw rows, so that a later run can build on an earlier one
// (bench all takes its step estimates from its last report).
func Read(path string) (Written, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Written{}, fmt.Errorf("read report: %w", err)
	}
	text := string(data)
	var w Written
	if _, rest, ok := strings.Cut(text, "\n"+generatedPrefix); ok {
		line, _, _ := strings.Cut(rest, "\n")
		at, machine, _ := strings.Cut(line, " on: ")
		if w.Generated, err = time.Parse(time.RFC3339, at); err != nil {
			return Written{}, fmt.Errorf("read report %s: generated time: %w", path, err)
		}
		w.Machine = machine
	}
	_, raw, ok := strings.Cut(text, rawHeading+"```json\n")
	if !ok {
		return Written{}, fmt.Errorf("read report %s: no raw results", path)
	}
	raw, _, ok = strings.Cut(raw, "```")
	if !ok {
		return Written{}, fmt.Errorf("read report %s: raw results not closed", path)
	}
	for _, line := range strings.Split(strings.TrimSuffix(raw, "\n"), "\n") {
		if line == "" {
			continue
		}
		if !json.Valid([]byte(line)) {
			return Written{}, fmt.Errorf("read report %s: raw row is not JSON: %.60s", path, line)
		}
		w.Rows = append(w.Rows, json.RawMessage(line))
	}
	return w, nil
}
