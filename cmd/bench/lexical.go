package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hybrank/hybrank/bench/lexical"
	"github.com/hybrank/hybrank/bench/synth"
	"github.com/hybrank/hybrank/postings"
)

func init() {
	register(subcommand{
		name:    "lexical",
		summary: "BM25 quality (nDCG@10, recall@100, MRR@10), QPS, latency and index size on BEIR or synthetic corpora",
		run:     runLexical,
	})
}

func runLexical(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("lexical")
	cfg := lexical.DefaultConfig()
	var data, synthetic, variants listFlag
	fs.Var(&data, "data", "BEIR dataset folder (repeatable or comma list)")
	fs.Var(&synthetic, "synthetic", "synthetic corpus sizes in docs (repeatable or comma list, e.g. 10000,100000,1000000)")
	variant := fs.String("variant", string(postings.Lucene), "BM25 variant: lucene, robertson, atire, bm25l, bm25+")
	fs.Var(&variants, "variants", `comma list of variants, or "all" (overrides --variant)`)
	fs.Float64Var(&cfg.Index.K1, "k1", cfg.Index.K1, "BM25 k1")
	fs.Float64Var(&cfg.Index.B, "b", cfg.Index.B, "BM25 b")
	fs.Float64Var(&cfg.Index.Delta, "delta", cfg.Index.Delta, "delta of bm25l / bm25+")
	fs.IntVar(&cfg.K, "k", cfg.K, "hits per query")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "timed rounds over all queries; QPS is the best")
	fs.BoolVar(&cfg.Exhaustive, "exhaustive", false, "score every posting (no MaxScore pruning)")
	fs.BoolVar(&cfg.Eval.DropIdenticalIDs, "drop-identical-ids", false, "drop retrieved docs whose id equals the query id before scoring (BEIR's ignore_identical_ids; default keeps them, as trec_eval and bm25s's figures do)")
	fs.IntVar(&cfg.ChunkDocs, "chunk", 0, "synthetic: commit every N docs, then Rebuild (0 = one bulk batch)")
	peerFlags(fs, &cfg.Peers, "bm25s on every --data dataset")
	fs.IntVar(&cfg.Targets.PeerDecimals, "peer-decimals", cfg.Targets.PeerDecimals, "check: decimals of nDCG@10 hybrank and bm25s must share (0 = no check)")
	fs.BoolVar(&cfg.Progress, "progress", false, "show progress even when stderr is not a terminal")
	seed := fs.Uint64("seed", 1, "synthetic corpus seed")
	synthQueries := fs.Int("synthetic-queries", 1000, "queries per synthetic corpus")
	name := fs.String("name", "lexical", "report file name (without .md) under --out")
	var o output
	o.register(fs, "the report and lexical_scaling.svg")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Datasets = data
	for _, s := range synthetic {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: --synthetic %q: want a positive integer", errUsage, s)
		}
		sc := synth.DefaultCorpusConfig(n)
		sc.Seed, sc.Queries = *seed, *synthQueries
		cfg.Synthetic = append(cfg.Synthetic, sc)
	}
	switch {
	case len(variants) == 1 && variants[0] == "all":
		cfg.Variants = lexical.Variants
	case len(variants) > 0:
		for _, v := range variants {
			cfg.Variants = append(cfg.Variants, postings.Variant(v))
		}
	default:
		cfg.Variants = []postings.Variant{postings.Variant(*variant)}
	}
	cfg.Log = cl.stderr
	res, err := lexical.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, *name, lexical.Report(cfg, res, command("lexical", args)))
}
