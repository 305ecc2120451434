package ort

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/internal/cpu"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
)

// PlanVersion names the generation of the arithmetic a Plan describes.
// Bump it when a change to the quantizer, the graph rewrites or the
// custom operators moves a model's outputs under an unchanged plan, so
// that everything keyed by Plan.Key (quantized copies' cost tables, the
// bench vector cache) misses. 3: 16-bit per-token activation codes and
// unsmoothed int8 copies by default (what bench/vcache called int8-2).
const PlanVersion = 3

// Activation quantization schemes of an int8 model (Plan.Activations).
const (
	// ActivationsFloat: no int8 products (a float32 or float16 model).
	ActivationsFloat = "float"
	// ActivationsPerTensor: ONNX Runtime's DynamicQuantizeMatMul, one
	// uint8 scale per tensor (the whole batch).
	ActivationsPerTensor = "per-tensor"
	// ActivationsPerToken: package onnx's QuantMatMul, one scale per
	// token, on AMX-INT8 tiles.
	ActivationsPerToken = "per-token"
)

// Attention modes of a plan's CPU sessions (Plan.Attention).
const (
	AttentionFloat32 = "float32"
	// AttentionBF16: an int8 graph's self-attention as package onnx's
	// Attention operator, both products in bfloat16 on AMX tiles.
	AttentionBF16 = "bf16"
)

// Machine is what a plan reads from the machine it runs on: the CPU's
// features (package internal/cpu, read once) and whether package onnx's
// custom operators run their AMX paths here (after onnx.Init: the
// operators loaded and the kernel granted the tile state). Tests build
// one to plan for another machine.
type Machine struct {
	CPU cpu.Features
	// AttentionBF16 is onnx.AttentionBF16, QuantMatMulAMX
	// onnx.QuantMatMulAMX.
	AttentionBF16, QuantMatMulAMX bool
}

// ThisMachine returns this machine's features; the operators' AMX paths
// are reported only once onnx.Init has run.
func ThisMachine() Machine {
	return Machine{CPU: cpu.Detect(), AttentionBF16: onnx.AttentionBF16(), QuantMatMulAMX: onnx.QuantMatMulAMX()}
}

// Plan is how one model is accelerated, decided once per loaded model
// from its Config and the Machine: the provider asked for, the quantized
// copy (weight and activation widths, smoothing), the graph rewrites per
// provider (fuse.WriteFile applies them in the order Rewrites lists) and
// the attention's arithmetic. Everything that depends on how a model
// computes consumes a Plan and its Key: the quantized copy's folder name,
// the cost table's cache key, bench/vcache's key and every benchmark
// report. A plain value.
type Plan struct {
	// Provider is the execution provider asked for (models.Config.Provider:
	// "auto", "cpu" or "cuda"); which one the session got is Loaded's.
	Provider string
	// Quantize is models.Config.Quantize: "", "int8" or "fp16".
	Quantize string
	// WeightBits is the weight code width of an int8 copy: 8 where the
	// CPU's integer kernels sum in 32 bits (cpu.Features.Int8Sums32), else
	// 7 (vpmaddubsw's 16-bit pair sums would saturate); 0 unless Quantize
	// is int8.
	WeightBits int
	// Activations is how an int8 model's activations are quantized
	// (ActivationsPerToken or ActivationsPerTensor); ActivationsFloat for
	// float models. ActivationBits is their code width: 16 or 8 per token,
	// 8 per tensor, 0 for float models.
	Activations    string
	ActivationBits int
	// Smooth is the SmoothQuant migration strength of an int8 copy
	// (SmoothAlpha), 0 for none: copies are smoothed only where their
	// products run with 8-bit per-token codes. With 16-bit codes the
	// activations need no help and the migration only coarsens the weights
	// (a trained encoder: worst per-query Spearman 0.994 unsmoothed, 0.991
	// smoothed); with one scale per tensor it does not pay either: the
	// larger weight rows coarsen every column's steps and the batch's
	// outlier tokens still set the activations' (mean 0.969 smoothed
	// against 0.98 without; bench/results/rerank_int8_profile.md).
	Smooth float64
	// CPU and CUDA are the graph rewrites of the sessions on each
	// provider; both zero with models.Config.DisableFusion.
	CPU, CUDA fuse.Rewrites
	// Attention is the CPU sessions' attention arithmetic for int8 graphs
	// (AttentionBF16 or AttentionFloat32; float graphs keep float32).
	Attention string
	// Asked is the int8 settings of the Config as asked, normalised (the
	// default activation width named): a cache keyed by the plan keeps
	// apart what was asked differently even where this machine runs both
	// alike. Zero unless Quantize is int8.
	Asked Int8Request
	// Machine is what the plan was read from.
	Machine Machine
	// Why says, one line per choice, why the plan is what it is.
	Why []string
	// Loaded is what the load made of the plan: zero before the model has
	// loaded.
	Loaded Loaded
}

