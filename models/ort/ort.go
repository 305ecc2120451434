package ort

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Input and output names of Hugging Face BERT ONNX exports.
const (
	inInputIDs      = "input_ids"
	inAttentionMask = "attention_mask"
	inTokenTypeIDs  = "token_type_ids"

	outLogits            = "logits"
	outSentenceEmbedding = "sentence_embedding"
	outLastHidden        = "last_hidden_state"
	outTokenEmbeddings   = "token_embeddings"
)

// sessionConfig returns the runtime session settings c describes.
func sessionConfig(c models.Config) onnx.SessionConfig {
	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.Provider(c.Provider)
	sc.IntraOpThreads = c.IntraOpThreads
	sc.InterOpThreads = c.InterOpThreads
	sc.PoolSize = c.PoolSize
	if c.GraphOptimization != "" {
		sc.GraphOptimization = c.GraphOptimization
	}
	sc.DisableArena = c.DisableArena
	sc.DisableSpinning = c.DisableSpinning
	sc.CUDADeviceID = c.CUDADeviceID
	return sc
}

// loadORT is the real loader: model directory, tokenizer, runtime session.
func loadORT(cfg models.Config, kind models.Kind) (_ *loaded, err error) {
	dir, err := cfg.ResolveDir()
	if err != nil {
		return nil, err
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return nil, err
	}
	if cfg.Quantize != "" {
		// The copy depends on the plan (its weight width, its smoothing),
		// which depends on the runtime's operators.
		plan, err := PlanFor(cfg)
		if err != nil {
			return nil, err
		}
		if dir, err = quantizedDir(context.Background(), dir, md, kind, cfg, plan); err != nil {
			return nil, err
		}
		if md, err = models.OpenModelDir(dir); err != nil {
			return nil, err
		}
	}
	enc, err := loadTokenizer(md)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			return
		}
		if cerr := closeEncoder(enc); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: cfg.LibraryPath}); err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	plan := NewPlan(cfg, ThisMachine())
	ins, outs, err := onnx.ModelIO(md.ONNXPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", models.ErrModelDir, dir, err)
	}
	inputs, output, pooled, err := pickIO(md.ONNXPath, kind, ins, outs)
	if err != nil {
		return nil, err
	}
	model := onnx.Model{Path: md.ONNXPath}
	// What the copies hold, by provider (CPU 0, CUDA 1), if made.
	var fused [2]fuse.Report
	if !cfg.DisableFusion {
		var tmp [2]string
		defer func() {
			for _, p := range tmp {
				if p != "" {
					os.Remove(p) // the sessions have read it
				}
			}
		}()
		rewrite := func(k int, r fuse.Rewrites, target string) func() (string, error) {
			return func() (string, error) {
				p, rep, err := fusedCopy(md.ONNXPath, r)
				switch {
				case errors.Is(err, onnxpb.ErrUnsupported):
					// A file the rewrite cannot read (external data) runs as it is.
					slog.Info("models/ort: graph rewrite for "+target+" skipped", "model", md.ONNXPath, "reason", err)
					return "", nil
				case err != nil:
					slog.Warn("models/ort: graph rewrite for "+target+" failed; loading the file as it is", "model", md.ONNXPath, "err", err)
					return "", nil
				}
				tmp[k], fused[k] = p, rep // p is "" when nothing was rewritten
				return p, nil
			}
		}
		model.ForCPU = rewrite(0, plan.CPU, "the CPU")
		model.ForCUDA = rewrite(1, plan.CUDA, "CUDA")
	}
	sess, err := onnx.NewSessionModel(model, inputs, []string{output}, sessionConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	typeIDs := slices.Contains(inputs, inTokenTypeIDs)
	if sess.Rewritten() {
		// A rewritten copy that loads but does not run (a shape its
		// analysis got wrong) costs the load a fallback to the file,
		// not every later call an error.
		if perr := probe(&ortRunner{sess: sess, typeIDs: typeIDs}); perr != nil {
			slog.Warn("models/ort: the rewritten graph fails on a probe batch; loading the file as it is", "model", md.ONNXPath, "err", perr)
			if err := sess.Close(); err != nil {
				return nil, fmt.Errorf("load %s: %w", dir, err)
			}
			model.ForCPU, model.ForCUDA = nil, nil
			if sess, err = onnx.NewSessionModel(model, inputs, []string{output}, sessionConfig(cfg)); err != nil {
				return nil, fmt.Errorf("load %s: %w", dir, err)
			}
		}
	}
	warnQuantizeProvider(cfg.Quantize, sess.Provider(), dir)
	fusion, rewrites := "off", fuse.Report{}
	switch {
	case cfg.DisableFusion:
	case sess.Rewritten():
		rewrites = fused[0]
		if sess.Provider() == onnx.ProviderCUDA {
			rewrites = fused[1]
		}
		fusion = rewrites.String()
	default:
		fusion = "none" // nothing to rewrite, a file the rewrite cannot read, or a copy the runtime refused or could not run
	}
	plan.Loaded = Loaded{Provider: string(sess.Provider()), Fusion: fusion, Rewrites: rewrites}
	m := &loaded{
		dir:       md,
		enc:       enc,
		run:       &ortRunner{sess: sess, typeIDs: typeIDs},
		accel:     plan,
		maxLen:    md.SequenceLength(cfg),
		output:    output,
		pooled:    pooled,
		embedding: md.Embedding(cfg),
	}
	m.cost, m.batching, err = setupCost(costEnv{
		cfg: cfg, dir: md, maxLen: m.maxLen, provider: m.run.provider(), plan: plan.Key(), fusion: fusion, host: currentHost(),
		run: m.run, now: time.Now, userCacheDir: os.UserCacheDir,
	})
	if err != nil {
		return nil, errors.Join(err, sess.Close())
	}
	return m, nil
}

