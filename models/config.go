package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kind says what a model computes.
type Kind string

// Model kinds.
const (
	// KindCrossEncoder scores (query, document) pairs: one logit per pair.
	KindCrossEncoder Kind = "cross-encoder"
	// KindEmbedder turns one text into one vector.
	KindEmbedder Kind = "embedder"
)

// Profile names.
const (
	ProfileFast     = "fast"
	ProfileBalanced = "balanced"
	ProfileAccurate = "accurate"
	ProfileEmbed    = "embed"
)

// Profile describes a named model: which public checkpoint it stands for
// and its shape. The shape is what the checkpoint has; a model directory
// loaded under a profile name is not required to match it (the directory's
// config.json is what counts when running). A plain value, safe to copy.
type Profile struct {
	Name         string // profile name, e.g. "balanced"
	ModelID      string // Hugging Face model id the profile stands for
	Kind         Kind
	Layers       int // num_hidden_layers
	Hidden       int // hidden_size
	Heads        int // num_attention_heads
	Intermediate int // intermediate_size (FFN)
	MaxLength    int // max_position_embeddings
	// RealModel names the directory of the real model under
	// $HYBRANK_REAL_MODELS (`make models`), preferred over the generated one
	// under $HYBRANK_MODELS when present; "" when no real weights are
	// reachable (the cross-encoders).
	RealModel string
}

var profiles = []Profile{
	{ProfileFast, "cross-encoder/ms-marco-TinyBERT-L-2-v2", KindCrossEncoder, 2, 128, 2, 512, 512, ""},
	{ProfileBalanced, "cross-encoder/ms-marco-MiniLM-L-6-v2", KindCrossEncoder, 6, 384, 12, 1536, 512, ""},
	{ProfileAccurate, "cross-encoder/ms-marco-MiniLM-L-12-v2", KindCrossEncoder, 12, 384, 12, 1536, 512, ""},
	{ProfileEmbed, "sentence-transformers/all-MiniLM-L6-v2", KindEmbedder, 6, 384, 12, 1536, 512, "all-minilm-l6-v2"},
}

// Profiles returns every profile: the three cross-encoders from fastest to
// most accurate, then the embedder. The slice is a copy.
func Profiles() []Profile { return append([]Profile(nil), profiles...) }

// LookupProfile returns the profile with the given name.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("%w %q (want fast, balanced, accurate or embed)", ErrUnknownProfile, name)
}

// ModelsEnv names the environment variable holding a folder with one model
// directory per profile (the layout `bench models --out DIR` writes). It is
// used only when Config.Dir is empty.
const ModelsEnv = "HYBRANK_MODELS"

// Batching modes (Config.Batching).
const (
	// BatchingCost forms the batches of a call so that their predicted
	// total time is least, from a cost model measured at load (or
	// Config.CostTable), within MaxBatchTokens and MaxBatchBytes.
	BatchingCost = "cost"
	// BatchingTokens cuts the length-sorted texts greedily whenever a
	// batch would pass MaxBatchTokens padded tokens.
	BatchingTokens = "tokens"
)

// Config.Quantize values: QuantizeInt8 loads a model with int8 weights
// (for the CPU), QuantizeFP16 a float16 model (for the CUDA provider).
// They are onnx/quantize's type names.
const (
	QuantizeInt8 = "int8"
	QuantizeFP16 = "fp16"
)

// ValidQuantize reports whether q is a Config.Quantize value: "" (the
// model as it is), QuantizeInt8 or QuantizeFP16.
func ValidQuantize(q string) bool { return q == "" || q == QuantizeInt8 || q == QuantizeFP16 }

// CalibrationCacheOff, as Config.CalibrationCache, neither reads nor writes
// calibration caches: every load calibrates.
const CalibrationCacheOff = "off"

