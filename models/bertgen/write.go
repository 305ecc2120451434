package bertgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/models/onnxpb"
)

// MarkerFile is written next to config.json in every generated model
// directory. Its presence means the weights are seeded random, so quality
// figures measured with the model mean nothing (benchmarks report
// real_weights=false).
const MarkerFile = "hybrank_generated.json"

// ModelFile is the ONNX model's path inside a model directory, as in Hugging
// Face repositories that ship an ONNX export.
const ModelFile = "onnx/model.onnx"

// Marker is the content of MarkerFile.
type Marker struct {
	Generator   string `json:"generator"`
	RealWeights bool   `json:"real_weights"`
	Note        string `json:"note"`
	Config      Config `json:"config"`
	Params      int64  `json:"params"`
}

// ReadMarker reads dir's MarkerFile. ok is false (with a nil error) when the
// directory has none, i.e. it holds a real model.
func ReadMarker(dir string) (m Marker, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if os.IsNotExist(err) {
		return Marker{}, false, nil
	}
	if err != nil {
		return Marker{}, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Marker{}, false, fmt.Errorf("bertgen: parse %s: %w", MarkerFile, err)
	}
	return m, true, nil
}

// Write generates weights for cfg and writes a Hugging Face style model
// directory to dir (see WriteWeights).
func Write(dir string, cfg Config, vocabPath, tokenizerJSONPath string) error {
	w, err := GenerateWeights(cfg)
	if err != nil {
		return err
	}
	return WriteWeights(dir, w, vocabPath, tokenizerJSONPath)
}

// WriteWeights writes a model directory for w:
//
//	config.json             HF BertConfig
//	vocab.txt               copy of vocabPath (bert-base-uncased)
//	tokenizer.json          copy of tokenizerJSONPath (all-MiniLM-L6-v2), unchanged
//	tokenizer_config.json   BertTokenizer, do_lower_case, model_max_length 512
//	special_tokens_map.json
//	onnx/model.onnx
//	hybrank_generated.json  Marker: real_weights=false
//
// The vocabulary must fit the model: vocab.txt may not have more lines than
// Config.VocabSize.
func WriteWeights(dir string, w *Weights, vocabPath, tokenizerJSONPath string) error {
	cfg := w.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	vocab, err := os.ReadFile(vocabPath)
	if err != nil {
		return fmt.Errorf("%w: vocab.txt: %v", ErrAssets, err)
	}
	if n := countLines(vocab); n > cfg.VocabSize {
		return fmt.Errorf("%w: %s has %d tokens, more than vocab_size %d", ErrAssets, vocabPath, n, cfg.VocabSize)
	}
	tok, err := os.ReadFile(tokenizerJSONPath)
	if err != nil {
		return fmt.Errorf("%w: tokenizer.json: %v", ErrAssets, err)
	}
	if !json.Valid(tok) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrAssets, tokenizerJSONPath)
	}
	model, err := BuildModel(w)
	if err != nil {
		return err
	}
	return writeDir(dir, model, []dirFile{
		{MarkerFile, mustJSON(Marker{
			Generator:   "github.com/hybrank/hybrank/models/bertgen",
			RealWeights: false,
			Note:        "seeded random weights with the shape and ONNX operator structure of a Hugging Face BERT export; scores are meaningless, speed is representative",
			Config:      cfg,
			Params:      cfg.Params(),
		})},
		{"vocab.txt", vocab},
		{"tokenizer.json", tok},
		{"tokenizer_config.json", mustJSON(tokenizerConfig())},
		{"special_tokens_map.json", mustJSON(specialTokens())},
		{"config.json", mustJSON(hfConfig(cfg))},
	})
}

// dirFile is one small file of a model directory; name may contain a
// subfolder ("1_Pooling/config.json").
type dirFile struct {
	name string
	data []byte
}

// writeDir writes model to dir/ModelFile, then files in order, each
// atomically. Callers put config.json last: model loaders require it, so a
// directory with config.json is complete, and a generated one already has
// its MarkerFile (it can never pass for real weights).
func writeDir(dir string, model *onnxpb.Model, files []dirFile) error {
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(ModelFile)), 0o755); err != nil {
		return fmt.Errorf("bertgen: %w", err)
	}
	if err := model.WriteFile(filepath.Join(dir, ModelFile)); err != nil {
		return fmt.Errorf("bertgen: %w", err)
	}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("bertgen: %w", err)
		}
		if err := writeFileAtomic(path, f.data); err != nil {
			return err
		}
	}
	return nil
}

