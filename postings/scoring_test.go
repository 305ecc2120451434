package postings

import (
	"math"
	"testing"
)

// TestFormulas checks each variant on a 3-doc corpus against values computed
// by hand from bm25s/scoring.py (k1=1.2, b=0.75, δ=0.5):
//
//	a = x y x (dl 3), b = y z (dl 2), c = q (dl 1); N=3, avgdl=2.
//	x: df 1, tf(a)=2; y: df 2, tf(a)=tf(b)=1.
//	norm(a) = .25+.75·3/2 = 1.375, norm(b) = 1.
func TestFormulas(t *testing.T) {
	const k1, b, d = 1.2, 0.75, 0.5
	ln := math.Log
	na, nb := 1.375, 1.0
	robTfc := func(tf, n float64) float64 { return tf / (k1*n + tf) }
	atireTfc := func(tf, n float64) float64 { return tf * (k1 + 1) / (tf + k1*n) }
	lTfc := func(tf, n float64) float64 { c := tf / n; return (k1 + 1) * (c + d) / (k1 + c + d) }
	plusTfc := func(tf, n float64) float64 { return (k1+1)*tf/(k1*n+tf) + d }
	type want struct{ a, b float64 }
	cases := []struct {
		name string
		v    Variant
		want want
	}{
		{"lucene", Lucene, want{
			ln(1+2.5/1.5)*robTfc(2, na) + ln(1+1.5/2.5)*robTfc(1, na),
			ln(1+1.5/2.5) * robTfc(1, nb)}},
		// robertson idf ln((N-df+.5)/(df+.5)): x → ln(2.5/1.5); y → ln(1.5/2.5) < 0 → clipped to 0.
		{"robertson", Robertson, want{ln(2.5/1.5) * robTfc(2, na), 0}},
		{"atire", ATIRE, want{
			ln(3.0/1)*atireTfc(2, na) + ln(3.0/2)*atireTfc(1, na),
			ln(3.0/2) * atireTfc(1, nb)}},
		// bm25l/bm25+: per posting idf·(tfc - tfc(0)), plus Σ_query idf·tfc(0) for every doc.
		{"bm25l", BM25L, want{
			ln(4/1.5)*lTfc(2, na) + ln(4/2.5)*lTfc(1, na),
			ln(4/1.5)*lTfc(0, 1) + ln(4/2.5)*lTfc(1, nb)}},
		{"bm25+", BM25Plus, want{
			ln(4.0/1)*plusTfc(2, na) + ln(4.0/2)*plusTfc(1, na),
			ln(4.0/1)*d + ln(4.0/2)*plusTfc(1, nb)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := mustNew(t, cfgFor(tc.v))
			commitDocs(t, ix,
				Doc{ID: "a", Terms: []string{"x", "y", "x"}},
				Doc{ID: "b", Terms: []string{"y", "z"}},
				Doc{ID: "c", Terms: []string{"q"}})
			for _, ex := range []bool{false, true} {
				hits := search(t, ix, Query{Terms: []string{"x", "y"}, K: 10, Exhaustive: ex})
				got := map[string]float64{}
				for _, h := range hits {
					got[h.ID] = float64(h.Score)
				}
				if _, ok := got["c"]; ok {
					t.Errorf("doc c matches no query term but was returned")
				}
				for id, w := range map[string]float64{"a": tc.want.a, "b": tc.want.b} {
					g, ok := got[id]
					if w == 0 {
						if ok {
							t.Errorf("%s: score-0 doc returned (%v)", id, g)
						}
						continue
					}
					if !ok || math.Abs(g-w) > 1e-6*w {
						t.Errorf("exhaustive=%v %s: got %v (present %v), want %v", ex, id, g, ok, w)
					}
				}
			}
		})
	}
}

// TestRepeatedQueryTerms: bm25s sums the score of every query token, so a
// repeated term weighs double (and bm25l/bm25+ add its non-occurrence twice).
func TestRepeatedQueryTerms(t *testing.T) {
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			ix := mustNew(t, cfgFor(v))
			commitDocs(t, ix,
				Doc{ID: "a", Terms: []string{"x", "y", "x"}},
				Doc{ID: "b", Terms: []string{"y", "z"}},
				Doc{ID: "c", Terms: []string{"q", "z"}})
			one := search(t, ix, Query{Terms: []string{"x"}, K: 1})
			two := search(t, ix, Query{Terms: []string{"x", "x"}, K: 1})
			if len(one) != 1 || len(two) != 1 {
				t.Fatalf("hits %v %v", one, two)
			}
			if math.Abs(float64(two[0].Score-2*one[0].Score)) > 1e-6 {
				t.Errorf("x x = %v, want 2 × %v", two[0].Score, one[0].Score)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"empty variant", func(c *Config) { c.Variant = "" }, true},
		{"bad variant", func(c *Config) { c.Variant = "bm26" }, false},
		{"negative k1", func(c *Config) { c.K1 = -1 }, false},
		{"b above 1", func(c *Config) { c.B = 1.5 }, false},
		{"nan delta", func(c *Config) { c.Delta = math.NaN() }, false},
		{"negative drift", func(c *Config) { c.RebuildDrift = -0.1 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if _, nerr := New(c); (nerr == nil) != tc.ok {
				t.Fatalf("New() = %v", nerr)
			}
		})
	}
}
