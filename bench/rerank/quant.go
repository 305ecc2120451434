package rerank

import (
	"context"
	"fmt"
	"math"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
)

// Int8Check measures every real-pair profile again with int8 weights
// (models.Config.Quantize "int8": models/quantize's default, quantized once
// into QuantizeCache) right after its float32 row, on the same pairs and
// settings, and compares speed and ranking: pairs/s int8 / float32 against
// MinSpeedup, and the per-query Spearman correlation of the two models'
// scores over each query's candidate list against MinSpearman.
type Int8Check struct {
	Enabled     bool    `json:"enabled"`
	MinSpeedup  float64 `json:"min_speedup"`
	MinSpearman float64 `json:"min_spearman"`
	// Cache is where quantized copies are kept ("" = the user cache).
	Cache string `json:"cache,omitempty"`
}

// DefaultInt8Check is off; when on, the bars: 2.5× the float32
// pairs/s and a per-query Spearman correlation of at least 0.99.
func DefaultInt8Check() Int8Check {
	return Int8Check{MinSpeedup: 2.5, MinSpearman: 0.99}
}

func (c Int8Check) validate() error {
	if c.Enabled && !(c.MinSpeedup > 0 && c.MinSpearman > -1 && c.MinSpearman <= 1) {
		return fmt.Errorf("%w: rerank: int8 check needs a speedup > 0 and a Spearman bar in (-1, 1]", bench.ErrBadOption)
	}
	return nil
}

// Int8Row compares one profile's int8 row with its float32 row on the real
// pairs (same run, same pairs, same threads and batching).
type Int8Row struct {
	Profile       string  `json:"profile" table:""`
	Data          string  `json:"data"`
	FP32PairsPerS float64 `json:"fp32_pairs_per_s" table:"fp32 pairs/s"`
	Int8PairsPerS float64 `json:"int8_pairs_per_s" table:"int8 pairs/s"`
	Speedup       float64 `json:"speedup" table:"int8 ×"`
	// SpearmanMean and SpearmanWorst are over the queries (one candidate
	// list each) of the per-query rank correlation of int8 and float32
	// scores.
	SpearmanMean  float64 `json:"spearman_mean" table:"spearman mean"`
	SpearmanWorst float64 `json:"spearman_worst" table:"spearman worst"`
	// MaxAbsDiff is max |int8 − float32| score; ScoreRange the float32
	// scores' max − min, the scale to read it against.
	MaxAbsDiff  float64 `json:"max_abs_diff" table:"max |Δ|"`
	ScoreRange  float64 `json:"score_range" table:""`
	RealWeights bool    `json:"real_weights" table:""`
}

// int8Row measures profile p (directory dir) with int8 weights on the
// real pairs and compares it with fp32, its float32 row, whose scores per
// query are ref.
func int8Row(ctx context.Context, cfg Config, p, dir string, text throughput.Text, pairs []models.Pair, fp32 throughput.Row, ref []float32) (throughput.Row, Int8Row, error) {
	q := cfg
	q.Spec.Quantize, q.Spec.QuantizeCache = models.QuantizeInt8, cfg.Int8.Cache
	row, scores, _, err := measureReal(ctx, q, p, dir, text, pairs)
	if err != nil {
		return row, Int8Row{}, err
	}
	row.Data = fp32.Data
	return row, compareInt8(p, fp32, row, text, ref, scores), nil
}

// compareInt8 builds the comparison of an int8 row with its float32 row
// from both models' scores in pair order (text.PerQuery gives the lists).
func compareInt8(p string, fp32, int8 throughput.Row, text throughput.Text, ref, got []float32) Int8Row {
	r := Int8Row{Profile: p, Data: fp32.Data, FP32PairsPerS: fp32.PairsPerS, Int8PairsPerS: int8.PairsPerS, RealWeights: fp32.RealWeights}
	if fp32.PairsPerS > 0 {
		r.Speedup = measure.Round(int8.PairsPerS/fp32.PairsPerS, 2)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	off := 0
	var agree measure.Agreement
	for _, docs := range text.PerQuery {
		a, b := ref[off:off+len(docs)], got[off:off+len(docs)]
		off += len(docs)
		for i := range a {
			r.MaxAbsDiff = max(r.MaxAbsDiff, math.Abs(float64(a[i]-b[i])))
			lo, hi = min(lo, float64(a[i])), max(hi, float64(a[i]))
		}
		agree.Add(a, b)
	}
	r.SpearmanMean, r.SpearmanWorst = measure.Round(agree.Mean(), 4), measure.Round(agree.Worst(), 4)
	r.MaxAbsDiff = measure.Round(r.MaxAbsDiff, 5)
	if hi >= lo {
		r.ScoreRange = measure.Round(hi-lo, 5)
	}
	return r
}

// Check turns the int8 rows into PASS/FAIL lines on speed and ranking.
func (c Int8Check) Check(rows []Int8Row) []report.Check {
	var cs []report.Check
	for _, r := range rows {
		w := "generated weights (a random model's scores barely depend on the document, so activation-quantization noise reorders them: the fidelity of the arithmetic, not of a trained ranking)"
		if r.RealWeights {
			w = "real weights"
		}
		cs = append(cs,
			report.AtLeast(fmt.Sprintf("%s int8: pairs/s int8 / float32", r.Profile), r.Speedup, c.MinSpeedup,
				fmt.Sprintf("%.1f vs %.1f pairs/s on %s, same run and settings", r.Int8PairsPerS, r.FP32PairsPerS, r.Data)),
			report.AtLeast(fmt.Sprintf("%s int8: worst per-query Spearman vs float32", r.Profile), r.SpearmanWorst, c.MinSpearman,
				fmt.Sprintf("mean %.4f; max |Δscore| %.3g against a float32 score range of %.3g; %s", r.SpearmanMean, r.MaxAbsDiff, r.ScoreRange, w)))
	}
	return cs
}