// Loaded is what a load did with its plan.
type Loaded struct {
	// Provider is the provider the session runs on ("cpu" or "cuda").
	Provider string
	// Fusion is what package onnx/fuse did to the session's graph: its
	// Report's String, "none" (nothing to rewrite, a file the rewrite
	// cannot read, or a copy the runtime refused or could not run) or
	// "off" (DisableFusion).
	Fusion string
	// Rewrites is the same as a Report: zero unless the session runs a
	// rewritten copy.
	Rewrites fuse.Report
}

// Int8Request is what a Config asks of an int8 model's arithmetic.
type Int8Request struct {
	PerTensor      bool // models.Config.Int8PerTensor
	ActivationBits int  // models.Config.Int8ActivationBits, 0 read as 16
	Fusion         bool // not models.Config.DisableFusion
}

// NewPlan decides the plan of a model loaded with cfg on m.
func NewPlan(cfg models.Config, m Machine) Plan {
	p := Plan{Provider: cfg.Provider, Quantize: cfg.Quantize, Activations: ActivationsFloat, Attention: AttentionFloat32, Machine: m}
	if p.Provider == "" {
		p.Provider = "auto"
	}
	why := func(format string, args ...any) { p.Why = append(p.Why, fmt.Sprintf(format, args...)) }
	bits := cfg.Int8ActivationBits
	if bits == 0 {
		bits = 16
	}
	// An int8 graph's products run per token where the operator can run
	// here, the rewrites run and the Config does not keep the runtime's
	// kernel; these rewrites change int8 graphs only (an int8 export
	// loaded as it is included).
	perToken := m.QuantMatMulAMX && !cfg.Int8PerTensor && !cfg.DisableFusion
	if !cfg.DisableFusion {
		p.CPU, p.CUDA = fuse.ForCPU, fuse.ForCUDA
		if m.AttentionBF16 {
			p.CPU |= fuse.RewriteAttentionBF16
			p.Attention = AttentionBF16
			why("attention bf16: AMX-BF16 tiles granted (int8 graphs)")
		}
		if perToken {
			p.CPU |= fuse.RewriteQuantMatMulAMX
			if bits == 8 {
				p.CPU |= fuse.QuantMatMulA8
			}
		}
		why("graph rewrites: %s on the CPU, %s on CUDA (the int8 ones change int8 graphs only)", Rewrites(p.CPU), Rewrites(p.CUDA))
	} else {
		why("no graph rewrites: DisableFusion")
	}
	if cfg.Quantize == models.QuantizeInt8 {
		p.Asked = Int8Request{PerTensor: cfg.Int8PerTensor, ActivationBits: bits, Fusion: !cfg.DisableFusion}
		p.WeightBits = 7
		if m.CPU.Int8Sums32() {
			p.WeightBits = 8
			why("8-bit weights: the CPU's integer products sum in 32 bits (VNNI or AMX)")
		} else {
			why("7-bit weights: no VNNI or AMX, the runtime's 16-bit pair sums would saturate 8-bit codes")
		}
		switch {
		case perToken:
			p.Activations, p.ActivationBits = ActivationsPerToken, bits
			why("activations per token in %d-bit codes: QuantMatMul on AMX-INT8 tiles", bits)
			if bits == 8 {
				p.Smooth = SmoothAlpha
				why("smoothed copy (alpha %g): 8-bit per-token codes", SmoothAlpha)
			}
		case cfg.Int8PerTensor:
			p.Activations, p.ActivationBits = ActivationsPerTensor, 8
			why("activations per tensor: Int8PerTensor keeps the runtime's kernel")
		case cfg.DisableFusion:
			p.Activations, p.ActivationBits = ActivationsPerTensor, 8
			why("activations per tensor: DisableFusion keeps the runtime's kernel")
		default:
			p.Activations, p.ActivationBits = ActivationsPerTensor, 8
			why("activations per tensor: no AMX-INT8 QuantMatMul here")
		}
	}
	return p
}

