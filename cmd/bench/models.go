package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/modeldir"
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
	cfg := modeldir.DefaultConfig()
	fs.StringVar(&cfg.Out, "out", "", "folder receiving OUT/<profile> directories (required)")
	var profiles listFlag
	fs.Var(&profiles, "profiles", "comma list of profiles (default all)")
	fs.StringVar(&cfg.VocabTxt, "vocab", cfg.VocabTxt, "bert-base-uncased vocab.txt")
	fs.StringVar(&cfg.TokenizerJSON, "tokenizer-json", cfg.TokenizerJSON, "all-MiniLM-L6-v2 tokenizer.json")
	fs.BoolVar(&cfg.Force, "force", false, "rewrite directories that already hold a model")
	var o output
	o.registerJSON(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Profiles = profiles
	res, err := modeldir.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "", modeldir.Report(cfg, res, command("models", args)))
}
