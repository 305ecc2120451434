package ort

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// smoothPairsJSON holds hybrank's calibration text: 24 query/passage pairs
// of everyday English over many subjects (written for hybrank, 60–110
// words a passage). A BERT's outlier channels belong to the model (certain
// LayerNorm channels on [CLS], [SEP] and punctuation), not to a domain, so
// generic text finds them.
//
//go:embed smooth_pairs.json
var smoothPairsJSON []byte

// SmoothAlpha is the SmoothQuant migration strength of hybrank's int8
// copies (quantize.Smooth.Alpha). 0.75 over SmoothQuant's 0.5 and 0.85:
// all-MiniLM-L6-v2's encoder under a random head, 30 scifact queries ×
// BM25 top 32, worst / mean per-query Spearman against float32 0.988 /
// 0.9946 at 0.75, 0.982 / 0.9938 at 0.5 (10 of those queries: 0.9897,
// 0.982, 0.981 at 0.85); generated balanced 0.930 / 0.962 against 0.892 /
// 0.960 (bench/results/rerank_int8_profile.md).
const SmoothAlpha = 0.75

// smoothMaxLen bounds the calibration sequences (the passages fit).
const smoothMaxLen = 256

// Smoothing measures a quantize.Smooth for the float32 model in dir: the
// model, with every activation quantize.Activations(cfg) names added to its
// outputs, runs on the calibration pairs (a cross-encoder) or their
// passages (an embedder) in a CPU session of libraryPath's runtime
// ("" = package onnx's default), and AMax is each activation's largest
// magnitude per channel over the real tokens (padding rows skipped). It
// reads the model file whole, writes a temporary copy next to the
// system's temporary files, and takes about a second for MiniLM-L12.
func Smoothing(ctx context.Context, dir string, kind models.Kind, cfg quantize.Config, libraryPath string) (*quantize.Smooth, error) {
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return nil, err
	}
	m, err := onnxpb.ReadFile(md.ONNXPath)
	if err != nil {
		return nil, fmt.Errorf("smoothing %s: %w", dir, err)
	}
	acts, err := quantize.Activations(m, cfg)
	if err != nil || len(acts) == 0 {
		return nil, err
	}
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: libraryPath}); err != nil {
		return nil, err
	}
	ins, outs, err := onnx.ModelIO(md.ONNXPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", models.ErrModelDir, dir, err)
	}
	inputs, _, _, err := pickIO(md.ONNXPath, kind, ins, outs)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(acts))
	for i, a := range acts {
		names[i] = a.Name
		if !slices.ContainsFunc(m.Graph.Outputs, func(v onnxpb.ValueInfo) bool { return v.Name == a.Name }) {
			// A BERT export's activations are [batch, sequence, K].
			m.Graph.AddOutput(a.Name, onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("sequence"), onnxpb.Fixed(int64(a.K)))
		}
	}
	f, err := os.CreateTemp("", "hybrank-smooth-*.onnx")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	if err := m.WriteFile(path); err != nil {
		return nil, fmt.Errorf("smoothing %s: %w", dir, err)
	}
	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.ProviderCPU
	sess, err := onnx.NewSession(path, inputs, names, sc)
	if err != nil {
		return nil, fmt.Errorf("smoothing %s: %w", dir, err)
	}
	defer sess.Close()
	enc, err := loadTokenizer(md)
	if err != nil {
		return nil, err
	}
	defer closeEncoder(enc)

	var pairs []models.Pair
	if err := json.Unmarshal(smoothPairsJSON, &pairs); err != nil {
		return nil, fmt.Errorf("smoothing: the built-in pairs: %w", err) // a build defect
	}
	seqs := make([]seq, len(pairs))
	tokens := 0
	for i, p := range pairs {
		if kind == models.KindEmbedder {
			seqs[i], err = enc.single(p.Doc, smoothMaxLen)
		} else {
			seqs[i], err = enc.pair(p.Query, p.Doc, smoothMaxLen)
		}
		if err != nil {
			return nil, fmt.Errorf("smoothing: tokenize: %w", err)
		}
		tokens += len(seqs[i].ids)
	}
	typeIDs := slices.Contains(inputs, inTokenTypeIDs)
	amax := map[string][]float32{}
	const batch = 4
	for lo := 0; lo < len(seqs); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := make([]int, 0, batch)
		for i := lo; i < min(lo+batch, len(seqs)); i++ {
			idx = append(idx, i)
		}
		b := pad(seqs, idx, enc.padID())
		shape := []int64{int64(b.n), int64(b.seqLen)}
		in := []onnx.Input{{Name: inInputIDs, Shape: shape, Int64: b.ids}, {Name: inAttentionMask, Shape: shape, Int64: b.mask}}
		if typeIDs {
			in = append(in, onnx.Input{Name: inTokenTypeIDs, Shape: shape, Int64: b.types})
		}
		out, err := sess.Run(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("smoothing %s: %w", dir, err)
		}
		for k, a := range names {
			if err := channelMax(amax, a, out[k], b); err != nil {
				return nil, fmt.Errorf("smoothing %s: %w", dir, err)
			}
		}
	}
	return &quantize.Smooth{Alpha: SmoothAlpha, AMax: amax,
		Source: fmt.Sprintf("hybrank's %d built-in calibration pairs (%d tokens, %s)", len(pairs), tokens, filepath.Base(dir))}, nil
}

// channelMax folds activation a's output of one batch into amax[a]: the
// largest |x| per channel (the last axis) over its rows, skipping padding
// tokens when the rows are [batch, seq] tokens.
func channelMax(amax map[string][]float32, a string, v onnx.Output, b batchTensors) error {
	if len(v.Shape) < 2 || v.Shape[len(v.Shape)-1] < 1 {
		return fmt.Errorf("activation %s has shape %v", a, v.Shape)
	}
	k := int(v.Shape[len(v.Shape)-1])
	rows := len(v.Float32) / k
	m := amax[a]
	if m == nil {
		m = make([]float32, k)
		amax[a] = m
	} else if len(m) != k {
		return fmt.Errorf("activation %s: %d channels, then %d", a, len(m), k)
	}
	tokens := len(v.Shape) == 3 && int(v.Shape[0]) == b.n && int(v.Shape[1]) == b.seqLen
	for r := range rows {
		if tokens && b.mask[r] == 0 {
			continue
		}
		for j, x := range v.Float32[r*k : (r+1)*k] {
			m[j] = max(m[j], float32(math.Abs(float64(x))))
		}
	}
	return nil
}
