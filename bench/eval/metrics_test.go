package eval

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestMetrics(t *testing.T) {
	q := map[string]int{"a": 1, "b": 2, "c": 1, "z": 0, "n": -1}
	tests := []struct {
		name   string
		ranked []string
		k      int
		ndcg   float64
		recall float64
		mrr    float64
	}{
		// DCG = 2/log2(3) + 1/log2(4) = 1.76186; IDCG = 2 + 1/log2(3) + 1/2 = 3.13093.
		{"graded k10", []string{"x", "b", "a"}, 10, 0.56273, 2.0 / 3, 0.5},
		// DCG = 2/log2(3); IDCG = 2 + 1/log2(3).
		{"graded k2", []string{"x", "b", "a"}, 2, 0.47963, 1.0 / 3, 0.5},
		{"perfect", []string{"b", "a", "c"}, 10, 1, 1, 1},
		{"nothing relevant", []string{"x", "z", "n"}, 10, 0, 0, 0},
		{"empty", nil, 10, 0, 0, 0},
		{"k zero", []string{"b"}, 0, 0, 0, 0},
		{"duplicates count once", []string{"b", "b", "a"}, 10, (2 + 1/math.Log2(3)) / 3.13093, 2.0 / 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NDCG(tt.ranked, q, tt.k); !near(got, tt.ndcg) {
				t.Errorf("NDCG = %.5f, want %.5f", got, tt.ndcg)
			}
			if got := Recall(tt.ranked, q, tt.k); !near(got, tt.recall) {
				t.Errorf("Recall = %.5f, want %.5f", got, tt.recall)
			}
			if got := MRR(tt.ranked, q, tt.k); !near(got, tt.mrr) {
				t.Errorf("MRR = %.5f, want %.5f", got, tt.mrr)
			}
		})
	}
	if got := NDCG([]string{"a"}, map[string]int{"a": 0}, 10); got != 0 {
		t.Errorf("no relevant judgments: NDCG = %v", got)
	}
}

func TestEvaluateIdenticalIDs(t *testing.T) {
	qrels := Qrels{"1": {"5": 1}, "2": {"2": 1}}
	run := Run{"1": {"1", "5"}, "2": {"2", "9"}, "3": {"5"}}
	beir := Evaluate(qrels, run, Options{DropIdenticalIDs: true})
	// BEIR drops doc "1" for query "1" (→ "5" at rank 1, nDCG 1) and doc
	// "2" for query "2" (→ nothing relevant, 0); query "3" has no qrels.
	if beir.Queries != 2 || !near(beir.NDCG10, 0.5) || !near(beir.MRR10, 0.5) {
		t.Errorf("BEIR convention: %+v", beir)
	}
	keep := Evaluate(qrels, run, Options{})
	// q1: "5" at rank 2 → 1/log2(3) = 0.63093; q2: "2" at rank 1 → 1.
	if !near(keep.NDCG10, (1/math.Log2(3)+1)/2) || !near(keep.MRR10, 0.75) || !near(keep.Recall100, 1) {
		t.Errorf("keep identical: %+v", keep)
	}
}

// TestDuplicatesCountOnce: a repeated id counts once and takes no rank, in
// every metric alike: each scores a list with repeats as the list without
// them (all pytrec_eval sees: its run is a dict).
func TestDuplicatesCountOnce(t *testing.T) {
	q := map[string]int{"a": 1, "b": 2}
	dup := []string{"x", "x", "a", "b", "a"}
	dedup := []string{"x", "a", "b"}
	for _, k := range []int{1, 2, 3, 10} {
		for _, m := range []struct {
			name string
			f    func([]string, map[string]int, int) float64
		}{{"NDCG", NDCG}, {"Recall", Recall}, {"MRR", MRR}} {
			if g, w := m.f(dup, q, k), m.f(dedup, q, k); math.Abs(g-w) > 1e-12 {
				t.Errorf("%s@%d: %.5f with repeats, %.5f without", m.name, k, g, w)
			}
		}
	}
	if got := MRR(dup, q, 2); got != 0.5 {
		t.Errorf("MRR@2 = %v, want 0.5 (a at the second distinct rank)", got)
	}
}
