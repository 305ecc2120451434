package quantize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/models/onnxpb"
)

// MarkerFile is written into every quantized model directory. Its presence
// means the ONNX model was rewritten here, to int8 weights or to float16
// (Marker.Type); its content says how.
const MarkerFile = "hybrank_quantized.json"

// Marker is the content of MarkerFile.
type Marker struct {
	// Layout is the directory layout version (MarkerLayout when written
	// by this code): a cache of quantized copies reuses only the current
	// layout. 0: before the sentence-transformers module folders were
	// copied.
	Layout int `json:"layout,omitempty"`
	// Type is the rewrite's (TypeInt8 or TypeFP16; "" in markers written
	// before float16 existed, which are int8).
	Type        Type   `json:"type,omitempty"`
	Quantizer   string `json:"quantizer"`
	Weights     string `json:"weights"`
	Activations string `json:"activations"`
	// Source is the source directory as given; SourceModelSHA256 the
	// hash of the float32 ONNX file that was quantized.
	Source            string `json:"source"`
	SourceModelSHA256 string `json:"source_model_sha256"`
	Report            Report `json:"report"`
}

// Of is the marker's type: m.Type, or TypeInt8 for a marker written
// before it was recorded.
func (m Marker) Of() Type {
	if m.Type == "" {
		return TypeInt8
	}
	return m.Type
}

// MarkerLayout is the Layout Dir writes: 1 = every file but the excluded
// ones copied, module folders (1_Pooling…) included.
const MarkerLayout = 1

// ReadMarker reads dir's MarkerFile. ok is false (with a nil error) when
// the directory has none, i.e. it was not quantized here.
func ReadMarker(dir string) (m Marker, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Marker{}, false, nil
	}
	if err != nil {
		return Marker{}, false, fmt.Errorf("quantize: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Marker{}, false, fmt.Errorf("quantize: parse %s: %w", MarkerFile, err)
	}
	return m, true, nil
}

// modelFiles are the ONNX file locations of a Hugging Face model directory,
// in the order models.OpenModelDir tries them.
var modelFiles = []string{filepath.Join("onnx", "model.onnx"), "model.onnx"}

// notCopied reports whether a file of the source directory stays behind: ONNX files (only the quantized model is written), their external
// data, framework checkpoints (useless next to an ONNX model, and large)
// and a previous quantization marker.
func notCopied(name string) bool {
	if name == MarkerFile {
		return true
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".onnx", ".onnx_data", ".data", ".safetensors", ".bin", ".h5", ".msgpack", ".ot", ".pt", ".pth", ".ckpt":
		return true
	}
	return false
}

// Dir writes a quantized copy of the model directory src to dst (created if
// needed): the other files (config.json, tokenizer files, the generator's
// marker, sentence-transformers module folders such as 1_Pooling…) are
// copied, the ONNX model (onnx/model.onnx, else model.onnx) is rewritten by
// Rewrite to the same relative path, and MarkerFile is written last.
// Framework checkpoints and other ONNX files are not copied. Files are written crash-safely (temporary
// name, fsync, rename); files already in dst with other names are left
// alone. Report.ModelBytesIn and ModelBytesOut are set.
//
// dst must not be src. Errors wrap ErrModelDir, ErrBadConfig,
// ErrNonFinite, ErrNothingToQuantize, or onnxpb's ErrMalformed and
// ErrUnsupported; nothing is written to dst before the rewrite has
// succeeded.
func Dir(ctx context.Context, src, dst string, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	rel := ""
	for _, p := range modelFiles {
		if st, err := os.Stat(filepath.Join(src, p)); err == nil && st.Mode().IsRegular() {
			rel = p
			break
		}
	}
	if rel == "" {
		return Report{}, fmt.Errorf("%w: %s: no onnx/model.onnx or model.onnx", ErrModelDir, src)
	}
	if dst == "" {
		return Report{}, fmt.Errorf("%w: empty destination", ErrModelDir)
	}
	if a, b := filepath.Clean(src), filepath.Clean(dst); a == b {
		return Report{}, fmt.Errorf("%w: destination %s is the source", ErrModelDir, dst)
	}
	if s1, err := os.Stat(src); err == nil {
		if s2, err := os.Stat(dst); err == nil && os.SameFile(s1, s2) {
			return Report{}, fmt.Errorf("%w: destination %s is the source", ErrModelDir, dst)
		}
	}
	raw, err := os.ReadFile(filepath.Join(src, rel))
	if err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrModelDir, err)
	}
	sum := sha256.Sum256(raw)
	m, err := onnxpb.Unmarshal(raw)
	if err != nil {
		return Report{}, fmt.Errorf("quantize: read %s: %w", filepath.Join(src, rel), err)
	}
	rep, err := Rewrite(ctx, m, cfg)
	if err != nil {
		return Report{}, fmt.Errorf("quantize %s: %w", filepath.Join(src, rel), err)
	}
	rep.ModelBytesIn = int64(len(raw))

	if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
		return Report{}, fmt.Errorf("quantize: %w", err)
	}
	if err := copyFiles(ctx, src, dst); err != nil {
		return Report{}, err
	}
	out := filepath.Join(dst, rel)
	if err := m.WriteFile(out); err != nil {
		return Report{}, fmt.Errorf("quantize: %w", err)
	}
	if st, err := os.Stat(out); err == nil {
		rep.ModelBytesOut = st.Size()
	}
	marker := Marker{
		Layout:            MarkerLayout,
		Type:              TypeFP16,
		Quantizer:         "github.com/hybrank/hybrank/models/quantize",
		Weights:           fmt.Sprintf("float16, round to nearest even (%d values beyond ±65504 clamped)", rep.Clamped),
		Activations:       "float16 inside the graph; float32 inputs and outputs (Cast at the edges)",
		Source:            src,
		SourceModelSHA256: hex.EncodeToString(sum[:]),
		Report:            rep,
	}
	if cfg.Type != TypeFP16 {
		marker.Type = TypeInt8
		marker.Weights = fmt.Sprintf("int8 per output channel, symmetric (codes ±%d, %d-bit range), no zero point", QMax(cfg.WeightBits), cfg.WeightBits)
		marker.Activations = "uint8 per tensor, asymmetric, min/max computed by the runtime on every call (dynamic); per token where models/fuse runs the products as package onnx's QuantMatMul (AMX-INT8)"
		if cfg.Smooth != nil {
			marker.Activations += fmt.Sprintf("; smoothed (SmoothQuant, alpha %g) for %d activations, calibrated on %s", cfg.Smooth.Alpha, rep.Smoothed, cfg.Smooth.Source)
		}
	}
	b, err := json.MarshalIndent(marker, "", "  ")
	if err != nil {
		return Report{}, fmt.Errorf("quantize: marker: %w", err)
	}
	if err := atomicfile.WriteBytes(vfs.OS, dst, MarkerFile, append(b, '\n')); err != nil {
		return Report{}, fmt.Errorf("quantize: write %s: %w", MarkerFile, err)
	}
	return rep, nil
}

