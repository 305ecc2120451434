package ort

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybrank/hybrank/internal/filehash"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/quantize"
	"github.com/hybrank/hybrank/onnx"
	"github.com/klauspost/cpuid/v2"
)

// SmoothInt8 reports whether the int8 copies hybrank makes for cfg here
// are smoothed (Smoothing): when their products run with one 8-bit
// activation scale per token, that is when package onnx's QuantMatMul can
// run here (onnx.QuantMatMulAMX, so after onnx.Init), the fusion runs
// (not DisableFusion), cfg does not keep the runtime's kernel
// (Int8PerTensor) and asks for 8-bit codes (Int8ActivationBits 8). With
// 16-bit codes the activations need no help and the migration only
// coarsens the weights (a trained encoder: worst per-query Spearman 0.994
// unsmoothed, 0.991 smoothed); with one scale per tensor it does not pay
// either: the larger weight rows coarsen every column's steps and the
// batch's outlier tokens still set the activations' (mean 0.969 smoothed
// against 0.98 without; bench/results/rerank_int8_profile.md).
func SmoothInt8(cfg models.Config) bool { return perToken(cfg) && cfg.Int8ActivationBits == 8 }

// perToken reports whether cfg's int8 products run per token in package
// onnx's QuantMatMul here: the CPU offers it (onnx.QuantMatMulAMX, after
// onnx.Init), the fusion rewrites run and Int8PerTensor does not keep the
// runtime's kernel.
func perToken(cfg models.Config) bool {
	return onnx.QuantMatMulAMX() && !cfg.Int8PerTensor && !cfg.DisableFusion
}

// Int8WeightBits is the weight code width of the int8 copies hybrank makes
// on this CPU: 8 where the runtime's integer kernels sum in 32 bits (AVX-512
// VNNI, AVX-VNNI, AMX-INT8: exact with 8-bit codes, and package onnx's
// QuantMatMul), else 7 (quantize.Config.WeightBits: vpmaddubsw's 16-bit
// pair sums would saturate). The copy records it and is named by it
// (…-w8), so copies of either width live side by side.
func Int8WeightBits() int {
	if cpuid.CPU.Supports(cpuid.AVX512VNNI) || cpuid.CPU.Supports(cpuid.AVXVNNI) || cpuid.CPU.Supports(cpuid.AMXINT8) {
		return 8
	}
	return 7
}

// quantizedDir returns the directory to load for cfg.Quantize ("int8" or
// "fp16"; an int8 copy with Int8WeightBits codes, its activations
// smoothed (Smoothing, calibrated on the float32 model of modelKind) where
// SmoothInt8): dir itself when its model already is of that type (a
// models/quantize marker, or for int8 nothing left to quantize, as in an
// int8 export), else a converted copy in the cache, named by the model
// file and the files copied with it (quantize.SourceDigest), written on
// first use (into a temporary folder renamed into place, so a crash or a
// concurrent load never sees half a copy; such folders left by a killed
// process are swept after staleAfter).
func quantizedDir(ctx context.Context, dir string, md models.ModelDir, modelKind models.Kind, cfg models.Config) (string, error) {
	kind := quantize.Type(cfg.Quantize)
	qcfg, err := quantize.ConfigFor(kind)
	if err != nil {
		return "", fmt.Errorf("%w: %w", models.ErrInvalidConfig, err)
	}
	smooth := false
	if kind == quantize.TypeInt8 {
		qcfg.WeightBits = Int8WeightBits()
		if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: cfg.LibraryPath}); err != nil {
			return "", err
		}
		smooth = SmoothInt8(cfg)
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
	dst := filepath.Join(root, filepath.Base(filepath.Clean(dir))+"-"+shortHash(sum+"\n"+files))
	if kind != quantize.TypeInt8 {
		// One QuantizeCache may hold both types: their names tell them
		// apart.
		dst += "-" + string(kind)
	} else {
		// And the int8 copies of different weight widths and smoothing
		// (a load with Int8PerTensor must not replace a copy another load
		// is reading).
		dst += fmt.Sprintf("-w%d", qcfg.WeightBits)
		if smooth {
			dst += fmt.Sprintf("-s%g", SmoothAlpha)
		}
	}
	current := func() bool {
		m, ok, err := quantize.ReadMarker(dst)
		if err != nil || !ok || m.SourceModelSHA256 != sum || m.Layout != quantize.MarkerLayout || m.Of() != kind {
			return false
		}
		if kind != quantize.TypeInt8 {
			return true
		}
		c := m.Report.Config
		return c.WeightBits == qcfg.WeightBits && (c.Smooth != nil) == smooth && (c.Smooth == nil || c.Smooth.Alpha == SmoothAlpha)
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
