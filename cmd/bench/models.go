package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
)

func init() {
	register(subcommand{
		name:    "models",
		summary: "write the generated model directory of every profile (fast, balanced, accurate, embed) to --out",
		run:     runModels,
	})
}

func runModels(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("models")
	cfg := bench.ModelsConfig{}
	fs.StringVar(&cfg.Out, "out", "", "folder receiving OUT/<profile> directories (required)")
	profiles := fs.String("profiles", "", "comma list of profiles (default all)")
	fs.StringVar(&cfg.VocabTxt, "vocab", artifacts.VocabTxt(), "bert-base-uncased vocab.txt")
	fs.StringVar(&cfg.TokenizerJSON, "tokenizer-json", artifacts.TokenizerJSON(), "all-MiniLM-L6-v2 tokenizer.json")
	fs.BoolVar(&cfg.Force, "force", false, "rewrite directories that already hold a model")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Out == "" {
		return fmt.Errorf("--out is required")
	}
	if *profiles != "" {
		cfg.Profiles = strings.Split(*profiles, ",")
	}
	dirs, err := bench.WriteModels(ctx, cfg)
	for _, d := range dirs {
		fmt.Println(d)
	}
	return err
}
