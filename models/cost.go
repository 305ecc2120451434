package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
)

// CostTableFormat is the version of the CostTable file format; ReadCostTable
// rejects other versions.
const CostTableFormat = 1

// CostTable is a measured cost model of one model on one machine and
// runtime setting: Millis[i][j] is the wall time, in milliseconds, of one
// runtime call on a batch of Batches[i] sequences padded to Lens[j] tokens.
// A 0 entry was not measured (calibration stops at its time budget, so big
// cells are often missing). It is what models/ort's calibration measures
// and caches, and what Config.CostTable names as a shipped table; the file
// is this struct as JSON.
//
// A CostTable is a plain value; it is not safe for concurrent mutation.
type CostTable struct {
	Format  int   `json:"format"`
	Batches []int `json:"batches"` // ascending, the first is 1
	Lens    []int `json:"lens"`    // ascending
	// Millis has one row per batch size and one column per length.
	Millis [][]float64 `json:"millis"`
	// Calls, when present (same shape as Millis), is how many runtime
	// calls each cell stands for, and the weight the fit gives it (0 counts
	// as 1). CostModel.Table writes it for the cells it saves from
	// observed calls; a calibrated or hand-written table leaves it out.
	Calls [][]int `json:"calls,omitempty"`
	// Meta records what the table was measured on (provider, threads,
	// runtime version, CPU, model file). A cache reader compares it with
	// the current setting; a shipped table may leave it empty.
	Meta map[string]string `json:"meta,omitempty"`
}

// CostTableFrom returns a table over the given batch sizes and lengths
// with Millis[i][j] = ms(batches[i], lens[j]) (0 for not measured): a
// table written from a formula or from measurements taken elsewhere, or an
// empty one to fill. The slices are retained.
func CostTableFrom(batches, lens []int, ms func(batch, seqLen int) float64) *CostTable {
	t := &CostTable{Format: CostTableFormat, Batches: batches, Lens: lens}
	t.Millis = make([][]float64, len(batches))
	for i, b := range batches {
		t.Millis[i] = make([]float64, len(lens))
		for j, l := range lens {
			t.Millis[i][j] = ms(b, l)
		}
	}
	return t
}

// Validate reports the first problem with t, wrapping ErrCostTable.
func (t *CostTable) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCostTable}, args...)...)
	}
	if t.Format != CostTableFormat {
		return bad("format %d (want %d)", t.Format, CostTableFormat)
	}
	if len(t.Batches) == 0 || t.Batches[0] != 1 {
		return bad("batches %v must start at 1", t.Batches)
	}
	if len(t.Lens) == 0 {
		return bad("no lengths")
	}
	for _, s := range [][]int{t.Batches, t.Lens} {
		for i, v := range s {
			if v < 1 || v > 1<<20 || (i > 0 && v <= s[i-1]) {
				return bad("%v is not strictly ascending in 1..%d", s, 1<<20)
			}
		}
	}
	finite := func(v float64) bool { return v >= 0 && !math.IsNaN(v) && !math.IsInf(v, 0) }
	if err := checkGrid("millis", t.Millis, len(t.Batches), len(t.Lens), finite); err != nil {
		return err
	}
	if t.Calls != nil {
		calls := func(n int) bool { return n >= 0 && n <= maxCellCalls }
		if err := checkGrid("calls", t.Calls, len(t.Batches), len(t.Lens), calls); err != nil {
			return err
		}
	}
	if !slices.ContainsFunc(t.Millis[0], func(v float64) bool { return v > 0 }) {
		return bad("no measurement for batch size 1")
	}
	return nil
}

// checkGrid checks that g has one row per batch size and one entry per
// length, each accepted by ok; the error wraps ErrCostTable.
func checkGrid[T any](name string, g [][]T, rows, cols int, ok func(T) bool) error {
	if len(g) != rows {
		return fmt.Errorf("%w: %s: %d rows for %d batch sizes", ErrCostTable, name, len(g), rows)
	}
	for i, row := range g {
		if len(row) != cols {
			return fmt.Errorf("%w: %s: row %d has %d entries for %d lengths", ErrCostTable, name, i, len(row), cols)
		}
		for j, v := range row {
			if !ok(v) {
				return fmt.Errorf("%w: %s[%d][%d] = %v", ErrCostTable, name, i, j, v)
			}
		}
	}
	return nil
}

