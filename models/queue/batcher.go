package queue

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/models"
)

// runFunc is one model call over a batch of inputs.
type runFunc[In, Out any] func(ctx context.Context, in []In) ([]Out, models.Usage, error)

// batcher merges the items of concurrent Submit calls into shared model
// calls capped by items and estimated tokens.
//
// Fairness: every request is split into chunks of ChunkItems; a batch is
// filled by taking one chunk per waiting request in round-robin order (the
// cursor persists across batches), so a request of 10,000 pairs delays a
// request of 8 pairs by at most one chunk per batch, not by its whole size.
//
// Ordering: results are written back by (request, index), so each Submit
// gets exactly its own outputs in its own input order whatever batches its
// items landed in.
//
// A batcher is safe for concurrent use. Close stops it after the batches in
// flight finish; Submit calls still queued then fail with ErrClosed.
type batcher[In, Out any] struct {
	run  runFunc[In, Out]
	cost func(In) int
	cfg  Config
	st   *stats
	base context.Context // parent of every batch context; never cancelled by clients

	sem  chan struct{} // one slot per concurrent model call (cfg.Workers)
	wake chan struct{} // nudges the dispatcher; buffered 1
	quit chan struct{} // closed by Close
	wg   sync.WaitGroup

	// predict, when set, predicts a model call on items of these costs
	// (the reranker's Capabilities().Cost): dispatched batches record when
	// they should end, for wait.
	predict func(costs []int) (time.Duration, bool)

	mu      sync.Mutex                      // guards everything below and every job's mutable fields
	running map[*segment[In, Out]]time.Time // a batch (its first segment) -> predicted end
	jobs    []*job[In, Out]
	rr      int // round-robin cursor into jobs
	queued  int // items not yet dispatched
	oldest  time.Time
	closed  bool
}

// job is one Submit call.
type job[In, Out any] struct {
	ctx     context.Context
	in      []In
	costs   []int
	out     []Out
	next    int // first item not yet dispatched
	pending int // items not yet completed
	usage   models.Usage
	err     error
	done    chan struct{}
	closed  bool // done has been closed
	queued  time.Time
}

// segment is a run of one job's items inside a batch.
type segment[In, Out any] struct {
	j        *job[In, Out]
	start, n int
	cost     int
}

func newBatcher[In, Out any](base context.Context, cfg Config, run runFunc[In, Out], cost func(In) int, st *stats) *batcher[In, Out] {
	b := &batcher[In, Out]{
		run: run, cost: cost, cfg: cfg, st: st, base: base,
		sem:     make(chan struct{}, cfg.Workers),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		running: map[*segment[In, Out]]time.Time{},
	}
	if cfg.Enabled {
		b.wg.Add(1)
		go b.dispatch()
	}
	return b
}

// Submit runs in through the model and returns one output per input, in
// order, with the usage attributed to this call. With batching disabled it
// calls the model directly. It returns ErrFull when the queue is at
// capacity, ErrClosed after Close, and ctx's error if ctx ends first.
func (b *batcher[In, Out]) Submit(ctx context.Context, in []In) ([]Out, models.Usage, error) {
	if len(in) == 0 {
		return nil, models.Usage{}, nil
	}
	if !b.cfg.Enabled {
		return b.direct(ctx, in)
	}
	j := &job[In, Out]{ctx: ctx, in: in, costs: make([]int, len(in)), out: make([]Out, len(in)),
		pending: len(in), done: make(chan struct{}), queued: time.Now()}
	for i, x := range in {
		j.costs[i] = max(1, b.cost(x))
	}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return nil, models.Usage{}, ErrClosed
	case b.queued > 0 && b.queued+len(in) > b.cfg.MaxQueueItems:
		b.mu.Unlock()
		return nil, models.Usage{}, ErrFull
	}
	if b.queued == 0 {
		b.oldest = j.queued
	}
	b.jobs = append(b.jobs, j)
	b.queued += len(in)
	b.observeQueueLocked()
	b.mu.Unlock()
	b.nudge()

	select {
	case <-j.done:
		b.mu.Lock()
		defer b.mu.Unlock()
		if j.err != nil {
			return nil, j.usage, j.err
		}
		return j.out, j.usage, nil
	case <-ctx.Done():
		b.mu.Lock()
		b.dropLocked(j)
		b.mu.Unlock()
		return nil, models.Usage{}, ctx.Err()
	}
}

