package measure

import (
	"cmp"
	"math"
	"slices"
)

// Spearman is the rank correlation of x and y (same length), ties given
// their mean rank; NaN when either has no spread or holds a NaN (which has
// no rank: sorting would give each its own). It compares two models'
// scores of one candidate list: 1 means the same order.
func Spearman(x, y []float32) float64 {
	if slices.ContainsFunc(x, isNaN) || slices.ContainsFunc(y, isNaN) {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	mean := float64(len(x)-1) / 2
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mean, ry[i]-mean
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func isNaN(v float32) bool { return v != v }

// ranks gives each value its 0-based rank in ascending order, tied values
// the mean of their ranks.
func ranks(v []float32) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j) / 2
		}
		i = j + 1
	}
	return r
}

// Agreement accumulates the Spearman correlation of two scorings over
// many candidate lists (one per query): its mean and its worst list, as
// the int8 fidelity checks report them. Lists shorter than two say
// nothing and are skipped; a list one scoring cannot order (no spread)
// counts as 0, no agreement to claim. The zero value is ready to use.
type Agreement struct {
	sum, worst float64
	n          int
}

// Add adds one list's two scorings (same length).
func (a *Agreement) Add(x, y []float32) {
	if len(x) < 2 {
		return
	}
	rho := Spearman(x, y)
	if math.IsNaN(rho) {
		rho = 0
	}
	if a.n == 0 || rho < a.worst {
		a.worst = rho
	}
	a.sum += rho
	a.n++
}

// Lists is the number of lists added.
func (a Agreement) Lists() int { return a.n }

// Mean is the mean correlation over the lists (0 for none).
func (a Agreement) Mean() float64 {
	if a.n == 0 {
		return 0
	}
	return a.sum / float64(a.n)
}

// Worst is the lowest correlation of a list (1 for none: no list
// disagrees).
func (a Agreement) Worst() float64 {
	if a.n == 0 {
		return 1
	}
	return a.worst
}