// maxCellCalls bounds CostTable.Calls: a cell enters the fit that many
// times. Table writes at most maxObserved.
const maxCellCalls = 64

// Measured returns the number of measured (non-zero) entries.
func (t *CostTable) Measured() int {
	n := 0
	for _, row := range t.Millis {
		for _, v := range row {
			if v > 0 {
				n++
			}
		}
	}
	return n
}

// Clone returns a deep copy of t.
func (t *CostTable) Clone() *CostTable {
	c := &CostTable{Format: t.Format, Batches: slices.Clone(t.Batches), Lens: slices.Clone(t.Lens)}
	c.Millis = make([][]float64, len(t.Millis))
	for i, row := range t.Millis {
		c.Millis[i] = slices.Clone(row)
	}
	if t.Calls != nil {
		c.Calls = make([][]int, len(t.Calls))
		for i, row := range t.Calls {
			c.Calls[i] = slices.Clone(row)
		}
	}
	if t.Meta != nil {
		c.Meta = make(map[string]string, len(t.Meta))
		for k, v := range t.Meta {
			c.Meta[k] = v
		}
	}
	return c
}

// ReadCostTable reads and validates a cost table file. Errors wrap
// ErrCostTable and name the file.
func ReadCostTable(path string) (*CostTable, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCostTable, err)
	}
	var t CostTable
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCostTable, path, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

// WriteCostTable validates t and writes it to path atomically (a reader
// never sees half a file). The directory must exist.
func WriteCostTable(path string, t *CostTable) error {
	if err := t.Validate(); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCostTable, err)
	}
	return atomicfile.WriteBytes(vfs.OS, filepath.Dir(path), filepath.Base(path), append(raw, '\n'))
}

// CostModel predicts the time of one runtime call from a CostTable and
// from the calls it has observed.
//
// Along the sequence length, each batch size's measurements are fitted by
// T(L) = a + b·L + c·L² (weighted least squares on relative error, all
// coefficients ≥ 0). For a fixed batch this is the transformer's own cost
// form: a per-call overhead, the projections and FFN linear in L, the
// attention scores quadratic in L. Fitting instead of interpolating
// averages out timing noise across a row (calibration runs on a busy
// machine, and a single lucky cell would otherwise attract the planner),
// and non-negative coefficients keep T non-decreasing in L, which the
// batch planner's optimality relies on. A row with one or two
// measurements fits a constant or a line. Across batch sizes T is
// interpolated linearly between measured sizes: how time grows with the
// batch is not polynomial (it changes regime when the activations fall out
// of cache, the effect the planner exists to avoid), so the model never
// extrapolates across sizes, and only a little along the length: Predict
// refuses a batch size above the largest measured one and, for batches of
// two or more, a length more than 25 % above the longest measured for that
// size (up to that, the time at the longest scales linearly). A single
// sequence is always predicted, since it cannot be split.
//
// Observe adds a real call's time to its batch size's row (a new row for a
// size the table lacks): a short calibration covers only small batches,
// and the calls a workload really makes (its lengths, its shapes one after
// another, the machine's load) are the measurements that matter: they
// replace the row's cells in the range of lengths they span, and outside
// it the cells they contradict (costlier at a shorter length than the
// calls' median, or cheaper at a greater one). Optimistic
// proposes sizes beyond what was measured, so that a planner can try them
// once and learn their real cost.
//
// A CostModel is immutable (Observe returns a new one) and safe for
// concurrent use.
type CostModel struct {
	rows     []costRow
	residual float64
}

