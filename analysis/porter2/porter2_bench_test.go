package porter2_test

import (
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/hybrank/hybrank/analysis/porter2"
)

// benchText is abstract-like prose as the analyzer sees it: lowercased,
// stopwords kept, a mix of words that stem to themselves, to a prefix of
// themselves, and to something else (happi, relat, ...).
const benchText = "alterations of the architecture of cerebral white matter in the developing human brain " +
	"can affect cortical development and result in functional disabilities a line scan diffusion weighted " +
	"magnetic resonance imaging sequence with diffusion tensor analysis was applied to measure the " +
	"apparent diffusion coefficient to calculate relative anisotropy and to delineate three dimensional " +
	"fiber architecture in cerebral white matter in preterm and full term infants generously happily " +
	"relational conditional hopefulness effectiveness communications proceeding replacement adjustable " +
	"mice cells were significantly reduced following treatment with inhibitors of the signaling pathway"

var (
	benchWords = strings.Fields(benchText)
	sink       string
)

// BenchmarkStem stems one word per op, cycling through benchWords, so ns/op
// and allocs/op are per word; "snowball" is kljensen/snowball for
// comparison.
func BenchmarkStem(b *testing.B) {
	impls := []struct {
		name string
		stem func(string) string
	}{
		{"porter2", porter2.Stem},
		{"snowball", func(w string) string { return english.Stem(w, true) }},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sink = impl.stem(benchWords[i])
				if i++; i == len(benchWords) {
					i = 0
				}
			}
		})
	}
}
