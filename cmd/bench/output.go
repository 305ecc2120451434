package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/bench/report"
)

// output holds the flags every subcommand shares: --json, --out, --note.
type output struct {
	json  bool
	out   string
	notes repeated
}

// register adds --json, --out (default folder bench/results; what says
// which files land there) and --note to fs.
func (o *output) register(fs *flag.FlagSet, what string) {
	o.registerJSON(fs)
	fs.StringVar(&o.out, "out", "bench/results", "folder for "+what+` ("" = do not write)`)
	fs.Var(&o.notes, "note", "paragraph added to the report, e.g. measurement conditions (repeatable)")
}

// registerJSON adds only --json, for a subcommand that writes no report.
func (o *output) registerJSON(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print the result rows as JSON lines (one object per row) instead of the table")
}

// finish prints rep's rows (JSON lines with --json, else the table) and
// checks on the CLI, then writes rep as OUT/name.md unless --out is "".
func (o *output) finish(cl *cli, name string, rep report.Report) error {
	if o.json {
		enc := json.NewEncoder(cl.stdout)
		for _, r := range rep.Rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else if len(rep.Columns) > 0 {
		if err := report.WriteTable(cl.stdout, rep.Columns, rep.Rows); err != nil {
			return err
		}
	}
	for _, c := range rep.Checks {
		fmt.Fprintln(cl.stderr, c)
	}
	if o.out == "" {
		return nil
	}
	rep.Notes = append(rep.Notes, o.notes...)
	path, err := report.Write(o.out, name, rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(cl.stderr, "wrote", path)
	return nil
}

// failed handles a run that failed with err after measuring rep's rows:
// it prints and writes them as finish does, but as name-partial (so the
// last complete report stays) with the error at the top of the notes, and
// returns err. A run that measured nothing only returns err.
func (o *output) failed(cl *cli, name string, rep report.Report, err error) error {
	if len(rep.Rows) == 0 {
		return err
	}
	rep.Title += " (partial: the run failed)"
	rep.Notes = append([]string{fmt.Sprintf("The run failed after measuring these rows: %v.", err)}, rep.Notes...)
	fmt.Fprintf(cl.stderr, "the run failed: printing and writing the %d rows it measured\n", len(rep.Rows))
	if ferr := o.finish(cl, name+"-partial", rep); ferr != nil {
		return errors.Join(err, ferr)
	}
	return err
}

// command is how a report names the command that produced it.
func command(name string, args []string) string {
	return strings.TrimSpace("bench " + name + " " + strings.Join(args, " "))
}
