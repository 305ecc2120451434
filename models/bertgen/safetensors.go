package bertgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/models/safetensors"
)

// Errors returned by the safetensors import.
var (
	// ErrCheckpoint: the checkpoint's tensors do not fit the config: a
	// missing or unexpected tensor, a shape mismatch, a float tensor in a
	// non-float dtype, or a position_ids buffer that is not 0, 1, 2, ….
	ErrCheckpoint = errors.New("bertgen: checkpoint does not fit the config")
	// ErrUnsupported: config.json describes a model the generated graph
	// cannot represent (another architecture or model type, an activation
	// other than erf GELU, relative position embeddings, more than one
	// label, or a sentence-transformers module with weights of its own).
	ErrUnsupported = errors.New("bertgen: unsupported model")
)

// hfConfigIn is the part of a Hugging Face config.json that ConfigFromHF
// reads.
type hfConfigIn struct {
	NameOrPath        string          `json:"_name_or_path"`
	Architectures     []string        `json:"architectures"`
	ModelType         string          `json:"model_type"`
	HiddenAct         string          `json:"hidden_act"`
	PositionEmbType   string          `json:"position_embedding_type"`
	Hidden            int             `json:"hidden_size"`
	Layers            int             `json:"num_hidden_layers"`
	Heads             int             `json:"num_attention_heads"`
	Intermediate      int             `json:"intermediate_size"`
	VocabSize         int             `json:"vocab_size"`
	MaxPositions      int             `json:"max_position_embeddings"`
	TypeVocab         int             `json:"type_vocab_size"`
	LayerNormEps      *float64        `json:"layer_norm_eps"`
	InitializerRange  *float64        `json:"initializer_range"`
	NumLabels         *int            `json:"num_labels"`
	ID2Label          json.RawMessage `json:"id2label"`
	AddCrossAttention bool            `json:"add_cross_attention"`
	IsDecoder         bool            `json:"is_decoder"`
}

