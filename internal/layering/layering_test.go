package layering_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hybrank/hybrank"

// cgoFree are the packages (with everything below them) that must build
// with CGO_ENABLED=0.
var cgoFree = []string{
	"./engine/...", "./server/...", "./postings/...", "./dense/...",
	"./analysis/...", "./simd/...", "./models", "./models/cache",
	"./onnx/onnxpb", "./onnx/fuse", "./onnx/quantize", "./onnx/ops",
}

// goCmd runs the go command from the module root with extra environment.
func goCmd(t *testing.T, env []string, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH: the layering checks need the toolchain")
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestCgoFreePackagesBuildWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages: skipped in -short")
	}
	goCmd(t, []string{"CGO_ENABLED=0"}, append([]string{"build", "-o", os.DevNull}, cgoFree...)...)
	deps := goCmd(t, []string{"CGO_ENABLED=1"}, append([]string{"list", "-deps", "-test=false"}, cgoFree...)...)
	for _, forbidden := range []string{module + "/onnx", module + "/models/ort", "github.com/yalue/onnxruntime_go"} {
		if slices.Contains(strings.Fields(deps), forbidden) {
			t.Errorf("%s is imported by a package that must stay cgo-free (%v)", forbidden, cgoFree)
		}
	}
}

func TestCommandsLinkNoTestCode(t *testing.T) {
	for _, cmd := range []string{"./cmd/bench", "./cmd/serve"} {
		deps := strings.Fields(goCmd(t, nil, "list", "-deps", cmd))
		if slices.Contains(deps, "testing") {
			why := goCmd(t, nil, "list", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, cmd)
			var importers []string
			for _, line := range strings.Split(why, "\n") {
				if name, imports, ok := strings.Cut(line, ": "); ok && slices.Contains(strings.Fields(imports), "testing") {
					importers = append(importers, name)
				}
			}
			t.Errorf("%s links package testing, imported by %v", cmd, importers)
		}
	}
}

// TestLoadgenDoesNotImportServer keeps bench/loadgen usable from the
// server's own tests (an import of server there would be a cycle).
func TestLoadgenDoesNotImportServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list: skipped in -short")
	}
	deps := goCmd(t, nil, "list", "-deps", "-test=false", "./bench/loadgen")
	if slices.Contains(strings.Fields(deps), module+"/server") {
		t.Errorf("bench/loadgen imports %s/server", module)
	}
}

// TestOneCPUDetection: package internal/cpu is the only reader of cpuid,
// so that every kernel choice and every model plan sees the same CPU.
func TestOneCPUDetection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list: skipped in -short")
	}
	const reader = module + "/internal/cpu"
	out := goCmd(t, nil, "list", "-test", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./...")
	for _, line := range strings.Split(out, "\n") {
		name, imports, ok := strings.Cut(line, ": ")
		if !ok || name == reader || strings.HasPrefix(name, reader+" ") || strings.HasPrefix(name, reader+".test") {
			continue
		}
		if slices.Contains(strings.Fields(imports), "github.com/klauspost/cpuid/v2") {
			t.Errorf("%s reads cpuid itself; ask package internal/cpu", name)
		}
	}
}

// TestONNXSubtreeOneWay: package onnx (the runtime, cgo) imports of its
// subtree only the operators' contract, and the offline toolchain below
// it imports neither onnx nor models/ort.
func TestONNXSubtreeOneWay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list: skipped in -short")
	}
	deps := strings.Fields(goCmd(t, nil, "list", "-deps", "-test=false", "./onnx"))
	for _, d := range deps {
		if strings.HasPrefix(d, module+"/onnx/") && d != module+"/onnx/ops" || strings.HasPrefix(d, module+"/models") {
			t.Errorf("package onnx depends on %s", d)
		}
	}
	for _, pkg := range []string{"./onnx/onnxpb", "./onnx/quantize", "./onnx/fuse", "./onnx/ops"} {
		for _, d := range strings.Fields(goCmd(t, nil, "list", "-deps", "-test=false", pkg)) {
			if d == module+"/onnx" || d == module+"/models/ort" {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

// TestBenchGoesThroughModelAPIs: the benchmark packages run models
// through models/ort and lay out model directories through bench/modeldir;
// none but bench/modeldir imports the generator, and none imports the
// runtime or the ONNX toolchain (tests may).
func TestBenchGoesThroughModelAPIs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list: skipped in -short")
	}
	forbidden := []string{module + "/onnx", module + "/onnx/fuse", module + "/onnx/onnxpb", module + "/models/bertgen"}
	out := goCmd(t, nil, "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./bench/...")
	for _, line := range strings.Split(out, "\n") {
		name, imports, ok := strings.Cut(line, ": ")
		if !ok || name == module+"/bench/modeldir" {
			continue
		}
		for _, f := range forbidden {
			if slices.Contains(strings.Fields(imports), f) {
				t.Errorf("%s imports %s; go through models/ort or bench/modeldir", name, f)
			}
		}
	}
}
