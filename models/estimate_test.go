package models_test

import (
	"math"
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
