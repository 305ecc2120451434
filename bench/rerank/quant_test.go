package rerank

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/modeldir"
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

// TestCompareQuantNonFinite: NaN and infinite scores are counted apart
// (the row still encodes as JSON) and fail the check; the list with one
// counts as no agreement.
func TestCompareQuantNonFinite(t *testing.T) {
	text := throughput.Text{Queries: []string{"a"}, PerQuery: [][]string{{"1", "2", "3"}}}
	nan := float32(math.NaN())
	r := compareQuant("fast", throughput.Row{PairsPerS: 1, Data: "d"}, throughput.Row{PairsPerS: 2, Quantize: "fp16"}, text,
		[]float32{1, 2, 3}, []float32{nan, 2, float32(math.Inf(1))})
	if r.NonFinite != 2 || r.MaxAbsDiff != 0 || r.SpearmanWorst != 0 {
		t.Fatalf("%+v: want 2 non-finite pairs, max |Δ| 0 over the rest, worst Spearman 0", r)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	cs := DefaultQuantCheck().Check([]QuantRow{r})
	if last := cs[len(cs)-1]; !strings.Contains(last.Name, "NaN or infinite") || last.Verdict != "FAIL" {
		t.Fatalf("checks %+v: want a failing non-finite line", cs)
	}
}

// TestPeerChecks: the score-difference bar is the least of 1e-3 and 1 % of
// hybrank's score range (a peer ordering pairs differently within 1e-3 of
// a 0.001-wide range fails); a peer row of other work (int8 against the
// float32 file, another device, a pool) only informs; NaN scores fail.
func TestPeerChecks(t *testing.T) {
	tg := DefaultTargets()
	row := PeerRow{Impl: "onnxruntime-python", Profile: "fast", BatchPairs: 16, Pairs: 320, PairsPerS: 100, HybrankSpeedup: 2, ScoreRange: 0.00112}
	verdicts := func(p PeerRow) []string {
		var v []string
		for _, c := range tg.Check([]PeerRow{p}) {
			v = append(v, c.Verdict)
		}
		return v
	}
	same := row
	same.MaxAbsDiff = 1e-7
	if v := verdicts(same); strings.Join(v, ",") != "PASS,PASS" {
		t.Errorf("same scores: %v", v)
	}
	rotated := row
	rotated.MaxAbsDiff = 0.00058 // under 1e-3, half the range
	if v := verdicts(rotated); v[0] != "FAIL" {
		t.Errorf("a difference of half the score range: %v", v)
	}
	other := same
	other.Mismatch = peerMismatch(throughput.Row{Provider: "cpu", Quantize: "int8", PoolSize: 1}, "cpu", "")
	if v := verdicts(other); other.Mismatch == "" || strings.Join(v, ",") != "INFO,INFO" {
		t.Errorf("int8 against the float32 file (%q): %v", other.Mismatch, v)
	}
	bad := same
	bad.NonFinite = 3
	if v := verdicts(bad); strings.Join(v, ",") != "PASS,FAIL,PASS" {
		t.Errorf("NaN scores: %v", v)
	}
	for _, tc := range []struct {
		ours            throughput.Row
		provider, dtype string
		want            bool
	}{
		{throughput.Row{Provider: "cpu", PoolSize: 1}, "cpu", "", false},
		{throughput.Row{Provider: "cuda", Quantize: "fp16", PoolSize: 1}, "cuda", "float16", false},
		{throughput.Row{Provider: "cuda", PoolSize: 1}, "cpu", "", true},
		{throughput.Row{Provider: "cpu", PoolSize: 4}, "cpu", "", true},
		{throughput.Row{Provider: "cpu", Quantize: "int8", PoolSize: 1}, "cpu", "", true},
	} {
		if got := peerMismatch(tc.ours, tc.provider, tc.dtype); (got != "") != tc.want {
			t.Errorf("%+v against %s %q: mismatch %q", tc.ours, tc.provider, tc.dtype, got)
		}
	}
}

// TestQuantCheckWeights: the ranking line says what the weights were.
func TestQuantCheckWeights(t *testing.T) {
	for _, tc := range []struct {
		r    QuantRow
		want string
	}{
		{QuantRow{RealWeights: true, Weights: modeldir.WeightsReal}, "real weights"},
		{QuantRow{Weights: modeldir.WeightsGenerated}, "generated weights"},
		{QuantRow{Weights: modeldir.WeightsRandomHead}, "trained encoder's activations under a random head"},
	} {
		cs := DefaultQuantCheck().Check([]QuantRow{tc.r})
		if !strings.Contains(cs[1].String(), tc.want) {
			t.Errorf("%q: %s", tc.r.Weights, cs[1])
		}
	}
}