// probe runs a padded batch of two short sequences (8 and 5 tokens).
func probe(r *ortRunner) error {
	const seq = 8
	b := &batchTensors{n: 2, seqLen: seq, ids: make([]int64, 2*seq), types: make([]int64, 2*seq), mask: make([]int64, 2*seq)}
	for i := range 2 * seq {
		if i < seq+5 {
			b.ids[i], b.mask[i] = 1, 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := r.run(ctx, b)
	return err
}

// warnQuantizeProvider warns when a converted model runs where its
// arithmetic is slow: float16 on the CPU (ONNX Runtime's CPU kernels run
// it several times slower than float32, at float16's accuracy: a CUDA
// setup that failed under --provider auto, say) or int8 on CUDA (its
// DynamicQuantizeMatMul runs on the CPU only, with copies to and from the
// GPU at every layer).
func warnQuantizeProvider(quantize string, provider onnx.Provider, dir string) {
	switch {
	case quantize == models.QuantizeFP16 && provider == onnx.ProviderCPU:
		slog.Warn("models/ort: a float16 model runs on the CPU, several times slower than float32 there (meant for --provider cuda)", "model", dir)
	case quantize == models.QuantizeInt8 && provider == onnx.ProviderCUDA:
		slog.Warn("models/ort: an int8 model runs under CUDA; its integer products run on the CPU, with copies at every layer (meant for --provider cpu)", "model", dir)
	}
}

// fusedCopy writes the model at src with package onnx/fuse's rewrites r
// (fuse.WriteFile) applied to a temporary file and returns its path, or ""
// when there is nothing to rewrite. The rewrite decodes every weight; that
// garbage goes back to the OS before the runtime loads the copy, so the
// process's peak memory is the larger of the two steps, not their sum.
func fusedCopy(src string, r fuse.Rewrites) (string, fuse.Report, error) {
	removeStaleCopies(time.Now().Add(-staleAfter))
	f, err := os.CreateTemp("", fusedName)
	if err != nil {
		return "", fuse.Report{}, err
	}
	path := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fuse.Report{}, err
	}
	rep, err := writeRewritten(src, path, r)
	debug.FreeOSMemory()
	if err != nil || !rep.Changed() {
		os.Remove(path)
		return "", fuse.Report{}, err
	}
	return path, rep, nil
}

// writeRewritten is fuse.WriteFile; tests replace it.
var writeRewritten = fuse.WriteFile

// fusedName is os.CreateTemp's pattern of the copies fusedCopy writes;
// fusedPattern matches them and the temporary files they are written
// through (name.onnx.<random>.tmp), for the stale sweep.
const (
	fusedName    = "hybrank-fused-*.onnx"
	fusedPattern = fusedName + "*"
)

// staleAfter is the age past which a temporary copy (a fused model, a
// quantized folder being written) is left over from a process killed
// while loading: a load reads its copy within seconds, a quantization
// takes a minute at most.
const staleAfter = time.Hour

// removeStaleCopies removes the fused copies older than before.
func removeStaleCopies(before time.Time) {
	removeStale(filepath.Join(os.TempDir(), fusedPattern), before)
}

// removeStale removes the files and folders matching pattern whose last
// change is before before.
func removeStale(pattern string, before time.Time) {
	stale, _ := filepath.Glob(pattern)
	for _, p := range stale {
		if st, err := os.Stat(p); err == nil && st.ModTime().Before(before) {
			os.RemoveAll(p)
		}
	}
}

// pickIO checks the model's inputs and chooses the output to read.
// token_type_ids is fed only when the model declares it (some exports drop
// it); any other input is unsupported.
func pickIO(path string, kind models.Kind, ins, outs []onnx.IOInfo) (inputs []string, output string, pooled bool, err error) {
	have := map[string]bool{}
	for _, in := range ins {
		switch in.Name {
		case inInputIDs, inAttentionMask, inTokenTypeIDs:
			if in.Type != onnx.Int64 {
				return nil, "", false, fmt.Errorf("%w: %s: input %s is %s, want int64", models.ErrUnsupportedModel, path, in.Name, in.Type)
			}
			have[in.Name] = true
		default:
			return nil, "", false, fmt.Errorf("%w: %s: unexpected input %q (want input_ids, attention_mask and optionally token_type_ids)",
				models.ErrUnsupportedModel, path, in.Name)
		}
	}
	if !have[inInputIDs] || !have[inAttentionMask] {
		return nil, "", false, fmt.Errorf("%w: %s: needs inputs input_ids and attention_mask", models.ErrUnsupportedModel, path)
	}
	inputs = []string{inInputIDs, inAttentionMask}
	if have[inTokenTypeIDs] {
		inputs = append(inputs, inTokenTypeIDs)
	}
	outNames := map[string]onnx.IOInfo{}
	for _, o := range outs {
		outNames[o.Name] = o
	}
	var want []string
	if kind == models.KindCrossEncoder {
		want = []string{outLogits}
	} else {
		want = []string{outSentenceEmbedding, outLastHidden, outTokenEmbeddings}
	}
	for _, w := range want {
		if o, ok := outNames[w]; ok {
			output = w
			if o.Type != onnx.Float32 {
				return nil, "", false, fmt.Errorf("%w: %s: output %s is %s, want float32", models.ErrUnsupportedModel, path, w, o.Type)
			}
			if kind == models.KindCrossEncoder && len(o.Shape) == 2 && o.Shape[1] != 1 && o.Shape[1] != -1 {
				return nil, "", false, fmt.Errorf("%w: %s: logits have %d labels; only single-logit rerankers are supported",
					models.ErrUnsupportedModel, path, o.Shape[1])
			}
			return inputs, output, w == outSentenceEmbedding, nil
		}
	}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.Name
	}
	return nil, "", false, fmt.Errorf("%w: %s: no output among %v (outputs: %v)", models.ErrUnsupportedModel, path, want, names)
}

