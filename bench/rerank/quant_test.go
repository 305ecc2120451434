package rerank

import (
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/throughput"
)

func TestCompareQuant(t *testing.T) {
	text := throughput.Text{Queries: []string{"a", "b", "c"}, PerQuery: [][]string{{"1", "2", "3", "4"}, {"1", "2", "3", "4", "5"}, {"x"}}}
	ref := []float32{1, 2, 3, 4 /**/, 1, 2, 3, 4, 5 /**/, 9}
	got := []float32{1.1, 2.1, 3.1, 4.1 /**/, 1, 2, 3, 5, 4 /**/, 7}
	fp32 := throughput.Row{PairsPerS: 10, Data: "d", RealWeights: true}
	q := throughput.Row{PairsPerS: 25, Quantize: "int8"}
	r := compareQuant("balanced", fp32, q, text, ref, got)
	if r.Speedup != 2.5 || r.FP32PairsPerS != 10 || r.QuantPairsPerS != 25 || r.Type != "int8" || r.Data != "d" || !r.RealWeights {
		t.Errorf("speed fields: %+v", r)
	}
	// Per query: 1 (same order) and 0.9 (last two swapped); the
	// one-candidate list has no order and is left out of the mean.
	if r.SpearmanWorst != 0.9 || r.SpearmanMean != 0.95 {
		t.Errorf("spearman mean %v worst %v, want 0.95 and 0.9", r.SpearmanMean, r.SpearmanWorst)
	}
	if r.MaxAbsDiff != 2 || r.ScoreRange != 8 {
		t.Errorf("max |Δ| %v, range %v, want 2 and 8", r.MaxAbsDiff, r.ScoreRange)
	}
	cs := DefaultQuantCheck().Check([]QuantRow{r})
	if len(cs) != 2 || cs[0].Verdict != "PASS" || cs[1].Verdict != "FAIL" {
		t.Errorf("checks: %+v", cs)
	}
}

// TestQuantCheckUnrounded: the speed and ranking bars are applied to the
// figures as measured: 249.6 against 100 pairs/s misses 2.5× (rounded to
// two decimals first it had passed).
func TestQuantCheckUnrounded(t *testing.T) {
	text := throughput.Text{Queries: []string{"a"}, PerQuery: [][]string{{"1", "2"}}}
	r := compareQuant("balanced", throughput.Row{PairsPerS: 100, Data: "d"}, throughput.Row{PairsPerS: 249.6, Quantize: "int8"}, text, []float32{1, 2}, []float32{1, 2})
	cs := DefaultQuantCheck().Check([]QuantRow{r})
	if cs[0].Passed() || !strings.Contains(cs[0].String(), "2.496 >= 2.5") {
		t.Fatalf("249.6 vs 100 pairs/s against 2.5×: %s", cs[0])
	}
}