func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// hfConfig is config.json in the field order transformers writes.
func hfConfig(cfg Config) any {
	arch, labels := "BertModel", any(nil)
	if cfg.Kind == CrossEncoder {
		arch = "BertForSequenceClassification"
		labels = map[string]string{"0": "LABEL_0"}
	}
	type hf struct {
		NameOrPath          string            `json:"_name_or_path"`
		Architectures       []string          `json:"architectures"`
		AttentionDropout    float64           `json:"attention_probs_dropout_prob"`
		ClassifierDropout   *float64          `json:"classifier_dropout"`
		GradientCheckpoint  bool              `json:"gradient_checkpointing"`
		HiddenAct           string            `json:"hidden_act"`
		HiddenDropout       float64           `json:"hidden_dropout_prob"`
		HiddenSize          int               `json:"hidden_size"`
		ID2Label            any               `json:"id2label,omitempty"`
		InitializerRange    float64           `json:"initializer_range"`
		IntermediateSize    int               `json:"intermediate_size"`
		Label2ID            map[string]int    `json:"label2id,omitempty"`
		LayerNormEps        float64           `json:"layer_norm_eps"`
		MaxPositions        int               `json:"max_position_embeddings"`
		ModelType           string            `json:"model_type"`
		NumHeads            int               `json:"num_attention_heads"`
		NumLayers           int               `json:"num_hidden_layers"`
		NumLabels           int               `json:"num_labels,omitempty"`
		PadTokenID          int               `json:"pad_token_id"`
		PositionEmbType     string            `json:"position_embedding_type"`
		TransformersVersion string            `json:"transformers_version"`
		TypeVocab           int               `json:"type_vocab_size"`
		UseCache            bool              `json:"use_cache"`
		VocabSize           int               `json:"vocab_size"`
		Hybrank             map[string]string `json:"hybrank_note"`
	}
	c := hf{
		NameOrPath: cfg.Name, Architectures: []string{arch}, AttentionDropout: 0.1, HiddenAct: "gelu",
		HiddenDropout: 0.1, HiddenSize: cfg.Hidden, InitializerRange: cfg.InitStd, IntermediateSize: cfg.Intermediate,
		LayerNormEps: cfg.LayerNormEps, MaxPositions: cfg.MaxPositions, ModelType: "bert", NumHeads: cfg.Heads,
		NumLayers: cfg.Layers, PadTokenID: 0, PositionEmbType: "absolute", TransformersVersion: "4.44.0",
		TypeVocab: cfg.TypeVocab, UseCache: true, VocabSize: cfg.VocabSize,
		Hybrank: map[string]string{"generated": "seeded random weights, see " + MarkerFile},
	}
	if labels != nil {
		c.ID2Label, c.Label2ID, c.NumLabels = labels, map[string]int{"LABEL_0": 0}, 1
	}
	return c
}

func tokenizerConfig() any {
	return map[string]any{
		"clean_up_tokenization_spaces": true,
		"cls_token":                    "[CLS]",
		"do_basic_tokenize":            true,
		"do_lower_case":                true,
		"mask_token":                   "[MASK]",
		"model_max_length":             512,
		"never_split":                  nil,
		"pad_token":                    "[PAD]",
		"sep_token":                    "[SEP]",
		"strip_accents":                nil,
		"tokenize_chinese_chars":       true,
		"tokenizer_class":              "BertTokenizer",
		"unk_token":                    "[UNK]",
	}
}

func specialTokens() any {
	return map[string]string{
		"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]", "unk_token": "[UNK]",
	}
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only fixed, marshalable types reach here.
		panic(fmt.Sprintf("bertgen: marshal: %v", err))
	}
	return append(b, '\n')
}

func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteBytes(vfs.OS, filepath.Dir(path), filepath.Base(path), data); err != nil {
		return fmt.Errorf("bertgen: write %s: %w", path, err)
	}
	return nil
}
