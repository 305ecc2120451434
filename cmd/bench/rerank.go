package main

import (
	"context"
	"flag"
	"strings"

	"github.com/hybrank/hybrank/bench/embed"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/rerank"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "rerank",
		summary: "cross-encoder pairs/s, tokens/s, latency and effective GFLOP/s vs measured peak (profiles fast, balanced, accurate)",
		run: func(ctx context.Context, cl *cli, args []string) error {
			return runThroughput(ctx, cl, "rerank", args, throughputDriver{
				config: rerank.DefaultConfig, sweep: rerank.DefaultSweep, run: rerank.Run, report: rerank.Report,
			})
		},
	})
	register(subcommand{
		name:    "embed",
		summary: "bi-encoder texts/s, tokens/s, latency and effective GFLOP/s vs measured peak (profile embed)",
		run: func(ctx context.Context, cl *cli, args []string) error {
			return runThroughput(ctx, cl, "embed", args, throughputDriver{
				config: embed.DefaultConfig, sweep: embed.DefaultSweep, run: embed.Run, report: embed.Report,
			})
		},
	})
}

// throughputDriver is the rerank or embed driver.
type throughputDriver struct {
	config func() throughput.Config
	sweep  func() throughput.Sweep
	run    func(context.Context, throughput.Config) (throughput.Result, error)
	report func(throughput.Config, throughput.Result, string) report.Report
}

// modelFlags registers the model and text flags shared by rerank, embed
// and serve.
func modelFlags(fs *flag.FlagSet, s *throughput.Spec) {
	fs.StringVar(&s.Profile, "profile", s.Profile, "model profile: fast, balanced, accurate (cross-encoders) or embed")
	fs.StringVar(&s.ModelDir, "model-dir", "", "model directory (HF ONNX layout); default: the profile's under --models-root")
	fs.StringVar(&s.Models.Root, "models-root", "", "folder of model directories, one per profile, generated when missing (kept between runs); default $"+models.ModelsEnv+", else a temporary folder")
	fs.StringVar(&s.Provider, "provider", s.Provider, "execution provider: cpu, cuda or auto")
	fs.IntVar(&s.Threads, "threads", s.Threads, "intra-op threads (0 = runtime default)")
	fs.IntVar(&s.PoolSize, "pool", s.PoolSize, "runtime sessions (batches of one call, or the server's model calls, run concurrently)")
	fs.IntVar(&s.DocTokens, "doc-tokens", s.DocTokens, "tokens per document/text (no special tokens)")
	fs.IntVar(&s.QueryTokens, "query-tokens", s.QueryTokens, "tokens per synthetic query")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "synthetic text seed")
}

// runThroughput is `bench rerank` and `bench embed`: one run, or with
// --sweep every combination and the report.
func runThroughput(ctx context.Context, cl *cli, name string, args []string, d throughputDriver) error {
	fs := cl.flags(name)
	cfg := d.config()
	unit := "pairs"
	if cfg.Kind == models.KindEmbedder {
		unit = "texts"
	}
	modelFlags(fs, &cfg.Spec)
	fs.StringVar(&cfg.GraphOptimization, "graph-opt", "", "graph optimisation: disable, basic, extended, all (default all)")
	fs.BoolVar(&cfg.DisableArena, "no-arena", false, "disable the runtime's CPU memory arena")
	fs.BoolVar(&cfg.DisableSpinning, "no-spin", false, "stop intra-op threads from busy-waiting between operators")
	fs.IntVar(&cfg.BatchTokens, "batch-tokens", cfg.BatchTokens, "max padded tokens per runtime call")
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, unit+" per call")
	fs.StringVar(&cfg.Data, "data", "", "BEIR dataset folder for real text (e.g. ../shared/datasets/scifact); default: vocabulary words")
	fs.DurationVar(&cfg.MinTime, "min-time", cfg.MinTime, "measure at least this long per run")
	fs.IntVar(&cfg.MinCalls, "min-calls", cfg.MinCalls, "measure at least this many calls per run")
	fs.IntVar(&cfg.PeakN, "peak-n", cfg.PeakN, "MatMul size for the peak GFLOP/s measurement (0 = skip)")
	sw := d.sweep()
	sweep := fs.Bool("sweep", false, "sweep batch sizes × threads × doc tokens × profiles and write the report")
	var profiles listFlag
	batches, threads, docs := intsFlag(sw.BatchPairs), intsFlag(sw.Threads), intsFlag(sw.DocTokens)
	fs.Var(&profiles, "sweep-profiles", "profiles to sweep (default "+strings.Join(sw.Profiles, ",")+")")
	fs.Var(&batches, "sweep-batches", "batch sizes to sweep, in "+unit+" per runtime call")
	fs.Var(&threads, "sweep-threads", "intra-op thread counts to sweep")
	fs.Var(&docs, "sweep-doc-tokens", "document lengths to sweep")
	reportFrom := fs.String("report-from", "", "re-render "+name+".md/.svg from saved --json lines instead of running")
	var o output
	o.register(fs, name+".md and "+name+".svg (with --sweep or --report-from)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *sweep {
		cfg.Sweep = throughput.Sweep{Profiles: sw.Profiles, BatchPairs: batches, Threads: threads, DocTokens: docs}
		if len(profiles) > 0 {
			cfg.Sweep.Profiles = profiles
		}
	} else if *reportFrom == "" {
		o.out = "" // one measurement is printed, not written over the sweep's report
	}
	cfg.Log = cl.stderr
	var res throughput.Result
	var err error
	if *reportFrom != "" {
		res.Rows, err = throughput.ReadRows(*reportFrom)
	} else {
		res, err = d.run(ctx, cfg)
	}
	if err != nil {
		return err
	}
	return o.finish(cl, name, d.report(cfg, res, command(name, args)))
}
