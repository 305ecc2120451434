package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "rerank",
		summary: "cross-encoder pairs/s, tokens/s, latency and effective GFLOP/s vs measured peak (profiles fast, balanced, accurate)",
		run: func(ctx context.Context, cl *cli, args []string) error {
			return runModelBench(ctx, cl, "rerank", models.KindCrossEncoder, args)
		},
	})
}

// modelNotes collects repeated --note paragraphs.
type modelNotes []string

func (n *modelNotes) String() string     { return strings.Join(*n, " ") }
func (n *modelNotes) Set(v string) error { *n = append(*n, v); return nil }

// modelIntList parses a comma list of positive integers.
func modelIntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// runModelBench is `bench rerank` and `bench embed`: flags → bench.ModelBench.
func runModelBench(ctx context.Context, cl *cli, name string, kind models.Kind, args []string) error {
	fs := cl.flags(name)
	cfg := bench.DefaultRerankConfig()
	if kind == models.KindEmbedder {
		cfg = bench.DefaultEmbedConfig()
	}
	unit := "pairs"
	if kind == models.KindEmbedder {
		unit = "texts"
	}
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "model profile: fast, balanced, accurate (rerank) or embed")
	fs.StringVar(&cfg.ModelDir, "model-dir", "", "model directory (HF ONNX layout); default: generated under --models-root")
	fs.StringVar(&cfg.ModelsRoot, "models-root", "", "folder of generated model directories (kept between runs); default $"+models.ModelsEnv+", else a temporary folder")
	fs.StringVar(&cfg.Provider, "provider", cfg.Provider, "execution provider: cpu, cuda or auto")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "intra-op threads (0 = runtime default)")
	fs.IntVar(&cfg.PoolSize, "pool", cfg.PoolSize, "runtime sessions (batches of one call run concurrently)")
	fs.StringVar(&cfg.GraphOptimization, "graph-opt", "", "graph optimisation: disable, basic, extended, all (default all)")
	fs.BoolVar(&cfg.DisableArena, "no-arena", false, "disable the runtime's CPU memory arena")
	fs.BoolVar(&cfg.DisableSpinning, "no-spin", false, "stop intra-op threads from busy-waiting between operators")
	fs.IntVar(&cfg.BatchTokens, "batch-tokens", cfg.BatchTokens, "max padded tokens per runtime call")
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, unit+" per call")
	fs.IntVar(&cfg.DocTokens, "doc-tokens", cfg.DocTokens, "tokens per document/text (no special tokens)")
	fs.IntVar(&cfg.QueryTokens, "query-tokens", cfg.QueryTokens, "tokens per synthetic query")
	fs.StringVar(&cfg.Data, "data", "", "BEIR dataset folder for real text (e.g. ../shared/datasets/scifact); default: vocabulary words")
	fs.DurationVar(&cfg.MinTime, "min-time", cfg.MinTime, "measure at least this long per run")
	fs.IntVar(&cfg.MinCalls, "min-calls", cfg.MinCalls, "measure at least this many calls per run")
	fs.IntVar(&cfg.PeakN, "peak-n", cfg.PeakN, "MatMul size for the peak GFLOP/s measurement (0 = skip)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "synthetic text seed")
	jsonOnly := fs.Bool("json", false, "print only JSON lines")
	sweep := fs.Bool("sweep", false, "sweep batch sizes × threads × doc tokens × profiles and write a report")
	sweepProfiles := fs.String("sweep-profiles", "", "profiles to sweep (default: fast,balanced,accurate for rerank; embed)")
	sweepBatches := fs.String("sweep-batches", "1,4,16,64", "batch sizes to sweep, in "+unit+" per runtime call")
	sweepThreads := fs.String("sweep-threads", "1,2", "intra-op thread counts to sweep")
	sweepDocs := fs.String("sweep-doc-tokens", "128,256", "document lengths to sweep")
	var notes modelNotes
	fs.Var(&notes, "note", "paragraph added to the report (repeatable)")
	reportFrom := fs.String("report-from", "", "re-render "+name+".md/.svg from saved --json lines instead of running")
	out := fs.String("out", "bench/results", `folder for `+name+`.md and `+name+`.svg with --sweep ("" = do not write)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Assets for generating model directories (`make assets`).
	cfg.VocabTxt, cfg.TokenizerJSON = artifacts.VocabTxt(), artifacts.TokenizerJSON()
	if *reportFrom != "" {
		results, err := bench.ReadModelResults(*reportFrom)
		if err != nil {
			return err
		}
		path, err := bench.WriteModelReport(*out, name, "bench "+name+" --report-from "+*reportFrom, results, notes)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
		return nil
	}
	mb := bench.NewModelBench()
	defer mb.Close()
	enc := json.NewEncoder(os.Stdout)
	emit := func(r bench.RerankResult) {
		if *jsonOnly {
			enc.Encode(r)
			return
		}
		fmt.Printf("%-8s %s thr=%d pool=%d batch_tokens=%d (%d %s) doc_tokens=%d: %.1f %s/s, %.0f tok/s, p50 %.1f ms, p99 %.1f ms, %.1f GFLOP/s of peak %.1f (%.0f%%) real_weights=%v\n",
			r.Profile, r.Provider, r.Threads, r.PoolSize, r.BatchTokens, r.BatchPairs, unit, r.DocTokens, r.PairsPerS, unit,
			r.TokensPerS, r.P50Ms, r.P99Ms, r.GFLOPs, r.PeakGFLOPs, 100*r.Efficiency, r.RealWeights)
	}
	if !*sweep {
		var res bench.RerankResult
		var err error
		if kind == models.KindEmbedder {
			res, err = mb.RunEmbed(ctx, cfg)
		} else {
			res, err = mb.RunRerank(ctx, cfg)
		}
		if err != nil {
			return err
		}
		emit(res)
		return nil
	}
	var sc bench.SweepConfig
	var err error
	if sc.BatchPairs, err = modelIntList(*sweepBatches); err != nil {
		return fmt.Errorf("--sweep-batches %w", err)
	}
	if sc.Threads, err = modelIntList(*sweepThreads); err != nil {
		return fmt.Errorf("--sweep-threads %w", err)
	}
	if sc.DocTokens, err = modelIntList(*sweepDocs); err != nil {
		return fmt.Errorf("--sweep-doc-tokens %w", err)
	}
	switch {
	case *sweepProfiles != "":
		sc.Profiles = strings.Split(*sweepProfiles, ",")
	case kind == models.KindEmbedder:
		sc.Profiles = []string{models.ProfileEmbed}
	default:
		sc.Profiles = []string{models.ProfileFast, models.ProfileBalanced, models.ProfileAccurate}
	}
	results, err := mb.RerankSweep(ctx, cfg, sc, kind, emit)
	if err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	path, err := bench.WriteModelReport(*out, name, "bench "+name+" "+strings.Join(args, " "), results,
		append(notes, fmt.Sprintf("Run config: `%+v`.", cfg)))
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
