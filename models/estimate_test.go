package models_test

import (
	"math"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0}, {"hello", 1}, {"hello world", 2}, {"a, b.", 4}, {"abcdefghijklm", 3}, {"日本語", 1},
	} {
		if got := models.EstimateTokens(tc.text); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// TestEstimateUpTo: the capped estimates equal the full ones cut at the
// limit, for every limit around the texts' counts (negative and zero
// included), and the pair form matches EstimatePairTokens likewise.
func TestEstimateUpTo(t *testing.T) {
	texts := []string{"", " ", "hello", "a, b.", "abcdefghijklm nop", "日本語 テキスト", strings.Repeat("x", 40) + " y, z", "word " + strings.Repeat("中", 20)}
	for _, a := range texts {
		n := models.EstimateTokens(a)
		for limit := -2; limit <= n+2; limit++ {
			if got, want := models.EstimateTokensUpTo(a, limit), max(0, min(n, limit)); got != want {
				t.Errorf("EstimateTokensUpTo(%q, %d) = %d, want %d", a, limit, got, want)
			}
		}
		for _, b := range texts {
			p := models.EstimatePairTokens(a, b)
			for limit := -2; limit <= p+2; limit++ {
				if got, want := models.EstimatePairTokensUpTo(a, b, limit), max(0, min(p, limit)); got != want {
					t.Errorf("EstimatePairTokensUpTo(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
				}
			}
		}
	}
}

func TestSigmoid(t *testing.T) {
	for _, tc := range []struct {
		logit float32
		want  float64
	}{{0, 0.5}, {2, 0.8807970779778823}, {-2, 0.11920292202211755}, {100, 1}, {-100, 3.720075976020836e-44}} {
		if got := models.Sigmoid(tc.logit); math.Abs(got-tc.want) > 1e-15*math.Max(1, tc.want) {
			t.Errorf("Sigmoid(%v) = %v, want %v", tc.logit, got, tc.want)
		}
	}
}
