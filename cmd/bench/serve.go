package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hybrank/hybrank/bench/serve"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "serve",
		summary: "HTTP server throughput and latency: N concurrent rerank clients over loopback, batching on vs off, vs the library",
		run:     runServe,
	})
}

func runServe(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("serve")
	cfg := serve.DefaultConfig()
	modelFlags(fs, &cfg.Model)
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent HTTP clients")
	fs.IntVar(&cfg.Docs, "docs", cfg.Docs, "documents per rerank request")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per run")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured time before each run")
	maxWait := fs.Duration("batch-max-wait", time.Duration(cfg.Batch.MaxWait), "batcher max wait (0: no wait)")
	fs.IntVar(&cfg.Batch.MaxItems, "batch-max-items", cfg.Batch.MaxItems, "pairs per merged model call")
	fs.IntVar(&cfg.Batch.MaxTokens, "batch-max-tokens", cfg.Batch.MaxTokens, "tokens per merged model call")
	fs.IntVar(&cfg.Batch.Workers, "workers", cfg.Batch.Workers, "concurrent model calls in the server (both modes)")
	batching := fs.String("batching", "both", "serve runs: on, off, both or none")
	curve := fs.Bool("curve", true, "measure the library's pairs/s per batch size (the reference for the server checks)")
	sizes := intsFlag(cfg.CurveSizes)
	fs.Var(&sizes, "curve-sizes", "batch sizes of the library curve")
	fs.DurationVar(&cfg.CurveMinTime, "curve-min-time", cfg.CurveMinTime, "measured time per batch size of the curve")
	fs.Float64Var(&cfg.Targets.MinBatchingGain, "min-batching-gain", cfg.Targets.MinBatchingGain, "target: pairs/s with batching on over off (0 = unchecked)")
	fs.Float64Var(&cfg.Targets.MinLibraryShare, "min-library-share", cfg.Targets.MinLibraryShare, "target: server pairs/s over the library curve's best (0 = unchecked)")
	search := fs.String("search", "", "also run the search run on this BEIR dataset directory: /search with rerank vs /v1/rerank on the same candidates, and a budgeted /search")
	sc := serve.DefaultSearchConfig("")
	fs.DurationVar(&sc.Budget, "search-budget", 0, "search run: the budgeted run's budget (0: half the unbudgeted p50)")
	overload := fs.Bool("overload", false, "also run the overload test: many clients against small queues")
	ov := serve.DefaultOverloadConfig()
	fs.IntVar(&ov.Clients, "overload-clients", ov.Clients, "overload: concurrent clients")
	fs.DurationVar(&ov.Duration, "overload-duration", ov.Duration, "overload: run time")
	fs.IntVar(&ov.MaxRequestsPerClient, "overload-max-requests", ov.MaxRequestsPerClient, "overload: requests per client at most")
	fs.IntVar(&ov.MaxConcurrentRequests, "overload-max-inflight", ov.MaxConcurrentRequests, "overload: server's max concurrent requests")
	fs.IntVar(&ov.QueueItems, "overload-queue", ov.QueueItems, "overload: server's batcher queue (pairs)")
	fs.DurationVar(&ov.Backoff, "overload-backoff", ov.Backoff, "overload: client pause after a 429")
	fs.BoolVar(&ov.Batching, "overload-batching", ov.Batching, "overload: server batching on")
	fs.Float64Var(&ov.Targets.MaxRSSGrowth, "overload-max-rss-growth", ov.Targets.MaxRSSGrowth, "overload target: second half's RSS peak over the first half's, as a fraction (plus the slack)")
	fs.Float64Var(&ov.Targets.RSSSlackMiB, "overload-rss-slack", ov.Targets.RSSSlackMiB, "overload target: RSS slack in MiB")
	var o output
	o.register(fs, "serve.md")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Batch.MaxWait = models.Duration(*maxWait) // serve.Config.Validate checks it
	modes := map[string][]bool{"on": {true}, "off": {false}, "both": {true, false}, "none": nil}
	m, ok := modes[*batching]
	if !ok {
		return fmt.Errorf("%w: --batching %q: want on, off, both or none", errUsage, *batching)
	}
	cfg.Batching, cfg.CurveSizes = m, sizes
	if !*curve {
		cfg.CurveSizes = nil
	}
	if *overload {
		cfg.Overload = &ov
	}
	if *search != "" {
		sc.Dataset = *search
		cfg.Search = &sc
	}
	cfg.Log = cl.stderr
	res, err := serve.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "serve", serve.Report(cfg, res, command("serve", args)))
}
