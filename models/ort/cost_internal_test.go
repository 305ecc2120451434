package ort

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/models"
)

func plannerFor(t *testing.T, tab *CallTimeTable, maxTokens int, maxBytes int64, shape models.HFConfig) *batchPlanner {
	t.Helper()
	m, err := NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	return newBatchPlanner(m, maxTokens, maxBytes, shape)
}

// cost is the planner's costOn under its current model.
func (p *batchPlanner) cost(b, l int) (float64, bool) { return p.costOn(p.model.Load(), b, l) }

// checkPartition fails unless batches hold every index of lens once.
func checkPartition(t *testing.T, lens []int, batches [][]int) {
	t.Helper()
	seen := make([]bool, len(lens))
	for _, b := range batches {
		if len(b) == 0 {
			t.Fatalf("empty batch in %v", batches)
		}
		for _, i := range b {
			if seen[i] {
				t.Fatalf("index %d twice in %v", i, batches)
			}
			seen[i] = true
		}
	}
	if slices.Contains(seen, false) {
		t.Fatalf("%v misses an index of %d", batches, len(lens))
	}
}

// planTotal is the predicted time of a plan, +Inf when a batch may not run.
func planTotal(p *batchPlanner, lens []int, batches [][]int) float64 {
	total := 0.0
	for _, b := range batches {
		longest := 0
		for _, i := range b {
			longest = max(longest, lens[i])
		}
		c, ok := p.cost(len(b), longest)
		if !ok {
			return math.Inf(1)
		}
		total += c
	}
	return total
}

// bruteBest is the least predicted time over every set partition of the
// indices (not only the contiguous runs the planner tries).
func bruteBest(p *batchPlanner, lens []int) float64 {
	best := math.Inf(1)
	var blocks [][]int
	var rec func(i int)
	rec = func(i int) {
		if i == len(lens) {
			best = min(best, planTotal(p, lens, blocks))
			return
		}
		for bi := range blocks {
			blocks[bi] = append(blocks[bi], i)
			rec(i + 1)
			blocks[bi] = blocks[bi][:len(blocks[bi])-1]
		}
		blocks = append(blocks, []int{i})
		rec(i + 1)
		blocks = blocks[:len(blocks)-1]
	}
	rec(0)
	return best
}

// randomTable draws a cost table that grows with the length in each row
// (as real timings do) but is arbitrary across batch sizes, with holes
// where a calibration budget would have stopped.
func randomTable(rng *rand.Rand) *CallTimeTable {
	batches := []int{1, 2, 3, 5, 8}
	lens := []int{4, 8, 16, 32}
	t := &CallTimeTable{Format: CallTimeTableFormat, Batches: batches, Lens: lens}
	for i := range batches {
		row := make([]float64, len(lens))
		v := rng.Float64() * 5
		stop := len(lens)
		if i > 0 && rng.IntN(3) == 0 {
			stop = 1 + rng.IntN(len(lens))
		}
		for j := range stop {
			v += rng.Float64() * 3 * float64(j+1)
			row[j] = v + 0.01
		}
		t.Millis = append(t.Millis, row)
	}
	return t
}

func TestPlanCostOptimalAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 20))
	shape := models.HFConfig{HiddenSize: 8, NumAttentionHeads: 2, IntermediateSize: 16}
	for trial := range 300 {
		n := 1 + rng.IntN(7)
		lens := make([]int, n)
		for i := range lens {
			lens[i] = 1 + rng.IntN(32)
		}
		maxTokens := 32 + rng.IntN(200)
		var maxBytes int64
		if trial%2 == 0 {
			maxBytes = shape.ActivationBytes(1+rng.IntN(6), 1+rng.IntN(32))
		}
		p := plannerFor(t, randomTable(rng), maxTokens, maxBytes, shape)
		got := p.plan(lens)
		checkPartition(t, lens, got)
		total := planTotal(p, lens, got)
		want := bruteBest(p, lens)
		if math.IsInf(total, 1) || total > want*(1+1e-9)+1e-12 {
			t.Fatalf("trial %d lens %v: plan %v costs %v, best partition %v", trial, lens, got, total, want)
		}
	}
}

func TestPlanCostRespectsCaps(t *testing.T) {
	shape := models.HFConfig{HiddenSize: 384, NumAttentionHeads: 12, IntermediateSize: 1536}
	// Big batches are nearly free: only the caps can stop them.
	cheap := CallTimeTableFrom([]int{1, 2, 4, 8, 16, 32, 64}, []int{16, 64, 256, 512},
		func(b, l int) float64 { return 1 + 1e-6*float64(b*l) })
	lens := make([]int, 200)
	for i := range lens {
		lens[i] = 20 + (i*37)%480
	}
	for _, tc := range []struct {
		name      string
		maxTokens int
		maxBytes  int64
	}{
		{"bytes", 1 << 20, shape.ActivationBytes(3, 256)},
		{"tokens", 1024, 0},
		{"both", 2048, shape.ActivationBytes(8, 128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plannerFor(t, cheap, tc.maxTokens, tc.maxBytes, shape)
			batches := p.plan(lens)
			checkPartition(t, lens, batches)
			multi := 0
			for _, b := range batches {
				longest := 0
				for _, i := range b {
					longest = max(longest, lens[i])
				}
				if len(b) == 1 {
					continue
				}
				multi++
				if len(b)*longest > tc.maxTokens {
					t.Fatalf("batch %d×%d over %d tokens", len(b), longest, tc.maxTokens)
				}
				if tc.maxBytes > 0 && shape.ActivationBytes(len(b), longest) > tc.maxBytes {
					t.Fatalf("batch %d×%d needs %d bytes > cap %d", len(b), longest, shape.ActivationBytes(len(b), longest), tc.maxBytes)
				}
			}
			if multi == 0 {
				t.Fatal("no batch of two or more: the caps were not what stopped growth")
			}
		})
	}
}