// Defaults used by DefaultConfig.
const (
	DefaultMaxBatchTokens = 16384 // as Text Embeddings Inference's max-batch-tokens
	// DefaultCalibrationMillis bounds the calibration at load: about 2 s
	// measures the balanced profile's useful grid on two cores.
	DefaultCalibrationMillis = 2000
	// DefaultMaxBatchBytes caps a batch's estimated activation memory
	// (HFConfig.ActivationBytes) in cost mode: 512 MiB lets balanced run
	// 32 × 128 or 8 × 512 tokens but not the 43 × 375 batches that the
	// 16,384-token cap forms on real pairs at half their best speed.
	DefaultMaxBatchBytes = 512 << 20
	DefaultMaxDocs       = 100
	DefaultMaxChars      = 20000
	// MaxSupportedLength caps MaxLength: BERT position tables have 512 rows.
	MaxSupportedLength = 512
)

// Config configures one CrossEncoder or BiEncoder. The zero value is not
// valid; start from DefaultConfig, DefaultEmbedderConfig or ProfileConfig.
// A Config is a plain value, safe to copy and compare.
type Config struct {
	// Dir is the model directory in the Hugging Face ONNX-export layout
	// (config.json; tokenizer.json or vocab.txt; onnx/model.onnx or
	// model.onnx). Empty means $HYBRANK_MODELS/<Profile>.
	Dir string `json:"dir"`
	// Profile names the model (fast, balanced, accurate, embed). It selects
	// the default Dir and is reported in results; the directory's
	// config.json decides the shape actually run.
	Profile string `json:"profile"`

	// Provider is the execution provider: "auto" (CUDA when available,
	// else CPU), "cuda" (fail without CUDA) or "cpu".
	Provider string `json:"provider"`
	// LibraryPath is the ONNX Runtime shared library; "" means
	// $HYBRANK_ORT_LIB, else .deps/ort. Only the first model loaded in a
	// process decides it (the runtime is initialised once).
	LibraryPath string `json:"library_path,omitempty"`
	// IntraOpThreads is the thread count inside one operator; 0 lets the
	// runtime choose (one per core).
	IntraOpThreads int `json:"intra_op_threads"`
	// InterOpThreads is the thread count across operators; 0 lets the
	// runtime choose.
	InterOpThreads int `json:"inter_op_threads"`
	// PoolSize is the number of runtime sessions; batches of one call run
	// concurrently on them, and concurrent callers share them. At least 1.
	PoolSize int `json:"pool_size"`
	// GraphOptimization is the runtime's graph optimisation level:
	// "disable", "basic", "extended" or "all"; "" means "all".
	GraphOptimization string `json:"graph_optimization,omitempty"`
	// DisableFusion loads the model file as it is. By default the
	// sessions load a temporary copy of it rewritten by package
	// onnx/fuse: on the CPU with fused SkipLayerNormalization operators
	// (7–31 % more pairs/s or texts/s on the benchmarks,
	// bench/results/fusion.md), and on the CPU and CUDA with a
	// cross-encoder's last layer computed for [CLS] only past its keys
	// and values (bench/results/first_token.md). float32 and float16
	// scores are the same to float rounding; an int8 model's narrowed
	// products quantize their activations over the rows they compute, so
	// its scores move by about the int8 noise. On a CPU with AMX-BF16 an
	// int8 model's self-attention also runs as one kernel with both
	// products in bfloat16 (fuse.AttentionBF16: int8 balanced 3.1× float32
	// instead of 1.9×, bench/results/rerank_int8_profile.md); float32
	// models keep float32 attention. With AMX-INT8 an int8 model's weight
	// products run per token in package onnx's QuantMatMul, GELU included,
	// activations in 16-bit codes (Int8ActivationBits), a layer's Q, K and
	// V as one product (fuse.QuantMatMulAMX; Int8PerTensor keeps the
	// runtime's kernel). The
	// embeddings' normalisation is fused too. A file these rewrites
	// cannot read (external data) loads unchanged, and so does one whose
	// rewritten copy the runtime refuses or fails to run on a probe batch
	// at load (logged).
	DisableFusion bool `json:"disable_fusion,omitempty"`
	// DisableArena turns off the runtime's CPU memory arena.
	DisableArena bool `json:"disable_arena,omitempty"`
	// DisableSpinning stops intra-op threads from busy-waiting between
	// operators; helps when several sessions or processes share few cores.
	DisableSpinning bool `json:"disable_spinning,omitempty"`
	// CUDADeviceID selects the GPU when the CUDA provider is used.
	CUDADeviceID int `json:"cuda_device_id,omitempty"`

	// Batching chooses how the texts of one call are cut into runtime
	// calls: BatchingCost ("cost", also meant by "") or BatchingTokens
	// ("tokens"). See package models/ort, section Batching.
	Batching string `json:"batching,omitempty"`
	// MaxBatchTokens caps the padded tokens (batch size × longest sequence
	// in the batch) of one runtime call: the whole rule in tokens mode, an
	// upper bound in cost mode. Must be at least the effective MaxLength so
	// any single sequence fits.
	MaxBatchTokens int `json:"max_batch_tokens"`
	// MaxBatchBytes caps the estimated activation memory of one batch
	// (HFConfig.ActivationBytes) in cost mode; 0 means no cap. A single
	// sequence is never refused. Tokens mode ignores it.
	MaxBatchBytes int64 `json:"max_batch_bytes,omitempty"`
	// CostTable is a call-time table file (models/ort's CallTimeTable as JSON) to plan
	// with in cost mode instead of calibrating at load; a missing or bad
	// file fails the load.
	CostTable string `json:"cost_table,omitempty"`
	// CalibrationMillis bounds the wall time of the calibration that cost
	// mode runs at load when no CostTable and no cached table applies; 0
	// means DefaultCalibrationMillis.
	CalibrationMillis int `json:"calibration_ms,omitempty"`
	// CalibrationCache says where calibrated tables are cached: "" beside
	// the model (a hybrank_cost_*.json file in Dir), falling back to the
	// user cache directory when Dir is read-only; a directory path to use
	// that instead; CalibrationCacheOff never to cache.
	CalibrationCache string `json:"calibration_cache,omitempty"`
	// Quantize "int8" loads the model with int8 weights: a directory
	// already quantized (by onnx/quantize, or an int8 export) is loaded
	// as it is; otherwise onnx/quantize rewrites the float32 model once
	// (per-channel int8 weights for the encoder's MatMul/Gemm) into
	// QuantizeCache and that copy is loaded. Activations are quantized on
	// every call: on a CPU with AMX-INT8, by default, per token in 16-bit
	// codes by package onnx's QuantMatMul (Int8ActivationBits,
	// DisableFusion); otherwise, or with Int8PerTensor, per tensor by
	// ONNX Runtime's DynamicQuantizeMatMul. "fp16" does the same with a
	// float16 copy (the whole graph in float16, float32 inputs and
	// outputs: for the CUDA provider; ONNX Runtime's x86 CPU provider has
	// no float16 kernels for most of it). "" loads Dir as it is.
	Quantize string `json:"quantize,omitempty"`
	// QuantizeCache is where Quantize keeps converted copies, one folder
	// per source model and type (keyed by the ONNX file's sha256); ""
	// means the user cache directory's hybrank/int8 or hybrank/fp16.
	QuantizeCache string `json:"quantize_cache,omitempty"`
	// Int8PerTensor keeps an int8 model's products in ONNX Runtime's
	// DynamicQuantizeMatMul, one activation scale per tensor (the whole
	// batch). By default, on a CPU with AMX-INT8, the fusion rewrite
	// (fuse.QuantMatMulAMX) runs them as package onnx's QuantMatMul: one
	// scale per token, so a pair's score no longer depends on its batch
	// mates, with the integer products on AMX tiles (as fast or faster;
	// bench/results/rerank_int8_profile.md). Ignored with DisableFusion,
	// for float32 models and where the CPU lacks AMX-INT8.
	Int8PerTensor bool `json:"int8_per_tensor,omitempty"`
	// Int8ActivationBits is the width of the per-token activation codes
	// where QuantMatMul runs an int8 model's products (AMX-INT8, not
	// Int8PerTensor): 0 or 16, the default, quantizes each token's
	// activations to 16 bits and runs each product on the codes' two bytes
	// (8-bit weights; within 0.994 worst per-query Spearman of float32 on a
	// trained encoder, bench/results/rerank_int8_profile.md); 8 runs one
	// 8-bit product, faster, on smoothed copies (SmoothQuant, calibrated at
	// quantization), about 0.988 worst.
	Int8ActivationBits int `json:"int8_activation_bits,omitempty"`
	// MaxDocs caps the documents of one Score call and the texts of one
	// Embed call; more is an error wrapping ErrTooManyDocs. ScorePairs is
	// not capped (its caller, the model's queue, bounds the size).
	MaxDocs int `json:"max_docs"`
	// MaxChars caps each text, in characters (runes), before tokenizing:
	// longer texts are cut, which bounds tokenizer time on huge inputs.
	// Truncation to MaxLength tokens happens after this anyway.
	MaxChars int `json:"max_chars"`
	// MaxLength is the longest sequence fed to the model, in tokens with
	// the special tokens. 0 means max_position_embeddings from config.json;
	// either way it is capped at MaxSupportedLength.
	MaxLength int `json:"max_length"`
	// Sigmoid maps cross-encoder logits to 0..1 (cross-encoder only).
	Sigmoid bool `json:"sigmoid,omitempty"`
	// Normalize L2-normalises embeddings (embedder only). A directory whose
	// sentence-transformers modules.json lists a Normalize module is
	// normalised either way, as sentence-transformers does.
	Normalize bool `json:"normalize,omitempty"`
	// Pooling overrides the directory's pooling mode (embedder only); ""
	// means the directory's (1_Pooling/config.json), else mean. Unused when
	// the model outputs a pooled `sentence_embedding` itself.
	Pooling Pooling `json:"pooling,omitempty"`
	// QueryPrefix and DocumentPrefix are prepended to texts embedded as
	// InputQuery and InputDocument (embedder only); "" means the directory's
	// prompts (config_sentence_transformers.json), e.g. e5's "query: " and
	// "passage: ". InputRaw texts get no prefix.
	QueryPrefix    string `json:"query_prefix,omitempty"`
	DocumentPrefix string `json:"document_prefix,omitempty"`
	// NoDirPrompts ignores the directory's prompts: only QueryPrefix and
	// DocumentPrefix apply.
	NoDirPrompts bool `json:"no_dir_prompts,omitempty"`
}

