package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/embed"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/bench/rerank"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

func init() {
	register(subcommand{
		name:    "rerank",
		summary: "cross-encoder pairs/s, tokens/s, latency and effective GFLOP/s vs measured peak on real-length scifact pairs (beside ONNX Runtime's Python package with --peers) and synthetic shapes (profiles fast, balanced, accurate)",
		run:     runRerank,
	})
	register(subcommand{
		name:    "embed",
		summary: "bi-encoder texts/s, tokens/s, latency and effective GFLOP/s vs measured peak (profile embed)",
		run:     runEmbed,
	})
}

// modelFlags registers the model and text flags shared by rerank, embed
// and serve.
func modelFlags(fs *flag.FlagSet, s *throughput.Spec) {
	fs.StringVar(&s.Profile, "profile", s.Profile, "model profile: fast, balanced, accurate (cross-encoders) or embed")
	fs.StringVar(&s.ModelDir, "model-dir", "", "model directory (HF ONNX layout); default: the profile's under --models-root")
	fs.StringVar(&s.Models.Root, "models-root", "", "folder of model directories, one per profile, generated when missing (kept between runs); default $"+models.ModelsEnv+", else a temporary folder")
	fs.StringVar(&s.Provider, "provider", s.Provider, "execution provider: cpu, cuda or auto")
	fs.IntVar(&s.Threads, "threads", s.Threads, "intra-op threads (0 = runtime default)")
	fs.IntVar(&s.PoolSize, "pool", s.PoolSize, "runtime sessions (batches of one call, or the server's model calls, run concurrently)")
	fs.IntVar(&s.DocTokens, "doc-tokens", s.DocTokens, "tokens per document/text (no special tokens)")
	fs.IntVar(&s.QueryTokens, "query-tokens", s.QueryTokens, "tokens per synthetic query")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "synthetic text seed")
	fs.StringVar(&s.Quantize, "quantize", "", `load the model as int8 (for the CPU) or fp16 (for --provider cuda), converted once by onnx/quantize into the user cache ("" = as it is)`)
}

// throughputFlags are the flags of `bench rerank` and `bench embed` beyond
// the model's: how the runtime runs, the synthetic text, the sweep and
// --report-from. apply puts the sweep into the config after parsing.
type throughputFlags struct {
	defaults               throughput.Sweep
	sweep                  *bool
	profiles               listFlag
	batches, threads, docs intsFlag
	reportFrom             *string
	callPerBatch           *bool
}

func registerThroughput(fs *flag.FlagSet, cfg *throughput.Config, name string, defaults throughput.Sweep) *throughputFlags {
	unit := "pairs"
	if cfg.Kind == models.KindEmbedder {
		unit = "texts"
	}
	modelFlags(fs, &cfg.Spec)
	fs.StringVar(&cfg.GraphOptimization, "graph-opt", "", "graph optimisation: disable, basic, extended, all (default all)")
	fs.BoolVar(&cfg.DisableFusion, "no-fusion", false, "run the model file's graph on the CPU as it is (default: SkipLayerNormalization fused, onnx/fuse)")
	fs.BoolVar(&cfg.DisableArena, "no-arena", false, "disable the runtime's CPU memory arena")
	fs.BoolVar(&cfg.DisableSpinning, "no-spin", false, "stop intra-op threads from busy-waiting between operators")
	fs.BoolVar(&cfg.Int8PerTensor, "int8-per-tensor", false, "int8 models: keep ONNX Runtime's DynamicQuantizeMatMul (one activation scale per batch) instead of hybrank's per-token QuantMatMul on AMX-INT8")
	fs.IntVar(&cfg.Int8ActivationBits, "int8-activation-bits", 0, "int8 models on AMX-INT8: the per-token activation codes, 16 (0: the default) or 8 (faster, smoothed copies; models.Config.Int8ActivationBits)")
	fs.IntVar(&cfg.BatchTokens, "batch-tokens", cfg.BatchTokens, "max padded tokens per runtime call")
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, unit+" per call")
	fs.StringVar(&cfg.Data, "data", "", "BEIR dataset folder for real text cut to --doc-tokens (e.g. ../shared/datasets/scifact); default: vocabulary words")
	fs.DurationVar(&cfg.MinTime, "min-time", cfg.MinTime, "measure at least this long per run")
	fs.IntVar(&cfg.MinCalls, "min-calls", cfg.MinCalls, "measure at least this many calls per run")
	fs.IntVar(&cfg.PeakN, "peak-n", cfg.PeakN, "MatMul size for the peak GFLOP/s measurement (0 = skip)")
	f := &throughputFlags{defaults: defaults,
		batches: intsFlag(defaults.BatchPairs), threads: intsFlag(defaults.Threads), docs: intsFlag(defaults.DocTokens)}
	f.sweep = fs.Bool("sweep", false, "sweep batch sizes × threads × doc tokens × profiles and write the report")
	fs.Var(&f.profiles, "sweep-profiles", "profiles to sweep (default "+strings.Join(defaults.Profiles, ",")+")")
	fs.Var(&f.batches, "sweep-batches", "batch sizes to sweep, in "+unit+" per runtime call")
	fs.Var(&f.threads, "sweep-threads", "intra-op thread counts to sweep")
	fs.Var(&f.docs, "sweep-doc-tokens", "document lengths to sweep")
	f.callPerBatch = fs.Bool("sweep-call-per-batch", false, "sweep: every call is one batch of the swept size (fixed batching), so p50/p99 are per batch (a GPU's batch curve)")
	f.reportFrom = fs.String("report-from", "", "re-render "+name+".md/.svg from saved --json lines instead of running")
	return f
}