func TestPlanCostShapes(t *testing.T) {
	batches := []int{1, 2, 4, 8, 16, 32, 64}
	lens := []int{16, 64, 128, 256, 512}
	tests := []struct {
		name string
		f    func(b, l int) float64
		want func(n int) int // batches expected for n sequences
	}{
		// The per-call overhead dominates: everything in one call.
		{"overhead dominates", func(b, l int) float64 { return 5 + 1e-4*float64(b*l) }, func(int) int { return 1 }},
		// The attention term dominates and grows faster than the batch
		// (the cache falls away): one sequence per call.
		{"attention dominates", func(b, l int) float64 {
			x := float64(l)
			return 1e-3 + float64(b)*(1+0.2*float64(b))*x*x*1e-4
		}, func(n int) int { return n }},
	}
	seqLens := []int{30, 200, 90, 400, 17, 250, 511, 64, 128, 300}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plannerFor(t, CallTimeTableFrom(batches, lens, tt.f), 1<<20, 0, models.HFConfig{HiddenSize: 8})
			got := p.plan(seqLens)
			checkPartition(t, seqLens, got)
			if len(got) != tt.want(len(seqLens)) {
				t.Fatalf("%d batches %v, want %d", len(got), got, tt.want(len(seqLens)))
			}
		})
	}
}

func TestPlanCostEmptyAndOrder(t *testing.T) {
	p := plannerFor(t, CallTimeTableFrom([]int{1, 2}, []int{8}, func(b, l int) float64 { return 1 }), 1<<20, 0, models.HFConfig{HiddenSize: 8})
	if got := p.plan(nil); got != nil {
		t.Fatalf("plan(nil) = %v", got)
	}
	// Batches of 4 were never measured: up to twice the largest measured
	// size, the planner assumes them 10 % cheaper per sequence than a
	// pair (4/2 × 1 × 0.9 = 1.8 < 2 for two pairs) and tries one, in
	// length order.
	lens := []int{3, 1, 2, 4}
	if got, want := p.plan(lens), [][]int{{1, 2, 0, 3}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plan = %v, want %v", got, want)
	}
	// It took 2.5 ms: pairs are cheaper (2 ms). A call per pair costs the
	// same as a pair per call, so pairs win the tie; batches follow
	// length order.
	p.observe(4, 4, 2500*time.Microsecond)
	if got, want := p.plan(lens), [][]int{{1, 2}, {0, 3}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plan after observing = %v, want %v", got, want)
	}
	// Longer sequences than the batch of 4 was measured at: predicted up to
	// 25 % longer (5 tokens: 2.5 × 5/4), beyond that its optimistic
	// estimate is never below that (the time does not fall with the
	// length).
	for l, want := range map[int]float64{5: 3.125, 6: 3.125, 8: 3.125} {
		if c, ok := p.cost(4, l); !ok || math.Abs(c-want) > 1e-9 {
			t.Fatalf("cost(4, %d) = %v, %v, want %v", l, c, ok, want)
		}
	}
}

// The planner's cost of a batch size never falls with the length, across
// the end of a row's reach too (planCost's optimality relies on it).
func TestPlanCostMonotoneAcrossReach(t *testing.T) {
	truth := func(b, l int) float64 { return 0.5 + 0.15*float64(b*l) }
	p := plannerFor(t, CallTimeTableFrom([]int{1, 2}, []int{16, 32, 64, 128, 256, 512}, truth), 1<<20, 0, models.HFConfig{HiddenSize: 8})
	p.observe(4, 128, time.Duration(0.9*truth(4, 128)*float64(time.Millisecond))) // a lucky call
	p.observe(8, 100, time.Duration(truth(8, 100)*float64(time.Millisecond)))
	for b := 1; b <= 16; b++ {
		prev := 0.0
		for l := 1; l <= 512; l++ {
			c, ok := p.cost(b, l)
			if !ok {
				continue
			}
			if c < prev-1e-9 {
				t.Fatalf("cost(%d, %d) = %v < %v at a shorter length", b, l, c, prev)
			}
			prev = c
		}
	}
}

// TestPlanCostMonotoneRandomTables: the same property on random tables:
// sizes measured to different lengths and dearer or cheaper per sequence
// at random, then random observations of unmeasured sizes.
func TestPlanCostMonotoneRandomTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lens := []int{16, 32, 64, 128, 256, 384, 512}
	for trial := range 100 {
		perSeq := map[int]float64{}
		reach := map[int]int{}
		tab := CallTimeTableFrom([]int{1, 2, 4, 8, 12}, lens, func(b, l int) float64 {
			if _, ok := perSeq[b]; !ok {
				perSeq[b], reach[b] = 0.005+0.01*rng.Float64(), lens[2+rng.IntN(len(lens)-2)]
			}
			if b > 1 && l > reach[b] {
				return 0 // not measured
			}
			return 0.5 + perSeq[b]*float64(b*l)
		})
		p := plannerFor(t, tab, 1<<20, 0, models.HFConfig{HiddenSize: 8})
		for range 3 {
			b, l := 13+rng.IntN(12), 16+rng.IntN(300)
			p.observe(b, l, time.Duration((0.5+0.01*float64(b*l))*float64(time.Millisecond)))
		}
		for b := 1; b <= 32; b++ {
			prev := 0.0
			for l := 1; l <= 512; l += 3 {
				c, ok := p.cost(b, l)
				if !ok {
					continue
				}
				if c < prev-1e-9 {
					t.Fatalf("trial %d: cost(%d, %d) = %v < %v at a shorter length", trial, b, l, c, prev)
				}
				prev = c
			}
		}
	}
}

