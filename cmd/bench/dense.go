package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/report"
)

func init() {
	register(subcommand{
		name:    "dense",
		summary: "HNSW build time, recall@10, QPS and latency over M × efSearch, plus exact flat search, on synthetic clustered vectors",
		run:     runDense,
	})
}

// denseInts parses a comma list of integers.
type denseInts []int

func (l *denseInts) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *denseInts) Set(v string) error {
	*l = (*l)[:0]
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q: want comma-separated integers", v)
		}
		*l = append(*l, n)
	}
	return nil
}

func runDense(ctx context.Context, cl *cli, args []string) error {
	o := bench.DefaultDenseOptions()
	fs := cl.flags("dense")
	fs.IntVar(&o.N, "n", o.N, "indexed vectors")
	fs.IntVar(&o.Dim, "dim", o.Dim, "dimension")
	fs.IntVar(&o.Queries, "queries", o.Queries, "held-out query vectors")
	fs.IntVar(&o.K, "k", o.K, "recall@k cut-off")
	ms, efs := denseInts(o.Ms), denseInts(o.Efs)
	fs.Var(&ms, "m", "graph degrees M to build (comma list)")
	fs.Var(&efs, "ef", "efSearch values to search each build with (comma list)")
	fs.IntVar(&o.EfConstruction, "efc", o.EfConstruction, "efConstruction of every build")
	fs.IntVar(&o.Clusters, "clusters", o.Clusters, "mixture components")
	fs.IntVar(&o.Rank, "rank", o.Rank, "per-cluster subspace rank (local intrinsic dimension)")
	fs.Float64Var(&o.Noise, "noise", o.Noise, "isotropic noise sigma")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "data seed")
	fs.BoolVar(&o.Progress, "progress", false, "show progress even when stderr is not a terminal")
	jsonOnly := fs.Bool("json", false, "print only JSON lines (no table)")
	out := fs.String("out", "bench/results", `folder for dense.md ("" = do not write)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Ms, o.Efs = ms, efs
	enc := json.NewEncoder(os.Stdout)
	rows, err := bench.RunDense(ctx, o, func(row map[string]any) error { return enc.Encode(row) })
	if err != nil {
		return err
	}
	rep := bench.DenseReport(o, "bench dense "+strings.Join(args, " "), rows)
	if !*jsonOnly {
		fmt.Printf("\n| %s |\n", strings.Join(rep.Columns, " | "))
		for _, r := range rows {
			cells := make([]string, len(rep.Columns))
			for i, c := range rep.Columns {
				cells[i] = report.FormatValue(r[c])
			}
			fmt.Printf("| %s |\n", strings.Join(cells, " | "))
		}
	}
	if *out == "" {
		return nil
	}
	path, err := report.Write(*out, "dense", rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
