package main

import (
	"context"
	"flag"
	"strings"

	"github.com/hybrank/hybrank/bench/hybrid"
)

func init() {
	register(subcommand{
		name:    "hybrid",
		summary: "hybrid engine config matrix (bm25, dense, fusions, rerank per profile under a budget, MMR) and a rerank budget sweep on BEIR",
		run:     runHybrid,
	})
}

func runHybrid(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("hybrid")
	cfg := hybrid.DefaultConfig()
	var data, configs, profiles, sweepProfiles listFlag
	var budgets durationsFlag
	fs.Var(&data, "data", "BEIR dataset folder (repeatable or comma list)")
	fs.Var(&configs, "configs", `configurations to run (comma list of names or path.Match patterns, e.g. "bm25,rrf*"; default all; "none" = only the sweep)`)
	fs.Var(&profiles, "profiles", "rerank profiles of the matrix (default "+strings.Join(cfg.Profiles, ",")+")")
	fs.Var(&budgets, "budget-sweep", "budgets for the rerank budget sweep, e.g. 25ms,50ms,100ms,200ms,400ms (empty = no sweep)")
	fs.DurationVar(&cfg.Budget, "budget", cfg.Budget, "latency budget of the rerank configurations (0 = none; unbudgeted reranking of 100 candidates takes seconds per query on a small CPU)")
	fs.IntVar(&cfg.K, "k", cfg.K, "hits per query")
	fs.IntVar(&cfg.Candidates, "candidates", cfg.Candidates, "candidates per retriever")
	fs.IntVar(&cfg.Queries, "queries", 0, "judged queries per configuration (0 = all)")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "unrecorded warm-up searches before each configuration and budget")
	fs.Var(&sweepProfiles, "rerank", "rerank profile(s) of the budget sweep; FIRST>SECOND is a cascade (default "+strings.Join(cfg.Sweep.Profiles, ",")+")")
	fs.IntVar(&cfg.Sweep.CascadeKeep, "cascade-keep", cfg.Sweep.CascadeKeep, "candidates a cascade's second stage rescores")
	fs.IntVar(&cfg.Sweep.Searches, "sweep-searches", cfg.Sweep.Searches, "searches per budget in the sweep (judged queries cycled)")
	fs.StringVar(&cfg.Models.Root, "models-root", "", "folder with one model dir per profile (embed, fast, balanced, accurate), generated when missing; default $HYBRANK_MODELS, else a temporary folder")
	fs.StringVar(&cfg.EmbedDir, "embed-dir", "", "embedder model dir (overrides --models-root)")
	fs.StringVar(&cfg.RerankDir, "rerank-dir", "", "reranker model dir for every profile (overrides --models-root; for a real export of one model)")
	fs.BoolVar(&cfg.NoDense, "no-dense", false, "run without an embedder (only the bm25 configuration; the budget sweep reranks BM25 candidates)")
	fs.IntVar(&cfg.MaxDocTokens, "max-doc-tokens", cfg.MaxDocTokens, "embedder truncation in tokens (0 = the model's maximum)")
	fs.StringVar(&cfg.CacheDir, "cache", cfg.CacheDir, `folder of cached document vectors, shared with bench dense ("" = none)`)
	fs.StringVar(&cfg.Provider, "provider", cfg.Provider, "ONNX Runtime provider: auto, cuda, cpu")
	fs.StringVar(&cfg.Quantize, "quantize", "", `load the rerankers as int8 (for the CPU) or fp16 (for --provider cuda) copies, converted once by onnx/quantize into the user cache ("" = as they are)`)
	fs.IntVar(&cfg.Threads, "threads", 0, "intra-op threads of every model (0 = the models' default)")
	fs.StringVar(&cfg.TuneOn, "tune-on", "", "dataset (folder name) on which the best fusion is chosen and then checked unchanged on the others")
	fs.BoolVar(&cfg.Eval.DropIdenticalIDs, "drop-identical-ids", false, "drop retrieved docs whose id equals the query id (BEIR convention)")
	fs.StringVar(&cfg.Targets.Profile, "target-profile", cfg.Targets.Profile, "target: the sweep profile checked")
	fs.DurationVar(&cfg.Targets.Budget, "target-budget", cfg.Targets.Budget, "target: the sweep budget checked")
	fs.DurationVar(&cfg.Targets.MaxP99, "target-max-p99", cfg.Targets.MaxP99, "target: p99 latency at that budget at most")
	fs.BoolVar(&cfg.Progress, "progress", false, "show progress even when stderr is not a terminal")
	replayFlags(fs, &cfg.Replay)
	name := fs.String("name", "hybrid", "report file name (without .md) under --out")
	var o output
	o.register(fs, "hybrid.md and hybrid_budget.svg")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Datasets, cfg.Sweep.Budgets = data, budgets
	if len(profiles) > 0 {
		cfg.Profiles = profiles
	}
	if len(sweepProfiles) > 0 {
		cfg.Sweep.Profiles = sweepProfiles
	}
	if len(configs) == 1 && configs[0] == "none" {
		cfg.SkipMatrix = true
	} else {
		cfg.Setups = configs
	}
	cfg.Log = cl.stderr
	res, err := hybrid.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, *name, hybrid.Report(cfg, res, command("hybrid", args)))
}

// replayFlags registers the query-log replay's flags into r.
func replayFlags(fs *flag.FlagSet, r *hybrid.Replay) {
	fs.IntVar(&r.Searches, "replay", 0, "replay a query log of this many searches (Zipf repeats of the judged queries) behind model caches; 0 = none")
	fs.StringVar(&r.Setup, "replay-setup", r.Setup, "replay: the setup searched")
	fs.Float64Var(&r.Zipf, "replay-zipf", r.Zipf, "replay: Zipf exponent of the query frequencies (> 1)")
	fs.Var((*sizesFlag)(&r.CacheMB), "replay-cache-mb", "replay: cache sizes in MB, one replay each, 0 = no cache")
}