// costRow is one batch size's fit: ms = a + c1·x + c2·x², x = L/lenScale,
// over its table cells and its observed calls.
type costRow struct {
	batch    int
	coef     [3]float64
	maxLen   int // longest length among the points fitted
	table    []costPoint
	observed []costPoint // newest last, at most maxObserved
	residual float64     // worst relative error of the fit on its points
}

type costPoint struct{ x, ms float64 }

// maxObserved bounds the observed calls a row keeps (the newest), so the
// fit follows a machine whose speed changes.
const maxObserved = 16

// lenScale keeps the normal equations well conditioned (x ≤ ~1).
const lenScale = 512.0

func (r costRow) eval(seqLen int) float64 {
	x := float64(seqLen) / lenScale
	return r.coef[0] + x*(r.coef[1]+x*r.coef[2])
}

// fit refits the row on its points: the observed calls, and the table
// cells outside the range of lengths the calls span. A calibration times
// one repeated shape and keeps its fastest run; real calls vary and land
// on a busy machine, so where both exist the calls decide (with
// relative-error weights a cell five times faster than the calls would
// otherwise pull the fit down as much as 25 calls push it up), while the
// cells outside that range keep the row's shape along the length (less
// those the calls contradict, see tableOutside). maxLen is the longest
// length among the points fitted: a contradicted cell no longer extends
// the row's reach.
func (r *costRow) fit() {
	pts := append(slices.Clip(r.observed), r.tableOutside()...)
	longest := 0.0
	for _, p := range pts {
		longest = max(longest, p.x)
	}
	r.maxLen = int(math.Round(longest * lenScale))
	xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		xs[i], ys[i] = p.x, p.ms
	}
	r.coef = fitNonNeg(xs, ys)
	r.residual = 0
	for _, p := range pts {
		r.residual = max(r.residual, math.Abs(r.eval(int(math.Round(p.x*lenScale)))-p.ms)/p.ms)
	}
}

// tableOutside returns the row's table cells outside the range of lengths
// its observed calls span (all of them without calls): where both exist,
// the calls decide (see fit). Once the row holds minContradicting calls,
// cells they contradict are left out too: one at a shorter length that
// took contradictSlack times the calls' median or more, or one at a
// greater length that took that much less. A call's time does not fall
// with its length, and the calls are the fresher measurement; a cached
// table may come from a busy moment long ago (one such table here had a
// single sequence of 64 tokens at 90 ms, where calls of 112 tokens took
// 21).
func (r costRow) tableOutside() []costPoint {
	lo, hi := math.Inf(1), math.Inf(-1)
	ms := make([]float64, 0, len(r.observed))
	for _, p := range r.observed {
		lo, hi = min(lo, p.x), max(hi, p.x)
		ms = append(ms, p.ms)
	}
	filter := len(ms) >= minContradicting
	var med float64
	if filter {
		slices.Sort(ms)
		med = ms[len(ms)/2]
	}
	var pts []costPoint
	for _, p := range r.table {
		switch {
		case p.x >= lo && p.x <= hi:
			continue
		case filter && p.x < lo && p.ms >= contradictSlack*med:
			continue
		case filter && p.x > hi && p.ms*contradictSlack <= med:
			continue
		}
		pts = append(pts, p)
	}
	return pts
}

// contradictSlack and minContradicting make the contradiction rule of
// tableOutside tolerate noise: a call's time varies about ±10 % on a
// loaded 2-core CPU, one in twenty takes 40 % longer, and a calibrated
// cell is the fastest of its runs; a few calls must agree before they
// overrule a cell.
const (
	contradictSlack  = 1.25
	minContradicting = 4
)

// TableLenStep is the length grid of CostModel.Table: observed calls are
// saved at the nearest multiple of it, so that the
// lengths of a workload's calls (which vary by a few tokens from one call
// to the next) do not each add a column.
const TableLenStep = 8

