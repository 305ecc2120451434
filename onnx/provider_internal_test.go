package onnx

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// TestAutoProviderLogsOneInfoLine checks that Provider "auto" says which
// provider runs in one INFO line per process, and never warns: a machine
// without CUDA running on the CPU is the expected case.
func TestAutoProviderLogsOneInfoLine(t *testing.T) {
	if err := Init(RuntimeConfig{LibraryPath: testenv.NeedORT(t)}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	g := onnxpb.NewGraph("identity")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"))
	g.AddNode("y", "Identity", []string{"x"})
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("n"))
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := onnxpb.NewModel(g).WriteFile(path); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	autoProviderSaid.Clear()

	cfg := DefaultSessionConfig()
	cfg.IntraOpThreads = 1
	var chosen Provider
	for range 3 {
		s, err := NewSession(path, []string{"x"}, []string{"y"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		chosen = s.Provider()
		s.Close()
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "provider="+string(chosen)) || !strings.Contains(lines[0], "reason=") {
		t.Fatalf("log after three auto sessions on %s:\n%s\nwant one INFO line naming provider=%s and the reason", chosen, buf.String(), chosen)
	}
	t.Log(lines[0])
}
