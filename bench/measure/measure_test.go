package measure

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := []int{3, 5, 8, 13, 21, 34, 55, 89, 144, 233}
	for _, tt := range []struct {
		p    float64
		want int
	}{{10, 3}, {50, 21}, {90, 144}, {91, 233}, {100, 233}, {0, 3}} {
		if got := Percentile(s, tt.p); got != tt.want {
			t.Errorf("p%v = %d, want %d", tt.p, got, tt.want)
		}
	}
	if got := Percentile([]int(nil), 50); got != 0 {
		t.Errorf("empty: %d", got)
	}
}

func TestLatencyStats(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := LatencyStats(ds)
	if l.N != 100 || l.P50 != 50*time.Millisecond || l.P90 != 90*time.Millisecond || l.P99 != 99*time.Millisecond || l.Max != 100*time.Millisecond {
		t.Errorf("got %+v", l)
	}
	if l.Mean != 50500*time.Microsecond {
		t.Errorf("mean %v", l.Mean)
	}
	if ds[0] != 100*time.Millisecond {
		t.Errorf("input was sorted in place")
	}
	if one := LatencyStats([]time.Duration{7}); one.P50 != 7 || one.P99 != 7 {
		t.Errorf("single: %+v", one)
	}
	if z := LatencyStats(nil); z.N != 0 {
		t.Errorf("empty: %+v", z)
	}
}

func TestRound(t *testing.T) {
	if got := Round(1.23456, 2); got != 1.23 {
		t.Errorf("Round(1.23456, 2) = %v", got)
	}
	if got := Round(1234.5, 0); got != 1235 {
		t.Errorf("Round(1234.5, 0) = %v", got)
	}
	if got := Ms(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Ms = %v", got)
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{3, 1, 2}
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{5}, 5}, {xs, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if xs[0] != 3 || xs[1] != 1 {
		t.Errorf("Median sorted its argument: %v", xs)
	}
}

func TestProgress(t *testing.T) {
	var nilBar *Progress
	nilBar.Add(3) // must not panic
	nilBar.Done()
	var b bytes.Buffer
	p := &Progress{w: &b, label: "idx", total: 10, start: time.Now()}
	p.Add(4)
	p.Add(6)
	p.Done()
	if out := b.String(); !strings.Contains(out, "idx [") || !strings.Contains(out, "10/10") || !strings.HasSuffix(out, "\n") {
		t.Errorf("progress output %q", out)
	}
}
func TestSpearman(t *testing.T) {
	tests := []struct {
		x, y []float32
		want float64
	}{
		{[]float32{1, 2, 3, 4}, []float32{10, 20, 30, 40}, 1},
		{[]float32{1, 2, 3, 4}, []float32{4, 3, 2, 1}, -1},
		{[]float32{1, 2, 3, 4, 5}, []float32{1, 2, 3, 5, 4}, 0.9},
		{[]float32{1, 1, 2}, []float32{1, 2, 3}, math.Sqrt(0.75)},
	}
	for _, tc := range tests {
		if got := Spearman(tc.x, tc.y); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Spearman(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	if got := Spearman([]float32{1, 1}, []float32{1, 2}); !math.IsNaN(got) {
		t.Errorf("constant input: %v, want NaN", got)
	}
	// A NaN has no rank (sorted, each would get its own): an all-NaN
	// model must not read as the same order.
	nan := float32(math.NaN())
	for _, y := range [][]float32{{nan, nan, nan, nan}, {1, 2, nan, 4}} {
		if got := Spearman([]float32{1, 2, 3, 4}, y); !math.IsNaN(got) {
			t.Errorf("Spearman with NaN scores %v: %v, want NaN", y, got)
		}
	}
}

func TestAgreement(t *testing.T) {
	var zero Agreement
	if zero.Lists() != 0 || zero.Mean() != 0 || zero.Worst() != 1 {
		t.Fatalf("zero value: %d lists, mean %v, worst %v", zero.Lists(), zero.Mean(), zero.Worst())
	}
	var a Agreement
	a.Add([]float32{1, 2, 3}, []float32{10, 20, 30}) // same order: 1
	a.Add([]float32{1, 2, 3}, []float32{3, 2, 1})    // reversed: −1
	a.Add([]float32{1}, []float32{5})                // too short: skipped
	a.Add([]float32{2, 2, 2}, []float32{1, 2, 3})    // no spread: 0
	if a.Lists() != 3 || a.Mean() != 0 || a.Worst() != -1 {
		t.Fatalf("%d lists, mean %v, worst %v; want 3, 0, −1", a.Lists(), a.Mean(), a.Worst())
	}
	var n Agreement
	n.Add([]float32{1, 2, 3}, []float32{float32(math.NaN()), 2, 3}) // a NaN: 0
	if n.Worst() != 0 {
		t.Fatalf("a list with a NaN score: worst %v, want 0", n.Worst())
	}
}
