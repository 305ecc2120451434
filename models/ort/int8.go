package ort

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hybrank/hybrank/internal/filehash"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/quantize"
)

// int8Dir returns the directory to load for cfg.Quantize "int8": dir itself
// when its model is already int8 (a models/quantize marker, or nothing
// left to quantize, as in an int8 export), else a quantized copy in the
// cache, written on first use (into a temporary folder renamed into place,
// so a crash or a concurrent load never sees half a copy).
func int8Dir(ctx context.Context, dir string, md models.ModelDir, cfg models.Config) (string, error) {
	if _, ok, err := quantize.ReadMarker(dir); err != nil || ok {
		return dir, err
	}
	sum, err := filehash.SHA256(md.ONNXPath)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", models.ErrModelDir, dir, err)
	}
	root := cfg.QuantizeCache
	if root == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("%w: quantize int8: no user cache directory (%v); set Config.QuantizeCache", models.ErrInvalidConfig, err)
		}
		root = filepath.Join(uc, "hybrank", "int8")
	}
	dst := filepath.Join(root, filepath.Base(filepath.Clean(dir))+"-"+sum[:16])
	current := func() bool {
		m, ok, err := quantize.ReadMarker(dst)
		return err == nil && ok && m.SourceModelSHA256 == sum && m.Layout == quantize.MarkerLayout
	}
	if current() {
		return dst, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("quantize int8: %w (set Config.QuantizeCache to a writable folder)", err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("quantize int8: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := quantize.Dir(ctx, dir, tmp, quantize.DefaultConfig()); err != nil {
		if errors.Is(err, quantize.ErrNothingToQuantize) {
			return dir, nil // already int8 (an int8 export without our marker)
		}
		return "", fmt.Errorf("quantize int8 %s: %w", dir, err)
	}
	// A copy of an older layout (before module folders were copied, a
	// bi-encoder's copy did not load) is replaced.
	if _, ok, _ := quantize.ReadMarker(dst); ok {
		if err := os.RemoveAll(dst); err != nil {
			return "", fmt.Errorf("quantize int8: replace %s: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		// A concurrent load may have put its copy there first.
		if current() {
			return dst, nil
		}
		return "", fmt.Errorf("quantize int8: %w", err)
	}
	return dst, nil
}