// copyFiles copies src's regular files (symbolic links followed, as in a
// Hugging Face cache snapshot) that notCopied keeps, at the same relative
// paths: the top-level configuration and tokenizer files, and the
// sentence-transformers modules' folders (1_Pooling/config.json,
// 2_Normalize), without which a bi-encoder directory does not load.
// Hidden folders (.git, .cache) and dst, when it lies inside src, are
// skipped; symbolic links to folders inside src are not followed.
func copyFiles(ctx context.Context, src, dst string) error {
	dstInfo, err := os.Stat(dst)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return walkCopied(ctx, src, dstInfo, func(path, rel string) error {
		dir := filepath.Join(dst, filepath.Dir(rel))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		defer f.Close()
		if _, err := atomicfile.Write(vfs.OS, dir, filepath.Base(rel), func(w io.Writer) error {
			_, err := io.Copy(w, f)
			return err
		}); err != nil {
			return fmt.Errorf("quantize: copy %s: %w", rel, err)
		}
		return nil
	})
}

// walkCopied calls fn, in lexical order, with each file copyFiles copies
// from src: its path and its path relative to src. skipDir, when not nil,
// is a folder left out (the destination inside src).
func walkCopied(ctx context.Context, src string, skipDir os.FileInfo, fn func(path, rel string) error) error {
	root, err := filepath.EvalSymlinks(src) // a symbolic link to the model folder is walked too
	if err != nil {
		return fmt.Errorf("%w: %v", ErrModelDir, err)
	}
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %v", ErrModelDir, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() {
			if path == root {
				return nil
			}
			if st, err := os.Stat(path); strings.HasPrefix(e.Name(), ".") || err == nil && skipDir != nil && os.SameFile(st, skipDir) {
				return fs.SkipDir // hidden, or the destination itself (dst inside src)
			}
			return nil
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() || notCopied(e.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		return fn(path, rel)
	})
}

// SourceDigest is a SHA-256 (hex) over the files Dir copies from src, their
// paths relative to src and their contents, leaving out those skip reports
// (nil: none; e.g. a runtime's own caches beside the model). With the model
// file's hash it names what a copy is made from: a cache of copies keyed
// on both makes a new one when config.json or a tokenizer file changes, or
// for another folder holding the same model file with other settings.
func SourceDigest(ctx context.Context, src string, skip func(rel string) bool) (string, error) {
	h := sha256.New()
	err := walkCopied(ctx, src, nil, func(path, rel string) error {
		if skip != nil && skip(rel) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrModelDir, err)
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		fh := sha256.New()
		if _, err := io.Copy(fh, f); err != nil {
			return fmt.Errorf("%w: %v", ErrModelDir, err)
		}
		h.Write(fh.Sum(nil))
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
