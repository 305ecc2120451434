package ort_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hybrank/hybrank/models/ort"
)

func TestCostModelRecoversQuadratic(t *testing.T) {
	// Each row is exactly a + c1·L + c2·L² with non-negative terms: the
	// fit must reproduce it everywhere in the row's range, and batch
	// sizes between rows interpolate linearly.
	f := func(b, l int) float64 {
		x := float64(l)
		return 0.3 + float64(b)*(0.01*x+2e-5*x*x) + 0.001*float64(b*b)
	}
	tab := ort.CallTimeTableFrom([]int{1, 4, 16}, []int{8, 32, 128, 512}, f)
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	if m.Residual() > 1e-9 {
		t.Fatalf("residual %g on exact data", m.Residual())
	}
	for _, b := range []int{1, 4, 16} {
		for _, l := range []int{8, 20, 100, 300, 512} {
			got, ok := m.Predict(b, l)
			if !ok || math.Abs(got-f(b, l)) > 1e-9*f(b, l) {
				t.Fatalf("Predict(%d, %d) = %v %v, want %v", b, l, got, ok, f(b, l))
			}
		}
	}
	got, _ := m.Predict(10, 100) // halfway between rows 4 and 16
	if want := (f(4, 100) + f(16, 100)) / 2; math.Abs(got-want) > 1e-9*want {
		t.Fatalf("Predict(10, 100) = %v, want %v", got, want)
	}
}

func TestCostModelDomain(t *testing.T) {
	tab := ort.CallTimeTableFrom([]int{1, 2, 8}, []int{16, 64, 256}, func(b, l int) float64 {
		if b == 8 && l > 64 {
			return 0 // not measured: the budget ran out
		}
		return float64(b * l)
	})
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxBatch() != 8 {
		t.Fatalf("MaxBatch %d", m.MaxBatch())
	}
	tests := []struct {
		b, l int
		ok   bool
	}{
		{1, 500, true},  // a single sequence is always predicted
		{2, 256, true},  // measured
		{2, 320, true},  // 25 % beyond row 2's longest: scaled from it
		{2, 321, false}, // further
		{8, 64, true},
		{8, 80, true},
		{8, 81, false}, // row 8 stops at 64
		{5, 64, true},  // between rows 2 and 8, both cover 64
		{5, 100, false},
		{9, 16, false}, // above the largest batch
		{0, 16, false},
		{1, 0, false},
	}
	for _, tt := range tests {
		if _, ok := m.Predict(tt.b, tt.l); ok != tt.ok {
			t.Errorf("Predict(%d, %d) ok = %v, want %v", tt.b, tt.l, ok, tt.ok)
		}
	}
	// Within the slack the time at the longest length scales linearly.
	if got, _ := m.Predict(8, 80); math.Abs(got-8*64*80.0/64) > 1e-6 {
		t.Errorf("Predict(8, 80) = %v, want %v", got, 8*80)
	}
}

// Noisy rows must still give a model that never gets cheaper with the
// length, which the planner's optimality relies on.
func TestCostModelMonotoneInLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lens := []int{8, 16, 32, 64, 128, 256, 384, 512}
	for trial := range 200 {
		tab := ort.CallTimeTableFrom([]int{1, 2, 4, 8}, lens, func(b, l int) float64 {
			if trial%3 == 0 && rng.IntN(4) == 0 && b > 1 {
				return 0
			}
			return rng.Float64()*10 + 0.01 // pure noise, often decreasing
		})
		m, err := ort.NewCallTimeModel(tab)
		if err != nil {
			t.Fatal(err)
		}
		for b := 1; b <= 8; b++ {
			prev := -1.0
			for l := 1; l <= 512; l += 7 {
				v, ok := m.Predict(b, l)
				if !ok {
					break
				}
				if v < prev-1e-12 || v < 0 {
					t.Fatalf("trial %d: Predict(%d, %d) = %v after %v", trial, b, l, v, prev)
				}
				prev = v
			}
		}
	}
}

