package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func init() {
	register(subcommand{
		name:    "tokenize",
		summary: "WordPiece tokenizer pairs/s and tokens/s, ours vs Hugging Face tokenizers (Rust: in process with -tags hftokenizers, and via node), with parity",
		run:     runTokenize,
	})
}

func runTokenize(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	cfg := bench.DefaultTokenizeConfig()
	fs.StringVar(&cfg.Data, "data", artifacts.Dataset("scifact"), "BEIR dataset folder")
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, "number of (query, document) pairs")
	fs.IntVar(&cfg.MaxLen, "max-len", cfg.MaxLen, "max length including special tokens")
	fs.StringVar(&cfg.Truncation, "truncation", cfg.Truncation, "longest_first or only_second")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", artifacts.TokenizerJSON(), "tokenizer.json or vocab.txt")
	fs.StringVar(&cfg.HFAddon, "hf", artifacts.HFTokenizers(), `HF tokenizers Node addon folder ("" = skip HF)`)
	fs.StringVar(&cfg.Node, "node", cfg.Node, "node binary")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "timed rounds; the best is reported")
	fs.IntVar(&cfg.DocsPerQuery, "docs-per-query", cfg.DocsPerQuery, "documents per query for the EncodePairs row")
	jsonOnly := fs.Bool("json", false, "print only JSON (no table)")
	out := fs.String("out", "bench/results", `folder for tokenize.md ("" = do not write)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := bench.RunTokenize(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOnly {
		enc := json.NewEncoder(os.Stdout)
		return enc.Encode(res)
	}
	for _, r := range res.Rows {
		fmt.Printf("%-45s %-30s %10.0f pairs/s %12.0f tokens/s  %s\n", r.Impl, r.Mode, r.PairsPerSec, r.TokensPerS, r.Note)
	}
	if res.RustSkipped != "" {
		fmt.Println("HF in process skipped:", res.RustSkipped)
	} else {
		fmt.Printf("parity with HF in process: %d/%d pairs identical; ratio ours/HF in process: %.2fx\n", res.RustParityEqual, res.RustParityTotal, res.RatioRust)
	}
	if res.HFSkipped != "" {
		fmt.Println("HF skipped:", res.HFSkipped)
	} else {
		fmt.Printf("parity: %d/%d pairs identical; ratio ours/HF: %.2fx\n", res.ParityEqual, res.ParityTotal, res.Ratio)
	}
	if *out != "" {
		path, err := bench.WriteTokenizeReport(*out, "tokenize", "bench tokenize "+strings.Join(args, " "), res)
		if err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}
