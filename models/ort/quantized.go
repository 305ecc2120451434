package ort

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/internal/cpu"
	"github.com/hybrank/hybrank/internal/filehash"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// quantizedDir returns the directory to load for plan.Quantize ("int8" or
// "fp16"; an int8 copy with plan.WeightBits codes, its activations
// smoothed (Smoothing, calibrated on the float32 model of modelKind) where
// plan.Smooth is set): dir itself when its model already is of that type (a
// onnx/quantize marker, or for int8 nothing left to quantize, as in an
// int8 export), else a converted copy in the cache, named by the model
// file and the files copied with it (quantize.SourceDigest), written on
// first use (into a temporary folder renamed into place, so a crash or a
// concurrent load never sees half a copy; such folders left by a killed
// process are swept after staleAfter; the folder's name ends in
// plan.CopySuffix).
func quantizedDir(ctx context.Context, dir string, md models.ModelDir, modelKind models.Kind, cfg models.Config, plan Plan) (string, error) {
	kind := quantize.Type(plan.Quantize)
	qcfg, err := quantize.ConfigFor(kind)
	if err != nil {
		return "", fmt.Errorf("%w: %w", models.ErrInvalidConfig, err)
	}
	smooth := plan.Smooth != 0
	if kind == quantize.TypeInt8 {
		qcfg.WeightBits = plan.WeightBits
	}
	m, ok, err := quantize.ReadMarker(dir)
	switch {
	case err != nil:
		return "", err
	case ok && m.Of() == kind:
		return dir, nil
	case ok:
		return "", fmt.Errorf("%w: %s holds a %s model; quantize %s needs the float32 source", models.ErrInvalidConfig, dir, m.Of(), kind)
	}
	sum, err := filehash.SHA256(md.ONNXPath)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", models.ErrModelDir, dir, err)
	}
	root := cfg.QuantizeCache
	if root == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("%w: quantize %s: no user cache directory (%v); set Config.QuantizeCache", models.ErrInvalidConfig, kind, err)
		}
		root = filepath.Join(uc, "hybrank", string(kind))
	}
	// The copy is named by the model file and by everything copied with
	// it (config.json, tokenizer files, pooling: an edit there is a new
	// copy), not by the calibration tables written beside the model, nor
	// by the cache's own copies when the cache lies inside the model
	// folder.
	inside := ""
	if rel, err := filepath.Rel(dir, root); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		inside = rel + string(filepath.Separator)
	}
	files, err := quantize.SourceDigest(ctx, dir, func(rel string) bool {
		return isCostTable(rel) || inside != "" && strings.HasPrefix(rel, inside)
	})
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", models.ErrModelDir, dir, err)
	}
	// One QuantizeCache may hold both types and int8 copies of several
	// plans: their names tell them apart.
	dst := filepath.Join(root, filepath.Base(filepath.Clean(dir))+"-"+shortHash(sum+"\n"+files)+plan.CopySuffix())
	current := func() bool {
		m, ok, err := quantize.ReadMarker(dst)
		if err != nil || !ok || m.SourceModelSHA256 != sum || m.Layout != quantize.MarkerLayout || m.Of() != kind {
			return false
		}
		if kind != quantize.TypeInt8 {
			return true
		}
		c := m.Report.Config
		return c.WeightBits == qcfg.WeightBits && (c.Smooth != nil) == smooth && (c.Smooth == nil || c.Smooth.Alpha == plan.Smooth)
	}
	if current() {
		return dst, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("quantize: %w (set Config.QuantizeCache to a writable folder)", err)
	}
	removeStale(filepath.Join(root, ".tmp-*"), time.Now().Add(-staleAfter))
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("quantize: %w", err)
	}
	defer os.RemoveAll(tmp)
	if smooth {
		if qcfg.Smooth, err = Smoothing(ctx, dir, modelKind, qcfg, cfg.LibraryPath); err != nil {
			return "", fmt.Errorf("quantize %s %s: calibrating the smoothing: %w", kind, dir, err)
		}
	}
	if _, err := quantize.Dir(ctx, dir, tmp, qcfg); err != nil {
		if errors.Is(err, quantize.ErrAlreadyInt8) && kind == quantize.TypeInt8 {
			return dir, nil // already int8 (an int8 export without our marker)
		}
		return "", fmt.Errorf("quantize %s %s: %w", kind, dir, err)
	}
	// A concurrent load may have put its copy there meanwhile: it may be
	// reading it, so it stays. A copy of an older layout (before module
	// folders were copied, a bi-encoder's copy did not load) is replaced,
	// moved aside first so that nothing reads a folder being emptied.
	if current() {
		return dst, nil
	}
	if _, ok, _ := quantize.ReadMarker(dst); ok {
		old := tmp + ".old"
		if err := os.Rename(dst, old); err != nil {
			return "", fmt.Errorf("quantize: replace %s: %w", dst, err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// A concurrent load may have put its copy there first.
		if current() {
			return dst, nil
		}
		return "", fmt.Errorf("quantize: %w", err)
	}
	return dst, nil
}

// WriteCopy writes into dst the copy of the float32 model in src that a
// load with cfg makes (cfg.Quantize "int8" or "fp16"): for int8 the
// plan's weight width, and its smoothing, calibrated on src, where the
// products will run per token in 8 bits. Without the runtime the int8
// plan is made for a machine whose operators do not run: an unsmoothed
// copy, as for a CPU without AMX-INT8 (logged). It returns the
// quantizer's report and the plan it followed.
func WriteCopy(ctx context.Context, src, dst string, cfg models.Config) (quantize.Report, Plan, error) {
	qcfg, err := quantize.ConfigFor(quantize.Type(cfg.Quantize))
	if err != nil || cfg.Quantize == "" {
		return quantize.Report{}, Plan{}, fmt.Errorf("%w: quantize %q (want int8 or fp16)", models.ErrInvalidConfig, cfg.Quantize)
	}
	plan, err := PlanFor(cfg)
	if err != nil {
		slog.Warn("models/ort: no ONNX Runtime: quantizing without smoothing", "err", err)
		plan = NewPlan(cfg, Machine{CPU: cpu.Detect()})
	}
	if qcfg.Type == quantize.TypeInt8 {
		md, err := models.OpenModelDir(src)
		if err != nil {
			return quantize.Report{}, plan, err
		}
		kind := models.KindEmbedder
		if slices.ContainsFunc(md.Config.Architectures, func(a string) bool { return strings.HasSuffix(a, "ForSequenceClassification") }) {
			kind = models.KindCrossEncoder
		}
		qcfg.WeightBits = plan.WeightBits
		if plan.Smooth != 0 {
			if qcfg.Smooth, err = Smoothing(ctx, src, kind, qcfg, cfg.LibraryPath); err != nil {
				return quantize.Report{}, plan, err
			}
		}
	}
	rep, err := quantize.Dir(ctx, src, dst, qcfg)
	return rep, plan, err
}
