package quantize

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Errors returned by this package.
var (
	// ErrBadConfig: Config.Validate failed, or a matrix shape or bit
	// width passed to QuantizeMatrix is invalid.
	ErrBadConfig = errors.New("quantize: bad config")
	// ErrNonFinite: a weight to quantize is NaN or ±Inf. The whole
	// rewrite fails; nothing is written.
	ErrNonFinite = errors.New("quantize: non-finite weight")
	// ErrNothingToQuantize: for int8, the model has no MatMul or Gemm
	// with a 2-D float32 weight initializer outside Config.Exclude, so an
	// "int8" copy would be the float32 model under another name; for
	// float16, it has no float32 initializer at all.
	ErrNothingToQuantize = errors.New("quantize: no weights to quantize")
	// ErrAlreadyInt8 comes wrapped with ErrNothingToQuantize when the
	// model runs its products in int8 already (MatMulInteger,
	// DynamicQuantizeMatMul, QLinearMatMul…: an int8 export): the model
	// is its own int8 copy. Without it, nothing could be quantized and the
	// model is float32 (its weights may all be graph inputs' defaults).
	ErrAlreadyInt8 = errors.New("quantize: the model is int8 already")
	// ErrModelDir: the source is not a model directory (no
	// onnx/model.onnx or model.onnx), or the destination is the source.
	ErrModelDir = errors.New("quantize: bad model directory")
)

// Form is the operator form a quantized MatMul takes in the graph.
type Form string

const (
	// FormFused writes one com.microsoft DynamicQuantizeMatMul per
	// weight (A float32, B int8, per-column B scales, the following bias
	// Add folded into its bias input). ONNX Runtime's CPU provider runs it
	// as one kernel: quantize A, integer GEMM on the pre-packed B,
	// scale and bias in the GEMM's output stage. The default.
	FormFused Form = "DynamicQuantizeMatMul"
	// FormStandard writes only standard ONNX operators, as
	// onnxruntime.quantization.quantize_dynamic does:
	// DynamicQuantizeLinear (one per distinct activation) →
	// MatMulInteger → Cast → Mul by A_scale·B_scale; the bias Add stays.
	// For runtimes without the contrib operators. ONNX Runtime's
	// extended optimisations fuse it back into MatMulIntegerToFloat.
	FormStandard Form = "MatMulInteger"
)

// Type is what a rewrite turns the float32 model into.
type Type string

const (
	// TypeInt8 quantizes the encoder's weight MatMuls to int8 (dynamic
	// activation quantization); WeightBits, Form and Exclude say how. For
	// the CPU.
	TypeInt8 Type = "int8"
	// TypeFP16 converts the whole graph to float16 with float32 inputs and
	// outputs (rewriteFP16): half the weight bytes and tensor-core
	// MatMuls on a GPU. ONNX Runtime's CPU provider lacks float16 kernels
	// for most operators on x86, so it is for the CUDA provider.
	// WeightBits, Form and Exclude are ignored.
	TypeFP16 Type = "fp16"
)

// Config configures a quantization. Start from DefaultConfig. A Config is a
// plain value, safe to copy; Exclude is shared by copies, so do not modify
// it after handing a Config out.
type Config struct {
	// Type is TypeInt8 (the default; "" means it too) or TypeFP16.
	Type Type `json:"type,omitempty"`
	// WeightBits is the weight code width: 7 (codes −63…63, the default)
	// or 8 (−127…127). 7 bits keep ONNX Runtime's x86 u8×s8 kernels
	// exact on CPUs without VNNI, whose 16-bit pair sums saturate with
	// 8-bit weights (see the package documentation).
	WeightBits int `json:"weight_bits"`
	// Form is the operator form (FormFused or FormStandard).
	Form Form `json:"form"`
	// Exclude keeps in float32 every MatMul or Gemm whose node name or
	// weight initializer name matches one of these regular expressions
	// (RE2 syntax, unanchored). The default, {"pooler", "classifier"},
	// keeps the head of a BertForSequenceClassification: it sees one
	// token per sequence, so there is no speed to gain, and the score
	// comes straight out of it. ExcludeFFN() adds the feed-forward layers.
	Exclude []string `json:"exclude"`
	// Smooth, when set, migrates the activations' outlier channels into
	// the weights before quantizing (SmoothQuant; see Smooth). nil: no
	// migration. models/ort sets it, measured on calibration text, for
	// the int8 copies it makes where they run with 8-bit per-token codes
	// (ort.Plan.Smooth).
	Smooth *Smooth `json:"smooth,omitempty"`
}

