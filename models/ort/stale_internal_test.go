package ort

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx"
)

// TestRemoveStale: the sweep removes what a killed load left (a fused
// copy's temporary file, a quantized folder being written) once it is
// older than the cut, and nothing younger.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleAfter)
	paths := map[string]bool{ // path: stale
		"hybrank-fused-1.onnx":           true,
		"hybrank-fused-2.onnx.8812.tmp":  true,
		"hybrank-fused-3.onnx":           false,
		"hybrank-fused-4.onnx.9913.tmp":  false,
		"other.onnx":                     false,
		"hybrank-fused-5.onnx.old-looks": true,
	}
	for p, stale := range paths {
		f := filepath.Join(dir, p)
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if stale || p == "other.onnx" {
			os.Chtimes(f, old, old)
		}
	}
	// A copy named as fusedCopy names it (a .onnx file the runtime loads).
	f, err := os.CreateTemp(dir, fusedName)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if filepath.Ext(f.Name()) != ".onnx" {
		t.Errorf("a fused copy is named %s", filepath.Base(f.Name()))
	}
	os.Chtimes(f.Name(), old, old)
	paths[filepath.Base(f.Name())] = true
	tmpDir := filepath.Join(dir, ".tmp-123")
	if err := os.MkdirAll(filepath.Join(tmpDir, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(tmpDir, old, old)
	cut := time.Now().Add(-staleAfter)
	removeStale(filepath.Join(dir, fusedPattern), cut)
	removeStale(filepath.Join(dir, ".tmp-*"), cut)
	for p, stale := range paths {
		_, err := os.Stat(filepath.Join(dir, p))
		if gone := os.IsNotExist(err); gone != stale {
			t.Errorf("%s: removed %v, stale %v", p, gone, stale)
		}
	}
	if _, err := os.Stat(tmpDir); !os.IsNotExist(err) {
		t.Errorf("a stale quantization folder survives: %v", err)
	}
}

// TestWarnQuantizeProvider: float16 on the CPU and int8 under CUDA warn;
// the pairings they are meant for do not.
func TestWarnQuantizeProvider(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	for _, tc := range []struct {
		q    string
		p    onnx.Provider
		warn bool
	}{
		{models.QuantizeFP16, onnx.ProviderCPU, true},
		{models.QuantizeInt8, onnx.ProviderCUDA, true},
		{models.QuantizeFP16, onnx.ProviderCUDA, false},
		{models.QuantizeInt8, onnx.ProviderCPU, false},
		{"", onnx.ProviderCPU, false},
	} {
		buf.Reset()
		warnQuantizeProvider(tc.q, tc.p, "/m")
		if got := strings.Contains(buf.String(), "level=WARN"); got != tc.warn {
			t.Errorf("%q on %s: warned %v, want %v (%s)", tc.q, tc.p, got, tc.warn, buf.String())
		}
	}
}