// Embedding is what a Config and a model directory resolve to for an
// embedder: the settings actually applied. A plain value.
type Embedding struct {
	Pooling        Pooling `json:"pooling"`
	Normalize      bool    `json:"normalize"`
	QueryPrefix    string  `json:"query_prefix,omitempty"`
	DocumentPrefix string  `json:"document_prefix,omitempty"`
}

// Embedding resolves c against the directory's sentence-transformers
// settings: c's fields win where set, the directory's fill the rest, mean
// pooling is the last resort.
func (md ModelDir) Embedding(c Config) Embedding {
	e := Embedding{Pooling: c.Pooling, Normalize: c.Normalize || md.Sentence.Normalize,
		QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix}
	if e.Pooling == "" {
		e.Pooling = md.Sentence.Pooling
	}
	if e.Pooling == "" {
		e.Pooling = PoolingMean
	}
	if !c.NoDirPrompts {
		if e.QueryPrefix == "" {
			e.QueryPrefix = md.Sentence.QueryPrompt
		}
		if e.DocumentPrefix == "" {
			e.DocumentPrefix = md.Sentence.DocumentPrompt
		}
	}
	return e
}

// Prefix is the text prepended to an input of this kind.
func (e Embedding) Prefix(in Input) string {
	switch in {
	case InputQuery:
		return e.QueryPrefix
	case InputDocument:
		return e.DocumentPrefix
	}
	return ""
}

