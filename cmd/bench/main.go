// Command bench is hybrank's benchmark harness: quality (nDCG, recall) and
// speed (QPS, pairs/s, latency percentiles, scaling) on real and synthetic
// data. Each subcommand lives in its own file, parses its flags and calls
// into package bench; no benchmark logic lives here.
//
// Usage:
//
//	bench <subcommand> [flags]
//	bench help
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// subcommand is one `bench NAME` entry.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var subcommands = map[string]subcommand{}

// register adds a subcommand; called from init in each subcommand's file.
func register(c subcommand) {
	if _, dup := subcommands[c.name]; dup {
		panic("bench: duplicate subcommand " + c.name)
	}
	subcommands[c.name] = c
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench <subcommand> [flags]\n\nsubcommands:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nrun `bench <subcommand> -h` for its flags")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := subcommands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown subcommand %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", c.name, err)
		os.Exit(1)
	}
}
