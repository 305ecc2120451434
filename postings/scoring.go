package postings

import "math"

// scorer evaluates the bm25s formulas (bm25s/scoring.py) in float64 the way
// numpy does there: idf is stored as float32 and multiplied by a float64 tfc,
// bm25l/bm25+ subtract a float32 "non-occurrence" score idf·tfc(0) per
// posting and add it back, summed over the query tokens, to every document.
// Per-posting scores are rounded to float32 like bm25s's score matrix.
type scorer struct {
	kind        variantKind
	k1, b, dlta float64
}

// variantKind is Variant as a small integer: switching on it in the
// per-posting hot path is a jump, not a string comparison.
type variantKind uint8

const (
	kLucene variantKind = iota
	kRobertson
	kATIRE
	kBM25L
	kBM25Plus
)

func newScorer(c Config) scorer {
	c = c.normalized()
	k := map[Variant]variantKind{Lucene: kLucene, Robertson: kRobertson, ATIRE: kATIRE, BM25L: kBM25L, BM25Plus: kBM25Plus}[c.Variant]
	return scorer{kind: k, k1: c.K1, b: c.B, dlta: c.Delta}
}

// idf is the inverse document frequency of a term in df of n documents.
func (s scorer) idf(df, n int) float64 {
	N, d := float64(n), float64(df)
	switch s.kind {
	case kRobertson:
		inner := (N - d + 0.5) / (d + 0.5)
		if inner < 1 {
			inner = 1
		}
		return math.Log(inner)
	case kATIRE:
		return math.Log(N / d)
	case kBM25L:
		return math.Log((N + 1) / (d + 0.5))
	case kBM25Plus:
		return math.Log((N + 1) / d)
	default: // Lucene
		return math.Log(1 + (N-d+0.5)/(d+0.5))
	}
}

// normB is (1-b) + b·dl/avgdl, the length normalisation of a document, in
// bm25s's operation order. An avgdl of 0 (only empty documents at build
// time) normalises every document as average.
func (s scorer) normB(dl int, avgdl float64) float64 {
	if avgdl <= 0 {
		return 1
	}
	return (1 - s.b) + s.b*float64(dl)/avgdl
}

// tfc is the term-frequency component for frequency tf in a document of
// length normalisation nb.
func (s scorer) tfc(tf, nb float64) float64 {
	k1 := s.k1
	switch s.kind {
	case kATIRE:
		den := tf + k1*nb
		if den == 0 {
			return 0
		}
		return (tf * (k1 + 1)) / den
	case kBM25L:
		c := tf / nb
		den := k1 + c + s.dlta
		if den == 0 {
			return 0
		}
		return ((k1 + 1) * (c + s.dlta)) / den
	case kBM25Plus:
		den := k1*nb + tf
		if den == 0 {
			return s.dlta
		}
		return ((k1 + 1) * tf / den) + s.dlta
	default: // Lucene, Robertson
		den := k1*nb + tf
		if den == 0 {
			return 0
		}
		return tf / den
	}
}

// hasNonOccurrence reports whether the variant scores absent terms (bm25l, bm25+).
func (s scorer) hasNonOccurrence() bool { return s.kind == kBM25L || s.kind == kBM25Plus }

// nonOcc is bm25s's non-occurrence score idf·tfc(tf=0) as float32 (0 for
// the variants without one).
func (s scorer) nonOcc(idf float64) float32 {
	if !s.hasNonOccurrence() {
		return 0
	}
	return float32(idf * s.tfc(0, 1))
}

// termWeights are the per-query constants of one term.
type termWeights struct {
	idf    float64 // float32-rounded idf, widened
	nonOcc float64 // float32-rounded non-occurrence score, widened
}

func (s scorer) weights(df, n int) termWeights {
	idf := s.idf(df, n)
	return termWeights{idf: float64(float32(idf)), nonOcc: float64(s.nonOcc(idf))}
}

// posting is the float32 score of one posting, exactly as bm25s stores it.
func (s scorer) posting(w termWeights, tf uint32, nb float64) float32 {
	return float32(w.idf*s.tfc(float64(tf), nb) - w.nonOcc)
}
