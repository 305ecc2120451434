package onnx_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/onnx"
)

func TestLibraryPathResolution(t *testing.T) {
	lib := testenv.NeedORT(t)
	want, _ := filepath.Abs(lib)
	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	tests := []struct {
		name    string
		env     string
		cfg     string
		want    string // "" means an ErrLibrary error mentioning wantErr
		wantErr string
	}{
		{"explicit", "", lib, want, ""},
		{"env", lib, "", want, ""},
		{"explicit beats env", missing, lib, want, ""},
		{"module root search", "", "", want, ""},
		{"explicit missing", "", missing, "", "make runtime"},
		{"env missing", missing, "", "", "HYBRANK_ORT_LIB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "module root search" && os.Getenv(onnx.LibraryEnv) == "" && !strings.HasSuffix(lib, ".deps/ort/libonnxruntime.so.1") {
				t.Skip("library is not in the module's .deps folder")
			}
			t.Setenv(onnx.LibraryEnv, tc.env)
			got, err := onnx.LibraryPath(onnx.RuntimeConfig{LibraryPath: tc.cfg})
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("LibraryPath = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, onnx.ErrLibrary) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("LibraryPath = %q, %v; want ErrLibrary mentioning %q", got, err, tc.wantErr)
			}
		})
	}
}

// TestInitWithBadLibraryFile runs Init on a file that is not a shared
// library in a fresh process (a process keeps its first library).
func TestInitWithBadLibraryFile(t *testing.T) {
	if path := os.Getenv("HYBRANK_ONNX_TEST_BADLIB"); path != "" {
		err := onnx.Init(onnx.RuntimeConfig{LibraryPath: path})
		if !errors.Is(err, onnx.ErrLibrary) {
			t.Fatalf("Init(garbage) = %v, want ErrLibrary", err)
		}
		if !strings.Contains(err.Error(), "make runtime") || !strings.Contains(err.Error(), path) {
			t.Fatalf("error does not name the file and the fix: %v", err)
		}
		t.Logf("Init error: %v", err)
		if onnx.Initialized() {
			t.Fatal("Initialized() after a failed Init")
		}
		return
	}
	bad := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInitWithBadLibraryFile$", "-test.v")
	cmd.Env = append(os.Environ(), "HYBRANK_ONNX_TEST_BADLIB="+bad)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("subprocess failed: %v\n%s", err, out)
	}
}
