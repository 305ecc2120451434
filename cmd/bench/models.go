package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/quantize"
)

func init() {
	register(subcommand{
		name:    "models",
		summary: "write the generated model directory of every profile (fast, balanced, accurate, embed) to --out",
		run:     runModels,
	})
}

func runModels(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	cfg := bench.ModelsConfig{}
	fs.StringVar(&cfg.Out, "out", "", "folder receiving OUT/<profile> directories (required)")
	profiles := fs.String("profiles", "", "comma list of profiles (default all)")
	fs.StringVar(&cfg.VocabTxt, "vocab", testenv.VocabTxt(), "bert-base-uncased vocab.txt")
	fs.StringVar(&cfg.TokenizerJSON, "tokenizer-json", testenv.TokenizerJSON(), "all-MiniLM-L6-v2 tokenizer.json")
	fs.BoolVar(&cfg.Force, "force", false, "rewrite directories that already hold a model")
	quant := fs.String("quantize", "", "int8: write a quantized copy of the model directory SRC (the one argument) to --out instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rest []string // flags may follow SRC: --quantize int8 SRC --out DST
	for fs.NArg() > 0 {
		rest = append(rest, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
	}
	if cfg.Out == "" {
		return fmt.Errorf("--out is required")
	}
	if *quant != "" || len(rest) > 0 {
		return quantizeModel(ctx, *quant, rest, cfg.Out)
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

func quantizeModel(ctx context.Context, kind string, args []string, out string) error {
	if kind != "int8" || len(args) != 1 {
		return fmt.Errorf("usage: bench models --quantize int8 SRC --out DST")
	}
	rep, err := quantize.Dir(ctx, args[0], out, quantize.DefaultConfig())
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d layers int8 (%s, %d-bit weights), %d kept float32, model %d -> %d bytes\n",
		out, len(rep.Nodes), rep.Config.Form, rep.Config.WeightBits, len(rep.Skipped), rep.ModelBytesIn, rep.ModelBytesOut)
	return nil
}