// apply sets cfg's sweep from the parsed flags (fs, after parsing).
// Without --sweep or --report-from one measurement is printed, not written
// over the sweep's report, unless --out names a folder explicitly.
func (f *throughputFlags) apply(fs *flag.FlagSet, cfg *throughput.Config, o *output) {
	outSet := false
	fs.Visit(func(fl *flag.Flag) { outSet = outSet || fl.Name == "out" })
	if *f.sweep {
		cfg.Sweep = throughput.Sweep{Profiles: f.defaults.Profiles, BatchPairs: f.batches, Threads: f.threads, DocTokens: f.docs, CallPerBatch: *f.callPerBatch}
		switch {
		case len(f.profiles) > 0:
			cfg.Sweep.Profiles = f.profiles
		case cfg.ModelDir != "":
			// One model directory is one model: sweeping every profile
			// would measure it once per profile name.
			cfg.Sweep.Profiles = []string{cfg.Profile}
		}
	} else if *f.reportFrom == "" && !outSet {
		o.out = ""
	}
}

// runEmbed is `bench embed`: one run, or with --sweep every combination
// and the report.
func runEmbed(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("embed")
	cfg := embed.DefaultConfig()
	tf := registerThroughput(fs, &cfg, "embed", embed.DefaultSweep())
	var o output
	o.register(fs, "embed.md and embed.svg (with --sweep, --report-from or an explicit --out)")
	if err := parse(fs, args); err != nil {
		return err
	}
	tf.apply(fs, &cfg, &o)
	cfg.Log = cl.stderr
	var res throughput.Result
	var err error
	if *tf.reportFrom != "" {
		res.Rows, err = throughput.ReadRows(*tf.reportFrom)
	} else {
		res, err = embed.Run(ctx, cfg)
	}
	rep := embed.Report(cfg, res, command("embed", args))
	if *tf.reportFrom != "" {
		rep.Notes = append([]string{reRenderedNote(*tf.reportFrom)}, rep.Notes...)
	}
	if err != nil {
		return o.failed(cl, "embed", rep, err)
	}
	return o.finish(cl, "embed", rep)
}

