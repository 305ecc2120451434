package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/testenv"
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

func runServeBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
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
	batching := fs.String("batching", "both", "on, off or both")
	out := fs.String("out", "bench/results", `folder for serve.md ("" = do not write)`)
	note := fs.String("note", "", "extra paragraph for the report (e.g. machine conditions)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *maxWait > 0 {
		cfg.Batch.MaxWait = server.Duration(*maxWait)
	}
	m.VocabTxt, m.TokenizerJSON = testenv.VocabTxt(), testenv.TokenizerJSON()
	var modes []bool
	switch *batching {
	case "on":
		modes = []bool{true}
	case "off":
		modes = []bool{false}
	case "both":
		modes = []bool{true, false}
	default:
		return fmt.Errorf("--batching %q: want on, off or both", *batching)
	}
	mb := bench.NewModelBench()
	defer mb.Close()
	var rows []map[string]any
	for _, on := range modes {
		res, err := mb.RunServe(ctx, cfg, on)
		if err != nil {
			return err
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		rows = append(rows, res.Row())
	}
	if *out == "" {
		return nil
	}
	notes := bench.ServeNotes
	if *note != "" {
		notes = append([]string{*note}, notes...)
	}
	path, err := bench.WriteReport(*out, "serve", bench.Report{
		Title:   "HTTP serving: rerank over loopback",
		Command: "bench serve " + strings.Join(args, " "),
		Notes:   notes,
		Config:  cfg,
		Columns: bench.ServeColumns,
		Rows:    rows,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