// Table returns what m predicts from as a cost table, so that what a
// workload taught it can be saved and loaded again: per batch size, its
// observed calls, each moved to the nearest multiple of TableLenStep (its
// time scaled by the row's fit from its length to that one), and the
// table cells outside the lengths the calls span. Points that land on one
// cell are merged into the value the fit's relative-error least squares
// gives them, Σ(1/t)/Σ(1/t²), weighted by their number (Calls, at most
// maxObserved; the prior a new size starts from counts as the calls it
// stands for). A model fitted from the table predicts as m does, up to
// the moves; the calls become table cells, so the next calls in their
// range replace them. Meta is nil.
func (m *CostModel) Table() *CostTable {
	type cell struct{ b, l int }
	type sums struct {
		inv, inv2 float64 // Σ 1/t, Σ 1/t²
		n         int
	}
	cells := map[cell]sums{}
	add := func(c cell, ms float64) {
		s := cells[c]
		s.inv, s.inv2, s.n = s.inv+1/ms, s.inv2+1/(ms*ms), s.n+1
		cells[c] = s
	}
	var batches []int
	lens := map[int]bool{}
	for _, r := range m.rows {
		batches = append(batches, r.batch)
		for _, p := range r.observed {
			l := int(math.Round(p.x * lenScale))
			step := max(TableLenStep, int(math.Round(float64(l)/TableLenStep))*TableLenStep)
			ms := p.ms
			if at := r.eval(l); at > 0 {
				ms *= r.eval(step) / at
			}
			add(cell{r.batch, step}, ms)
			lens[step] = true
		}
		for _, p := range r.tableOutside() { // a cell of n calls appears n times
			l := int(math.Round(p.x * lenScale))
			add(cell{r.batch, l}, p.ms)
			lens[l] = true
		}
	}
	ls := slices.Sorted(maps.Keys(lens))
	t := CostTableFrom(batches, ls, func(b, l int) float64 {
		if s := cells[cell{b, l}]; s.n > 0 {
			return s.inv / s.inv2
		}
		return 0
	})
	t.Calls = make([][]int, len(batches))
	for i, b := range batches {
		t.Calls[i] = make([]int, len(ls))
		for j, l := range ls {
			t.Calls[i][j] = min(cells[cell{b, l}].n, maxObserved)
		}
	}
	return t
}

// NewCostModel validates t and fits the model. Batch sizes without any
// measurement are left out.
func NewCostModel(t *CostTable) (*CostModel, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	m := &CostModel{}
	for i, b := range t.Batches {
		row := costRow{batch: b}
		for j, v := range t.Millis[i] {
			if v <= 0 {
				continue
			}
			n := 1
			if t.Calls != nil {
				n = max(1, t.Calls[i][j])
			}
			for range n { // a cell of n calls weighs as much as they did
				row.table = append(row.table, costPoint{float64(t.Lens[j]) / lenScale, v})
			}
		}
		if len(row.table) == 0 {
			continue
		}
		row.fit()
		m.residual = max(m.residual, row.residual)
		m.rows = append(m.rows, row)
	}
	return m, nil
}

// Observe returns the model with one more measurement: a runtime call on
// batch sequences padded to seqLen tokens took ms milliseconds. The call
// joins its batch size's row (a new row when the model had none for that
// size), whose fit then covers lengths up to seqLen (and 25 % past it). A
// new size between two measured ones, where the model predicted it,
// starts from that prediction (priorCalls pseudo-calls at the
// interpolated time, which newer calls push out of the window): one
// call's noise is not enough to make it the cheapest size of all. m
// itself is unchanged; a nonsensical observation returns m.
func (m *CostModel) Observe(batch, seqLen int, ms float64) *CostModel {
	if batch < 1 || seqLen < 1 || !(ms > 0) || math.IsInf(ms, 0) {
		return m
	}
	n := &CostModel{rows: slices.Clone(m.rows)}
	i, found := n.find(batch)
	var obs []costPoint
	if found {
		obs = slices.Clip(n.rows[i].observed)
	} else {
		if prior, ok := m.Predict(batch, seqLen); ok {
			for range priorCalls {
				obs = append(obs, costPoint{float64(seqLen) / lenScale, prior})
			}
		}
		n.rows = slices.Insert(n.rows, i, costRow{batch: batch})
	}
	r := &n.rows[i]
	obs = append(obs, costPoint{float64(seqLen) / lenScale, ms})
	if len(obs) > maxObserved {
		obs = obs[len(obs)-maxObserved:]
	}
	r.observed = obs
	r.fit()
	for _, r := range n.rows {
		n.residual = max(n.residual, r.residual)
	}
	return n
}

