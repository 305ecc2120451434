package bertgen

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by this package.
var (
	// ErrBadConfig: Config.Validate failed.
	ErrBadConfig = errors.New("bertgen: bad config")
	// ErrBadInput: Reference was given token ids, masks or type ids that do
	// not fit the model (ragged batch, id out of range, too long).
	ErrBadInput = errors.New("bertgen: bad input")
	// ErrAssets: the vocab.txt or tokenizer.json to copy is missing or does
	// not fit the config.
	ErrAssets = errors.New("bertgen: bad tokenizer assets")
)

// Kind is the head on top of the BERT encoder.
type Kind string

const (
	// CrossEncoder is BertForSequenceClassification with one label: pooler
	// (first token, dense, tanh) and a classifier; output "logits"
	// [batch_size, 1].
	CrossEncoder Kind = "cross-encoder"
	// BiEncoder is BertModel; output "last_hidden_state"
	// [batch_size, sequence_length, hidden]. Pooling happens in Go.
	BiEncoder Kind = "bi-encoder"
)

// Config describes a BERT model. Fields mirror Hugging Face's BertConfig.
// Compare Configs with ==.
type Config struct {
	// Name is the model's display name (written to the marker file).
	Name string `json:"name"`
	// Kind selects the head: CrossEncoder or BiEncoder.
	Kind Kind `json:"kind"`
	// Layers is num_hidden_layers.
	Layers int `json:"num_hidden_layers"`
	// Hidden is hidden_size; it must be a multiple of Heads.
	Hidden int `json:"hidden_size"`
	// Heads is num_attention_heads.
	Heads int `json:"num_attention_heads"`
	// Intermediate is intermediate_size (the FFN width).
	Intermediate int `json:"intermediate_size"`
	// VocabSize is vocab_size (30522 for bert-base-uncased's vocab.txt).
	VocabSize int `json:"vocab_size"`
	// MaxPositions is max_position_embeddings (512).
	MaxPositions int `json:"max_position_embeddings"`
	// TypeVocab is type_vocab_size (2).
	TypeVocab int `json:"type_vocab_size"`
	// LayerNormEps is layer_norm_eps (1e-12).
	LayerNormEps float64 `json:"layer_norm_eps"`
	// InitStd is the standard deviation of the random normal weights
	// (initializer_range, 0.02 in BERT).
	InitStd float64 `json:"initializer_range"`
	// Seed makes the weights reproducible: equal Configs give equal bytes.
	Seed int64 `json:"seed"`
}

func base(name string, kind Kind, layers, hidden, heads, inter int) Config {
	return Config{
		Name: name, Kind: kind, Layers: layers, Hidden: hidden, Heads: heads, Intermediate: inter,
		VocabSize: 30522, MaxPositions: 512, TypeVocab: 2, LayerNormEps: 1e-12, InitStd: 0.02, Seed: 1,
	}
}

// TinyBERTL2CrossEncoder has the shape of cross-encoder/ms-marco-TinyBERT-L-2-v2
// (2 layers, hidden 128, 2 heads, FFN 512; 4.4M parameters).
func TinyBERTL2CrossEncoder() Config {
	return base("ms-marco-TinyBERT-L-2-v2 (generated)", CrossEncoder, 2, 128, 2, 512)
}

// MiniLML6CrossEncoder has the shape of cross-encoder/ms-marco-MiniLM-L-6-v2
// (6 layers, hidden 384, 12 heads, FFN 1536; 22.7M parameters).
func MiniLML6CrossEncoder() Config {
	return base("ms-marco-MiniLM-L-6-v2 (generated)", CrossEncoder, 6, 384, 12, 1536)
}

// MiniLML12CrossEncoder has the shape of cross-encoder/ms-marco-MiniLM-L-12-v2
// (12 layers, hidden 384, 12 heads, FFN 1536; 33.4M parameters).
func MiniLML12CrossEncoder() Config {
	return base("ms-marco-MiniLM-L-12-v2 (generated)", CrossEncoder, 12, 384, 12, 1536)
}

// MiniLML6Embedder has the shape of sentence-transformers/all-MiniLM-L6-v2
// (BertModel, 6 layers, hidden 384, 12 heads, FFN 1536; 22.7M parameters).
func MiniLML6Embedder() Config {
	return base("all-MiniLM-L6-v2 (generated)", BiEncoder, 6, 384, 12, 1536)
}

