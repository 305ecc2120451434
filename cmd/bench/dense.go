package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/dense"
)

func init() {
	register(subcommand{
		name:    "dense",
		summary: "HNSW build time, recall@10, QPS and latency over M × efSearch, plus exact flat search, on synthetic clustered vectors (faiss beside it with --peers)",
		run:     runDense,
	})
}

func runDense(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("dense")
	cfg := dense.DefaultConfig()
	fs.IntVar(&cfg.N, "n", cfg.N, "indexed vectors")
	fs.IntVar(&cfg.Dim, "dim", cfg.Dim, "dimension")
	fs.IntVar(&cfg.Queries, "queries", cfg.Queries, "held-out query vectors")
	fs.IntVar(&cfg.K, "k", cfg.K, "recall@k cut-off")
	ms, efs := intsFlag(cfg.Ms), intsFlag(cfg.Efs)
	fs.Var(&ms, "m", "graph degrees M to build (comma list)")
	fs.Var(&efs, "ef", "efSearch values to search each build with (comma list)")
	fs.IntVar(&cfg.EfConstruction, "efc", cfg.EfConstruction, "efConstruction of every build")
	fs.IntVar(&cfg.Clusters, "clusters", cfg.Clusters, "mixture components")
	fs.IntVar(&cfg.Rank, "rank", cfg.Rank, "per-cluster subspace rank (local intrinsic dimension)")
	fs.Float64Var(&cfg.Noise, "noise", cfg.Noise, "isotropic noise sigma")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "data seed")
	peerFlags(fs, &cfg.Peers, "faiss-cpu's IndexHNSWFlat with every --m, --efc and --ef")
	fs.Float64Var(&cfg.Targets.MinRecall, "target-recall", cfg.Targets.MinRecall, "check: recall@k at which hybrank and the peer are compared")
	fs.Float64Var(&cfg.Targets.MinSpeedup, "target-speedup", cfg.Targets.MinSpeedup, "check: least hybrank QPS / peer QPS at that recall")
	fs.BoolVar(&cfg.Progress, "progress", false, "show progress even when stderr is not a terminal")
	name := fs.String("name", "dense", "report file name (without .md) under --out")
	var o output
	o.register(fs, "the report")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Ms, cfg.Efs, cfg.Log = ms, efs, cl.stderr
	res, err := dense.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, *name, dense.Report(cfg, res, command("dense", args)))
}
