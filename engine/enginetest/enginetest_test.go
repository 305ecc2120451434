package enginetest

import (
	"hash/fnv"
	"slices"
	"testing"
)

// TestEachTokenHash checks the allocation-free hashing loop against its
// definition: FNV-1a of every token Tokens returns.
func TestEachTokenHash(t *testing.T) {
	for _, text := range []string{
		"", "  ", "Hello, World!", "ÉCOLE d'été — 42x ÅNGSTRÖM", "a\xffb", "trailing", "Σίσυφος ΙΣΤΟΣ", "x1-y2_z3",
	} {
		var want []uint64
		for _, tok := range Tokens(text) {
			f := fnv.New64a()
			f.Write([]byte(tok))
			want = append(want, f.Sum64())
		}
		var got []uint64
		eachTokenHash(text, func(h uint64) { got = append(got, h) })
		if !slices.Equal(got, want) {
			t.Errorf("%q: hashes %x, want %x", text, got, want)
		}
	}
}