// DefaultConfig returns the configuration of the balanced cross-encoder.
func DefaultConfig() Config {
	c, _ := ProfileConfig(ProfileBalanced)
	return c
}

// DefaultEmbedderConfig returns the configuration of the default embedder
// (all-MiniLM-L6-v2, L2-normalised).
func DefaultEmbedderConfig() Config {
	c, _ := ProfileConfig(ProfileEmbed)
	return c
}

// ProfileConfig returns the default configuration for a profile.
func ProfileConfig(name string) (Config, error) {
	p, err := LookupProfile(name)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Profile:           p.Name,
		Provider:          "auto",
		PoolSize:          1,
		Batching:          BatchingCost,
		MaxBatchTokens:    DefaultMaxBatchTokens,
		MaxBatchBytes:     DefaultMaxBatchBytes,
		CalibrationMillis: DefaultCalibrationMillis,
		MaxDocs:           DefaultMaxDocs,
		MaxChars:          DefaultMaxChars,
		Normalize:         p.Kind == KindEmbedder,
	}, nil
}

// Validate reports the first problem with c, wrapping ErrInvalidConfig (or
// ErrUnknownProfile). It does not touch the file system.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.Profile != "" {
		if _, err := LookupProfile(c.Profile); err != nil {
			return err
		}
	}
	if c.Dir == "" && c.Profile == "" {
		return bad("need Dir or Profile")
	}
	switch c.Provider {
	case "auto", "cuda", "cpu":
	default:
		return bad("provider %q (want auto, cuda or cpu)", c.Provider)
	}
	switch c.GraphOptimization {
	case "", "disable", "basic", "extended", "all":
	default:
		return bad("graph optimization %q (want disable, basic, extended or all)", c.GraphOptimization)
	}
	switch {
	case c.IntraOpThreads < 0:
		return bad("IntraOpThreads %d < 0", c.IntraOpThreads)
	case c.InterOpThreads < 0:
		return bad("InterOpThreads %d < 0", c.InterOpThreads)
	case c.PoolSize < 1:
		return bad("PoolSize %d < 1", c.PoolSize)
	case c.CUDADeviceID < 0:
		return bad("CUDADeviceID %d < 0", c.CUDADeviceID)
	case c.MaxDocs < 1:
		return bad("MaxDocs %d < 1", c.MaxDocs)
	case c.MaxChars < 1:
		return bad("MaxChars %d < 1", c.MaxChars)
	case c.MaxLength < 0 || c.MaxLength == 1 || c.MaxLength == 2 || c.MaxLength == 3:
		return bad("MaxLength %d (want 0 or at least 4)", c.MaxLength)
	case c.MaxLength > MaxSupportedLength:
		return bad("MaxLength %d > %d", c.MaxLength, MaxSupportedLength)
	case !c.Pooling.Valid():
		return bad("pooling %q (want mean, cls, max or mean_sqrt_len)", c.Pooling)
	case c.MaxBatchTokens < 1:
		return bad("MaxBatchTokens %d < 1", c.MaxBatchTokens)
	case c.MaxLength > 0 && c.MaxBatchTokens < c.MaxLength:
		return bad("MaxBatchTokens %d < MaxLength %d", c.MaxBatchTokens, c.MaxLength)
	case c.MaxLength == 0 && c.MaxBatchTokens < MaxSupportedLength:
		return bad("MaxBatchTokens %d < %d (set MaxLength to run smaller batches)", c.MaxBatchTokens, MaxSupportedLength)
	case c.Batching != "" && c.Batching != BatchingCost && c.Batching != BatchingTokens:
		return bad("batching %q (want cost or tokens)", c.Batching)
	case c.MaxBatchBytes < 0:
		return bad("MaxBatchBytes %d < 0", c.MaxBatchBytes)
	case c.CalibrationMillis < 0 || c.CalibrationMillis > maxCalibrationMillis:
		return bad("CalibrationMillis %d (want 0..%d)", c.CalibrationMillis, maxCalibrationMillis)
	case !ValidQuantize(c.Quantize):
		return bad("quantize %q (want \"\", %q or %q)", c.Quantize, QuantizeInt8, QuantizeFP16)
	case c.Int8ActivationBits != 0 && c.Int8ActivationBits != 8 && c.Int8ActivationBits != 16:
		return bad("Int8ActivationBits %d (want 0, 8 or 16)", c.Int8ActivationBits)
	}
	return nil
}

