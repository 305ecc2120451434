package cpu

import (
	"slices"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// TestDetectMatchesCpuid: Detect reads the same features as cpuid, and
// reads them once.
func TestDetectMatchesCpuid(t *testing.T) {
	f := Detect()
	for _, c := range []struct {
		name string
		got  bool
		id   cpuid.FeatureID
	}{
		{"AVX2", f.AVX2, cpuid.AVX2}, {"AVX512F", f.AVX512F, cpuid.AVX512F},
		{"AVX512VNNI", f.AVX512VNNI, cpuid.AVX512VNNI}, {"AMXINT8", f.AMXINT8, cpuid.AMXINT8},
		{"AMXBF16", f.AMXBF16, cpuid.AMXBF16}, {"AMXTILE", f.AMXTile, cpuid.AMXTILE},
	} {
		if c.got != cpuid.CPU.Supports(c.id) {
			t.Errorf("%s: %t, cpuid says %t", c.name, c.got, !c.got)
		}
	}
	if !slices.IsSorted(f.Flags) || !slices.Equal(Detect().Flags, f.Flags) {
		t.Errorf("flags %v: not sorted or not stable", f.Flags)
	}
}

// TestDerived: the derived predicates need every feature they name.
func TestDerived(t *testing.T) {
	all := Features{AVX512F: true, AVX512BW: true, AVX512VL: true, AVX512BF16: true, AMXTile: true, AMXINT8: true, AMXBF16: true}
	if !all.AMXInt8() || !all.AMXBF16Attention() || !all.Int8Sums32() {
		t.Fatalf("%+v: derived predicates false", all)
	}
	noTile := all
	noTile.AMXTile = false
	if noTile.AMXInt8() || noTile.AMXBF16Attention() {
		t.Error("AMX without tiles")
	}
	noBF16 := all
	noBF16.AVX512BF16 = false
	if noBF16.AMXBF16Attention() || !noBF16.AMXInt8() {
		t.Error("AVX512-BF16 decides the bfloat16 attention only")
	}
	if (Features{AVXVNNI: true}).Int8Sums32() != true || (Features{AVX2: true}).Int8Sums32() {
		t.Error("Int8Sums32: VNNI sums in 32 bits, AVX2 alone does not")
	}
	if got := (Features{AVX2: true, SSE4: true}).Named(); !slices.Equal(got, []string{"AVX2", "SSE4"}) {
		t.Errorf("Named: %v", got)
	}
}