// fakeClock is a clock that only timedRunner advances.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// timedRunner is a runner whose every call takes cost(n, seqLen) on a fake
// clock (the first call of each shape twice as long, as a cold arena
// would); it scores nothing.
type timedRunner struct {
	clock *fakeClock
	cost  func(b, l int) time.Duration
	fail  error
	mu    sync.Mutex
	calls int
	seen  map[[2]int]bool
}

func (r *timedRunner) run(ctx context.Context, b *batchTensors) ([]float32, []int64, error) {
	r.mu.Lock()
	r.calls++
	if r.seen == nil {
		r.seen = map[[2]int]bool{}
	}
	cold := !r.seen[[2]int{b.n, b.seqLen}]
	r.seen[[2]int{b.n, b.seqLen}] = true
	r.mu.Unlock()
	if r.fail != nil {
		return nil, nil, r.fail
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	d := r.cost(b.n, b.seqLen)
	if cold {
		d *= 2
	}
	r.clock.advance(d)
	return make([]float32, b.n), []int64{int64(b.n), 1}, nil
}

func (r *timedRunner) provider() string { return "fake" }
func (r *timedRunner) close() error     { return nil }

func (r *timedRunner) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// quadCost is 0.2 ms per call plus b·(2 µs·L + 0.02 µs·L²).
func quadCost(b, l int) time.Duration {
	x := float64(l)
	us := 200 + float64(b)*(2*x+0.02*x*x)
	return time.Duration(us * float64(time.Microsecond))
}

func TestCalibrateMeasuresWithinBudget(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := &timedRunner{clock: clock, cost: quadCost}
	budget := 300 * time.Millisecond
	c := &calibrator{batches: calibBatches, lens: gridLens(512), budget: budget,
		now: clock.now, run: r, allowed: func(b, l int) bool { return b*l <= 16384 }, vocab: 30522}
	tab, st, err := c.calibrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	if !st.stopped || st.measured == 0 || st.measured >= st.cells || st.measured != tab.Measured() {
		t.Fatalf("stats %+v, table has %d cells", st, tab.Measured())
	}
	if st.elapsed > budget {
		t.Fatalf("calibration took %v of a %v budget", st.elapsed, budget)
	}
	// The warm-up run (cold, twice as slow) is not what is recorded.
	for i, b := range tab.Batches {
		for j, l := range tab.Lens {
			if v := tab.Millis[i][j]; v > 0 && math.Abs(v-float64(quadCost(b, l))/1e6) > 1e-9 {
				t.Fatalf("cell %d×%d = %v ms, want %v", b, l, v, float64(quadCost(b, l))/1e6)
			}
		}
	}
	// Cheapest first: a row never has a hole below a measured length, and
	// a bigger batch never reaches a longer length than a smaller one.
	prevLast := len(tab.Lens)
	for i := range tab.Batches {
		last := -1
		for j, v := range tab.Millis[i] {
			if v > 0 {
				if j != last+1 {
					t.Fatalf("row %d has a hole: %v", tab.Batches[i], tab.Millis[i])
				}
				last = j
			}
		}
		if last+1 > prevLast {
			t.Fatalf("row %d reaches further than the row before: %v", tab.Batches[i], tab.Millis)
		}
		prevLast = last + 1
	}
	if tab.Millis[0][len(tab.Lens)-1] == 0 {
		t.Fatal("a single 512-token sequence was not measured in 300 ms of 1-30 ms runs")
	}
	// A large budget measures every allowed cell.
	c.budget = time.Hour
	tab, st, err = c.calibrate(context.Background())
	if err != nil || st.stopped || st.measured != st.cells {
		t.Fatalf("hour budget: %+v %v", st, err)
	}
	for i, b := range tab.Batches {
		for j, l := range tab.Lens {
			if (tab.Millis[i][j] > 0) != (b == 1 || b*l <= 16384) {
				t.Fatalf("cell %d×%d measured=%v", b, l, tab.Millis[i][j] > 0)
			}
		}
	}
	// And the fitted model predicts the runner's cost where it measured.
	m, err := NewCallTimeModel(tab)
	if err != nil {
		t.Fatal(err)
	}
	for _, bl := range [][2]int{{1, 300}, {4, 100}, {32, 500}} {
		got, ok := m.Predict(bl[0], bl[1])
		want := float64(quadCost(bl[0], bl[1])) / 1e6
		if !ok || math.Abs(got-want) > 1e-6*want {
			t.Fatalf("Predict%v = %v %v, want %v", bl, got, ok, want)
		}
	}
}

// blockingRunner runs small batches instantly and blocks a big one until
// its context ends, as a run the runtime terminates would.
type blockingRunner struct {
	limit int // n × seqLen above which a run blocks
}

func (r blockingRunner) run(ctx context.Context, b *batchTensors) ([]float32, []int64, error) {
	if b.n*b.seqLen > r.limit {
		<-ctx.Done()
		return nil, nil, fmt.Errorf("run terminated: %w", ctx.Err())
	}
	return make([]float32, b.n), []int64{int64(b.n), 1}, nil
}

func (blockingRunner) provider() string { return "fake" }
func (blockingRunner) close() error     { return nil }

func TestCalibrateDeadlineStopsSlowRun(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)} // never advances: every cell looks free
	c := &calibrator{batches: calibBatches, lens: gridLens(64), budget: 50 * time.Millisecond,
		now: clock.now, run: blockingRunner{limit: 64}, allowed: func(b, l int) bool { return true }, vocab: 10}
	tab, st, err := c.calibrate(context.Background())
	if err != nil {
		t.Fatalf("a run cut by the budget's deadline is not a failure: %v", err)
	}
	if !st.stopped {
		t.Fatalf("stats %+v", st)
	}
	for i, b := range tab.Batches {
		for j, l := range tab.Lens {
			if (tab.Millis[i][j] > 0) != (b*l <= 64) {
				t.Fatalf("cell %d×%d measured=%v", b, l, tab.Millis[i][j] > 0)
			}
		}
	}
	// The caller's own cancellation is an error, not a budget stop.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.calibrate(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled calibration: %v", err)
	}
}