// maxCalibrationMillis bounds CalibrationMillis: a load that calibrates for
// more than ten minutes is a typo.
const maxCalibrationMillis = 600_000

// BatchingMode returns the batching mode in effect: Batching, with ""
// meaning BatchingCost.
func (c Config) BatchingMode() string {
	if c.Batching == "" {
		return BatchingCost
	}
	return c.Batching
}

// CalibrationBudget returns the calibration bound in milliseconds:
// CalibrationMillis, with 0 meaning DefaultCalibrationMillis.
func (c Config) CalibrationBudget() int {
	if c.CalibrationMillis == 0 {
		return DefaultCalibrationMillis
	}
	return c.CalibrationMillis
}

// RealModelsEnv names the environment variable holding the folder of real
// model directories that `make models` fetches (.deps/realmodels).
const RealModelsEnv = "HYBRANK_REAL_MODELS"

// RealDir returns the real model directory of profile under
// $HYBRANK_REAL_MODELS when the variable is set, the profile has one and it
// holds a config.json; else "".
func RealDir(profile string) string {
	p, err := LookupProfile(profile)
	root := os.Getenv(RealModelsEnv)
	if err != nil || p.RealModel == "" || root == "" {
		return ""
	}
	dir := filepath.Join(root, p.RealModel)
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return ""
	}
	return dir
}