// priorCalls is the weight, in calls, of the prediction a new batch size
// between measured ones starts from. On a 2-core CPU one call's time
// varies by ±10 %; with many sizes of nearly equal cost per sequence, the
// size whose single call happened to be fastest won every plan until its
// next calls showed the truth, then the next lucky one did, and the plan
// wandered between sizes.
const priorCalls = 2

// Predict returns the predicted time in milliseconds of one call on batch
// sequences padded to seqLen tokens, and false where the measurements do
// not cover it (see CostModel).
func (m *CostModel) Predict(batch, seqLen int) (float64, bool) {
	if batch < 1 || seqLen < 1 || len(m.rows) == 0 {
		return 0, false
	}
	if batch == 1 && m.rows[0].batch == 1 {
		return m.rows[0].eval(seqLen), true
	}
	i, found := m.find(batch)
	if found {
		return m.rows[i].at(seqLen)
	}
	if i == 0 || i == len(m.rows) {
		return 0, false
	}
	lo, hi := m.rows[i-1], m.rows[i]
	hv, ok := hi.at(seqLen)
	if !ok {
		return 0, false
	}
	lv := lo.eval(seqLen) // a single sequence: always predicted
	if lo.batch > 1 {
		if lv, ok = lo.at(seqLen); !ok {
			return 0, false
		}
	}
	f := float64(batch-lo.batch) / float64(hi.batch-lo.batch)
	return (1-f)*lv + f*hv, true
}

// extendSlack is how far past the longest length a batch size was
// measured at (maxLen) its row still predicts: up to 25 % longer.
const extendSlack = 1.25

// at is the row's time at seqLen, and whether the row covers seqLen: its
// fit up to maxLen; beyond, up to extendSlack·maxLen, its time at maxLen
// scaled linearly with the length (the projections and the FFN, most of
// the work, grow linearly; a row fitted at one length is a constant, which
// would make every slightly longer call look free). Real calls' lengths
// vary by a few tokens from one to the next; without the slack, a size
// measured at 144 tokens said nothing about 145, and the planner kept
// re-exploring sizes it had already measured.
func (r costRow) at(seqLen int) (float64, bool) {
	if seqLen <= r.maxLen {
		return r.eval(seqLen), true
	}
	if float64(seqLen) > extendSlack*float64(r.maxLen) {
		return 0, false
	}
	return r.eval(r.maxLen) * float64(seqLen) / float64(r.maxLen), true
}

// covers reports whether the row predicts seqLen (see at).
func (r costRow) covers(seqLen int) bool {
	_, ok := r.at(seqLen)
	return ok
}

// reach returns the longest length Predict covers for a batch size of two
// or more: its row's reach, or for a size between two rows the shorter of
// theirs (a single sequence's row reaches every length); 0 for a size
// without a row above it.
func (m *CostModel) reach(batch int) int {
	rowReach := func(r costRow) int { return int(extendSlack * float64(r.maxLen)) }
	i, found := m.find(batch)
	switch {
	case found:
		return rowReach(m.rows[i])
	case i == 0 || i == len(m.rows):
		return 0
	}
	lim := rowReach(m.rows[i])
	if lo := m.rows[i-1]; lo.batch > 1 {
		lim = min(lim, rowReach(lo))
	}
	return lim
}

