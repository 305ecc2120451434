package measure

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Latency summarises a set of per-operation durations.
type Latency struct {
	N    int           `json:"n"`
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
}

// LatencyStats computes percentiles by the nearest-rank method (the
// smallest sample with at least p% of samples ≤ it). ds is not modified.
func LatencyStats(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		N:    len(s),
		Mean: sum / time.Duration(len(s)),
		P50:  Percentile(s, 50),
		P90:  Percentile(s, 90),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted s by the
// nearest-rank method, as LatencyStats; the zero value for an empty s.
func Percentile[T cmp.Ordered](s []T, p float64) T {
	if len(s) == 0 {
		var zero T
		return zero
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Ms converts a duration to float milliseconds, for JSON results.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Round rounds x to n decimals, for tidy result fields.
func Round(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

// Median returns the median of xs (the mean of the two middle values of an
// even count), 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
