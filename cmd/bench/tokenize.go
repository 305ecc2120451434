package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/tokenize"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func init() {
	register(subcommand{
		name:    "tokenize",
		summary: "WordPiece tokenizer pairs/s and tokens/s, ours vs Hugging Face tokenizers (Rust, via node), with parity",
		run:     runTokenize,
	})
}

func runTokenize(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("tokenize")
	cfg := tokenize.DefaultConfig()
	fs.StringVar(&cfg.Data, "data", artifacts.Dataset("scifact"), "BEIR dataset folder")
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, "number of (query, document) pairs")
	fs.IntVar(&cfg.MaxLen, "max-len", cfg.MaxLen, "max length including special tokens")
	fs.StringVar(&cfg.Truncation, "truncation", cfg.Truncation, "longest_first or only_second")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", artifacts.TokenizerJSON(), "tokenizer.json or vocab.txt")
	fs.StringVar(&cfg.HFAddon, "hf", artifacts.HFTokenizers(), `HF tokenizers Node addon folder ("" = skip HF)`)
	fs.StringVar(&cfg.Node, "node", cfg.Node, "node binary")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "timed rounds; the best is reported")
	fs.IntVar(&cfg.DocsPerQuery, "docs-per-query", cfg.DocsPerQuery, "documents per query for the EncodePairs row")
	fs.Float64Var(&cfg.Targets.MinParity, "min-parity", cfg.Targets.MinParity, "target: least share of pairs with ids identical to HF's")
	var o output
	o.register(fs, "tokenize.md")
	if err := parse(fs, args); err != nil {
		return err
	}
	res, err := tokenize.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "tokenize", tokenize.Report(cfg, res, command("tokenize", args)))
}