// ResolveDir returns the model directory c names: Dir, else the profile's
// real model (RealDir), else $HYBRANK_MODELS/<profile>.
func (c Config) ResolveDir() (string, error) {
	if c.Dir != "" {
		return c.Dir, nil
	}
	if d := RealDir(c.Profile); d != "" {
		return d, nil
	}
	root := os.Getenv(ModelsEnv)
	if root == "" {
		return "", fmt.Errorf("%w: Config.Dir is empty and $%s is not set (run `bench models --out DIR` and set %s=DIR)",
			ErrModelDir, ModelsEnv, ModelsEnv)
	}
	return filepath.Join(root, c.Profile), nil
}

// String prints the settings that matter for speed, for benchmark reports.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile=%s provider=%s intra=%d inter=%d pool=%d batch_tokens=%d max_len=%d",
		c.Profile, c.Provider, c.IntraOpThreads, c.InterOpThreads, c.PoolSize, c.MaxBatchTokens, c.MaxLength)
	fmt.Fprintf(&b, " batching=%s", c.BatchingMode())
	if c.BatchingMode() == BatchingCost {
		fmt.Fprintf(&b, " batch_bytes=%d", c.MaxBatchBytes)
		if c.CostTable != "" {
			fmt.Fprintf(&b, " cost_table=%s", c.CostTable)
		} else {
			fmt.Fprintf(&b, " calibration_ms=%d", c.CalibrationBudget())
		}
	}
	if c.GraphOptimization != "" {
		fmt.Fprintf(&b, " graph_opt=%s", c.GraphOptimization)
	}
	if c.DisableFusion {
		b.WriteString(" fusion=off")
	}
	if c.Int8PerTensor {
		b.WriteString(" int8=per-tensor")
	}
	if c.Int8ActivationBits == 8 {
		b.WriteString(" int8=a8")
	}
	if c.DisableArena {
		b.WriteString(" arena=off")
	}
	if c.DisableSpinning {
		b.WriteString(" spin=off")
	}
	return b.String()
}

// ActivationBytes estimates the peak activation memory of a batch of batch
// sequences padded to seqLen tokens, in bytes (float32, weights not
// counted): one encoder layer's hidden states, residual, Q, K, V and
// attention output (7 × hidden per token), its FFN activations (2 ×
// intermediate per token) and its attention scores and probabilities (2 ×
// heads × seqLen² per sequence, the term that grows fastest). Layers run
// one after another and the runtime reuses their buffers, so one layer is
// the peak. Heads 0 counts as hidden/64 and intermediate 0 as 4 × hidden,
// BERT's ratios.
func (c HFConfig) ActivationBytes(batch, seqLen int) int64 {
	h := int64(max(c.HiddenSize, 1))
	heads := int64(c.NumAttentionHeads)
	if heads <= 0 {
		heads = max(h/64, 1)
	}
	inter := int64(c.IntermediateSize)
	if inter <= 0 {
		inter = 4 * h
	}
	b, l := int64(batch), int64(seqLen)
	return 4 * (b*l*(7*h+2*inter) + 2*b*heads*l*l)
}
