package catalog

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/models/onnxpb"
)

// DescriptionFile is written into every laid-out directory: the variant's
// description and where its export came from (LayoutInfo).
const DescriptionFile = "hybrank_model.json"

// Names the laid-out export must have (after RenameOutputs): the inputs
// package models feeds and the token output it pools.
var (
	requiredInputs = []string{"input_ids", "attention_mask"}
	requiredOutput = "last_hidden_state"
)

// LayoutInfo is the content of DescriptionFile. A plain value.
type LayoutInfo struct {
	ModelID              string               `json:"model_id"`
	Variant              Variant              `json:"variant"`
	Note                 string               `json:"note"`
	SentenceTransformers SentenceTransformers `json:"sentence_transformers"`
	// Source is the file name of the jar the export came from.
	Source string `json:"source"`
	// ONNXSHA256 is the hex sha256 of the export as shipped (before
	// renaming).
	ONNXSHA256 string `json:"onnx_sha256"`
	// Inputs and Outputs are the graph's, after renaming.
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
}

// LayoutJar lays out the export in jarPath (a zip holding exactly one
// *.onnx and one *tokenizer.json) as the model directory dst for variant v
// of m; see the package documentation for the files. Errors wrap
// ErrBadExport when the jar or export does not fit. It checks ctx between
// steps; the export is held in memory.
func LayoutJar(ctx context.Context, m Model, v Variant, jarPath, dst string) (LayoutInfo, error) {
	info := LayoutInfo{ModelID: m.ModelID, Variant: v, Note: m.Note, SentenceTransformers: m.SentenceTransformers, Source: filepath.Base(jarPath)}
	if err := m.Validate(); err != nil {
		return info, err
	}
	model, tok, err := readJar(jarPath)
	if err != nil {
		return info, err
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	sum := sha256.Sum256(model)
	info.ONNXSHA256 = hex.EncodeToString(sum[:])
	if len(v.RenameOutputs) > 0 {
		if model, err = onnxpb.RenameValues(model, v.RenameOutputs); err != nil {
			return info, fmt.Errorf("%w: %s: %w", ErrBadExport, jarPath, err)
		}
	}
	if info.Inputs, info.Outputs, err = onnxpb.GraphIO(model); err != nil {
		return info, fmt.Errorf("%w: %s: %w", ErrBadExport, jarPath, err)
	}
	for _, in := range requiredInputs {
		if !slices.Contains(info.Inputs, in) {
			return info, fmt.Errorf("%w: %s: the export has inputs %v, no %s", ErrBadExport, jarPath, info.Inputs, in)
		}
	}
	if !slices.Contains(info.Outputs, requiredOutput) {
		return info, fmt.Errorf("%w: %s: the export has outputs %v, no %s (add rename_outputs to the description)", ErrBadExport, jarPath, info.Outputs, requiredOutput)
	}
	if !json.Valid(tok) {
		return info, fmt.Errorf("%w: %s: tokenizer.json is not valid JSON", ErrBadExport, jarPath)
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	files, err := stFiles(m)
	if err != nil {
		return info, err
	}
	desc, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return info, fmt.Errorf("catalog: %w", err)
	}
	files = append([]dirFile{{"onnx/model.onnx", model}, {"tokenizer.json", tok}}, files...)
	files = append(files, dirFile{DescriptionFile, desc}, dirFile{"config.json", m.Config})
	for _, f := range files {
		p := filepath.Join(dst, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return info, fmt.Errorf("catalog: %w", err)
		}
		if err := atomicfile.WriteBytes(vfs.OS, filepath.Dir(p), filepath.Base(p), f.data); err != nil {
			return info, fmt.Errorf("catalog: write %s: %w", p, err)
		}
	}
	return info, nil
}

// dirFile is one file of a model directory (name slash-separated).
type dirFile struct {
	name string
	data []byte
}

// readJar returns the only *.onnx and *tokenizer.json entries of a jar.
func readJar(jarPath string) (model, tok []byte, err error) {
	zr, err := zip.OpenReader(jarPath)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrBadExport, jarPath, err)
	}
	defer zr.Close()
	var onnxF, tokF []*zip.File
	for _, f := range zr.File {
		base := path.Base(f.Name)
		switch {
		case strings.HasSuffix(base, ".onnx"):
			onnxF = append(onnxF, f)
		case strings.HasSuffix(base, "tokenizer.json"):
			tokF = append(tokF, f)
		}
	}
	if len(onnxF) != 1 || len(tokF) != 1 {
		return nil, nil, fmt.Errorf("%w: %s holds %d .onnx and %d tokenizer.json files (want one of each)", ErrBadExport, jarPath, len(onnxF), len(tokF))
	}
	read := func(f *zip.File) ([]byte, error) {
		r, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrBadExport, jarPath, f.Name, err)
		}
		defer r.Close()
		b, err := io.ReadAll(r) // the zip reader verifies the entry's CRC-32 at EOF
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrBadExport, jarPath, f.Name, err)
		}
		return b, nil
	}
	if model, err = read(onnxF[0]); err != nil {
		return nil, nil, err
	}
	if tok, err = read(tokF[0]); err != nil {
		return nil, nil, err
	}
	return model, tok, nil
}

// stFiles returns the sentence-transformers files for m, in the format
// sentence-transformers writes them.
func stFiles(m Model) ([]dirFile, error) {
	var c struct {
		HiddenSize int `json:"hidden_size"`
	}
	if err := json.Unmarshal(m.Config, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDescription, err)
	}
	st := m.SentenceTransformers
	type module struct {
		Idx  int    `json:"idx"`
		Name string `json:"name"`
		Path string `json:"path"`
		Type string `json:"type"`
	}
	mods := []module{
		{0, "0", "", "sentence_transformers.models.Transformer"},
		{1, "1", "1_Pooling", "sentence_transformers.models.Pooling"},
	}
	if st.Normalize {
		mods = append(mods, module{2, "2", "2_Normalize", "sentence_transformers.models.Normalize"})
	}
	pooling := map[string]any{
		"word_embedding_dimension":          c.HiddenSize,
		"pooling_mode_cls_token":            st.Pooling == PoolingCLS,
		"pooling_mode_mean_tokens":          st.Pooling == PoolingMean,
		"pooling_mode_max_tokens":           st.Pooling == PoolingMax,
		"pooling_mode_mean_sqrt_len_tokens": st.Pooling == PoolingMeanSqrtLen,
	}
	prompts := st.Prompts
	if prompts == nil {
		prompts = map[string]string{}
	}
	var out []dirFile
	for _, f := range []struct {
		name string
		v    any
	}{
		{"modules.json", mods},
		{"1_Pooling/config.json", pooling},
		{"config_sentence_transformers.json", map[string]any{"prompts": prompts, "default_prompt_name": nil}},
		{"sentence_bert_config.json", map[string]any{"max_seq_length": st.MaxSeqLength, "do_lower_case": false}},
	} {
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("catalog: %s: %w", f.name, err)
		}
		out = append(out, dirFile{f.name, b})
	}
	return out, nil
}
