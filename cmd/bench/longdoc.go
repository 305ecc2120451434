package main

import (
	"context"

	"github.com/hybrank/hybrank/bench/longdoc"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "longdoc",
		summary: "long documents (scifact abstracts buried in 2–4K tokens): nDCG@10 of truncation vs chunked scoring with a real bi-encoder, pairs and time of a generated cross-encoder",
		run:     runLongdoc,
	})
}

// runLongdoc is `bench longdoc`.
func runLongdoc(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("longdoc")
	cfg := longdoc.DefaultConfig()
	fs.StringVar(&cfg.Data, "data", cfg.Data, "BEIR dataset folder the long documents are built from")
	fs.IntVar(&cfg.Build.Queries, "max-queries", cfg.Build.Queries, "judged queries, in file order (0 = all)")
	fs.IntVar(&cfg.Build.Distractors, "distractors", cfg.Build.Distractors, "distractor long documents (no relevant text), candidates of every query")
	fs.IntVar(&cfg.Build.MinTokens, "min-tokens", cfg.Build.MinTokens, "shortest long document, in tokens")
	fs.IntVar(&cfg.Build.MaxTokens, "max-tokens", cfg.Build.MaxTokens, "longest long document, in tokens")
	fs.Uint64Var(&cfg.Build.Seed, "seed", cfg.Build.Seed, "seed of lengths, filler and positions")
	fs.StringVar(&cfg.Embedder, "embedder", cfg.Embedder, "real bi-encoder directory of the quality rows (make models)")
	strides := intsFlag(cfg.Strides)
	fs.Var(&strides, "strides", "chunking strides of the quality rows, in tokens (comma list)")
	fs.IntVar(&cfg.MaxChunks, "max-chunks", cfg.MaxChunks, "windows kept per document (evenly spread)")
	fs.IntVar(&cfg.TopK, "top-k", cfg.TopK, "k of the mean_top_k rows")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "documents per model call")
	fs.StringVar(&cfg.Provider, "provider", cfg.Provider, "ONNX Runtime provider: auto, cuda, cpu")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "intra-op threads (0 = one per core)")
	fs.StringVar(&cfg.Rerank.Profile, "rerank-profile", cfg.Rerank.Profile, `cross-encoder profile of the speed rows ("" = none)`)
	fs.StringVar(&cfg.Rerank.ModelDir, "rerank-model-dir", "", "cross-encoder directory (default: the profile's under --models-root)")
	fs.StringVar(&cfg.Rerank.Models.Root, "models-root", "", "folder of generated model directories, one per profile, generated when missing; default $"+models.ModelsEnv+", else a temporary folder")
	fs.IntVar(&cfg.Rerank.Queries, "rerank-queries", cfg.Rerank.Queries, "queries of the cross-encoder rows")
	fs.IntVar(&cfg.Rerank.Docs, "rerank-docs", cfg.Rerank.Docs, "candidates per query of the cross-encoder rows (relevant first)")
	var rstrides intsFlag
	for _, ch := range cfg.Rerank.Chunkings {
		if ch.MaxChunks == 0 {
			rstrides = append(rstrides, ch.Stride)
		}
	}
	fs.Var(&rstrides, "rerank-strides", "chunking strides of the cross-encoder rows (comma list)")
	rcap := fs.Int("rerank-cap", 4, "also run the first rerank stride capped at this many windows per document (0 = no capped row)")
	var o output
	o.register(fs, "longdoc.md")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Strides = strides
	cfg.Rerank.Chunkings = nil
	for i, s := range rstrides {
		cfg.Rerank.Chunkings = append(cfg.Rerank.Chunkings, models.Chunking{Stride: s})
		if i == 0 && *rcap > 0 {
			cfg.Rerank.Chunkings = append(cfg.Rerank.Chunkings, models.Chunking{Stride: s, MaxChunks: *rcap})
		}
	}
	cfg.Log = cl.stderr
	res, err := longdoc.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, "longdoc", longdoc.Report(cfg, res, command("longdoc", args)))
}
