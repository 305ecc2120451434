package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// HFConfig is the part of a Hugging Face config.json this package reads.
type HFConfig struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	HiddenSize            int      `json:"hidden_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	IntermediateSize      int      `json:"intermediate_size"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	VocabSize             int      `json:"vocab_size"`
	TypeVocabSize         int      `json:"type_vocab_size"`
}

// ModelDir is a model directory in the Hugging Face ONNX-export layout,
// resolved to its files. A plain value, read-only after OpenModelDir and
// safe to share.
type ModelDir struct {
	Dir           string   // the directory
	Config        HFConfig // parsed config.json
	ONNXPath      string   // onnx/model.onnx, else model.onnx
	TokenizerJSON string   // tokenizer.json, "" when absent
	VocabTxt      string   // vocab.txt, "" when absent
	// LowerCase is do_lower_case from tokenizer_config.json (true when the
	// file or the key is absent, as for bert-base-uncased). Used only with
	// vocab.txt; tokenizer.json carries its own normaliser.
	LowerCase bool
	// Sentence holds the sentence-transformers settings (pooling,
	// Normalize, max_seq_length, prompts); the zero value when the
	// directory has no modules.json.
	Sentence SentenceConfig
}

// OpenModelDir checks dir and resolves its files. Errors wrap ErrModelDir
// and name the missing or broken file.
func OpenModelDir(dir string) (ModelDir, error) {
	md := ModelDir{Dir: dir, LowerCase: true}
	st, err := os.Stat(dir)
	if err != nil {
		return md, fmt.Errorf("%w: %v", ErrModelDir, err)
	}
	if !st.IsDir() {
		return md, fmt.Errorf("%w: %s is not a directory", ErrModelDir, dir)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return md, fmt.Errorf("%w: %s: %v", ErrModelDir, dir, err)
	}
	if err := json.Unmarshal(raw, &md.Config); err != nil {
		return md, fmt.Errorf("%w: %s: parse config.json: %v", ErrModelDir, dir, err)
	}
	c := md.Config
	if c.HiddenSize <= 0 || c.MaxPositionEmbeddings <= 0 {
		return md, fmt.Errorf("%w: %s: config.json lacks hidden_size or max_position_embeddings", ErrModelDir, dir)
	}
	for _, p := range []string{filepath.Join(dir, "onnx", "model.onnx"), filepath.Join(dir, "model.onnx")} {
		if isFile(p) {
			md.ONNXPath = p
			break
		}
	}
	if md.ONNXPath == "" {
		return md, fmt.Errorf("%w: %s: no onnx/model.onnx or model.onnx", ErrModelDir, dir)
	}
	if p := filepath.Join(dir, "tokenizer.json"); isFile(p) {
		md.TokenizerJSON = p
	}
	if p := filepath.Join(dir, "vocab.txt"); isFile(p) {
		md.VocabTxt = p
	}
	if md.TokenizerJSON == "" && md.VocabTxt == "" {
		return md, fmt.Errorf("%w: %s: no tokenizer.json or vocab.txt", ErrModelDir, dir)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var tc struct {
			DoLowerCase *bool `json:"do_lower_case"`
		}
		if err := json.Unmarshal(raw, &tc); err != nil {
			return md, fmt.Errorf("%w: %s: parse tokenizer_config.json: %v", ErrModelDir, dir, err)
		}
		if tc.DoLowerCase != nil {
			md.LowerCase = *tc.DoLowerCase
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return md, fmt.Errorf("%w: %s: %v", ErrModelDir, dir, err)
	}
	if md.Sentence, err = readSentenceConfig(dir); err != nil {
		return md, err
	}
	return md, nil
}

// SequenceLength is the token cap for this directory under cfg: cfg.MaxLength,
// else sentence-transformers' max_seq_length, else max_position_embeddings;
// at most MaxSupportedLength.
func (md ModelDir) SequenceLength(cfg Config) int {
	n := cfg.MaxLength
	if n == 0 {
		n = md.Sentence.MaxSeqLength
	}
	if n == 0 {
		n = md.Config.MaxPositionEmbeddings
	}
	return min(n, md.Config.MaxPositionEmbeddings, MaxSupportedLength)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
