package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench/peers"
)

// listFlag collects repeated and comma-separated values. It appends, so
// a flag with a default starts empty and the default applies when it
// stays empty.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// repeated collects repeated values as they are (commas kept: notes).
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// intsFlag is a comma list of positive integers; setting it replaces the
// default.
type intsFlag []int

// sizesFlag is a comma list of integers ≥ 0 (sizes, where 0 means none);
// setting it replaces the default.
type sizesFlag []int

func (l *sizesFlag) String() string { return (*intsFlag)(l).String() }

func (l *sizesFlag) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return fmt.Errorf("%q: want comma-separated integers ≥ 0", v)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func (l *intsFlag) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intsFlag) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want comma-separated positive integers", v)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// durationsFlag is a comma list of positive durations ("25ms", or a bare
// number of milliseconds), repeatable.
type durationsFlag []time.Duration

func (l *durationsFlag) String() string {
	s := make([]string, len(*l))
	for i, d := range *l {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

func (l *durationsFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			if ms, err2 := strconv.ParseFloat(s, 64); err2 == nil {
				d, err = time.Duration(ms*float64(time.Millisecond)), nil
			}
		}
		if err != nil || d <= 0 {
			return fmt.Errorf("bad duration %q", s)
		}
		*l = append(*l, d)
	}
	return nil
}

// peerFlags sets c to peers.Detect and registers --peers (on by default
// when `make peers` has installed the packages) and --python; what names
// the peer that runs beside hybrank.
func peerFlags(fs *flag.FlagSet, c *peers.Config, what string) {
	*c = peers.Detect()
	fs.BoolVar(&c.Enabled, "peers", c.Enabled, "run "+what+" beside hybrank in the same run (default: whether 'make peers' has installed the packages in "+c.Dir+")")
	fs.StringVar(&c.Python, "python", c.Python, "Python interpreter of the peers")
}