// Smooth is a SmoothQuant migration (Xiao et al., 2023) measured on
// calibration inputs. For each activation a that quantized products read
// and AMax describes, channel j is divided by
//
//	s_j = amax_j^α / wmax_j^(1−α)
//
// (amax_j: the largest |a_j| seen in calibration; wmax_j: the largest
// |W[j][n]| over every weight that reads a) by one Mul in front of the
// products, and row j of those weights is multiplied by s_j before it is
// quantized. In exact arithmetic the products do not change; in int8 the
// channels that carry a BERT's outliers (one LayerNorm channel at 20–30
// where a token's other values stay under 5) shrink, so an activation
// scale fits the rest, and the weights, whose per-column scales have room,
// take the difference. ONNX Runtime runs the Mul before
// DynamicQuantizeMatMul; package onnx/fuse folds it into package onnx's
// QuantMatMul (its a_mul), where it costs a multiply per element in the
// quantization pass.
type Smooth struct {
	// Alpha is the migration strength α, in (0, 1] (SmoothQuant's
	// default 0.5; models/ort's copies use 0.75, ort.SmoothAlpha).
	Alpha float64 `json:"alpha"`
	// AMax holds per activation (a value name in the graph; Activations
	// lists the candidates) the largest magnitude of each of its channels
	// over the calibration inputs. Activations it lacks, or whose length
	// is not the weights' K, are not smoothed.
	AMax map[string][]float32 `json:"-"`
	// Source says what AMax was measured on; recorded in the report.
	Source string `json:"source,omitempty"`
}

// validate checks Alpha and that every AMax value is finite and ≥ 0.
func (s *Smooth) validate() error {
	if !(s.Alpha > 0 && s.Alpha <= 1) {
		return fmt.Errorf("%w: smooth alpha %v (want 0 < alpha <= 1)", ErrBadConfig, s.Alpha)
	}
	for name, v := range s.AMax {
		for _, x := range v {
			if !(x >= 0) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("%w: smooth amax of %q holds %v", ErrBadConfig, name, x)
			}
		}
	}
	return nil
}

// FP16Config converts to float16 (TypeFP16).
func FP16Config() Config { return Config{Type: TypeFP16} }

// ConfigFor is the default Config of type t: DefaultConfig for TypeInt8
// (or ""), FP16Config for TypeFP16; another type is ErrBadConfig.
func ConfigFor(t Type) (Config, error) {
	switch t {
	case "", TypeInt8:
		return DefaultConfig(), nil
	case TypeFP16:
		return FP16Config(), nil
	}
	return Config{}, fmt.Errorf("%w: type %q (want %q or %q)", ErrBadConfig, t, TypeInt8, TypeFP16)
}

// DefaultConfig returns int8 with 7-bit weights in the fused form with the
// classification head excluded.
func DefaultConfig() Config {
	return Config{Type: TypeInt8, WeightBits: 7, Form: FormFused, Exclude: []string{"pooler", "classifier"}}
}

// ExcludeFFN returns patterns matching the feed-forward MatMuls of a
// Hugging Face BERT export (intermediate.dense and output.dense of every
// layer, by node or weight name; not attention.output.dense). Appended to
// Config.Exclude they leave only the attention projections in int8: a
// third of the encoder's dense work, but the part whose quantization noise
// barely reaches the score (bench/results/rerank_int8_profile.md).
func ExcludeFFN() []string {
	return []string{`intermediate[./]dense`, `layer\.\d+[./]output[./]dense`}
}

// Validate reports the first invalid field, wrapped in ErrBadConfig.
func (c Config) Validate() error {
	switch c.Type {
	case "", TypeInt8:
	case TypeFP16:
		return nil
	default:
		return fmt.Errorf("%w: type %q (want %q or %q)", ErrBadConfig, c.Type, TypeInt8, TypeFP16)
	}
	if c.WeightBits != 7 && c.WeightBits != 8 {
		return fmt.Errorf("%w: weight bits %d (want 7 or 8)", ErrBadConfig, c.WeightBits)
	}
	if c.Form != FormFused && c.Form != FormStandard {
		return fmt.Errorf("%w: form %q (want %q or %q)", ErrBadConfig, c.Form, FormFused, FormStandard)
	}
	if c.Smooth != nil {
		if err := c.Smooth.validate(); err != nil {
			return err
		}
	}
	_, err := c.excludes()
	return err
}

// excludes compiles Exclude.
func (c Config) excludes() ([]*regexp.Regexp, error) {
	var res []*regexp.Regexp
	for _, e := range c.Exclude {
		if strings.TrimSpace(e) == "" {
			return nil, fmt.Errorf("%w: empty exclude pattern (it would exclude everything)", ErrBadConfig)
		}
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("%w: exclude pattern: %v", ErrBadConfig, err)
		}
		res = append(res, re)
	}
	return res, nil
}
