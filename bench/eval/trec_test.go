package eval

import (
	"slices"
	"testing"
)

func TestTrecOrder(t *testing.T) {
	type hit struct {
		ID    string
		Score float32
	}
	hits := []hit{{ID: "a", Score: 1}, {ID: "c", Score: 2}, {ID: "b", Score: 1}, {ID: "10", Score: 1}}
	// Score descending, then id descending as strings (trec_eval strcmp).
	want := []string{"c", "b", "a", "10"}
	got := TrecOrder(hits, func(h hit) string { return h.ID }, func(h hit) float64 { return float64(h.Score) })
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if hits[0].ID != "a" {
		t.Errorf("input reordered")
	}
}