// Validate reports the first invalid field, wrapped in ErrBadConfig.
func (c Config) Validate() error {
	if c.Kind != CrossEncoder && c.Kind != BiEncoder {
		return fmt.Errorf("%w: kind %q (want %q or %q)", ErrBadConfig, c.Kind, CrossEncoder, BiEncoder)
	}
	checks := []struct {
		name string
		v    int
	}{
		{"Layers", c.Layers}, {"Hidden", c.Hidden}, {"Heads", c.Heads}, {"Intermediate", c.Intermediate},
		{"VocabSize", c.VocabSize}, {"MaxPositions", c.MaxPositions}, {"TypeVocab", c.TypeVocab},
	}
	for _, ch := range checks {
		if ch.v <= 0 {
			return fmt.Errorf("%w: %s = %d, must be > 0", ErrBadConfig, ch.name, ch.v)
		}
		if ch.v > 1<<20 {
			return fmt.Errorf("%w: %s = %d is unreasonably large", ErrBadConfig, ch.name, ch.v)
		}
	}
	if c.Hidden%c.Heads != 0 {
		return fmt.Errorf("%w: hidden %d is not a multiple of heads %d", ErrBadConfig, c.Hidden, c.Heads)
	}
	if !(c.LayerNormEps > 0 && c.LayerNormEps < 1) {
		return fmt.Errorf("%w: layer norm eps %g", ErrBadConfig, c.LayerNormEps)
	}
	if !(c.InitStd > 0 && c.InitStd < 10) {
		return fmt.Errorf("%w: init std %g", ErrBadConfig, c.InitStd)
	}
	if p := c.Params(); 4*p > math.MaxInt32 {
		return fmt.Errorf("%w: %d float32 parameters (%d bytes) exceed the 2 GB protobuf limit of a single ONNX file", ErrBadConfig, p, 4*p)
	}
	return nil
}

// HeadDim is Hidden / Heads.
func (c Config) HeadDim() int { return c.Hidden / c.Heads }

// Params is the number of parameters, embeddings included.
func (c Config) Params() int64 {
	h, i := int64(c.Hidden), int64(c.Intermediate)
	emb := (int64(c.VocabSize)+int64(c.MaxPositions)+int64(c.TypeVocab))*h + 2*h
	perLayer := 4*(h*h+h) + 2*h + (h*i + i) + (i*h + h) + 2*h
	n := emb + int64(c.Layers)*perLayer
	if c.Kind == CrossEncoder {
		n += h*h + h + h + 1
	}
	return n
}

// FLOPs is the floating-point operation count of one sequence of seq tokens
// (a multiply-add counts as 2): every dense layer (Q, K, V, output, both FFN
// matrices: 2·seq·(4H² + 2H·I) per layer), the attention products Q·Kᵀ and
// P·V (4·seq²·H per layer) and, for cross-encoders, the pooler and
// classifier (2·(H² + H)). Element-wise work (softmax, GELU, layer norm) and
// embedding gathers are left out; they are a few percent of the total.
// Benchmarks divide it by time for effective GFLOP/s.
func FLOPs(cfg Config, seq int) float64 { return NarrowedFLOPs(cfg, seq, NarrowNone) }

// Narrowing says which part of the last layer computes the first token
// ([CLS], all a cross-encoder's head reads; an embedder's output too when
// its graph pools [CLS] itself) only, as package onnx/fuse's FirstToken
// rewrites it.
type Narrowing int

const (
	// NarrowNone: every token through every layer.
	NarrowNone Narrowing = iota
	// NarrowFeedForward: the attention's output projection and the
	// feed-forward block for one token (attention itself for all).
	NarrowFeedForward
	// NarrowAttention: also the query projection and the attention's
	// query row; only the keys and values cover every token.
	NarrowAttention
)

// NarrowedFLOPs is FLOPs with the last layer narrowed as n says.
func NarrowedFLOPs(cfg Config, seq int, n Narrowing) float64 {
	s, h, i := float64(seq), float64(cfg.Hidden), float64(cfg.Intermediate)
	layer := func(s, q float64) float64 { // s tokens, q of them queries past K and V
		return 2*s*2*h*h + 2*q*(2*h*h+2*h*i) + 4*q*s*h
	}
	f := float64(cfg.Layers) * layer(s, s)
	if cfg.Layers > 0 && n != NarrowNone {
		last := layer(s, s) - 2*(s-1)*(h*h+2*h*i) // output projection, FFN
		if n == NarrowAttention {
			last = layer(s, 1)
		}
		f += last - layer(s, s)
	}
	if cfg.Kind == CrossEncoder {
		f += 2 * (h*h + h)
	}
	return f
}