func TestGridLens(t *testing.T) {
	for _, tc := range []struct {
		maxLen int
		want   []int
	}{
		{512, []int{8, 16, 32, 64, 128, 256, 384, 512}},
		{200, []int{8, 16, 32, 64, 128, 200}},
		{64, []int{8, 16, 32, 64}},
		{6, []int{6}},
	} {
		if got := gridLens(tc.maxLen); !slices.Equal(got, tc.want) {
			t.Errorf("gridLens(%d) = %v, want %v", tc.maxLen, got, tc.want)
		}
	}
}

// costFixture is a model directory (only the ONNX file matters to the
// cost cache) and the env to set cost mode up with a timed fake runner.
type costFixture struct {
	env   costEnv
	r     *timedRunner
	onnx  string
	cache string // the user cache directory
}

func newCostFixture(t *testing.T) *costFixture {
	t.Helper()
	dir := t.TempDir()
	onnxPath := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(onnxPath, []byte("not really a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := models.DefaultConfig()
	cfg.Dir, cfg.MaxLength, cfg.MaxBatchTokens, cfg.CalibrationMillis = dir, 128, 1024, 500
	clock := &fakeClock{t: time.Unix(0, 0)}
	f := &costFixture{r: &timedRunner{clock: clock, cost: quadCost}, onnx: onnxPath, cache: t.TempDir()}
	f.env = costEnv{
		cfg:          cfg,
		dir:          models.ModelDir{Dir: dir, ONNXPath: onnxPath, Config: models.HFConfig{HiddenSize: 32, VocabSize: 100}},
		maxLen:       128,
		provider:     "cpu",
		host:         hostFacts{ortVersion: "1.24.1", cpu: "Test CPU", cpuFlags: "abc", cpus: 2},
		run:          f.r,
		now:          clock.now,
		userCacheDir: func() (string, error) { return f.cache, nil },
	}
	return f
}

func (f *costFixture) setup(t *testing.T) (*batchPlanner, BatchingInfo) {
	t.Helper()
	p, info, err := setupCost(f.env)
	if err != nil {
		t.Fatal(err)
	}
	return p, info
}

func TestCostCacheRoundTrip(t *testing.T) {
	f := newCostFixture(t)
	p, info := f.setup(t)
	if p == nil || info.Mode != models.BatchingCost || info.Source != CostCalibrated || info.Table == nil {
		t.Fatalf("first load: %+v", info)
	}
	if filepath.Dir(info.Path) != f.env.dir.Dir || !strings.HasPrefix(filepath.Base(info.Path), "hybrank_cost_") {
		t.Fatalf("cache written to %q, want beside the model in %s", info.Path, f.env.dir.Dir)
	}
	calls := f.r.callCount()
	p2, info2 := f.setup(t)
	if p2 == nil || info2.Source != CostCached || info2.Path != info.Path || f.r.callCount() != calls {
		t.Fatalf("second load: %+v, runner calls %d → %d", info2, calls, f.r.callCount())
	}
	if fmt.Sprint(info2.Table.Millis) != fmt.Sprint(info.Table.Millis) {
		t.Fatalf("cached table %v, calibrated %v", info2.Table.Millis, info.Table.Millis)
	}
	lens := []int{5, 100, 40, 128, 9, 70}
	if fmt.Sprint(p.plan(lens)) != fmt.Sprint(p2.plan(lens)) {
		t.Fatal("the cached model plans differently")
	}
}

// What the planner learns from its calls is written over the cache at
// close, and the next load starts from it; an unobserved planner and an
// explicit table write nothing.
func TestCostCacheSavesLearned(t *testing.T) {
	f := newCostFixture(t)
	p, info := f.setup(t)
	before, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(info.Path); string(after) != string(before) {
		t.Fatal("save rewrote the cache without any call observed")
	}
	// Calls of 8 sequences at 120 tokens (a length the calibration grid
	// lacks) ran three times slower than calibrated.
	cal, ok := p.model.Load().Predict(8, 120)
	if !ok {
		t.Fatal("the calibration does not cover 8 × 120")
	}
	for range 4 {
		p.observe(8, 120, time.Duration(3*cal*float64(time.Millisecond)))
	}
	learned, _ := p.model.Load().Predict(8, 120)
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	calls := f.r.callCount()
	p2, info2 := f.setup(t)
	if p2 == nil || info2.Source != CostCached || info2.Path != info.Path || f.r.callCount() != calls {
		t.Fatalf("load after save: %+v, runner calls %d → %d", info2, calls, f.r.callCount())
	}
	if got, ok := p2.model.Load().Predict(8, 120); !ok || math.Abs(got-learned) > 1e-6*learned || learned < 1.2*cal {
		t.Fatalf("reloaded Predict(8, 120) = %v %v, want the learned %v (calibrated %v)", got, ok, learned, cal)
	}
	// The calibration's cells, plus the learned one at 120, less batch 8's
	// cell at 128: faster than the calls at 120, so contradicted by them.
	if got, want := info2.Table.Measured(), info.Table.Measured(); got != want {
		t.Fatalf("reloaded table has %d cells, want %d", got, want)
	}
	if i, j := slices.Index(info2.Table.Batches, 8), slices.Index(info2.Table.Lens, 128); i < 0 || j < 0 || info2.Table.Millis[i][j] != 0 {
		t.Fatalf("batch 8 at 128 tokens kept in %+v", info2.Table)
	}
	// Another process saved the cache after this load: its version stays.
	p4, info4 := f.setup(t)
	other := info4.Table.Clone()
	other.Millis[0][0] *= 2
	if err := WriteCallTimeTable(info4.Path, other); err != nil {
		t.Fatal(err)
	}
	theirs, _ := os.ReadFile(info4.Path)
	p4.observe(2, 64, 7*time.Millisecond)
	if err := p4.save(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(info4.Path); string(after) != string(theirs) {
		t.Fatal("save overwrote a cache another process wrote since this load")
	}
	// A shipped table is the user's file: never written.
	path := filepath.Join(t.TempDir(), "shipped.json")
	if err := WriteCallTimeTable(path, CallTimeTableFrom([]int{1, 8}, []int{16, 128}, func(b, l int) float64 { return 1 })); err != nil {
		t.Fatal(err)
	}
	f.env.cfg.CostTable = path
	p3, _ := f.setup(t)
	shipped, _ := os.ReadFile(path)
	p3.observe(8, 64, 5*time.Millisecond)
	if err := p3.save(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(shipped) {
		t.Fatal("save wrote over Config.CostTable")
	}
}

func TestCostCacheInvalidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, f *costFixture)
	}{
		{"intra-op threads", func(_ *testing.T, f *costFixture) { f.env.cfg.IntraOpThreads = 3 }},
		{"pool size", func(_ *testing.T, f *costFixture) { f.env.cfg.PoolSize = 2 }},
		{"provider", func(_ *testing.T, f *costFixture) { f.env.provider = "cuda" }},
		{"runtime version", func(_ *testing.T, f *costFixture) { f.env.host.ortVersion = "1.25.0" }},
		{"cpu flags", func(_ *testing.T, f *costFixture) { f.env.host.cpuFlags = "abd" }},
		{"byte cap", func(_ *testing.T, f *costFixture) { f.env.cfg.MaxBatchBytes = 1 << 20 }},
		{"model rewritten", func(t *testing.T, f *costFixture) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(f.onnx, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{"model size", func(t *testing.T, f *costFixture) {
			if err := os.WriteFile(f.onnx, []byte("a longer fake model file"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCostFixture(t)
			_, first := f.setup(t)
			tc.edit(t, f)
			calls := f.r.callCount()
			_, info := f.setup(t)
			if info.Source != CostCalibrated || f.r.callCount() == calls || info.Path == first.Path || info.Path == "" {
				t.Fatalf("after the change: %+v (first %s)", info, first.Path)
			}
		})
	}
}

func TestCostCacheCorruptIgnored(t *testing.T) {
	f := newCostFixture(t)
	_, first := f.setup(t)
	for _, junk := range []string{"{not json", `{"format": 1, "batches": [2], "lens": [8], "millis": [[1]]}`} {
		if err := os.WriteFile(first.Path, []byte(junk), 0o644); err != nil {
			t.Fatal(err)
		}
		p, info := f.setup(t)
		if p == nil || info.Source != CostCalibrated || info.Path != first.Path {
			t.Fatalf("%q: %+v", junk, info)
		}
		if !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "ignoring calibration cache") }) {
			t.Fatalf("%q: no note about the corrupt cache: %q", junk, info.Notes)
		}
		if _, err := ReadCallTimeTable(first.Path); err != nil {
			t.Fatalf("%q: the cache was not rewritten: %v", junk, err)
		}
	}
	// A valid table measured under another key is stale, not trusted.
	tab, _ := ReadCallTimeTable(first.Path)
	tab.Meta["intra_op_threads"] = "99"
	if err := WriteCallTimeTable(first.Path, tab); err != nil {
		t.Fatal(err)
	}
	_, info := f.setup(t)
	if info.Source != CostCalibrated || !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "other settings") }) {
		t.Fatalf("stale cache: %+v", info)
	}
}