func (b *batcher[In, Out]) direct(ctx context.Context, in []In) ([]Out, models.Usage, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, models.Usage{}, ctx.Err()
	}
	defer func() { <-b.sem }()
	tokens := 0
	for _, x := range in {
		tokens += max(1, b.cost(x))
	}
	b.st.batch(len(in), tokens)
	out, u, err := b.run(ctx, in)
	if err == nil && len(out) != len(in) {
		err = fmt.Errorf("%w: model returned %d results for %d inputs", ErrMismatch, len(out), len(in))
	}
	return out, u, err
}

// slot runs fn in one of the worker slots, as a direct call does: for a
// model call that is not merged with others but must not run beside
// Workers batches.
func (b *batcher[In, Out]) slot(ctx context.Context, fn func() error) error {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.sem }()
	return fn()
}

func (b *batcher[In, Out]) nudge() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *batcher[In, Out]) observeQueueLocked() { b.st.queue(b.queued) }

// dropLocked removes j's undispatched items from the queue. Items already
// in a batch finish and are discarded.
func (b *batcher[In, Out]) dropLocked(j *job[In, Out]) {
	for i, x := range b.jobs {
		if x == j {
			b.queued -= len(j.in) - j.next
			j.next = len(j.in)
			b.jobs = append(b.jobs[:i], b.jobs[i+1:]...)
			if b.rr > i {
				b.rr--
			}
			break
		}
	}
	b.observeQueueLocked()
}

// dispatch is the single goroutine that forms batches.
func (b *batcher[In, Out]) dispatch() {
	defer b.wg.Done()
	maxWait := time.Duration(b.cfg.MaxWait)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-b.wake:
		}
		for {
			b.mu.Lock()
			if b.queued == 0 {
				b.mu.Unlock()
				break
			}
			b.mu.Unlock()
			// A worker slot first: while all are busy, work piles up and the
			// next batch is fuller.
			select {
			case b.sem <- struct{}{}:
			case <-b.quit:
				return
			}
			// Then wait for the batch to fill, at most until the oldest
			// queued item has waited maxWait.
			for {
				b.mu.Lock()
				full := b.fullLocked()
				wait := maxWait - time.Since(b.oldest)
				b.mu.Unlock()
				if full || wait <= 0 {
					break
				}
				timer.Reset(wait)
				select {
				case <-b.wake:
					timer.Stop() // Go 1.23+ timers deliver no stale value after Stop/Reset
				case <-timer.C:
				case <-b.quit:
					<-b.sem
					return
				}
			}
			b.mu.Lock()
			segs, inputs := b.formLocked()
			b.mu.Unlock()
			if len(inputs) == 0 {
				<-b.sem
				continue
			}
			b.track(segs)
			b.wg.Add(1)
			go b.execute(segs, inputs)
		}
	}
}

// fullLocked reports whether the queue already holds a full batch.
func (b *batcher[In, Out]) fullLocked() bool {
	if b.queued >= b.cfg.MaxItems {
		return true
	}
	tokens := 0
	for _, j := range b.jobs {
		for _, c := range j.costs[j.next:] {
			tokens += c
			if tokens >= b.cfg.MaxTokens {
				return true
			}
		}
	}
	return false
}

// formLocked takes up to one chunk per job in round-robin order until the
// batch is full.
func (b *batcher[In, Out]) formLocked() ([]segment[In, Out], []In) {
	var (
		segs   []segment[In, Out]
		inputs []In
		tokens int
	)
	full := false
	for len(b.jobs) > 0 && !full && len(inputs) < b.cfg.MaxItems {
		if b.rr >= len(b.jobs) {
			b.rr = 0
		}
		j := b.jobs[b.rr]
		if j.ctx.Err() != nil { // cancelled while queued: its Submit drops it
			b.queued -= len(j.in) - j.next
			j.next = len(j.in)
			b.jobs = append(b.jobs[:b.rr], b.jobs[b.rr+1:]...)
			continue
		}
		start, cost := j.next, 0
		for j.next < len(j.in) && j.next-start < b.cfg.ChunkItems && len(inputs) < b.cfg.MaxItems {
			c := j.costs[j.next]
			if len(inputs) > 0 && tokens+c > b.cfg.MaxTokens {
				full = true
				break
			}
			inputs = append(inputs, j.in[j.next])
			tokens += c
			cost += c
			j.next++
		}
		if n := j.next - start; n > 0 {
			if k := len(segs) - 1; k >= 0 && segs[k].j == j && segs[k].start+segs[k].n == start {
				segs[k].n += n
				segs[k].cost += cost
			} else {
				segs = append(segs, segment[In, Out]{j: j, start: start, n: n, cost: cost})
			}
			b.queued -= n
		}
		if j.next == len(j.in) {
			b.jobs = append(b.jobs[:b.rr], b.jobs[b.rr+1:]...)
		} else {
			b.rr++
		}
	}
	if b.queued > 0 {
		b.oldest = time.Now()
		for _, j := range b.jobs {
			if j.queued.Before(b.oldest) {
				b.oldest = j.queued
			}
		}
	}
	b.observeQueueLocked()
	if len(inputs) > 0 {
		b.st.batch(len(inputs), tokens)
	}
	return segs, inputs
}

