package ort

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The calibration grid: batch sizes and padded lengths whose call time is
// measured. Lengths double up to 128 (short pairs and queries, where the
// per-call overhead decides) and then step by 128 to 512 (real documents,
// where the attention term grows with the square). Lengths above the
// model's MaxLength are replaced by MaxLength.
var (
	calibBatches = []int{1, 2, 4, 8, 16, 32, 64, 128}
	calibLens    = []int{8, 16, 32, 64, 128, 256, 384, 512}
)

// Each cell runs once to warm up (the first run of a new shape grows the
// runtime's arena), then at least calibRuns timed runs, and cheap cells
// repeat up to calibMaxRuns times until calibMinTimed has been timed. The
// fastest timed run is kept: interference from other processes only ever
// adds time, and the cheap cells, which decide between the per-call
// overhead and batching, are the ones a single preemption distorts most.
const (
	calibRuns     = 2
	calibMaxRuns  = 6
	calibMinTimed = 4 * time.Millisecond
)

// calibFormat versions the calibration procedure (grid, runs, estimator);
// it is part of the cache key, so changing any of them invalidates caches.
const calibFormat = 1

// calibrator measures a CostTable on a runner.
type calibrator struct {
	batches, lens []int
	budget        time.Duration
	// now is time.Now; tests pass a fake clock that their runner advances.
	now func() time.Time
	run runner
	// allowed reports whether a batch of b sequences of l tokens may be
	// planned at all (the caps); other cells are not measured.
	allowed func(b, l int) bool
	vocab   int // token ids of the dummy batches stay below it
}

// calibStats says how a calibration went.
type calibStats struct {
	cells, measured int
	elapsed         time.Duration
	stopped         bool // the budget ran out before every cell
}

// gridLens returns calibLens cut to maxLen (maxLen itself included).
func gridLens(maxLen int) []int {
	var out []int
	for _, l := range calibLens {
		if l < maxLen {
			out = append(out, l)
		}
	}
	return append(out, maxLen)
}

// calibrate measures the allowed cells of the grid from the cheapest (by
// padded tokens, then batch size) up, until the next cell would not fit in
// what is left of the budget (predicted from the cells already measured)
// or a run passes the budget's deadline (the run is terminated and its
// cell dropped). The table's first cell is always attempted. An error other
// than the budget's deadline is returned as is: the model cannot run.
func (c *calibrator) calibrate(ctx context.Context) (*CallTimeTable, calibStats, error) {
	t := CallTimeTableFrom(slices.Clone(c.batches), slices.Clone(c.lens), func(int, int) float64 { return 0 })
	type cell struct{ bi, li int }
	var cells []cell
	for bi, b := range c.batches {
		for li, l := range c.lens {
			if b == 1 || c.allowed(b, l) {
				cells = append(cells, cell{bi, li})
			}
		}
	}
	slices.SortStableFunc(cells, func(x, y cell) int {
		tx, ty := c.batches[x.bi]*c.lens[x.li], c.batches[y.bi]*c.lens[y.li]
		if tx != ty {
			return tx - ty
		}
		return x.bi - y.bi
	})
	st := calibStats{cells: len(cells)}
	start := c.now()
	// The deadline bounds the wall time even when one run is far slower
	// than predicted: the runtime terminates it at the next node.
	dctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	for _, ce := range cells {
		b, l := c.batches[ce.bi], c.lens[ce.li]
		elapsed := c.now().Sub(start)
		if st.measured > 0 && elapsed+time.Duration(calibRuns+1)*c.predict(t, ce.bi, ce.li) > c.budget {
			st.stopped = true
			break
		}
		bt := dummyBatch(b, l, c.vocab)
		fastest, err := c.measure(dctx, &bt)
		if err != nil {
			if dctx.Err() != nil && ctx.Err() == nil {
				st.stopped = true // our deadline, not the caller's
				break
			}
			st.elapsed = c.now().Sub(start)
			return nil, st, fmt.Errorf("calibrate batch %d×%d: %w", b, l, err)
		}
		// A clock too coarse for the run still counts as measured.
		t.Millis[ce.bi][ce.li] = max(float64(fastest)/float64(time.Millisecond), 1e-6)
		st.measured++
	}
	st.elapsed = c.now().Sub(start)
	return t, st, nil
}

// measure runs bt once to warm up, then as calibRuns and friends say, and
// returns the fastest timed run.
func (c *calibrator) measure(ctx context.Context, bt *batchTensors) (time.Duration, error) {
	if _, _, err := c.run.run(ctx, bt); err != nil {
		return 0, err
	}
	var fastest, timed time.Duration
	for n := 1; ; n++ {
		t0 := c.now()
		if _, _, err := c.run.run(ctx, bt); err != nil {
			return 0, err
		}
		d := c.now().Sub(t0)
		if n == 1 || d < fastest {
			fastest = d
		}
		timed += d
		if n >= calibRuns && (n >= calibMaxRuns || timed >= calibMinTimed) {
			return fastest, nil
		}
	}
}

// predict estimates one run of cell (bi, li) from the cells measured so
// far: the nearest smaller batch at the same length scaled by the batch
// size, else the nearest shorter length of the same batch scaled by the
// square of the length (an upper bound for a + b·L + c·L²).
func (c *calibrator) predict(t *CallTimeTable, bi, li int) time.Duration {
	ms := 0.0
	for i := bi - 1; i >= 0 && ms == 0; i-- {
		if v := t.Millis[i][li]; v > 0 {
			ms = v * float64(c.batches[bi]) / float64(c.batches[i])
		}
	}
	for j := li - 1; j >= 0 && ms == 0; j-- {
		if v := t.Millis[bi][j]; v > 0 {
			r := float64(c.lens[li]) / float64(c.lens[j])
			ms = v * r * r
		}
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// dummyBatch is a batch of b sequences of l real tokens with varied ids
// below vocab: run time does not depend on the ids, only on the shape.
func dummyBatch(b, l, vocab int) batchTensors {
	bt := batchTensors{n: b, seqLen: l, realTokens: b * l}
	bt.ids = make([]int64, b*l)
	bt.types = make([]int64, b*l)
	bt.mask = make([]int64, b*l)
	vocab = max(vocab, 1)
	for i := range bt.ids {
		bt.ids[i] = int64((i*7919 + 1000) % vocab)
		bt.mask[i] = 1
	}
	return bt
}

// errNoTable reports a calibration that measured nothing usable.
var errNoTable = errors.New("calibration measured no cell in its budget")