func TestCostTableValidate(t *testing.T) {
	good := func() *ort.CallTimeTable {
		return ort.CallTimeTableFrom([]int{1, 2}, []int{8, 16}, func(b, l int) float64 { return float64(b * l) })
	}
	tests := []struct {
		name string
		mod  func(*ort.CallTimeTable)
		ok   bool
	}{
		{"good", func(*ort.CallTimeTable) {}, true},
		{"format", func(c *ort.CallTimeTable) { c.Format = 9 }, false},
		{"no batch 1", func(c *ort.CallTimeTable) { c.Batches = []int{2, 4} }, false},
		{"unsorted lens", func(c *ort.CallTimeTable) { c.Lens = []int{16, 8} }, false},
		{"ragged", func(c *ort.CallTimeTable) { c.Millis[1] = c.Millis[1][:1] }, false},
		{"rows", func(c *ort.CallTimeTable) { c.Millis = c.Millis[:1] }, false},
		{"negative", func(c *ort.CallTimeTable) { c.Millis[1][0] = -1 }, false},
		{"NaN", func(c *ort.CallTimeTable) { c.Millis[1][0] = math.NaN() }, false},
		{"batch 1 unmeasured", func(c *ort.CallTimeTable) { c.Millis[0] = []float64{0, 0} }, false},
		{"holes elsewhere", func(c *ort.CallTimeTable) { c.Millis[1] = []float64{0, 0} }, true},
		{"calls", func(c *ort.CallTimeTable) { c.Calls = [][]int{{1, 0}, {16, 3}} }, true},
		{"calls rows", func(c *ort.CallTimeTable) { c.Calls = [][]int{{1, 0}} }, false},
		{"calls ragged", func(c *ort.CallTimeTable) { c.Calls = [][]int{{1, 0}, {1}} }, false},
		{"calls negative", func(c *ort.CallTimeTable) { c.Calls = [][]int{{1, 0}, {-1, 1}} }, false},
		{"calls huge", func(c *ort.CallTimeTable) { c.Calls = [][]int{{1, 0}, {1 << 30, 1}} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mod(c)
			err := c.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ort.ErrCallTimeTable)) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestCostTableFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cost.json")
	tab := ort.CallTimeTableFrom([]int{1, 2}, []int{8, 16}, func(b, l int) float64 { return float64(b*l) / 3 })
	tab.Meta = map[string]string{"provider": "cpu"}
	if err := ort.WriteCallTimeTable(path, tab); err != nil {
		t.Fatal(err)
	}
	got, err := ort.ReadCallTimeTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tab) {
		t.Fatalf("read %+v, wrote %+v", got, tab)
	}
	if err := os.WriteFile(path, []byte(`{"format": 1, "batches": [1]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ort.ReadCallTimeTable(path); !errors.Is(err, ort.ErrCallTimeTable) {
		t.Fatalf("truncated file: %v", err)
	}
	if _, err := ort.ReadCallTimeTable(filepath.Join(dir, "missing.json")); !errors.Is(err, ort.ErrCallTimeTable) {
		t.Fatalf("missing file: %v", err)
	}
	bad := tab.Clone()
	bad.Batches = nil
	if err := ort.WriteCallTimeTable(path, bad); !errors.Is(err, ort.ErrCallTimeTable) {
		t.Fatalf("writing an invalid table: %v", err)
	}
}

func TestCostModelObserve(t *testing.T) {
	// Calibration measured batches of 1 and 2 at short lengths only.
	tab := ort.CallTimeTableFrom([]int{1, 2}, []int{16, 32}, func(b, l int) float64 { return float64(b*l) / 16 })
	m0, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m0.Predict(8, 128); ok {
		t.Fatal("predicts a batch of 8 at 128 tokens from batches of 1 and 2 at 32")
	}
	// Real calls of 8 sequences at 128 tokens took 20 ms (1/3.2 of 8 × 8):
	// the row appears, and covers lengths up to 128 only.
	m := m0
	for range 3 {
		m = m.Observe(8, 128, 20)
	}
	if got, ok := m.Predict(8, 128); !ok || math.Abs(got-20) > 1e-9 {
		t.Fatalf("Predict(8, 128) = %v %v after observing 20 ms", got, ok)
	}
	if _, ok := m.Predict(8, 200); ok {
		t.Fatal("a row observed at 128 tokens predicts 200")
	}
	if m.MaxBatch() != 8 || m0.MaxBatch() != 2 {
		t.Fatalf("MaxBatch %d (was %d): Observe must not change the receiver", m.MaxBatch(), m0.MaxBatch())
	}
	// Real calls replace the calibration where both exist: the row of 1
	// was calibrated at 1 ms for 16 tokens and 2 ms for 32; a call of 16
	// tokens took 1.5 ms. Above 16 tokens the calibrated cell still
	// shapes the fit.
	m = m.Observe(1, 16, 1.5)
	if got, _ := m.Predict(1, 16); math.Abs(got-1.5) > 1e-9 {
		t.Fatalf("Predict(1, 16) = %v after a call of 1.5 ms", got)
	}
	if got, _ := m.Predict(1, 32); math.Abs(got-2) > 1e-9 {
		t.Fatalf("Predict(1, 32) = %v, want the calibrated 2", got)
	}
	// A new size between measured ones starts from its interpolation (rows
	// 2 and 8 at 128 tokens: 16 and 20 ms, so 5 is predicted 18 ms): a
	// lucky first call of 9 ms counts for one call against two at 18.
	m = m.Observe(2, 128, 16)
	if got, _ := m.Predict(5, 128); math.Abs(got-18) > 1e-9 {
		t.Fatalf("Predict(5, 128) = %v, want 18", got)
	}
	m5 := m.Observe(5, 128, 9)
	// The fit's relative-error least squares of a constant c over 18, 18
	// and 9: c = Σ(1/y) / Σ(1/y²) = 12.
	if got, _ := m5.Predict(5, 128); math.Abs(got-12) > 1e-9 {
		t.Fatalf("Predict(5, 128) = %v after one call of 9 ms, want 12", got)
	}
	for range 16 { // the calls push the prior out of the window
		m5 = m5.Observe(5, 128, 9)
	}
	if got, _ := m5.Predict(5, 128); math.Abs(got-9) > 1e-9 {
		t.Fatalf("Predict(5, 128) = %v after 17 calls of 9 ms", got)
	}
	// A size above the largest measured has no prior: its first call is
	// all there is.
	if got, _ := m.Observe(16, 128, 30).Predict(16, 128); math.Abs(got-30) > 1e-9 {
		t.Fatalf("Predict(16, 128) = %v after one call of 30 ms", got)
	}
	// Nonsense is ignored.
	for _, bad := range [][3]float64{{0, 16, 1}, {1, 0, 1}, {1, 16, 0}, {1, 16, math.NaN()}, {1, 16, math.Inf(1)}} {
		if got := m.Observe(int(bad[0]), int(bad[1]), bad[2]); got != m {
			t.Fatalf("Observe%v changed the model", bad)
		}
	}
}

// A noisy workload at lengths off the grid, with a new batch size between
// measured ones (which starts from a prior) and a size beyond them, saves
// and reloads to nearly the same predictions, short calls (where the fixed
// cost per call dominates) included.
func TestCostModelTableNoisyRoundTrip(t *testing.T) {
	truth := func(b, l int) float64 { return 3 + float64(b*l)/256 }
	tab := ort.CallTimeTableFrom([]int{1, 2, 8}, []int{8, 16, 64, 128}, truth)
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	type call struct{ b, l int }
	var calls []call
	for range 60 {
		c := call{[]int{2, 5, 8, 32}[rng.IntN(4)], []int{9, 10, 13, 17, 33, 101, 117}[rng.IntN(7)]}
		noise := 1 + 0.24*(rng.Float64()-0.5)
		if rng.IntN(20) == 0 {
			noise *= 1.4
		}
		m = m.Observe(c.b, c.l, truth(c.b, c.l)*noise)
		calls = append(calls, c)
	}
	back, err := ort.NewCallTimeModel(m.Table())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		want, ok1 := m.Predict(c.b, c.l)
		got, ok2 := back.Predict(c.b, c.l)
		if ok1 != ok2 || math.Abs(got-want) > 0.03*want {
			t.Errorf("Predict(%d, %d): reloaded %.3f %v, learned %.3f %v", c.b, c.l, got, ok2, want, ok1)
		}
	}
}

// Table cells the calls contradict leave the fit: a calibration taken on
// a busy machine had one sequence of 64 tokens at 90 ms; calls of 112
// tokens take 21 ms. Kept, the cell would make the row's fit (time never
// falls with the length) predict far more than the calls at 112.
func TestCostModelDropsContradictedCells(t *testing.T) {
	tab := ort.CallTimeTableFrom([]int{1}, []int{8, 64, 256}, func(b, l int) float64 {
		return map[int]float64{8: 2, 64: 90, 256: 10}[l]
	})
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		m = m.Observe(1, 112, 21)
	}
	if got, _ := m.Predict(1, 112); math.Abs(got-21) > 0.05*21 {
		t.Fatalf("Predict(1, 112) = %v, want about the calls' 21 ms", got)
	}
	if got, _ := m.Predict(1, 64); got > 21 {
		t.Fatalf("Predict(1, 64) = %v, above the calls at 112", got)
	}
	// Both contradicted cells (90 ms below the calls, 10 ms above) are
	// gone from the saved table; 8 tokens at 2 ms stays.
	saved := m.Table()
	if !reflect.DeepEqual(saved.Lens, []int{8, 112}) {
		t.Fatalf("saved lens %v, want [8 112]", saved.Lens)
	}
}

func TestCostModelTable(t *testing.T) {
	// Calibrated: batches 1 and 4 at 16, 64 and 256 tokens. A workload
	// then ran batches of 4 at 141–150 tokens (times ∝ length) and of 8
	// at 144, a size the calibration never reached.
	f := func(b, l int) float64 { return 0.5 + float64(b*l)/64 }
	tab := ort.CallTimeTableFrom([]int{1, 4}, []int{16, 64, 256}, f)
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		m = m.Observe(4, 141+i, f(4, 141+i)*1.2) // the machine is slower than at calibration
	}
	for range 3 {
		m = m.Observe(8, 144, f(8, 144))
	}
	saved := m.Table()
	if err := saved.Validate(); err != nil {
		t.Fatal(err)
	}
	if saved.Meta != nil || !reflect.DeepEqual(saved.Batches, []int{1, 4, 8}) {
		t.Fatalf("batches %v, meta %v", saved.Batches, saved.Meta)
	}
	// Calls are saved at the nearest step of 8 (141–147 at 144, 148–150 at
	// 152); batch 4's calibrated cells at 16, 64 and 256 stay (outside
	// 141–150), batch 8 has the calls only, weighted by their number.
	if want := []int{16, 64, 144, 152, 256}; !reflect.DeepEqual(saved.Lens, want) {
		t.Fatalf("lens %v, want %v", saved.Lens, want)
	}
	if !reflect.DeepEqual(saved.Calls[1], []int{1, 1, 7, 3, 1}) || !reflect.DeepEqual(saved.Calls[2], []int{0, 0, 3, 0, 0}) {
		t.Fatalf("calls %v", saved.Calls)
	}
	if saved.Millis[2][0] != 0 || math.Abs(saved.Millis[2][2]-f(8, 144)) > 1e-12 {
		t.Fatalf("batch 8 row %v", saved.Millis[2])
	}
	// Loaded again, it predicts what the learned model predicts, up to the
	// moves to the grid (within 1 %), and as far.
	back, err := ort.NewCallTimeModel(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{1, 100}, {4, 64}, {4, 145}, {4, 150}, {8, 144}, {6, 144}} {
		want, ok1 := m.Predict(c[0], c[1])
		got, ok2 := back.Predict(c[0], c[1])
		if !ok1 || !ok2 || math.Abs(got-want) > 0.01*want {
			t.Errorf("Predict%v: reloaded %v %v, learned %v %v", c, got, ok2, want, ok1)
		}
	}
	if _, ok := back.Predict(8, 240); ok {
		t.Error("the reloaded batch-8 row reaches 240 tokens from calls at 144")
	}
}

func TestCostModelOptimistic(t *testing.T) {
	tab := ort.CallTimeTableFrom([]int{1, 2, 4}, []int{16, 128}, func(b, l int) float64 {
		if b == 4 && l > 16 {
			return 0
		}
		return float64(b * l)
	})
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		b, l int
		ms   float64
		ok   bool
	}{
		{2, 128, 0, false},                // measured: Predict's, not a proposal
		{8, 16, 4 * 16 * 2 * 0.9, true},   // twice the largest covering size (4)
		{9, 16, 0, false},                 // beyond twice it
		{4, 128, 2 * 128 * 2 * 0.9, true}, // 4 covers only 16 tokens: scaled from 2
		{3, 128, 2 * 128 * 1.5 * 0.9, true},
		{5, 128, 0, false},
	}
	for _, tt := range tests {
		got, ok := m.Optimistic(tt.b, tt.l, 0.9)
		if ok != tt.ok || math.Abs(got-tt.ms) > 1e-6*max(tt.ms, 1) {
			t.Fatalf("Optimistic(%d, %d) = %v %v, want %v %v", tt.b, tt.l, got, ok, tt.ms, tt.ok)
		}
	}
	// A size measured at shorter lengths is never proposed below its time
	// there: real calls of 4 at 16 tokens took 600 ms.
	m = m.Observe(4, 16, 600)
	if got, ok := m.Optimistic(4, 128, 0.9); !ok || got < 600-1e-9 {
		t.Fatalf("Optimistic(4, 128) = %v %v, below its 16-token time", got, ok)
	}
}

func TestCostModelObserveWindowAndBound(t *testing.T) {
	tab := ort.CallTimeTableFrom([]int{1}, []int{16, 32}, func(b, l int) float64 { return float64(l) / 16 })
	m, err := ort.NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	// Calls at one length fit a constant, not a shape picked by rounding.
	for range 3 {
		m = m.Observe(16, 128, 40)
	}
	for _, l := range []int{16, 64, 128} {
		if got, ok := m.Predict(16, l); !ok || math.Abs(got-40) > 1e-9 {
			t.Fatalf("Predict(16, %d) = %v %v, want the constant 40", l, got, ok)
		}
	}
	// What was learned at 128 tokens predicts up to 160 (25 % longer,
	// scaled linearly) and bounds longer calls: T(L) ≤ T(128)·(L/128)².
	if got, ok := m.Predict(16, 160); !ok || math.Abs(got-40*1.25) > 1e-9 {
		t.Fatalf("Predict(16, 160) = %v %v", got, ok)
	}
	if got, ok := m.UpperBound(16, 192); !ok || math.Abs(got-40*2.25) > 1e-9 {
		t.Fatalf("UpperBound(16, 192) = %v %v", got, ok)
	}
	if _, ok := m.UpperBound(16, 160); ok {
		t.Fatal("UpperBound where Predict covers")
	}
	// A call at 512 tokens extends the row; once 16 newer calls at 128
	// push it out of the window, the row no longer covers 512.
	m = m.Observe(16, 512, 400)
	if _, ok := m.Predict(16, 512); !ok {
		t.Fatal("a row observed at 512 does not cover it")
	}
	for range 16 {
		m = m.Observe(16, 128, 40)
	}
	if _, ok := m.Predict(16, 512); ok {
		t.Fatal("the row still covers 512 after that call left its window")
	}
}