// Optimistic estimates a call the measurements do not cover, to be tried:
// for a batch size above k, the largest batch size whose row covers
// seqLen, and at most twice k, the time of k's call scaled by batch/k and
// by discount (< 1: the larger batch is assumed that much cheaper per
// sequence), and never below its own prediction at the longest length
// Predict covers for it, if any (its row's reach, extendSlack past the
// longest measured; or its neighbours'), nor below what a size between k
// and batch gave at its own reach (so the estimate never falls as seqLen
// grows past a row's reach and k drops to a size cheaper per sequence).
// A planner that takes such a batch and reports its
// real time through Observe learns the size's cost; the next proposal is
// scaled from that measured cost, so doubling stops once a measured size
// is costlier per sequence than the alternatives by more than the
// discount. False when batch is covered or out of that range.
func (m *CostModel) Optimistic(batch, seqLen int, discount float64) (float64, bool) {
	if _, ok := m.Predict(batch, seqLen); ok || seqLen < 1 {
		return 0, false
	}
	k := 0
	for _, r := range m.rows {
		if r.batch < batch && (r.batch == 1 || r.covers(seqLen)) {
			k = r.batch
		}
	}
	if k == 0 || batch > 2*k {
		return 0, false
	}
	ms, ok := m.Predict(k, seqLen)
	if !ok {
		return 0, false
	}
	est := ms * float64(batch) / float64(k) * discount
	// A larger row that covered shorter lengths gave the estimate there;
	// past its reach it still bounds it from below, frozen at its reach,
	// so that the estimate does not fall as seqLen grows past it (k
	// dropping to a size cheaper per sequence).
	for _, r := range m.rows {
		if r.batch > k && r.batch < batch {
			lim := int(extendSlack * float64(r.maxLen))
			if v, ok := r.at(lim); ok && lim < seqLen {
				est = max(est, v*float64(batch)/float64(r.batch)*discount)
			}
		}
	}
	if lim := m.reach(batch); lim > 0 && lim < seqLen {
		// Predicted at shorter lengths only: the time cannot be less than
		// at the longest of them (it does not fall with the length, which
		// the batch planner relies on).
		if v, ok := m.Predict(batch, lim); ok {
			est = max(est, v)
		}
	}
	return est, true
}

// UpperBound bounds a call of a batch size measured only at shorter
// lengths: with non-negative coefficients T(L) ≤ T(M)·(L/M)² for L ≥ M,
// the longest length M measured, so what was learned at one length still
// serves a longer one. False when the size has no row of its own or
// Predict covers the length (up to 25 % past M).
func (m *CostModel) UpperBound(batch, seqLen int) (float64, bool) {
	i, found := m.find(batch)
	if !found || m.rows[i].covers(seqLen) || batch == 1 {
		return 0, false
	}
	r := m.rows[i]
	f := float64(seqLen) / float64(r.maxLen)
	return r.eval(r.maxLen) * f * f, true
}

// find returns the index of batch's row, or where it would go, and
// whether it is there.
func (m *CostModel) find(batch int) (int, bool) {
	return slices.BinarySearchFunc(m.rows, batch, func(r costRow, b int) int { return r.batch - b })
}

// MaxBatch returns the largest batch size Predict accepts.
func (m *CostModel) MaxBatch() int {
	if len(m.rows) == 0 {
		return 0
	}
	return m.rows[len(m.rows)-1].batch
}

// Residual returns the worst relative error of the fit on the measured
// cells and observed calls (0.1 = 10 %): a large value means noisy
// measurements or a row the quadratic does not describe.
func (m *CostModel) Residual() float64 { return m.residual }