// PlanFor initialises the runtime (cfg.LibraryPath: the custom
// operators' AMX paths are known only then) and returns the plan of a
// model loaded with cfg on this machine.
func PlanFor(cfg models.Config) (Plan, error) {
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: cfg.LibraryPath}); err != nil {
		return Plan{}, err
	}
	return NewPlan(cfg, ThisMachine()), nil
}

// Rewrites names the rewrites r selects in the order fuse.WriteFile
// applies them, e.g. "skiplayernorm+firsttoken", "none".
func Rewrites(r fuse.Rewrites) string {
	var names []string
	for _, n := range []struct {
		bit  fuse.Rewrites
		name string
	}{
		{fuse.RewriteSkipLayerNorm, "skiplayernorm"},
		{fuse.RewriteFirstToken, "firsttoken"},
		{fuse.RewriteAttentionBF16, "attention-bf16"},
		{fuse.RewriteQuantMatMulAMX, "quantmatmul"},
		{fuse.QuantMatMulA8, "a8"},
	} {
		if r&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// Key names the plan's arithmetic: PlanVersion and every decision (not
// Machine or Why, which only explain them, nor Loaded), e.g.
// "v3 provider=auto quantize=int8 weights=8 activations=per-token16
// smooth=0 cpu=skiplayernorm+firsttoken+quantmatmul cuda=firsttoken
// attention=float32 asked=tensor:false,bits:16,fusion:true". Two loads
// with the same Key compute alike on the same model file.
func (p Plan) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d provider=%s quantize=%s", PlanVersion, p.Provider, orNone(p.Quantize))
	fmt.Fprintf(&b, " weights=%d activations=%s%d smooth=%s", p.WeightBits, p.Activations, p.ActivationBits, strconv.FormatFloat(p.Smooth, 'g', -1, 64))
	fmt.Fprintf(&b, " cpu=%s cuda=%s attention=%s", Rewrites(p.CPU), Rewrites(p.CUDA), p.Attention)
	if p.Asked != (Int8Request{}) {
		fmt.Fprintf(&b, " asked=tensor:%t,bits:%d,fusion:%t", p.Asked.PerTensor, p.Asked.ActivationBits, p.Asked.Fusion)
	}
	return b.String()
}

// CopySuffix is what names an int8 copy's folder after its source's name
// and digest: "-w<weight bits>", and "-s<alpha>" when smoothed; "-fp16"
// for a float16 copy; "" otherwise. Copies of different plans live side
// by side in one cache (a load with Int8PerTensor must not replace a copy
// another load is reading).
func (p Plan) CopySuffix() string {
	switch p.Quantize {
	case models.QuantizeInt8:
		s := fmt.Sprintf("-w%d", p.WeightBits)
		if p.Smooth != 0 {
			s += fmt.Sprintf("-s%g", p.Smooth)
		}
		return s
	case "":
		return ""
	}
	return "-" + p.Quantize
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