func TestCostCacheReadOnlyModelDir(t *testing.T) {
	f := newCostFixture(t)
	// A model directory that cannot take the file (even for root, which
	// ignores permissions): the ONNX file lives elsewhere and the
	// directory does not exist.
	f.env.dir.Dir = filepath.Join(t.TempDir(), "gone")
	_, info := f.setup(t)
	if info.Source != CostCalibrated || !strings.HasPrefix(info.Path, f.cache) {
		t.Fatalf("fallback: %+v", info)
	}
	if !slices.ContainsFunc(info.Notes, func(n string) bool { return strings.Contains(n, "cannot cache") }) {
		t.Fatalf("no note about the model directory: %q", info.Notes)
	}
	calls := f.r.callCount()
	_, info2 := f.setup(t)
	if info2.Source != CostCached || info2.Path != info.Path || f.r.callCount() != calls {
		t.Fatalf("second load from the user cache: %+v", info2)
	}
	// Nowhere to write: still a cost model, just not cached.
	f.env.userCacheDir = func() (string, error) { return "", errors.New("no home") }
	f.env.cfg.IntraOpThreads = 7 // a new key, so nothing cached applies
	p, info3 := f.setup(t)
	if p == nil || info3.Source != CostCalibrated || info3.Path != "" {
		t.Fatalf("uncachable: %+v", info3)
	}
}