// runRerank is `bench rerank`: real-length pairs (beside the peer) and
// the synthetic shapes, once or with --sweep over every combination.
func runRerank(ctx context.Context, cl *cli, args []string) error {
	fs := cl.flags("rerank")
	cfg := rerank.DefaultConfig()
	tf := registerThroughput(fs, &cfg.Config, "rerank", rerank.DefaultSweep())
	fs.StringVar(&cfg.Real.Data, "real-data", cfg.Real.Data, `BEIR dataset for real-length pairs: BM25 candidates of its queries ("" = none; default scifact when present)`)
	fs.IntVar(&cfg.Real.Queries, "real-queries", cfg.Real.Queries, "judged queries of --real-data (0 = all)")
	fs.IntVar(&cfg.Real.TopK, "real-top-k", cfg.Real.TopK, "BM25 candidates per query")
	var realProfiles listFlag
	fs.Var(&realProfiles, "real-profiles", "profiles run on the real pairs (comma list; default "+strings.Join(cfg.Real.Profiles, ",")+")")
	fs.BoolVar(&cfg.Synthetic, "synthetic", cfg.Synthetic, "also run the synthetic shapes (--pairs × --doc-tokens, or the sweep)")
	peerFlags(fs, &cfg.Peers, "ONNX Runtime's Python package with HF tokenizers on the real pairs")
	peer := string(peers.PeerORT)
	fs.StringVar(&peer, "peer", peer, "the peer: onnxruntime-python (make peers, CPU) or torch (the interpreter's own torch, transformers, onnx and tokenizers; a GPU machine's image)")
	fs.StringVar(&cfg.PeerDevice, "peer-device", "cuda", "the torch peer's device")
	fs.StringVar(&cfg.PeerDType, "peer-dtype", "float16", "the torch peer's dtype: float16, bfloat16 or float32")
	batches := intsFlag(cfg.PeerBatches)
	fs.Var(&batches, "peer-batches", "the peer's batch sizes (comma list)")
	fs.IntVar(&cfg.PeerRounds, "peer-rounds", cfg.PeerRounds, "the peer's timed passes per batch size (the fastest is reported)")
	fs.Float64Var(&cfg.Targets.MaxScoreDiff, "max-score-diff", cfg.Targets.MaxScoreDiff, "check: max |hybrank − peer| score")
	fs.Float64Var(&cfg.Targets.MinPeerSpeedup, "target-peer-speedup", cfg.Targets.MinPeerSpeedup, "check: least hybrank pairs/s / the peer's at each of its batch sizes (0 = report only)")
	fs.BoolVar(&cfg.Batching.Enabled, "batching-check", false, "compare the default batching with fixed token caps (--batching-caps) on the real pairs and on their text cut to 128 and 32 tokens; check: within 5 % of the best cap")
	fs.IntVar(&cfg.Batching.Rounds, "batching-rounds", cfg.Batching.Rounds, "interleaved passes over the same pairs per configuration in the batching check (compared pass by pass against the cap chosen on the other passes; at least 2 for that)")
	caps := intsFlag(cfg.Batching.Caps)
	fs.Var(&caps, "batching-caps", "batching check: the fixed MaxBatchTokens caps (comma list)")
	int8 := fs.Bool("int8", false, "measure each real-pair profile again with int8 weights (onnx/quantize, quantized once into --quantize-cache) and check pairs/s ≥ 2.5× float32 and per-query Spearman ≥ 0.99")
	fp16 := fs.Bool("fp16", false, "measure each real-pair profile again as a float16 model (onnx/quantize, converted once into --quantize-cache; for --provider cuda) and check per-query Spearman ≥ 0.99 (pairs/s reported)")
	fs.StringVar(&cfg.Quant.Cache, "quantize-cache", "", `folder for the int8 and fp16 copies of --int8, --fp16 and --quantize ("" = the user cache)`)
	fs.StringVar(&cfg.Quant.Cache, "int8-cache", "", "deprecated name of --quantize-cache")
	var o output
	o.register(fs, "rerank.md and rerank.svg (with --sweep, --report-from or an explicit --out)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(realProfiles) > 0 {
		cfg.Real.Profiles = realProfiles
	}
	switch {
	case *int8 && *fp16:
		return fmt.Errorf("%w: --int8 and --fp16: one at a time", bench.ErrBadOption)
	case *int8:
		cfg.Quant.Enabled = true
	case *fp16:
		cfg.Quant.Enabled, cfg.Quant.Type, cfg.Quant.MinSpeedup = true, models.QuantizeFP16, 0
	}
	cfg.PeerBatches, cfg.Batching.Caps, cfg.Peer = batches, caps, peers.RerankPeer(peer)
	cfg.QuantizeCache = cfg.Quant.Cache
	tf.apply(fs, &cfg.Config, &o)
	cfg.Log = cl.stderr
	var res rerank.Result
	var err error
	if *tf.reportFrom != "" {
		res, err = rerank.ReadResult(*tf.reportFrom, cfg.Targets)
	} else {
		res, err = rerank.Run(ctx, cfg)
	}
	rep := rerank.Report(cfg, res, command("rerank", args))
	if *tf.reportFrom != "" {
		rep.Notes = append([]string{reRenderedNote(*tf.reportFrom) + " The batching and int8/fp16 checks are not in the JSON lines and are not made again."}, rep.Notes...)
	}
	if err != nil {
		return o.failed(cl, "rerank", rep, err)
	}
	return o.finish(cl, "rerank", rep)
}

// reRenderedNote heads a report re-rendered by --report-from: its header
// (machine, commit, time) and its config block are the re-rendering's,
// not those the rows were measured under (each row names its provider).
func reRenderedNote(path string) string {
	return fmt.Sprintf("**Re-rendered from the JSON lines of %s (--report-from): the machine, commit and time above and the config below are the re-rendering's, not the measurement's; each row says where it ran (provider, threads).**", path)
}
