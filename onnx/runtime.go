package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// LibraryEnv is the environment variable naming the ONNX Runtime library.
const LibraryEnv = "HYBRANK_ORT_LIB"

// defaultLibRel is where `make runtime` puts the library, relative to the
// module root.
const defaultLibRel = ".deps/ort/libonnxruntime.so.1"

const fixHint = "run `make runtime` or set " + LibraryEnv

// RuntimeConfig selects the ONNX Runtime shared library.
type RuntimeConfig struct {
	// LibraryPath is the path of libonnxruntime.so. Empty means
	// $HYBRANK_ORT_LIB, else <module root>/.deps/ort/libonnxruntime.so.1.
	LibraryPath string
}

var (
	initMu   sync.Mutex // guards initPath and the ORT environment's creation
	initPath string     // library path of the live environment; "" before Init succeeds
)

// Init loads the ONNX Runtime library and creates the process-wide
// environment. It is safe for concurrent use. Calling it again with the same
// (resolved) path is a no-op; with another path it returns ErrLibrary, since
// a process can hold only one ONNX Runtime environment. A failed Init may be
// retried.
func Init(cfg RuntimeConfig) error {
	path, err := resolveLibrary(cfg.LibraryPath)
	if err != nil {
		return err
	}
	initMu.Lock()
	defer initMu.Unlock()
	if initPath != "" {
		if initPath != path {
			return fmt.Errorf("%w: already initialised with %q, cannot switch to %q in the same process", ErrLibrary, initPath, path)
		}
		return nil
	}
	if ort.IsInitialized() {
		// Someone used onnxruntime_go directly; share that environment.
		initPath = path
		initCustomOps(path)
		return nil
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return fmt.Errorf("%w: load %q: %v (need ONNX Runtime >= 1.24, C API version 24, for onnxruntime_go v1.27.0); %s",
			ErrLibrary, path, err, fixHint)
	}
	initPath = path
	initCustomOps(path)
	return nil
}

// Initialized reports whether Init has succeeded.
func Initialized() bool {
	initMu.Lock()
	defer initMu.Unlock()
	return initPath != ""
}

// Version returns the loaded ONNX Runtime library's version (e.g.
// "1.24.1"), or "" before Init has succeeded.
func Version() string {
	if !Initialized() {
		return ""
	}
	return ort.GetVersion()
}

// LibraryPath returns the library path Init would use for cfg, or an
// ErrLibrary error naming the fix when no library is found.
func LibraryPath(cfg RuntimeConfig) (string, error) { return resolveLibrary(cfg.LibraryPath) }

func resolveLibrary(explicit string) (string, error) {
	var tried []string
	check := func(p, from string) (string, bool) {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if st, err := os.Stat(abs); err == nil && !st.IsDir() {
			return abs, true
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", abs, from))
		return "", false
	}
	if explicit != "" {
		if p, ok := check(explicit, "RuntimeConfig.LibraryPath"); ok {
			return p, nil
		}
	} else if env := os.Getenv(LibraryEnv); env != "" {
		if p, ok := check(env, "$"+LibraryEnv); ok {
			return p, nil
		}
	} else {
		for _, start := range searchStarts() {
			for dir := start; ; dir = filepath.Dir(dir) {
				if p, ok := check(filepath.Join(dir, defaultLibRel), "module root search"); ok {
					return p, nil
				}
				if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
					break // the module root has no library; stop here
				}
				if filepath.Dir(dir) == dir {
					break
				}
			}
		}
	}
	return "", fmt.Errorf("%w: ONNX Runtime library not found (tried %s): %s", ErrLibrary, strings.Join(tried, ", "), fixHint)
}

func searchStarts() []string {
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	return starts
}

// ElementType is a tensor element type as reported by ModelIO.
type ElementType string

// Element types; other ONNX types are reported by their ONNX Runtime name.
const (
	Float32 ElementType = "float32"
	Int64   ElementType = "int64"
	Int32   ElementType = "int32"
	Float16 ElementType = "float16"
	Float64 ElementType = "float64"
	Bool    ElementType = "bool"
)

// IOInfo describes one model input or output.
type IOInfo struct {
	Name string
	// Type is the element type; empty for non-tensor values.
	Type ElementType
	// Shape has -1 for dynamic (symbolic) dimensions.
	Shape []int64
}

func elementType(t ort.TensorElementDataType) ElementType {
	switch t {
	case ort.TensorElementDataTypeFloat:
		return Float32
	case ort.TensorElementDataTypeInt64:
		return Int64
	case ort.TensorElementDataTypeInt32:
		return Int32
	case ort.TensorElementDataTypeFloat16:
		return Float16
	case ort.TensorElementDataTypeDouble:
		return Float64
	case ort.TensorElementDataTypeBool:
		return Bool
	}
	return ElementType(t.String())
}

// ModelIO loads modelPath in a temporary CPU session and returns its inputs
// and outputs, for validating user-supplied models. Requires Init.
func ModelIO(modelPath string) (inputs, outputs []IOInfo, err error) {
	if !Initialized() {
		return nil, nil, ErrNotInitialized
	}
	if _, err := os.Stat(modelPath); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	// A throwaway session: skip graph optimisation and thread pools, which
	// only cost time here.
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: session options: %v", ErrLibrary, err)
	}
	defer opts.Destroy()
	if err := opts.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, fmt.Errorf("onnx: model io: %w", err)
	}
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		return nil, nil, fmt.Errorf("onnx: model io: %w", err)
	}
	if CustomOps() == nil {
		if err := registerCustomOps(opts); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrLibrary, err)
		}
	}
	in, out, err := ort.GetInputOutputInfoWithOptions(modelPath, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: read inputs/outputs of %s: %v", ErrModel, modelPath, err)
	}
	return convertInfo(in), convertInfo(out), nil
}

func convertInfo(in []ort.InputOutputInfo) []IOInfo {
	out := make([]IOInfo, len(in))
	for i, x := range in {
		out[i].Name = x.Name
		if x.OrtValueType == ort.ONNXTypeTensor {
			out[i].Type = elementType(x.DataType)
			out[i].Shape = append([]int64(nil), x.Dimensions...)
		}
	}
	return out
}