// A model directory that holds an older table and cannot take a new one:
// the save goes to the user cache, and the next load reads the newest.
func TestCostCacheSaveFallsBack(t *testing.T) {
	f := newCostFixture(t)
	p, info := f.setup(t) // calibrated, cached beside the model
	if filepath.Dir(info.Path) != f.env.dir.Dir {
		t.Fatalf("cache at %s", info.Path)
	}
	// The model directory's file stays readable but its writes fail.
	p.savePath = filepath.Join(t.TempDir(), "gone", filepath.Base(info.Path))
	p.saveStamp = stampOf(p.savePath)
	p.fallback[0].path = p.savePath
	p.observe(2, 64, 50*time.Millisecond)
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	key, err := costKey(f.env)
	if err != nil {
		t.Fatal(err)
	}
	paths := cachePaths(f.env, key)
	if len(paths) != 2 {
		t.Fatalf("paths %v", paths)
	}
	user, _, err := readCache(paths[1].path, key)
	if err != nil || user.Calls == nil {
		t.Fatalf("user cache after the fallback save: %+v, %v", user, err)
	}
	// Make the user cache's copy the newer one, whatever the clock's tick.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(paths[1].path, later, later); err != nil {
		t.Fatal(err)
	}
	_, info2 := f.setup(t)
	if info2.Path != paths[1].path || info2.Table.Calls == nil {
		t.Fatalf("load read %s, want the newer %s", info2.Path, paths[1].path)
	}
}

func TestCostCacheSettings(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		f := newCostFixture(t)
		f.env.cfg.CalibrationCache = models.CalibrationCacheOff
		_, info := f.setup(t)
		entries, _ := os.ReadDir(f.env.dir.Dir)
		if info.Path != "" || len(entries) != 1 {
			t.Fatalf("cache off wrote %q (%d entries)", info.Path, len(entries))
		}
	})
	t.Run("directory", func(t *testing.T) {
		f := newCostFixture(t)
		f.env.cfg.CalibrationCache = t.TempDir()
		_, info := f.setup(t)
		if !strings.HasPrefix(info.Path, f.env.cfg.CalibrationCache) {
			t.Fatalf("cache at %q, want under %q", info.Path, f.env.cfg.CalibrationCache)
		}
	})
	t.Run("explicit table", func(t *testing.T) {
		f := newCostFixture(t)
		path := filepath.Join(t.TempDir(), "shipped.json")
		tab := CallTimeTableFrom([]int{1, 8}, []int{16, 128}, func(b, l int) float64 { return 1 })
		if err := WriteCallTimeTable(path, tab); err != nil {
			t.Fatal(err)
		}
		f.env.cfg.CostTable = path
		p, info := f.setup(t)
		if p == nil || info.Source != CostFile || info.Path != path || f.r.callCount() != 0 {
			t.Fatalf("explicit table: %+v, %d runner calls", info, f.r.callCount())
		}
		if got := p.plan([]int{10, 20, 30}); len(got) != 1 {
			t.Fatalf("flat table should give one batch: %v", got)
		}
		f.env.cfg.CostTable = filepath.Join(t.TempDir(), "missing.json")
		if _, _, err := setupCost(f.env); !errors.Is(err, ErrCallTimeTable) {
			t.Fatalf("missing explicit table: %v", err)
		}
	})
	t.Run("tokens mode", func(t *testing.T) {
		f := newCostFixture(t)
		f.env.cfg.Batching = models.BatchingTokens
		p, info := f.setup(t)
		if p != nil || info.Mode != models.BatchingTokens || f.r.callCount() != 0 {
			t.Fatalf("tokens mode: %+v", info)
		}
	})
	t.Run("calibration fails", func(t *testing.T) {
		f := newCostFixture(t)
		f.r.fail = errors.New("boom")
		p, info := f.setup(t)
		if p != nil || info.Mode != models.BatchingTokens || len(info.Notes) == 0 || !strings.Contains(info.Notes[0], "boom") {
			t.Fatalf("failed calibration: %+v", info)
		}
	})
}

// costModeLoader is fakeLoader (window maxLen) in cost mode, planning
// with a cost table of f over batch sizes 1…64 and lengths 8…64.
func costModeLoader(r *fakeRunner, maxLen int, f func(b, l int) float64) loaderFunc {
	base := fakeLoader(r, 8, maxLen)
	tab := CallTimeTableFrom([]int{1, 2, 4, 8, 16, 32, 64}, []int{8, 16, 32, 64}, f)
	return func(cfg models.Config, kind models.Kind) (*loaded, error) {
		m, err := base(cfg, kind)
		if err != nil {
			return nil, err
		}
		cm, err := NewCallTimeModel(tab)
		if err != nil {
			return nil, err
		}
		m.cost = newBatchPlanner(cm, cfg.MaxBatchTokens, 0, models.HFConfig{})
		m.batching = BatchingInfo{Mode: models.BatchingCost, Source: CostFile}
		return m, nil
	}
}

// A cross-encoder in cost mode scores as in tokens mode (batch mates do not
// change a score) and runs the batches its planner chose.
func TestScoreCostMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(b, l int) float64
		want func(n int) int
	}{
		{"one call", func(b, l int) float64 { return 5 + 1e-4*float64(b*l) }, func(int) int { return 1 }},
		{"one per pair", func(b, l int) float64 { return float64(b*b*l*l) * 1e-3 }, func(n int) int { return n }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.MaxBatchTokens = 64 * 40
			r := &fakeRunner{}
			ce := newCE(t, cfg, costModeLoader(r, cfg.MaxLength, tc.f))
			usage := scoreChecked(t, ce, 30)
			if usage.Batches != tc.want(30) || int(r.calls.Load()) != usage.Batches {
				t.Fatalf("usage %+v, runner calls %d, want %d batches", usage, r.calls.Load(), tc.want(30))
			}
			info, err := ce.Batching()
			if err != nil || info.Mode != models.BatchingCost || info.Source != CostFile {
				t.Fatalf("Batching() = %+v, %v", info, err)
			}
		})
	}
}

