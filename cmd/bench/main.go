// Command bench is hybrank's benchmark harness: quality (nDCG, recall) and
// speed (QPS, pairs/s, latency percentiles, scaling) on real and synthetic
// data. Each subcommand lives in its own file and is flags → config → Run →
// report: it fills a driver's Config (packages under bench/) from its
// flags, calls the driver's Run and prints or writes the driver's report.
// No benchmark logic, threshold or model lookup lives here.
//
// Usage:
//
//	bench <subcommand> [flags]
//	bench help
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/report"
)

// subcommand is one `bench NAME` entry.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, cl *cli, args []string) error
}

// cli is where a subcommand writes: results on stdout, logs on stderr.
type cli struct {
	stdout, stderr io.Writer
}

// flags returns an empty flag set for a subcommand that reports parse
// errors and -h on the CLI's stderr.
func (cl *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(cl.stderr)
	return fs
}

var subcommands = map[string]subcommand{}

// register adds a subcommand; called from init in each subcommand's file.
func register(c subcommand) {
	if _, dup := subcommands[c.name]; dup {
		panic("bench: duplicate subcommand " + c.name)
	}
	subcommands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bench <subcommand> [flags]\n\nsubcommands:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintln(w, "\nrun `bench <subcommand> -h` for its flags")
}

// dispatch runs the subcommand named by args[0] and returns the exit
// status: 0 on success and for -h, 2 for a usage error, 1 when the
// subcommand failed.
func dispatch(ctx context.Context, cl *cli, args []string) int {
	if len(args) == 0 {
		usage(cl.stderr)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(cl.stderr)
		return 0
	}
	c, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(cl.stderr, "bench: unknown subcommand %q\n\n", args[0])
		usage(cl.stderr)
		return 2
	}
	err := c.run(ctx, cl, args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlags): // the flag package has said why
		return 2
	case errors.Is(err, errUsage), errors.Is(err, bench.ErrBadOption):
		fmt.Fprintf(cl.stderr, "bench %s: %v\n", c.name, err)
		return 2
	default:
		fmt.Fprintf(cl.stderr, "bench %s: %v\n", c.name, err)
		return 1
	}
}

var (
	// errUsage is wrapped by subcommands for flag values that cannot be
	// used.
	errUsage = errors.New("usage")
	// errFlags is returned by parse for flags the flag package rejected
	// (it has printed the error and the usage).
	errFlags = errors.New("bad flags")
)

// parse parses args into fs: flag.ErrHelp for -h, errFlags for flags the
// flag package rejected, errUsage for positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	_, err := parseN(fs, args, 0)
	return err
}

// parseN is parse allowing up to n positional arguments, which it returns;
// flags may follow them (bench models --quantize int8 SRC --out DST).
func parseN(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	err := fs.Parse(args)
	for err == nil && fs.NArg() > 0 && len(pos) < n {
		pos = append(pos, fs.Arg(0))
		err = fs.Parse(fs.Args()[1:])
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errFlags
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return pos, nil
}

func main() {
	report.Machine() // the working tree's commit as the run starts, for every report
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, &cli{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
