package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Pooling turns a bi-encoder's token vectors into one sentence vector, as
// sentence-transformers' Pooling module does.
type Pooling string

// Pooling modes. The zero value means "as the model directory says".
const (
	// PoolingMean averages the token vectors under the attention mask.
	PoolingMean Pooling = "mean"
	// PoolingCLS takes the first ([CLS]) token's vector.
	PoolingCLS Pooling = "cls"
	// PoolingMax takes the element-wise maximum over the real tokens.
	PoolingMax Pooling = "max"
	// PoolingMeanSqrtLen sums the real tokens' vectors and divides by the
	// square root of their count.
	PoolingMeanSqrtLen Pooling = "mean_sqrt_len"
)

// Valid reports whether p is a known mode or empty.
func (p Pooling) Valid() bool {
	switch p {
	case "", PoolingMean, PoolingCLS, PoolingMax, PoolingMeanSqrtLen:
		return true
	}
	return false
}

// Input says what an embedded text is, so that the model's prompt for it
// is prepended (e5: "query: " / "passage: "; bge: an instruction before
// queries only).
type Input string

// Inputs. The zero value, InputRaw, embeds the text as given.
const (
	InputRaw      Input = ""
	InputQuery    Input = "query"
	InputDocument Input = "document"
)

// SentenceConfig is what a sentence-transformers model directory says about
// embedding beyond the transformer itself: pooling, normalisation, prompts
// and the sequence cap. A plain value.
//
// It is read from the standard sentence-transformers files: modules.json
// (which modules follow the transformer: a Pooling directory, Normalize),
// <pooling dir>/config.json (pooling_mode_* flags), sentence_bert_config.json
// (max_seq_length) and config_sentence_transformers.json (prompts). A
// directory without them (a bare ONNX export) has the zero value, and the
// embedder falls back to mean pooling with Config's Normalize.
type SentenceConfig struct {
	// Present reports that modules.json was found.
	Present bool `json:"present"`
	// Pooling is the Pooling module's mode ("" when there is none).
	Pooling Pooling `json:"pooling,omitempty"`
	// Normalize reports a Normalize module after pooling.
	Normalize bool `json:"normalize,omitempty"`
	// MaxSeqLength is max_seq_length (0 when not given): inputs are cut to
	// it, as sentence-transformers does, even when the transformer's
	// max_position_embeddings is larger.
	MaxSeqLength int `json:"max_seq_length,omitempty"`
	// QueryPrompt and DocumentPrompt are the prompts named "query" and
	// "document" (or "passage") in config_sentence_transformers.json.
	QueryPrompt    string `json:"query_prompt,omitempty"`
	DocumentPrompt string `json:"document_prompt,omitempty"`
}

// stModule is one entry of modules.json.
type stModule struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// readSentenceConfig reads the sentence-transformers files of dir. Absent
// files leave the zero value; present but broken ones are errors wrapping
// ErrModelDir.
func readSentenceConfig(dir string) (SentenceConfig, error) {
	var sc SentenceConfig
	var mods []stModule
	found, err := readJSON(dir, "modules.json", &mods)
	if err != nil || !found {
		return sc, err
	}
	sc.Present = true
	for _, m := range mods {
		switch {
		case strings.HasSuffix(m.Type, ".Pooling"):
			sub, err := ModulePath(m.Path)
			if err != nil {
				return sc, fmt.Errorf("%w: %s: %w", ErrModelDir, dir, err)
			}
			p, err := readPooling(dir, filepath.FromSlash(sub))
			if err != nil {
				return sc, err
			}
			sc.Pooling = p
		case strings.HasSuffix(m.Type, ".Normalize"):
			sc.Normalize = true
		case strings.HasSuffix(m.Type, ".Transformer"):
		default:
			return sc, fmt.Errorf("%w: %s: modules.json: module %s (%s) is not supported (Transformer, Pooling and Normalize are)",
				ErrUnsupportedModel, dir, m.Path, m.Type)
		}
	}
	var bert struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if _, err := readJSON(dir, "sentence_bert_config.json", &bert); err != nil {
		return sc, err
	}
	if bert.MaxSeqLength != 0 && bert.MaxSeqLength < 3 {
		// [CLS], one token, [SEP] at the least; negative makes no sense.
		return sc, fmt.Errorf("%w: %s: sentence_bert_config.json: max_seq_length %d", ErrModelDir, dir, bert.MaxSeqLength)
	}
	sc.MaxSeqLength = bert.MaxSeqLength
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if _, err := readJSON(dir, "config_sentence_transformers.json", &st); err != nil {
		return sc, err
	}
	sc.QueryPrompt = st.Prompts["query"]
	sc.DocumentPrompt = st.Prompts["document"]
	if sc.DocumentPrompt == "" {
		sc.DocumentPrompt = st.Prompts["passage"]
	}
	return sc, nil
}

// ModulePath checks a module path of a sentence-transformers modules.json:
// a relative folder inside the model directory ("" is the directory
// itself). It returns the path cleaned, with slashes, or an error for an
// absolute path, one that leaves the directory, or one with a backslash.
func ModulePath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	clean := path.Clean(p)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(clean, `\`) {
		return "", fmt.Errorf("modules.json path %q leaves the model directory", p)
	}
	return clean, nil
}

// readPooling reads the pooling_mode_* flags of a Pooling module. Exactly
// one supported mode must be set (sentence-transformers concatenates several;
// no model we know of does that).
func readPooling(dir, sub string) (Pooling, error) {
	var flags map[string]any
	name := filepath.Join(sub, "config.json")
	found, err := readJSON(dir, name, &flags)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: %s: modules.json names a Pooling module but %s is missing", ErrModelDir, dir, name)
	}
	modes := map[string]Pooling{
		"pooling_mode_mean_tokens":          PoolingMean,
		"pooling_mode_cls_token":            PoolingCLS,
		"pooling_mode_max_tokens":           PoolingMax,
		"pooling_mode_mean_sqrt_len_tokens": PoolingMeanSqrtLen,
	}
	var set []Pooling
	for k, v := range flags {
		on, _ := v.(bool)
		if !on || !strings.HasPrefix(k, "pooling_mode_") {
			continue
		}
		p, ok := modes[k]
		if !ok {
			return "", fmt.Errorf("%w: %s: %s: %s is not supported", ErrUnsupportedModel, dir, name, k)
		}
		set = append(set, p)
	}
	if len(set) != 1 {
		return "", fmt.Errorf("%w: %s: %s sets %d pooling modes, want exactly one", ErrUnsupportedModel, dir, name, len(set))
	}
	return set[0], nil
}

// readJSON decodes dir/name into v. A missing file is (false, nil).
func readJSON(dir, name string, v any) (bool, error) {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrModelDir, dir, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%w: %s: parse %s: %v", ErrModelDir, dir, name, err)
	}
	return true, nil
}