// Close writes what the calls taught the planner to its cache file.
func TestCloseSavesLearnedCosts(t *testing.T) {
	cfg := testCfg()
	cfg.MaxBatchTokens = 64 * 40
	r := &fakeRunner{}
	base := fakeLoader(r, 8, cfg.MaxLength)
	path := filepath.Join(t.TempDir(), "hybrank_cost_test.json")
	key := map[string]string{"k": "v"}
	loader := func(cfg models.Config, kind models.Kind) (*loaded, error) {
		m, err := base(cfg, kind)
		if err != nil {
			return nil, err
		}
		cm, err := NewCallTimeModel(CallTimeTableFrom([]int{1, 2}, []int{8, 64}, func(b, l int) float64 { return float64(b * l) }))
		if err != nil {
			return nil, err
		}
		m.cost = newBatchPlanner(cm, cfg.MaxBatchTokens, 0, models.HFConfig{})
		m.cost.savePath, m.cost.saveKey = path, key
		m.batching = BatchingInfo{Mode: models.BatchingCost, Source: CostCached, Path: path}
		return m, nil
	}
	ce := newCE(t, cfg, loader)
	usage := scoreChecked(t, ce, 30)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cache written before Close: %v", err)
	}
	if err := ce.Close(); err != nil {
		t.Fatal(err)
	}
	saved, _, err := readCache(path, key)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, row := range saved.Calls {
		for _, n := range row {
			calls += n
		}
	}
	// The 4 calibrated cells and every call (and the prior a new size
	// between measured ones starts from).
	if calls < 4+usage.Batches || saved.Measured() <= 4 {
		t.Fatalf("saved table stands for %d calls, want 4 cells + %d calls: %+v", calls, usage.Batches, saved)
	}
}

// TestPlanLearnsUnderNoise runs the planner as a reranker uses it: calls
// of 32 sequences of one length (a query with its candidates), 140 to 162
// tokens from one call to the next, each batch's time observed with ±12 %
// noise and, one call in twenty, 40 % more (a collection, another
// process), starting from a calibration that measured batches of 1 and 2
// only. On this landscape every size up to 14 costs about the same per
// sequence and larger ones 15 % more (the activations leave the cache).
// Over calls 10 to 40 of eight such workloads, the learned plans must
// cost at most 1.2 % more than the best plans under the true costs. Before
// new sizes started from their interpolation and rows covered slightly
// longer calls, single lucky calls made the plan wander and large sizes
// were re-explored at every slightly longer call: 1.9 % more.
func TestPlanLearnsUnderNoise(t *testing.T) {
	truth := func(b, l int) float64 {
		f := 1.0
		if b > 14 {
			f = 1.15
		}
		return 0.5 + float64(b*l)*0.15*f
	}
	planTruth := func(lens []int, bs [][]int) float64 {
		var sum float64
		for _, b := range bs {
			l := 0
			for _, i := range b {
				l = max(l, lens[i])
			}
			sum += truth(len(b), l)
		}
		return sum
	}
	var got, best float64
	for seed := range uint64(8) {
		p := plannerFor(t, CallTimeTableFrom([]int{1, 2}, []int{16, 32, 64, 128, 256, 512}, truth), 16384, 0, models.HFConfig{HiddenSize: 8})
		rng := rand.New(rand.NewPCG(seed+1, 11))
		for call := range 40 {
			l := 140 + rng.IntN(23)
			lens := slices.Repeat([]int{l}, 32)
			bs := p.plan(lens)
			checkPartition(t, lens, bs)
			for _, b := range bs {
				noise := 0.88 + 0.24*rng.Float64()
				if rng.IntN(20) == 0 {
					noise *= 1.4
				}
				p.observe(len(b), l, time.Duration(truth(len(b), l)*noise*float64(time.Millisecond)))
			}
			if call >= 10 {
				got += planTruth(lens, bs)
				best += planTruth(lens, planCost(lens, 64, func(b, l int) (float64, bool) { return truth(b, l), true }))
			}
		}
	}
	if got > 1.012*best {
		t.Fatalf("learned plans cost %.0f ms, %.4f× the best plans' %.0f ms", got, got/best, best)
	}
}