// ConfigFromHF returns the Config of a Hugging Face BERT config.json:
// architectures BertModel (a BiEncoder) or BertForSequenceClassification
// with one label (a CrossEncoder), model_type bert, hidden_act gelu (erf),
// absolute position embeddings. Anything else is an error wrapping
// ErrUnsupported; missing sizes wrap ErrBadConfig. Fields BERT defaults
// (layer_norm_eps 1e-12, type_vocab_size 2, initializer_range 0.02) apply
// when absent, as in transformers' BertConfig.
func ConfigFromHF(raw []byte) (Config, error) {
	var h hfConfigIn
	if err := json.Unmarshal(raw, &h); err != nil {
		return Config{}, fmt.Errorf("%w: parse config.json: %v", ErrBadConfig, err)
	}
	unsupported := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
	}
	if h.ModelType != "bert" {
		return unsupported("model_type %q (want bert)", h.ModelType)
	}
	var kind Kind
	switch {
	case slices.Equal(h.Architectures, []string{"BertModel"}):
		kind = BiEncoder
	case slices.Equal(h.Architectures, []string{"BertForSequenceClassification"}):
		kind = CrossEncoder
	default:
		return unsupported("architectures %q (want [BertModel] or [BertForSequenceClassification])", h.Architectures)
	}
	if h.HiddenAct != "gelu" {
		return unsupported("hidden_act %q (the graph implements erf GELU, \"gelu\")", h.HiddenAct)
	}
	if h.PositionEmbType != "" && h.PositionEmbType != "absolute" {
		return unsupported("position_embedding_type %q (want absolute)", h.PositionEmbType)
	}
	if h.IsDecoder || h.AddCrossAttention {
		return unsupported("decoder or cross-attention BERT")
	}
	if kind == CrossEncoder {
		labels := 2 // transformers' default when neither num_labels nor id2label is given
		if len(h.ID2Label) > 0 && string(h.ID2Label) != "null" {
			var m map[string]string
			if err := json.Unmarshal(h.ID2Label, &m); err != nil {
				return Config{}, fmt.Errorf("%w: id2label: %v", ErrBadConfig, err)
			}
			labels = len(m)
		}
		if h.NumLabels != nil {
			labels = *h.NumLabels
		}
		if labels != 1 {
			return unsupported("%d labels (the graph has one logit, as relevance cross-encoders do)", labels)
		}
	}
	c := Config{
		Name: h.NameOrPath, Kind: kind, Layers: h.Layers, Hidden: h.Hidden, Heads: h.Heads,
		Intermediate: h.Intermediate, VocabSize: h.VocabSize, MaxPositions: h.MaxPositions,
		TypeVocab: 2, LayerNormEps: 1e-12, InitStd: 0.02,
	}
	if h.TypeVocab != 0 {
		c.TypeVocab = h.TypeVocab
	}
	if h.LayerNormEps != nil {
		c.LayerNormEps = *h.LayerNormEps
	}
	if h.InitializerRange != nil {
		c.InitStd = *h.InitializerRange
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// param is one checkpoint tensor the graph needs.
type param struct {
	name  string // Hugging Face name without the "bert." prefix
	dst   *[]float32
	shape []int64 // shape in the checkpoint
	// transpose: the checkpoint stores an nn.Linear weight [out, in]; the
	// graph's MatMul initializer is [in, out].
	transpose bool
}

// weightsPrefix is the encoder's parameter prefix in task models
// (BertForSequenceClassification.bert); BertModel checkpoints have none.
const weightsPrefix = "bert."

// WeightsFromSafetensors reads the weights of a BERT checkpoint for cfg
// from f, which uses Hugging Face parameter names (embeddings.*,
// encoder.layer.N.*, with or without the "bert." prefix of task models;
// classifier.* for a CrossEncoder; LayerNorm gamma/beta accepted for
// weight/bias). Float tensors may be F32, F16, BF16 or F64. Tensors the
// graph does not use are accepted only when BERT checkpoints routinely
// carry them: the embeddings.position_ids buffer (which must be 0, 1, 2, …)
// and, for a BiEncoder, the pooler. Any other difference is an error
// wrapping ErrCheckpoint that names the tensors.
func WeightsFromSafetensors(f *safetensors.File, cfg Config) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	names := f.Names()
	prefix := ""
	if slices.Contains(names, weightsPrefix+"embeddings.word_embeddings.weight") {
		prefix = weightsPrefix
	}
	h, i := int64(cfg.Hidden), int64(cfg.Intermediate)
	w := &Weights{Config: cfg, Layers: make([]Layer, cfg.Layers)}
	params := []param{
		{"embeddings.word_embeddings.weight", &w.WordEmb, []int64{int64(cfg.VocabSize), h}, false},
		{"embeddings.position_embeddings.weight", &w.PosEmb, []int64{int64(cfg.MaxPositions), h}, false},
		{"embeddings.token_type_embeddings.weight", &w.TypeEmb, []int64{int64(cfg.TypeVocab), h}, false},
		{"embeddings.LayerNorm.weight", &w.EmbLNG, []int64{h}, false},
		{"embeddings.LayerNorm.bias", &w.EmbLNB, []int64{h}, false},
	}
	for l := range w.Layers {
		L := &w.Layers[l]
		p := "encoder.layer." + strconv.Itoa(l) + "."
		params = append(params,
			param{p + "attention.self.query.weight", &L.QueryW, []int64{h, h}, true},
			param{p + "attention.self.query.bias", &L.QueryB, []int64{h}, false},
			param{p + "attention.self.key.weight", &L.KeyW, []int64{h, h}, true},
			param{p + "attention.self.key.bias", &L.KeyB, []int64{h}, false},
			param{p + "attention.self.value.weight", &L.ValueW, []int64{h, h}, true},
			param{p + "attention.self.value.bias", &L.ValueB, []int64{h}, false},
			param{p + "attention.output.dense.weight", &L.AttnOutW, []int64{h, h}, true},
			param{p + "attention.output.dense.bias", &L.AttnOutB, []int64{h}, false},
			param{p + "attention.output.LayerNorm.weight", &L.AttnLNG, []int64{h}, false},
			param{p + "attention.output.LayerNorm.bias", &L.AttnLNB, []int64{h}, false},
			param{p + "intermediate.dense.weight", &L.InterW, []int64{i, h}, true},
			param{p + "intermediate.dense.bias", &L.InterB, []int64{i}, false},
			param{p + "output.dense.weight", &L.OutW, []int64{h, i}, true},
			param{p + "output.dense.bias", &L.OutB, []int64{h}, false},
			param{p + "output.LayerNorm.weight", &L.OutLNG, []int64{h}, false},
			param{p + "output.LayerNorm.bias", &L.OutLNB, []int64{h}, false},
		)
	}
	// Full checkpoint names of the parameters, and of the tensors that may
	// be present and are ignored.
	full := make([]string, len(params))
	for k, p := range params {
		full[k] = prefix + p.name
	}
	ignored := map[string]bool{}
	switch cfg.Kind {
	case CrossEncoder:
		params = append(params,
			param{"pooler.dense.weight", &w.PoolerW, []int64{h, h}, true},
			param{"pooler.dense.bias", &w.PoolerB, []int64{h}, false},
			param{"classifier.weight", &w.ClsW, []int64{1, h}, true},
			param{"classifier.bias", &w.ClsB, []int64{1}, false},
		)
		full = append(full, prefix+"pooler.dense.weight", prefix+"pooler.dense.bias", "classifier.weight", "classifier.bias")
	case BiEncoder:
		// BertModel checkpoints carry the pooler (pooler_output); the
		// embedder's graph ends at last_hidden_state.
		ignored[prefix+"pooler.dense.weight"] = true
		ignored[prefix+"pooler.dense.bias"] = true
	}
	posIDs := prefix + "embeddings.position_ids"
	ignored[posIDs] = true

	// Resolve names, then report every missing and unexpected tensor at once.
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	resolved := make([]string, len(params))
	var missing []string
	for k, n := range full {
		switch {
		case present[n]:
			resolved[k] = n
		case strings.HasSuffix(n, "LayerNorm.weight") && present[strings.TrimSuffix(n, "weight")+"gamma"]:
			resolved[k] = strings.TrimSuffix(n, "weight") + "gamma" // pre-2019 TensorFlow-converted names
		case strings.HasSuffix(n, "LayerNorm.bias") && present[strings.TrimSuffix(n, "bias")+"beta"]:
			resolved[k] = strings.TrimSuffix(n, "bias") + "beta"
		default:
			missing = append(missing, n)
		}
	}
	used := make(map[string]bool, len(resolved))
	for _, n := range resolved {
		used[n] = true
	}
	var extra []string
	for _, n := range names {
		if !used[n] && !ignored[n] {
			extra = append(extra, n)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		return nil, fmt.Errorf("%w (%s, %d layers): %s%s", ErrCheckpoint, cfg.Kind, cfg.Layers,
			listNames("missing", missing), listNames("unexpected", extra))
	}
	if present[posIDs] {
		if err := checkPositionIDs(f, posIDs, cfg.MaxPositions); err != nil {
			return nil, err
		}
	}
	for k, p := range params {
		v, info, err := f.Float32(resolved[k])
		if err != nil {
			if errors.Is(err, safetensors.ErrDType) {
				return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
			}
			return nil, err
		}
		if !slices.Equal(info.Shape, p.shape) {
			return nil, fmt.Errorf("%w: %s has shape %v, want %v", ErrCheckpoint, resolved[k], info.Shape, p.shape)
		}
		if p.transpose {
			v = transpose(v, int(p.shape[0]), int(p.shape[1]))
		}
		*p.dst = v
	}
	return w, nil
}

// listNames formats a list of tensor names for an error, at most 8 of them.
func listNames(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	const show = 8
	s := fmt.Sprintf("%d %s: %s", len(names), what, strings.Join(names[:min(show, len(names))], ", "))
	if len(names) > show {
		s += ", …"
	}
	return s + "; "
}

// checkPositionIDs accepts the position_ids buffer only if it is the
// identity the graph assumes (0, 1, …, maxPos-1).
func checkPositionIDs(f *safetensors.File, name string, maxPos int) error {
	ids, info, err := f.Int64(name)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if len(ids) != maxPos {
		return fmt.Errorf("%w: %s has shape %v, want [1 %d]", ErrCheckpoint, name, info.Shape, maxPos)
	}
	for k, v := range ids {
		if v != int64(k) {
			return fmt.Errorf("%w: %s[%d] = %d: the graph assumes positions 0, 1, 2, …", ErrCheckpoint, name, k, v)
		}
	}
	return nil
}

// transpose returns the [cols, rows] transpose of m stored [rows, cols].
func transpose(m []float32, rows, cols int) []float32 {
	out := make([]float32, len(m))
	for r := range rows {
		row := m[r*cols : (r+1)*cols]
		for c, v := range row {
			out[c*rows+r] = v
		}
	}
	return out
}
