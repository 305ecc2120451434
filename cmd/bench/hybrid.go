package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "hybrid",
		summary: "hybrid engine (BM25 + optional dense + optional rerank under a budget): quality, latency, stage times, degradation on BEIR",
		run:     runHybrid,
	})
}

func runHybrid(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hybrid", flag.ContinueOnError)
	var data, fusions listFlag
	fs.Var(&data, "data", "BEIR dataset folder (repeatable or comma list)")
	fs.Var(&fusions, "fusion", "fusion methods: rrf, weighted, relative (default all)")
	opt := bench.DefaultHybridOptions()
	fs.Float64Var(&opt.Alpha, "alpha", opt.Alpha, "dense weight of weighted fusion")
	fs.IntVar(&opt.K, "k", opt.K, "hits per query")
	fs.IntVar(&opt.Candidates, "candidates", opt.Candidates, "candidates per retriever")
	fs.DurationVar(&opt.Budget, "budget", 0, "per-query latency budget (0 = none)")
	embed := fs.String("embed", "", `embedder model dir ("" = BM25 only; "profile" = $HYBRANK_MODELS/embed)`)
	rerank := fs.String("rerank", "", "reranker profile: fast, balanced or accurate (\"\" = none)")
	rerankDir := fs.String("rerank-dir", "", "reranker model dir (\"\" = $HYBRANK_MODELS/<profile>)")
	provider := fs.String("provider", "auto", "ONNX Runtime provider: auto, cuda, cpu")
	fs.BoolVar(&opt.Eval.DropIdenticalIDs, "drop-identical-ids", false, "drop retrieved docs whose id equals the query id (BEIR convention)")
	fs.BoolVar(&opt.Progress, "progress", false, "show progress even when stderr is not a terminal")
	out := fs.String("out", "bench/results", `folder for hybrid.md ("" = do not write)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("give --data DIR")
	}
	if len(fusions) > 0 {
		opt.Fusions = nil
		for _, f := range fusions {
			opt.Fusions = append(opt.Fusions, engine.Fusion(f))
		}
	}
	if *embed != "" {
		c, err := models.ProfileConfig(models.ProfileEmbed)
		if err != nil {
			return err
		}
		if *embed != "profile" {
			c.Dir = *embed
		}
		c.Provider = *provider
		opt.EmbedModel = c
	}
	if *rerank != "" {
		c, err := models.ProfileConfig(*rerank)
		if err != nil {
			return err
		}
		c.Dir, c.Provider = *rerankDir, *provider
		opt.RerankModel, opt.Rerank = c, *rerank
	}
	enc := json.NewEncoder(os.Stdout)
	var rows []map[string]any
	for _, dir := range data {
		ds, err := bench.LoadBEIR(dir)
		if err != nil {
			return err
		}
		rs, err := bench.RunHybridBEIR(ctx, ds, opt)
		if err != nil {
			return err
		}
		for _, r := range rs {
			rows = append(rows, r.Row())
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	if *out == "" {
		return nil
	}
	path, err := bench.WriteReport(*out, "hybrid", bench.Report{
		Title:   "Hybrid engine",
		Command: "bench hybrid " + strings.Join(args, " "),
		Notes: []string{
			"Queries run sequentially through engine.Search; latency is Result.Timings.Total; stage columns are means.",
			"degraded_frac is the share of queries whose rerank stage was cut by the budget; mean_reranked the mean candidates scored.",
		},
		Config:  opt,
		Columns: bench.HybridColumns,
		Rows:    rows,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