// EstimateScore predicts a call from the planner's cost model: nothing
// before the model loads (and it does not load it), the planned batches'
// costs summed, lengths cut to the window, the pool's sessions sharing the
// batches, and nothing in tokens mode or after Close.
func TestEstimateScore(t *testing.T) {
	near := func(t *testing.T, got time.Duration, ok bool, wantMS float64) {
		t.Helper()
		if !ok || math.Abs(float64(got)/float64(time.Millisecond)-wantMS) > 0.02*wantMS {
			t.Fatalf("EstimateScore = %v, %v; want ≈ %.3f ms", got, ok, wantMS)
		}
	}
	cfg := testCfg()
	cfg.MaxBatchTokens = 64 * 64
	fixed := func(b, l int) float64 { return 5 + 1e-3*float64(b*l) } // one call is best
	r := &fakeRunner{}
	ce := newCE(t, cfg, costModeLoader(r, 64, fixed))
	if d, ok := ce.EstimateScore([]int{32}); ok || d != 0 || ce.Provider() != "" {
		t.Fatalf("before load: %v, %v (provider %q): want nothing, and no load", d, ok, ce.Provider())
	}
	if err := ce.Load(); err != nil {
		t.Fatal(err)
	}
	d, ok := ce.EstimateScore([]int{32, 32, 32, 32})
	near(t, d, ok, fixed(4, 32))
	d, ok = ce.EstimateScore([]int{900, 2})
	near(t, d, ok, fixed(2, 64)) // 900 is cut to the window of 64
	if d, ok := ce.EstimateScore(nil); !ok || d != 0 {
		t.Fatalf("no pairs: %v, %v", d, ok)
	}
	if r.calls.Load() != 0 {
		t.Fatalf("EstimateScore ran the model %d times", r.calls.Load())
	}
	ce.Close()
	if _, ok := ce.EstimateScore([]int{32}); ok {
		t.Fatal("a closed cross-encoder predicted")
	}

	perPair := func(b, l int) float64 { return 1e-3 * float64(b*b*l) } // one pair a call is best
	for _, pool := range []int{1, 2} {
		cfg := cfg
		cfg.PoolSize = pool
		ce := newCE(t, cfg, costModeLoader(&fakeRunner{}, 64, perPair))
		if err := ce.Load(); err != nil {
			t.Fatal(err)
		}
		d, ok := ce.EstimateScore([]int{16, 16, 16, 16})
		near(t, d, ok, 4*perPair(1, 16)/float64(pool))
		// Uneven batches: the call takes at least its costliest one.
		d, ok = ce.EstimateScore([]int{64, 8, 8, 8})
		near(t, d, ok, max((perPair(1, 64)+3*perPair(1, 8))/float64(pool), perPair(1, 64)))
	}

	tokens := newFakeCE(t, testCfg(), &fakeRunner{}, 64) // no cost model
	if err := tokens.Load(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.EstimateScore([]int{32}); ok {
		t.Fatal("tokens mode predicted")
	}
}

// BenchmarkEstimateScore is the engine's cost of predicting one call of 32
// real-length pairs (it predicts up to six per rerank batch).
func BenchmarkEstimateScore(b *testing.B) {
	tab := CallTimeTableFrom([]int{1, 2, 4, 8, 16, 32, 64, 128}, []int{64, 128, 192, 256, 320, 384, 448, 512},
		func(n, l int) float64 { return 0.3 + 0.002*float64(n*l) + 1e-6*float64(n*l*l) })
	cm, err := NewCallTimeModel(tab)
	if err != nil {
		b.Fatal(err)
	}
	cfg := testCfg()
	cfg.MaxLength = 512
	co := &core{cfg: cfg, m: &loaded{maxLen: 512, cost: newBatchPlanner(cm, 1<<20, 0, models.HFConfig{})}}
	co.ready.Store(co.m) // what a load publishes: EstimateScore never waits for one
	ce := &CrossEncoder{c: co}
	rng := rand.New(rand.NewPCG(1, 2))
	lens := make([]int, 32)
	for i := range lens {
		lens[i] = 100 + rng.IntN(413)
	}
	for b.Loop() {
		if _, ok := ce.EstimateScore(lens); !ok {
			b.Fatal("no estimate")
		}
	}
}

// TestCostNotFallingWithLength: the planner's cost of a batch does not
// fall as the length grows (planCost's optimality relies on it), also
// where a larger size's row stops covering the length and a smaller,
// cheaper one takes over the optimistic estimate.
func TestCostNotFallingWithLength(t *testing.T) {
	batches := []int{1, 8, 12}
	lens := []int{64, 128, 320}
	tab := CallTimeTableFrom(batches, lens, func(b, l int) float64 {
		if b == 12 && l > 128 {
			return 0 // not measured
		}
		if b == 12 {
			return 1 + 0.013*float64(b*l) // 12 is dearer per sequence than 8
		}
		return 1 + 0.01*float64(b*l)
	})
	p := plannerFor(t, tab, 1<<20, 0, models.HFConfig{HiddenSize: 8})
	a, okA := p.cost(16, 160)
	b, okB := p.cost(16, 161)
	if !okA || !okB {
		t.Fatalf("cost(16, 160) and cost(16, 161): no estimate (%v, %v): the test needs both", okA, okB)
	}
	if b < a {
		t.Fatalf("cost falls with the length: %v at 160, %v at 161", a, b)
	}
}

// TestPlanCostOptimalAcrossReach: on the same table, no plan of 16 × 160
// and 16 × 161 tokens beats the planner's.
func TestPlanCostOptimalAcrossReach(t *testing.T) {
	batches := []int{1, 8, 12}
	lens := []int{64, 128, 320}
	tab := CallTimeTableFrom(batches, lens, func(b, l int) float64 {
		if b == 12 && l > 128 {
			return 0
		}
		if b == 12 {
			return 1 + 0.013*float64(b*l)
		}
		return 1 + 0.01*float64(b*l)
	})
	p := plannerFor(t, tab, 1<<20, 0, models.HFConfig{HiddenSize: 8})
	var ls []int
	for i := 0; i < 16; i++ {
		ls = append(ls, 160)
	}
	for i := 0; i < 16; i++ {
		ls = append(ls, 161)
	}
	plan := p.plan(ls)
	got := planTotal(p, ls, plan)
	var a, b []int
	for i := 0; i < 8; i++ {
		a, b = append(a, i, 16+i), append(b, 8+i, 24+i)
	}
	alt := planTotal(p, ls, [][]int{a, b})
	if alt < got-1e-9 {
		t.Fatalf("planCost's plan (%.2f) is not optimal: %.2f exists", got, alt)
	}
}

// TestCostKeyNamesTheGPU: on CUDA the key holds the card's name (tables of
// one model folder on an H100 and an H200 host with the same CPU must not
// be shared); on the CPU it holds none (its tables keep their keys).
func TestCostKeyNamesTheGPU(t *testing.T) {
	f := newCostFixture(t)
	prev := gpuName
	defer func() { gpuName = prev }()
	card := "NVIDIA H100"
	gpuName = func(int) string { return card }
	cpu, err := costKey(f.env)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cpu["gpu"]; ok {
		t.Errorf("a CPU key names a GPU: %v", cpu)
	}
	f.env.provider = "cuda"
	h100, _ := costKey(f.env)
	card = "NVIDIA H200"
	h200, _ := costKey(f.env)
	if h100["gpu"] != "NVIDIA H100" || cachePaths(f.env, h100)[0].path == cachePaths(f.env, h200)[0].path {
		t.Errorf("H100 key %v and H200 key %v share a table", h100, h200)
	}
}
