package postings

import (
	"fmt"
	"math"
)

// Variant names a BM25 scoring variant. The formulas are those of bm25s
// (xhluca/bm25s, bm25s/scoring.py); see scoring.go.
type Variant string

// The supported variants.
const (
	Lucene    Variant = "lucene"    // idf ln(1+(N-df+.5)/(df+.5)), tfc tf/(tf+k1·norm)
	Robertson Variant = "robertson" // idf ln((N-df+.5)/(df+.5)) clipped at 0, tfc as lucene
	ATIRE     Variant = "atire"     // idf ln(N/df), tfc tf(k1+1)/(tf+k1·norm)
	BM25L     Variant = "bm25l"     // idf ln((N+1)/(df+.5)), tfc (k1+1)(c+δ)/(k1+c+δ), c=tf/norm
	BM25Plus  Variant = "bm25+"     // idf ln((N+1)/df), tfc tf(k1+1)/(tf+k1·norm)+δ
)

// Config configures an Index. The zero Variant means Lucene. A Config is a
// plain value; copy it freely.
type Config struct {
	// Variant selects the BM25 formula ("" = lucene).
	Variant Variant
	// K1 is the term-frequency saturation (bm25s default 1.5, ours 1.2). Must be ≥ 0.
	K1 float64
	// B is the length normalisation in [0, 1].
	B float64
	// Delta is the δ of bm25l and bm25+ (ignored by the others). Must be ≥ 0.
	Delta float64
	// AnalyzerVersion is the version string of the analyzer that produced
	// the terms. It is stored with a snapshot; Open refuses a snapshot made
	// with another version (ErrAnalyzerMismatch) because its terms would
	// not match the queries' terms.
	AnalyzerVersion string
	// RebuildDrift is the relative avgdl drift since the last full build
	// above which Stats reports NeedsRebuild. 0 means the default 0.02.
	RebuildDrift float64
}

// DefaultConfig returns lucene, k1=1.2, b=0.75, delta=0.5, drift 2 %.
func DefaultConfig() Config {
	return Config{Variant: Lucene, K1: 1.2, B: 0.75, Delta: 0.5, RebuildDrift: 0.02}
}

// Validate reports whether the configuration is usable.
func (c Config) Validate() error {
	switch c.Variant {
	case "", Lucene, Robertson, ATIRE, BM25L, BM25Plus:
	default:
		return fmt.Errorf("%w: unknown variant %q", ErrConfig, c.Variant)
	}
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	if bad(c.K1) || c.K1 < 0 {
		return fmt.Errorf("%w: k1 %v must be finite and >= 0", ErrConfig, c.K1)
	}
	if bad(c.B) || c.B < 0 || c.B > 1 {
		return fmt.Errorf("%w: b %v must be in [0, 1]", ErrConfig, c.B)
	}
	if bad(c.Delta) || c.Delta < 0 {
		return fmt.Errorf("%w: delta %v must be finite and >= 0", ErrConfig, c.Delta)
	}
	if bad(c.RebuildDrift) || c.RebuildDrift < 0 {
		return fmt.Errorf("%w: rebuild drift %v must be finite and >= 0", ErrConfig, c.RebuildDrift)
	}
	return nil
}

// normalized fills the defaults of zero fields that have one.
func (c Config) normalized() Config {
	if c.Variant == "" {
		c.Variant = Lucene
	}
	if c.RebuildDrift == 0 {
		c.RebuildDrift = 0.02
	}
	return c
}
