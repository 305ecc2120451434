package rerank

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/models"
)

// QuantCheck measures every real-pair profile again with quantized
// weights (models.Config.Quantize Type: "int8", onnx/quantize's default,
// for the CPU; "fp16", the float16 graph, for the CUDA provider; converted
// once into Cache) right after its float32 row, on the same pairs and
// settings, and compares speed and ranking: pairs/s quantized / float32
// against MinSpeedup (0: reported only), and the per-query Spearman
// correlation of the two models' scores over each query's candidate list
// against MinSpearman.
type QuantCheck struct {
	Enabled     bool    `json:"enabled"`
	Type        string  `json:"type"`
	MinSpeedup  float64 `json:"min_speedup"`
	MinSpearman float64 `json:"min_spearman"`
	// Cache is where converted copies are kept ("" = the user cache).
	Cache string `json:"cache,omitempty"`
	// Encoders are cross-encoder directories with a trained encoder under
	// a seeded random head (bertgen.ImportRandomHead), measured float32 and
	// quantized after the profiles, on the same pairs and settings. A
	// generated model's score barely depends on the document, so its
	// Spearman mostly measures noise against a tiny spread; these have a
	// trained encoder's activation ranges and outliers and a score that
	// moves with the text: the fidelity of the arithmetic on real
	// activations. Their scores rank nothing.
	Encoders []string `json:"encoders,omitempty"`
}

