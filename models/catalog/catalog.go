package catalog

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Errors returned by this package.
var (
	// ErrUnknownModel: no description has a variant of that name.
	ErrUnknownModel = errors.New("catalog: unknown model")
	// ErrBadDescription: a description is malformed (caught by the tests
	// of the shipped files, and by Parse for others).
	ErrBadDescription = errors.New("catalog: bad model description")
	// ErrBadExport: the ONNX export or jar does not fit the description
	// (missing file, inputs or outputs).
	ErrBadExport = errors.New("catalog: export does not fit the description")
)

//go:embed *.json
var shipped embed.FS

// Pooling modes of sentence-transformers' Pooling module.
const (
	PoolingMean        = "mean"
	PoolingCLS         = "cls"
	PoolingMax         = "max"
	PoolingMeanSqrtLen = "mean_sqrt_len"
)

// SentenceTransformers is the part of a sentence-transformers model that
// lives outside the transformer: how token vectors become one vector, and
// what goes before the text. A plain value (its map is shared by copies:
// treat it as read-only).
type SentenceTransformers struct {
	// Pooling is mean, cls, max or mean_sqrt_len.
	Pooling string `json:"pooling"`
	// Normalize L2-normalises the pooled vector (a Normalize module).
	Normalize bool `json:"normalize"`
	// MaxSeqLength is the token cap, special tokens included.
	MaxSeqLength int `json:"max_seq_length"`
	// Prompts maps a prompt name ("query", "document") to the text put
	// before every input of that kind; a missing name means no prefix.
	Prompts map[string]string `json:"prompts"`
}

// Variant is one export of a checkpoint, laid out as its own directory. A
// plain value, read-only like SentenceTransformers.
type Variant struct {
	// Name is the model directory name (e.g. "bge-small-en-v1.5-q").
	Name string `json:"name"`
	// Quantized marks an int8 (dynamic quantization) export.
	Quantized bool `json:"quantized,omitempty"`
	// RenameOutputs renames ONNX values (export name → name loaders use).
	RenameOutputs map[string]string `json:"rename_outputs,omitempty"`
}

// Model is one description file. A plain value, read-only once parsed and
// then safe to share.
type Model struct {
	// ModelID is the Hugging Face id of the checkpoint the weights are.
	ModelID string `json:"model_id"`
	// Note says where the exports come from and anything unusual.
	Note string `json:"note"`
	// Config is the checkpoint's config.json, written verbatim.
	Config json.RawMessage `json:"config"`
	// SentenceTransformers are the pooling, normalisation, length and
	// prompts.
	SentenceTransformers SentenceTransformers `json:"sentence_transformers"`
	Variants             []Variant            `json:"variants"`
}

// hfConfig is what Validate requires of Model.Config.
type hfConfig struct {
	Architectures []string `json:"architectures"`
	HiddenSize    int      `json:"hidden_size"`
	MaxPositions  int      `json:"max_position_embeddings"`
}

// Validate reports the first problem with m, wrapping ErrBadDescription.
func (m Model) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{ErrBadDescription, m.ModelID}, args...)...)
	}
	if m.ModelID == "" {
		return bad("no model_id")
	}
	var c hfConfig
	if err := json.Unmarshal(m.Config, &c); err != nil {
		return bad("config: %v", err)
	}
	if c.HiddenSize <= 0 || c.MaxPositions <= 0 || len(c.Architectures) == 0 {
		return bad("config lacks hidden_size, max_position_embeddings or architectures")
	}
	st := m.SentenceTransformers
	switch st.Pooling {
	case PoolingMean, PoolingCLS, PoolingMax, PoolingMeanSqrtLen:
	default:
		return bad("pooling %q (want mean, cls, max or mean_sqrt_len)", st.Pooling)
	}
	if st.MaxSeqLength < 4 || st.MaxSeqLength > c.MaxPositions {
		return bad("max_seq_length %d (want 4..%d)", st.MaxSeqLength, c.MaxPositions)
	}
	for name := range st.Prompts {
		if name != "query" && name != "document" {
			return bad("prompt %q (want query or document)", name)
		}
	}
	if len(m.Variants) == 0 {
		return bad("no variants")
	}
	for _, v := range m.Variants {
		if v.Name == "" || strings.ContainsAny(v.Name, `/\`) || v.Name == "." || v.Name == ".." {
			return bad("variant name %q", v.Name)
		}
	}
	return nil
}

// Parse decodes and validates one description.
func Parse(data []byte) (Model, error) {
	var m Model
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Model{}, fmt.Errorf("%w: %v", ErrBadDescription, err)
	}
	return m, m.Validate()
}

// Models returns the shipped descriptions, sorted by model id.
func Models() ([]Model, error) {
	entries, err := shipped.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []Model
	for _, e := range entries {
		b, err := shipped.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		m, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModelID < out[j].ModelID })
	return out, nil
}

// Lookup returns the description and variant of a model directory name.
func Lookup(name string) (Model, Variant, error) {
	ms, err := Models()
	if err != nil {
		return Model{}, Variant{}, err
	}
	var names []string
	for _, m := range ms {
		for _, v := range m.Variants {
			if v.Name == name {
				return m, v, nil
			}
			names = append(names, v.Name)
		}
	}
	slices.Sort(names)
	return Model{}, Variant{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownModel, name, strings.Join(names, ", "))
}
