package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/server"
)

func init() {
	register(subcommand{
		name:    "serve",
		summary: "HTTP server throughput and latency: N concurrent rerank clients over loopback, batching on vs off, vs the library",
		run:     runServeBench,
	})
}

func runServeBench(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("serve")
	cfg := bench.DefaultServeConfig()
	m := &cfg.Model
	fs.StringVar(&m.Profile, "profile", m.Profile, "cross-encoder profile: fast, balanced, accurate")
	fs.StringVar(&m.ModelDir, "model-dir", "", "model directory; default: generated under --models-root")
	fs.StringVar(&m.ModelsRoot, "models-root", "", "folder of generated model directories; default $"+models.ModelsEnv+", else a temporary folder")
	fs.StringVar(&m.Provider, "provider", m.Provider, "execution provider: cpu, cuda or auto")
	fs.IntVar(&m.Threads, "threads", m.Threads, "intra-op threads (0 = runtime default)")
	fs.IntVar(&m.PoolSize, "pool", m.PoolSize, "runtime sessions (also the server's concurrent model calls)")
	fs.IntVar(&m.DocTokens, "doc-tokens", m.DocTokens, "tokens per document")
	fs.IntVar(&m.QueryTokens, "query-tokens", m.QueryTokens, "tokens per query")
	fs.Uint64Var(&m.Seed, "seed", m.Seed, "synthetic text seed")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent HTTP clients")
	fs.IntVar(&cfg.Docs, "docs", cfg.Docs, "documents per rerank request")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per run")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured time before each run")
	maxWait := fs.Duration("batch-max-wait", 0, "batcher max wait (default 2ms)")
	fs.IntVar(&cfg.Batch.MaxItems, "batch-max-items", cfg.Batch.MaxItems, "pairs per merged model call")
	fs.IntVar(&cfg.Batch.MaxTokens, "batch-max-tokens", cfg.Batch.MaxTokens, "tokens per merged model call")
	fs.IntVar(&cfg.Batch.Workers, "workers", cfg.Batch.Workers, "concurrent model calls in the server (both modes)")
	batching := fs.String("batching", "both", "serve runs: on, off, both or none")
	curve := fs.Bool("curve", true, "measure the library's pairs/s per batch size (the reference for the server checks)")
	curveSizes := fs.String("curve-sizes", "1,2,4,8,16,32,64", "batch sizes of the library curve")
	curveTime := fs.Duration("curve-min-time", 3*time.Second, "measured time per batch size of the curve")
	overload := fs.Bool("overload", false, "also run the overload test: many clients against small queues")
	ov := bench.DefaultOverloadConfig()
	fs.IntVar(&ov.Clients, "overload-clients", ov.Clients, "overload: concurrent clients")
	fs.DurationVar(&ov.Duration, "overload-duration", ov.Duration, "overload: run time")
	fs.IntVar(&ov.MaxRequestsPerClient, "overload-max-requests", ov.MaxRequestsPerClient, "overload: requests per client at most")
	fs.IntVar(&ov.MaxConcurrentRequests, "overload-max-inflight", ov.MaxConcurrentRequests, "overload: server's max concurrent requests")
	fs.IntVar(&ov.QueueItems, "overload-queue", ov.QueueItems, "overload: server's batcher queue (pairs)")
	fs.DurationVar(&ov.Backoff, "overload-backoff", ov.Backoff, "overload: client pause after a 429")
	overloadBatching := fs.Bool("overload-batching", true, "overload: server batching on")
	out := fs.String("out", "bench/results", `folder for serve.md ("" = do not write)`)
	note := fs.String("note", "", "extra paragraph for the report (e.g. machine conditions)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *maxWait > 0 {
		cfg.Batch.MaxWait = server.Duration(*maxWait)
	}
	m.VocabTxt, m.TokenizerJSON = artifacts.VocabTxt(), artifacts.TokenizerJSON()
	var modes []bool
	switch *batching {
	case "on":
		modes = []bool{true}
	case "off":
		modes = []bool{false}
	case "both":
		modes = []bool{true, false}
	case "none":
	default:
		return fmt.Errorf("--batching %q: want on, off, both or none", *batching)
	}
	var sizes []int
	for _, f := range strings.Split(*curveSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--curve-sizes %q: want positive integers", *curveSizes)
		}
		sizes = append(sizes, n)
	}
	mb := bench.NewModelBench()
	defer mb.Close()
	var (
		rows    []any
		results = map[bool]bench.ServeResult{}
		checks  []string
	)
	for _, on := range modes {
		res, err := mb.RunServe(ctx, cfg, on)
		if err != nil {
			return err
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		rows = append(rows, res.Row())
		results[on] = res
	}
	var (
		best     bench.CurvePoint
		curvePts []bench.CurvePoint
	)
	if *curve {
		pts, err := mb.RunServeCurve(ctx, cfg, sizes, *curveTime)
		if err != nil {
			return err
		}
		curvePts = pts
		real := modeldir.RealWeights(m.ModelDir)
		for _, p := range pts {
			line, _ := json.Marshal(p)
			fmt.Println("library curve", string(line))
			row := p.Row(m.Profile, m.Threads, m.DocTokens, real)
			if m.ModelDir == "" {
				delete(row, "real_weights") // see the serve rows
			}
			rows = append(rows, row)
		}
		best = bench.BestCurve(pts)
	}
	if *curve {
		for _, p := range curvePts {
			if p.BatchSize == cfg.Docs && p.PairsPerS > 0 {
				checks = append(checks, fmt.Sprintf("INFO library curve: best %.1f pairs/s (batch %d) / %.1f pairs/s at batch %d (one request, what batching off runs) = %.2fx: the most merging %d-document requests can gain on this machine",
					best.PairsPerS, best.BatchSize, p.PairsPerS, p.BatchSize, best.PairsPerS/p.PairsPerS, cfg.Docs))
			}
		}
	}
	on, hasOn := results[true]
	off, hasOff := results[false]
	if hasOn && hasOff && off.PairsPerS > 0 {
		checks = append(checks, verdict(on.PairsPerS >= 2*off.PairsPerS,
			fmt.Sprintf("batching on vs off: %.1f / %.1f pairs/s = %.2fx (target >= 2x)", on.PairsPerS, off.PairsPerS, on.PairsPerS/off.PairsPerS)))
	}
	if hasOn && best.PairsPerS > 0 {
		checks = append(checks, verdict(on.PairsPerS >= 0.85*best.PairsPerS,
			fmt.Sprintf("server (batching on) vs library best (batch %d): %.1f / %.1f pairs/s = %.0f%% (target >= 85%%)",
				best.BatchSize, on.PairsPerS, best.PairsPerS, 100*on.PairsPerS/best.PairsPerS)))
	}
	if *overload {
		ov.Serve = cfg
		res, err := mb.RunOverload(ctx, ov, *overloadBatching)
		if err != nil {
			return err
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		rows = append(rows, res.Row())
		checks = append(checks, verdict(res.Pass(), fmt.Sprintf(
			"overload: %d clients x %.0fs, max in flight %d, queue %d pairs: statuses %v, 200s p50 %.0f ms p99 %.0f ms, "+
				"RSS start %.0f / peak %.0f (first half %.0f) / end %.0f MiB, healthy afterwards %v %s",
			res.Clients, res.Seconds, ov.MaxConcurrentRequests, ov.QueueItems, res.Statuses, res.P50Ms, res.P99Ms,
			res.RSSStartMiB, res.RSSPeakMiB, res.RSSPeakFirstHalfMiB, res.RSSEndMiB, res.Healthy, strings.Join(res.Failures, "; "))))
	}
	for _, c := range checks {
		fmt.Println(c)
	}
	if *out == "" {
		return nil
	}
	notes := bench.ServeNotes
	if len(checks) > 0 {
		notes = append([]string{"Checks:\n\n- " + strings.Join(checks, "\n- ")}, notes...)
	}
	if *note != "" {
		notes = append([]string{*note}, notes...)
	}
	path, err := report.Write(*out, "serve", report.Report{
		Title:   "HTTP serving: rerank over loopback",
		Command: "bench serve " + strings.Join(args, " "),
		Notes:   notes,
		Config:  serveReportConfig{Serve: cfg, Overload: overloadIf(*overload, ov)},
		Columns: bench.ServeColumns,
		Rows:    rows,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}

// verdict prefixes a check line with PASS or FAIL.
func verdict(ok bool, line string) string {
	if ok {
		return "PASS " + line
	}
	return "FAIL " + line
}

// serveReportConfig is the configuration printed in the report.
type serveReportConfig struct {
	Serve    bench.ServeConfig     `json:"serve"`
	Overload *bench.OverloadConfig `json:"overload,omitempty"`
}

func overloadIf(on bool, c bench.OverloadConfig) *bench.OverloadConfig {
	if !on {
		return nil
	}
	c.Serve = bench.ServeConfig{} // printed once, above
	return &c
}