// RandomHeadEncoder is the directory `make models` writes with
// all-MiniLM-L6-v2's encoder (the balanced profile's shape) under a random
// head.
func RandomHeadEncoder() string { return filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2-xe") }

// DefaultQuantCheck is off; when on, int8 against the bars: 2.5×
// the float32 pairs/s and a per-query Spearman correlation of at least
// 0.99, on the profiles and, when `make models` has written it, on
// RandomHeadEncoder.
func DefaultQuantCheck() QuantCheck {
	c := QuantCheck{Type: models.QuantizeInt8, MinSpeedup: 2.5, MinSpearman: 0.99}
	if d := RandomHeadEncoder(); fileExists(filepath.Join(d, "config.json")) {
		c.Encoders = []string{d}
	}
	return c
}

func (c QuantCheck) validate() error {
	if !c.Enabled {
		return nil
	}
	if c.Type == "" || !models.ValidQuantize(c.Type) {
		return fmt.Errorf("%w: rerank: quantized check type %q (want %s or %s)", bench.ErrBadOption, c.Type, models.QuantizeInt8, models.QuantizeFP16)
	}
	if !(c.MinSpeedup >= 0 && c.MinSpearman > -1 && c.MinSpearman <= 1) {
		return fmt.Errorf("%w: rerank: quantized check needs a speedup ≥ 0 and a Spearman bar in (-1, 1]", bench.ErrBadOption)
	}
	return nil
}

// QuantRow compares one profile's quantized row with its float32 row on
// the real pairs (same run, same pairs, same threads and batching).
type QuantRow struct {
	Profile        string  `json:"profile" table:""`
	Type           string  `json:"type" table:""`
	Data           string  `json:"data"`
	FP32PairsPerS  float64 `json:"fp32_pairs_per_s" table:"fp32 pairs/s"`
	QuantPairsPerS float64 `json:"quant_pairs_per_s" table:"quantized pairs/s"`
	Speedup        float64 `json:"speedup" table:"× fp32"`
	// SpearmanMean and SpearmanWorst are over the queries (one candidate
	// list each) of the per-query rank correlation of quantized and
	// float32 scores.
	SpearmanMean  float64 `json:"spearman_mean" table:"spearman mean"`
	SpearmanWorst float64 `json:"spearman_worst" table:"spearman worst"`
	// MaxAbsDiff is max |quantized − float32| score; ScoreRange the
	// float32 scores' max − min, the scale to read it against.
	MaxAbsDiff float64 `json:"max_abs_diff" table:"max |Δ|"`
	ScoreRange float64 `json:"score_range" table:""`
	// NonFinite counts the pairs where either score is NaN or infinite
	// (left out of MaxAbsDiff; their lists count as no agreement).
	NonFinite   int  `json:"non_finite,omitempty"`
	RealWeights bool `json:"real_weights"`
	// Weights says what the weights are (modeldir.Weights): real,
	// generated, or a trained encoder under a random head.
	Weights string `json:"weights" table:""`
}

// quantRow measures profile p (directory dir) with cfg.Quant.Type weights
// on the real pairs and compares it with fp32, its float32 row, whose
// scores per query are ref.
func quantRow(ctx context.Context, cfg Config, p, dir string, text throughput.Text, pairs []models.Pair, fp32 throughput.Row, ref []float32) (throughput.Row, QuantRow, error) {
	q := cfg
	q.Spec.Quantize, q.Spec.QuantizeCache = cfg.Quant.Type, cfg.Quant.Cache
	row, scores, _, err := measureReal(ctx, q, p, dir, text, pairs)
	if err != nil {
		return row, QuantRow{}, err
	}
	row.Data = fp32.Data
	cmp := compareQuant(p, fp32, row, text, ref, scores)
	cmp.Weights = modeldir.Weights(dir)
	return row, cmp, nil
}

// compareQuant builds the comparison of a quantized row with its float32
// row from both models' scores in pair order (text.PerQuery gives the
// lists).
func compareQuant(p string, fp32, quant throughput.Row, text throughput.Text, ref, got []float32) QuantRow {
	r := QuantRow{Profile: p, Type: quant.Quantize, Data: fp32.Data, FP32PairsPerS: fp32.PairsPerS, QuantPairsPerS: quant.PairsPerS, RealWeights: fp32.RealWeights}
	if fp32.PairsPerS > 0 {
		r.Speedup = quant.PairsPerS / fp32.PairsPerS
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	off := 0
	var agree measure.Agreement
	for _, docs := range text.PerQuery {
		a, b := ref[off:off+len(docs)], got[off:off+len(docs)]
		off += len(docs)
		for i := range a {
			if !finite(a[i]) || !finite(b[i]) {
				r.NonFinite++
				continue
			}
			r.MaxAbsDiff = max(r.MaxAbsDiff, math.Abs(float64(a[i]-b[i])))
			lo, hi = min(lo, float64(a[i])), max(hi, float64(a[i]))
		}
		agree.Add(a, b)
	}
	r.SpearmanMean, r.SpearmanWorst = agree.Mean(), agree.Worst()
	r.MaxAbsDiff = measure.Round(r.MaxAbsDiff, 5)
	if hi >= lo {
		r.ScoreRange = measure.Round(hi-lo, 5)
	}
	return r
}

// Check turns the quantized rows into PASS/FAIL lines on speed (INFO
// where MinSpeedup is 0) and ranking.
func (c QuantCheck) Check(rows []QuantRow) []report.Check {
	var cs []report.Check
	for _, r := range rows {
		w := "real weights"
		switch {
		case r.Weights == modeldir.WeightsRandomHead:
			w = "a trained encoder's activations under a random head (bertgen.ImportRandomHead): the score moves with the text, but ranks nothing; the fidelity of the arithmetic on real activation ranges"
		case !r.RealWeights:
			w = "generated weights (a random model's scores barely depend on the document, so rounding noise reorders them: the fidelity of the arithmetic, not of a trained ranking)"
		}
		speed := fmt.Sprintf("%s %s: pairs/s %s / float32", r.Profile, r.Type, r.Type)
		detail := fmt.Sprintf("%.1f vs %.1f pairs/s on %s, same run and settings", r.QuantPairsPerS, r.FP32PairsPerS, r.Data)
		if c.MinSpeedup > 0 {
			cs = append(cs, report.AtLeast(speed, r.Speedup, c.MinSpeedup, detail))
		} else {
			cs = append(cs, report.Inform(speed, r.Speedup, detail))
		}
		cs = append(cs, report.AtLeast(fmt.Sprintf("%s %s: worst per-query Spearman vs float32", r.Profile, r.Type), r.SpearmanWorst, c.MinSpearman,
			fmt.Sprintf("mean %.4f; max |Δscore| %.3g against a float32 score range of %.3g; %s", r.SpearmanMean, r.MaxAbsDiff, r.ScoreRange, w)))
		if r.NonFinite > 0 {
			cs = append(cs, report.AtMost(fmt.Sprintf("%s %s: pairs with a NaN or infinite score", r.Profile, r.Type), float64(r.NonFinite), 0, "either model's"))
		}
	}
	return cs
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