// execute runs one batch and scatters its outputs back to the jobs. The
// batch's context is cancelled only when every job in it is cancelled.
func (b *batcher[In, Out]) execute(segs []segment[In, Out], inputs []In) {
	defer b.wg.Done()
	defer func() { <-b.sem }()
	ctx, cancel := context.WithCancel(b.base)
	defer cancel()
	var live atomic.Int32
	live.Store(int32(len(segs)))
	for _, s := range segs {
		stop := context.AfterFunc(s.j.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	out, u, err := b.run(ctx, inputs)
	b.mu.Lock()
	delete(b.running, &segs[0])
	b.mu.Unlock()
	if err == nil && len(out) != len(inputs) {
		err = fmt.Errorf("%w: model returned %d results for %d inputs", ErrMismatch, len(out), len(inputs))
	}
	totalCost := 0
	for _, s := range segs {
		totalCost += s.cost
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	off := 0
	for _, s := range segs {
		j := s.j
		if j.closed {
			off += s.n
			continue
		}
		if err != nil {
			j.err = err
			j.closed = true
			close(j.done)
			b.dropLocked(j) // its other chunks need not run
			off += s.n
			continue
		}
		copy(j.out[s.start:s.start+s.n], out[off:off+s.n])
		off += s.n
		j.usage.Pairs += s.n
		j.usage.Batches++
		if totalCost > 0 {
			j.usage.Tokens += int(int64(u.Tokens) * int64(s.cost) / int64(totalCost))
		}
		j.pending -= s.n
		if j.pending == 0 {
			j.closed = true
			close(j.done)
		}
	}
}

// track records the predicted end of the batch of segs, when the batcher
// predicts.
func (b *batcher[In, Out]) track(segs []segment[In, Out]) {
	if b.predict == nil {
		return
	}
	var costs []int
	for _, s := range segs {
		costs = append(costs, s.j.costs[s.start:s.start+s.n]...)
	}
	d, ok := b.predict(costs)
	if !ok {
		return
	}
	b.mu.Lock()
	b.running[&segs[0]] = time.Now().Add(d)
	b.mu.Unlock()
}

// wait predicts how long a job of n items submitted now waits for its
// last item to be dispatched: the items dispatched before it (round robin
// gives every queued job about as many turns as it needs, so each
// contributes at most n items) as model calls spread over the workers,
// plus, when every worker is busy, the time until the first frees. ok is
// false when the batcher does not predict.
func (b *batcher[In, Out]) wait(n int) (time.Duration, bool) {
	if b.predict == nil || !b.cfg.Enabled {
		return 0, b.predict != nil
	}
	b.mu.Lock()
	var ahead []int
	for _, j := range b.jobs {
		rest := j.costs[j.next:]
		ahead = append(ahead, rest[:min(len(rest), n)]...)
	}
	var first time.Duration
	if len(b.running) >= b.cfg.Workers {
		now := time.Now()
		first = time.Duration(math.MaxInt64)
		for _, end := range b.running {
			first = min(first, max(end.Sub(now), 0))
		}
	}
	b.mu.Unlock()
	var queued time.Duration
	for from := 0; from < len(ahead); from += b.cfg.MaxItems {
		d, ok := b.predict(ahead[from:min(from+b.cfg.MaxItems, len(ahead))])
		if !ok {
			return 0, false
		}
		queued += d
	}
	return first + queued/time.Duration(b.cfg.Workers), true
}

// Close stops the dispatcher, waits for batches in flight, and fails every
// job still queued with ErrClosed. It is idempotent.
func (b *batcher[In, Out]) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.quit)
	b.mu.Unlock()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.jobs {
		if !j.closed {
			j.err = ErrClosed
			j.closed = true
			close(j.done)
		}
	}
	b.jobs, b.queued = nil, 0
	return nil
}
