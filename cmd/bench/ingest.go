package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/ingest"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func init() {
	register(subcommand{
		name:    "ingest",
		summary: "engine write path on disk: durable ingest with fsync per commit vs interval syncing (16 committers), search p99 during a 100K-document ingest vs idle",
		run:     runIngest,
	})
}

func runIngest(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("ingest")
	cfg := ingest.DefaultConfig()
	fs.StringVar(&cfg.Data, "data", artifacts.Dataset("scifact"), "BEIR dataset folder (corpus and queries)")
	fs.StringVar(&cfg.Dir, "dir", "", "folder for the temporary index directories (default: the system temporary directory)")
	fs.IntVar(&cfg.Committers, "committers", cfg.Committers, "concurrent committers of the sync measurement")
	fs.IntVar(&cfg.SyncDocs, "sync-docs", cfg.SyncDocs, "documents committed (one per Commit) per sync policy and round")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of the sync measurement (the policies alternate; the check compares medians)")
	fs.Var((*intsFlag)(&cfg.SweepCommitters), "sweep-committers", "committer counts measured beside the target's (comma list; \"\" = none)")
	fs.IntVar(&cfg.Ingest, "ingest", cfg.Ingest, "documents ingested while searching")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "documents per Commit of the ingest")
	fs.IntVar(&cfg.IdleSearches, "idle-searches", cfg.IdleSearches, "searches on the idle engine")
	fs.Float64Var(&cfg.Targets.MinSyncRatio, "target-sync-ratio", cfg.Targets.MinSyncRatio, "target: least fsync-per-commit docs/s / interval docs/s")
	fs.Float64Var(&cfg.Targets.MaxP99Ratio, "target-p99-ratio", cfg.Targets.MaxP99Ratio, "target: most search p99 during ingest / idle p99")
	var o output
	o.register(fs, "ingest.md")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Log = cl.stderr
	res, err := ingest.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "ingest", ingest.Report(cfg, res, command("ingest", args)))
}