// fitNonNeg fits y ≈ c0 + c1·x + c2·x² with c ≥ 0, minimising the squared
// relative error Σ((pred−y)/y)², using at most as many terms as there are
// distinct x (points at one length say nothing about the shape along it:
// they fit a constant). The non-negative least-squares optimum is the
// unconstrained optimum on its set of non-zero terms, so trying every
// subset of the (at most three) terms and keeping the best feasible one is
// exact; subsets are tried fewest terms first, and a larger one must fit
// measurably better to win (so collinear points do not pick a shape by
// rounding).
func fitNonNeg(xs, ys []float64) [3]float64 {
	distinct := 0
	for i, x := range xs {
		if !slices.Contains(xs[:i], x) {
			distinct++
		}
	}
	k := min(distinct, 3)
	var best [3]float64
	bestErr := math.Inf(1)
	for _, mask := range []int{1, 2, 4, 3, 5, 6, 7} { // by number of terms
		if mask >= 1<<k {
			continue
		}
		var cols []int
		for c := range k {
			if mask&(1<<c) != 0 {
				cols = append(cols, c)
			}
		}
		coef, ok := solveWeighted(xs, ys, cols)
		if !ok {
			continue
		}
		feasible := true
		for _, v := range coef {
			feasible = feasible && v >= 0
		}
		if !feasible {
			continue
		}
		var full [3]float64
		for i, c := range cols {
			full[c] = coef[i]
		}
		var e float64
		for i, x := range xs {
			d := (full[0] + x*(full[1]+x*full[2]) - ys[i]) / ys[i]
			e += d * d
		}
		if e < bestErr-1e-9*(1+bestErr) || math.IsInf(bestErr, 1) {
			best, bestErr = full, e
		}
	}
	return best
}

// solveWeighted solves the least-squares problem on the powers of x listed
// in cols, rows weighted by 1/y, through the normal equations (at most
// 3×3, x scaled to about 1).
func solveWeighted(xs, ys []float64, cols []int) ([]float64, bool) {
	n := len(cols)
	a := make([][]float64, n) // augmented [AᵀA | Aᵀy]
	for i := range a {
		a[i] = make([]float64, n+1)
	}
	for i, x := range xs {
		w := 1 / ys[i]
		var row [3]float64
		for j, c := range cols {
			row[j] = math.Pow(x, float64(c)) * w
		}
		for p := range n {
			for q := range n {
				a[p][q] += row[p] * row[q]
			}
			a[p][n] += row[p] * ys[i] * w
		}
	}
	scale := 0.0 // pivots are judged against the matrix's own size
	for p := range n {
		scale = max(scale, math.Abs(a[p][p]))
	}
	for p := range n { // Gaussian elimination, partial pivoting
		piv := p
		for r := p + 1; r < n; r++ {
			if math.Abs(a[r][p]) > math.Abs(a[piv][p]) {
				piv = r
			}
		}
		if math.Abs(a[piv][p]) <= 1e-12*scale {
			return nil, false
		}
		a[p], a[piv] = a[piv], a[p]
		for r := p + 1; r < n; r++ {
			f := a[r][p] / a[p][p]
			for q := p; q <= n; q++ {
				a[r][q] -= f * a[p][q]
			}
		}
	}
	out := make([]float64, n)
	for p := n - 1; p >= 0; p-- {
		s := a[p][n]
		for q := p + 1; q < n; q++ {
			s -= a[p][q] * out[q]
		}
		out[p] = s / a[p][p]
	}
	return out, true
}

// ActivationBytes estimates the peak activation memory of a batch of batch
// sequences padded to seqLen tokens, in bytes (float32, weights not
// counted): one encoder layer's hidden states, residual, Q, K, V and
// attention output (7 × hidden per token), its FFN activations (2 ×
// intermediate per token) and its attention scores and probabilities (2 ×
// heads × seqLen² per sequence, the term that grows fastest). Layers run
// one after another and the runtime reuses their buffers, so one layer is
// the peak. Heads 0 counts as hidden/64 and intermediate 0 as 4 × hidden,
// BERT's ratios.
func (c HFConfig) ActivationBytes(batch, seqLen int) int64 {
	h := int64(max(c.HiddenSize, 1))
	heads := int64(c.NumAttentionHeads)
	if heads <= 0 {
		heads = max(h/64, 1)
	}
	inter := int64(c.IntermediateSize)
	if inter <= 0 {
		inter = 4 * h
	}
	b, l := int64(batch), int64(seqLen)
	return 4 * (b*l*(7*h+2*inter) + 2*b*heads*l*l)
}