// ortRunner feeds padded batches to an onnx.Session.
type ortRunner struct {
	sess    *onnx.Session
	typeIDs bool // feed token_type_ids
}

func (r *ortRunner) run(ctx context.Context, b *batchTensors) ([]float32, []int64, error) {
	out, shape, _, err := r.runTimed(ctx, b)
	return out, shape, err
}

// runTimed is run, and also returns how long the model ran, without the
// wait for a free pooled session (computeTimer).
func (r *ortRunner) runTimed(ctx context.Context, b *batchTensors) ([]float32, []int64, time.Duration, error) {
	shape := []int64{int64(b.n), int64(b.seqLen)}
	in := []onnx.Input{
		{Name: inInputIDs, Shape: shape, Int64: b.ids},
		{Name: inAttentionMask, Shape: shape, Int64: b.mask},
	}
	if r.typeIDs {
		in = append(in, onnx.Input{Name: inTokenTypeIDs, Shape: shape, Int64: b.types})
	}
	out, d, err := r.sess.RunTimed(ctx, in)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("run batch %dx%d: %w", b.n, b.seqLen, err)
	}
	return out[0].Float32, out[0].Shape, d, nil
}

func (r *ortRunner) provider() string { return string(r.sess.Provider()) }
func (r *ortRunner) close() error     { return r.sess.Close() }
