package ort

import (
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/cpu"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/onnx/fuse"
)

// Machines to plan for: a CPU without VNNI, one with VNNI, one with AMX
// whose operators run their AMX paths.
var (
	planAVX2 = Machine{CPU: cpu.Features{AVX2: true, FMA3: true}}
	planVNNI = Machine{CPU: cpu.Features{AVX2: true, AVX512F: true, AVX512BW: true, AVX512VL: true, AVX512VNNI: true}}
	planAMX  = Machine{CPU: cpu.Features{AVX512F: true, AVX512BW: true, AVX512VL: true, AVX512VNNI: true, AVX512BF16: true,
		AMXTile: true, AMXINT8: true, AMXBF16: true}, AttentionBF16: true, QuantMatMulAMX: true}
)

// TestNewPlan: each machine and setting gives the plan the package
// documents.
func TestNewPlan(t *testing.T) {
	int8 := models.Config{Quantize: models.QuantizeInt8}
	with := func(f func(*models.Config)) models.Config { c := int8; f(&c); return c }
	for _, c := range []struct {
		name    string
		cfg     models.Config
		m       Machine
		weights int
		acts    string
		bits    int
		smooth  float64
		cpu     fuse.Rewrites
		attn    string
		suffix  string
	}{
		{"float32 avx2", models.Config{}, planAVX2, 0, ActivationsFloat, 0, 0, fuse.ForCPU, AttentionFloat32, ""},
		{"float32 amx", models.Config{}, planAMX, 0, ActivationsFloat, 0, 0,
			fuse.ForCPU | fuse.RewriteAttentionBF16 | fuse.RewriteQuantMatMulAMX, AttentionBF16, ""},
		{"fp16", models.Config{Quantize: models.QuantizeFP16}, planAVX2, 0, ActivationsFloat, 0, 0, fuse.ForCPU, AttentionFloat32, "-fp16"},
		{"int8 avx2", int8, planAVX2, 7, ActivationsPerTensor, 8, 0, fuse.ForCPU, AttentionFloat32, "-w7"},
		{"int8 vnni", int8, planVNNI, 8, ActivationsPerTensor, 8, 0, fuse.ForCPU, AttentionFloat32, "-w8"},
		{"int8 amx", int8, planAMX, 8, ActivationsPerToken, 16, 0,
			fuse.ForCPU | fuse.RewriteAttentionBF16 | fuse.RewriteQuantMatMulAMX, AttentionBF16, "-w8"},
		{"int8 amx a8", with(func(c *models.Config) { c.Int8ActivationBits = 8 }), planAMX, 8, ActivationsPerToken, 8, SmoothAlpha,
			fuse.ForCPU | fuse.RewriteAttentionBF16 | fuse.RewriteQuantMatMulAMX | fuse.QuantMatMulA8, AttentionBF16, "-w8-s0.75"},
		{"int8 a8 without amx", with(func(c *models.Config) { c.Int8ActivationBits = 8 }), planVNNI, 8, ActivationsPerTensor, 8, 0,
			fuse.ForCPU, AttentionFloat32, "-w8"},
		{"int8 amx per tensor", with(func(c *models.Config) { c.Int8PerTensor = true; c.Int8ActivationBits = 8 }), planAMX, 8, ActivationsPerTensor, 8, 0,
			fuse.ForCPU | fuse.RewriteAttentionBF16, AttentionBF16, "-w8"},
		{"int8 amx no fusion", with(func(c *models.Config) { c.DisableFusion = true }), planAMX, 8, ActivationsPerTensor, 8, 0, 0, AttentionFloat32, "-w8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewPlan(c.cfg, c.m)
			if p.WeightBits != c.weights || p.Activations != c.acts || p.ActivationBits != c.bits || p.Smooth != c.smooth ||
				p.CPU != c.cpu || p.Attention != c.attn || p.CopySuffix() != c.suffix {
				t.Errorf("plan %+v (suffix %q)", p, p.CopySuffix())
			}
			if !c.cfg.DisableFusion && p.CUDA != fuse.ForCUDA {
				t.Errorf("CUDA rewrites %s", Rewrites(p.CUDA))
			}
			if p.Provider != "auto" || len(p.Why) == 0 || !strings.HasPrefix(p.Key(), "v3 ") {
				t.Errorf("provider %q, why %q, key %q", p.Provider, p.Why, p.Key())
			}
		})
	}
}

// TestPlanKey: the key moves with every decision and with what was asked
// of an int8 model, not with the explanation or the load's outcome.
func TestPlanKey(t *testing.T) {
	int8 := models.Config{Quantize: models.QuantizeInt8}
	base := NewPlan(int8, planAVX2)
	seen := map[string]string{base.Key(): "int8"}
	for name, p := range map[string]Plan{
		"float32":     NewPlan(models.Config{}, planAVX2),
		"vnni":        NewPlan(int8, planVNNI),
		"amx":         NewPlan(int8, planAMX),
		"per tensor":  NewPlan(models.Config{Quantize: models.QuantizeInt8, Int8PerTensor: true}, planAVX2),
		"8-bit codes": NewPlan(models.Config{Quantize: models.QuantizeInt8, Int8ActivationBits: 8}, planAVX2),
		"cuda":        NewPlan(models.Config{Quantize: models.QuantizeInt8, Provider: "cuda"}, planAVX2),
	} {
		if other, ok := seen[p.Key()]; ok {
			t.Errorf("%s: same key as %s: %s", name, other, p.Key())
		}
		seen[p.Key()] = name
	}
	if NewPlan(models.Config{Quantize: models.QuantizeInt8, Int8ActivationBits: 16}, planAVX2).Key() != base.Key() {
		t.Error("16-bit codes, the default, named explicitly, moved the key")
	}
	p := base
	p.Why, p.Loaded = nil, Loaded{Provider: "cpu", Fusion: "none"}
	p.Machine = planVNNI
	if p.Key() != base.Key() {
		t.Error("the explanation or the outcome moved the key")
	}
}
