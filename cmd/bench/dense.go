package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/hybrank/hybrank/bench/dense"
)

func init() {
	register(subcommand{
		name:    "dense",
		summary: "HNSW build time, recall@10, QPS and latency over M × efSearch, plus exact flat search, on synthetic clustered vectors (faiss beside it with --peers)",
		run:     runDense,
	})
}

func runDense(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("dense")
	cfg := dense.DefaultConfig()
	fs.IntVar(&cfg.N, "n", cfg.N, "indexed vectors")
	fs.IntVar(&cfg.Dim, "dim", cfg.Dim, "dimension")
	fs.IntVar(&cfg.Queries, "queries", cfg.Queries, "held-out query vectors")
	fs.IntVar(&cfg.K, "k", cfg.K, "recall@k cut-off")
	ms, efs := intsFlag(cfg.Ms), intsFlag(cfg.Efs)
	fs.Var(&ms, "m", "graph degrees M to build (comma list)")
	fs.Var(&efs, "ef", "efSearch values to search each build with (comma list)")
	fs.IntVar(&cfg.EfConstruction, "efc", cfg.EfConstruction, "efConstruction of every build")
	fs.IntVar(&cfg.Clusters, "clusters", cfg.Clusters, "mixture components")
	fs.IntVar(&cfg.Rank, "rank", cfg.Rank, "per-cluster subspace rank (local intrinsic dimension)")
	fs.Float64Var(&cfg.Noise, "noise", cfg.Noise, "isotropic noise sigma")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "data seed")
	peerFlags(fs, &cfg.Peers, "faiss-cpu's IndexHNSWFlat with every --m, --efc and --ef")
	fs.Float64Var(&cfg.Targets.MinRecall, "target-recall", cfg.Targets.MinRecall, "check: recall@k at which hybrank and the peer are compared")
	fs.Float64Var(&cfg.Targets.MinSpeedup, "target-speedup", cfg.Targets.MinSpeedup, "check: least hybrank QPS / peer QPS at that recall")
	fs.BoolVar(&cfg.Progress, "progress", false, "show progress even when stderr is not a terminal")
	beir := fs.Bool("beir", false, "quality mode: embed BEIR datasets (--data) with real embedders (--model) and report nDCG@10, Recall@100 and MRR@10 of exact, HNSW and faiss rankings (dense_real.md)")
	qc := dense.DefaultQualityConfig()
	var data, mdirs listFlag
	fs.Var(&data, "data", "quality mode: BEIR dataset folder (repeatable or comma list)")
	fs.Var(&mdirs, "model", "quality mode: embedder model directory (repeatable or comma list)")
	fs.StringVar(&qc.CacheDir, "cache", qc.CacheDir, `quality mode: folder of cached vectors ("" = none)`)
	fs.IntVar(&qc.TopK, "top-k", qc.TopK, "quality mode: ranking depth")
	fs.IntVar(&qc.Batch, "batch", qc.Batch, "quality mode: texts per Embed call")
	fs.StringVar(&qc.Provider, "provider", qc.Provider, "quality mode: ONNX Runtime provider: auto, cuda, cpu")
	fs.IntVar(&qc.Threads, "threads", 0, "quality mode: intra-op threads (0 = the model's default)")
	fs.BoolVar(&qc.Int8, "int8", false, "quality mode: also measure each float32 --model quantized to int8 by hybrank (onnx/quantize) as <model>-int8, checked against its float32 nDCG@10")
	fs.StringVar(&qc.Int8Cache, "quantize-cache", "", `quality mode: folder for the int8 copies ("" = the user cache)`)
	fs.StringVar(&qc.Int8Cache, "int8-cache", "", "deprecated name of --quantize-cache")
	fs.BoolVar(&qc.Eval.DropIdenticalIDs, "drop-identical-ids", false, "quality mode: drop retrieved docs whose id equals the query id (BEIR's default; MTEB keeps them)")
	passages := fs.Bool("passages", false, "sweep on real vectors: the sentences of the --data corpora and their queries embedded by --model (cached), instead of synthetic ones (dense_sentences.md)")
	pc := dense.DefaultPassageConfig()
	fs.IntVar(&pc.MaxPassages, "max-passages", 0, "passages mode: cap on the indexed sentences (0 = all)")
	name := fs.String("name", "", `report file name (without .md) under --out (default "dense", "dense_real" with --beir, "dense_sentences" with --passages)`)
	var o output
	o.register(fs, "the report")
	err := parse(fs, args)
	if err != nil {
		return err
	}
	if *beir && *passages {
		return fmt.Errorf("%w: --beir and --passages are two modes; give one", errUsage)
	}
	if *beir {
		qc.Models, qc.Datasets, qc.Peers, qc.Progress, qc.Log = mdirs, data, cfg.Peers, cfg.Progress, cl.stderr
		return runDenseQuality(ctx, cl, &o, cmp.Or(*name, "dense_real"), qc, args)
	}
	if *passages {
		pc.Datasets, pc.CacheDir, pc.Batch, pc.Provider, pc.Threads, pc.Progress = data, qc.CacheDir, qc.Batch, qc.Provider, qc.Threads, cfg.Progress
		if cfg.Vectors, err = passageVectors(ctx, pc, mdirs); err != nil {
			return err
		}
		*name = cmp.Or(*name, "dense_sentences")
	}
	*name = cmp.Or(*name, "dense")
	cfg.Ms, cfg.Efs, cfg.Log = ms, efs, cl.stderr
	res, err := dense.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.finish(cl, *name, dense.Report(cfg, res, command("dense", args)))
}

// runDenseQuality is `bench dense --beir`.
func runDenseQuality(ctx context.Context, cl *cli, o *output, name string, qc dense.QualityConfig, args []string) error {
	res, err := dense.RunQuality(ctx, qc)
	if err != nil {
		return err
	}
	return o.finish(cl, name, dense.QualityReport(qc, res, command("dense", args)))
}

// passageVectors embeds the sentences of `bench dense --passages`.
func passageVectors(ctx context.Context, pc dense.PassageConfig, mdirs []string) (*dense.Vectors, error) {
	if len(mdirs) != 1 {
		return nil, fmt.Errorf("%w: --passages needs exactly one --model", errUsage)
	}
	pc.Model = mdirs[0]
	return dense.PassageVectors(ctx, pc)
}
