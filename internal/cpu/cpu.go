package cpu

import (
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/cpuid/v2"
)

// Features is what the module's kernels and plans depend on, as read from
// cpuid.
type Features struct {
	// Brand is the CPU's model name, trimmed ("" where cpuid has none).
	Brand string
	// PhysicalCores and LogicalCores are cpuid's counts (0 where unknown).
	PhysicalCores, LogicalCores int

	SSE4, AVX, AVX2, FMA3, BMI2, POPCNT bool
	AVX512F, AVX512BW, AVX512VL         bool
	// AVX512VNNI and AVXVNNI are the integer dot products (vpdpbusd) that
	// sum u8 × s8 in 32 bits.
	AVX512VNNI, AVXVNNI bool
	AVX512BF16          bool
	// AMXTile, AMXINT8 and AMXBF16 are the tile registers and their
	// integer and bfloat16 products (the kernel must also grant the tile
	// state: package onnx asks).
	AMXTile, AMXINT8, AMXBF16 bool
	ASIMD, SVE                bool // arm64

	// Flags is every feature cpuid knows of this CPU, sorted: what a
	// table of timings measured here is keyed by.
	Flags []string
}

var (
	once     sync.Once
	detected Features
)

// Detect returns this CPU's features, read at the first call.
func Detect() Features {
	once.Do(func() { detected = read(&cpuid.CPU) })
	return detected
}

func read(c *cpuid.CPUInfo) Features {
	flags := c.FeatureSet()
	slices.Sort(flags)
	return Features{
		Brand:         strings.TrimSpace(c.BrandName),
		PhysicalCores: c.PhysicalCores,
		LogicalCores:  c.LogicalCores,
		SSE4:          c.Supports(cpuid.SSE4),
		AVX:           c.Supports(cpuid.AVX),
		AVX2:          c.Supports(cpuid.AVX2),
		FMA3:          c.Supports(cpuid.FMA3),
		BMI2:          c.Supports(cpuid.BMI2),
		POPCNT:        c.Supports(cpuid.POPCNT),
		AVX512F:       c.Supports(cpuid.AVX512F),
		AVX512BW:      c.Supports(cpuid.AVX512BW),
		AVX512VL:      c.Supports(cpuid.AVX512VL),
		AVX512VNNI:    c.Supports(cpuid.AVX512VNNI),
		AVXVNNI:       c.Supports(cpuid.AVXVNNI),
		AVX512BF16:    c.Supports(cpuid.AVX512BF16),
		AMXTile:       c.Supports(cpuid.AMXTILE),
		AMXINT8:       c.Supports(cpuid.AMXINT8),
		AMXBF16:       c.Supports(cpuid.AMXBF16),
		ASIMD:         c.Supports(cpuid.ASIMD),
		SVE:           c.Supports(cpuid.SVE),
		Flags:         flags,
	}
}

// Int8Sums32 reports whether the CPU's integer dot products sum u8 × s8 in
// 32 bits (AVX-512 VNNI, AVX-VNNI, AMX-INT8): exact with 8-bit weights.
// Without them ONNX Runtime's x86 kernel (vpmaddubsw) sums pairs in 16
// bits, which 8-bit weights can saturate.
func (f Features) Int8Sums32() bool { return f.AVX512VNNI || f.AVXVNNI || f.AMXINT8 }

// AMXInt8 reports what package onnx's per-token int8 operator needs on AMX tiles:
// AMX-INT8 and AVX-512 F, BW and VL.
func (f Features) AMXInt8() bool {
	return f.AMXTile && f.AMXINT8 && f.AVX512F && f.AVX512BW && f.AVX512VL
}

// AMXBF16Attention reports what package onnx's bfloat16 Attention needs:
// AMX-BF16 and AVX-512 F, BW, VL and BF16.
func (f Features) AMXBF16Attention() bool {
	return f.AMXTile && f.AMXBF16 && f.AVX512F && f.AVX512BW && f.AVX512VL && f.AVX512BF16
}

// Named lists the features of interest to this module's kernels that the
// CPU has, sorted by name: what benchmark reports print.
func (f Features) Named() []string {
	var out []string
	for _, n := range []struct {
		name string
		ok   bool
	}{
		{"AMXINT8", f.AMXINT8}, {"ASIMD", f.ASIMD}, {"AVX", f.AVX}, {"AVX2", f.AVX2},
		{"AVX512BF16", f.AVX512BF16}, {"AVX512BW", f.AVX512BW}, {"AVX512F", f.AVX512F},
		{"AVX512VL", f.AVX512VL}, {"AVX512VNNI", f.AVX512VNNI}, {"AVXVNNI", f.AVXVNNI},
		{"BMI2", f.BMI2}, {"FMA3", f.FMA3}, {"POPCNT", f.POPCNT}, {"SSE4", f.SSE4}, {"SVE", f.SVE},
	} {
		if n.ok {
			out = append(out, n.name)
		}
	}
	return out
}
