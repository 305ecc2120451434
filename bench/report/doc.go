// Package report writes what the benchmarks measured: a markdown report per
// benchmark (bench/results/NAME.md: heading, machine, command, checks,
// notes, config, table, raw JSON lines), SVG line plots beside it, the
// machine description printed with every figure (CPU, cpuid feature flags,
// Go version, commit), and the PASS/FAIL checks of a benchmark's targets.
//
// # One schema per result
//
// A result row is a struct: its JSON tags name the cells, and a `table`
// tag marks the fields shown as columns (see Columns, Cells). The same
// struct is the JSON line printed by `bench … --json`, the raw line of the
// report and the table row, so no key is listed twice.
//
// # Concurrency
//
// Everything here is a pure function of its arguments except Write (which
// writes files) and Machine (which may run git); a Report is a plain
// value. Safe for concurrent use.
package report
