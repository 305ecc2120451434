package ort

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/models"
)

// encoder is the tokenizer surface the models need. The ORT-backed loader
// adapts *wordpiece.Tokenizer; tests substitute fakes.
type encoder interface {
	// pair encodes [CLS] q [SEP] d [SEP] with type ids 0…0 1…1, at most
	// maxLen tokens, cutting the document (q has been through cutQuery).
	pair(q, d string, maxLen int) (seq, error)
	// cutQuery returns q cut to at most maxTokens word pieces (q itself
	// when it is short enough).
	cutQuery(q string, maxTokens int) string
	// single encodes [CLS] text [SEP], at most maxLen tokens.
	single(text string, maxLen int) (seq, error)
	// countTokens returns the number of word pieces of text (no specials).
	countTokens(text string) int
	// offsets returns text's tokens (no specials, no truncation) as byte
	// spans of text, in order: what chunked scoring cuts windows from.
	offsets(text string) ([]models.Span, error)
	padID() int64
}

// closeEncoder frees an encoder that holds native memory (hfEncoder); the
// pure-Go wpEncoder has nothing to free.
func closeEncoder(enc encoder) error {
	if c, ok := enc.(interface{ close() error }); ok {
		return c.close()
	}
	return nil
}

// runner runs one padded batch and returns the selected output (row-major)
// and its shape. Implementations are safe for concurrent use.
type runner interface {
	run(ctx context.Context, b *batchTensors) (out []float32, shape []int64, err error)
	provider() string
	close() error
}

// loaded is a model ready to run.
type loaded struct {
	dir    models.ModelDir
	enc    encoder
	run    runner
	maxLen int
	output string // output used: "logits", "sentence_embedding", "last_hidden_state", …
	pooled bool   // output is already [batch, hidden] (no pooling here)
	// embedding is the pooling, normalisation and prompts an embedder
	// applies (Config resolved against the directory).
	embedding models.Embedding
	// cost plans batches in cost mode; nil means tokens mode (configured,
	// or no cost model could be built, or a loader that sets none).
	cost     *batchPlanner
	batching BatchingInfo
	// accel is the model's acceleration plan, with what the load made of
	// it (Plan.Loaded).
	accel Plan
}

// plan cuts the texts of one call, by token length, into batches.
func (m *loaded) plan(lens []int, maxBatchTokens int) [][]int {
	if m.cost == nil {
		return planBatches(lens, maxBatchTokens)
	}
	return m.cost.plan(lens)
}

// computeTimer is a runner that also reports how long the model itself
// ran: a call's wall time can include waiting for a free session, which
// is queueing behind other callers, not the batch's cost.
type computeTimer interface {
	runTimed(ctx context.Context, b *batchTensors) (out []float32, shape []int64, ran time.Duration, err error)
}

// runBatch runs one padded batch; in cost mode the time the model ran
// refines the cost model (batchPlanner.observe).
func (m *loaded) runBatch(ctx context.Context, b *batchTensors) ([]float32, []int64, error) {
	if m.cost == nil {
		return m.run.run(ctx, b)
	}
	var ran time.Duration
	var out []float32
	var shape []int64
	var err error
	if tr, ok := m.run.(computeTimer); ok {
		out, shape, ran, err = tr.runTimed(ctx, b)
	} else {
		t0 := time.Now()
		out, shape, err = m.run.run(ctx, b)
		ran = time.Since(t0)
	}
	if err == nil {
		m.cost.observe(b.n, b.seqLen, ran)
	}
	return out, shape, err
}

// loaderFunc builds a loaded model for cfg; the real one is loadORT.
type loaderFunc func(cfg models.Config, kind models.Kind) (*loaded, error)

// core holds what CrossEncoder and BiEncoder share: lazy loading, the
// closed flag and the in-flight count Close waits for.
type core struct {
	cfg    models.Config
	kind   models.Kind
	loader loaderFunc

	mu       sync.Mutex // guards m, closed and inflight.Add
	m        *loaded
	closed   bool
	inflight sync.WaitGroup
	// ready is m for readers that must not wait for a load in progress
	// (peek): set once m is loaded, cleared by close.
	ready atomic.Pointer[loaded]
}

func newCore(cfg models.Config, kind models.Kind, loader loaderFunc) (*core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Profile != "" {
		p, _ := models.LookupProfile(cfg.Profile)
		if p.Kind != kind {
			return nil, fmt.Errorf("%w: profile %q is a %s, not a %s", models.ErrInvalidConfig, cfg.Profile, p.Kind, kind)
		}
	}
	return &core{cfg: cfg, kind: kind, loader: loader}, nil
}

// acquire returns the loaded model, loading it on first use, and counts
// the caller as in flight; the caller must call release. A failed load is
// not remembered: the next call tries again (so a model directory written
// later, or a runtime library installed later, is picked up). Concurrent
// first calls wait for one load.
func (c *core) acquire() (*loaded, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, models.ErrClosed
	}
	if c.m == nil {
		m, err := c.loader(c.cfg, c.kind)
		if err != nil {
			return nil, err
		}
		c.m = m
		c.ready.Store(m)
	}
	c.inflight.Add(1)
	return c.m, nil
}

func (c *core) release() { c.inflight.Done() }

// peek returns the loaded model, or nil before it has loaded and after
// Close; it never loads, and never waits for a load in progress. The
// caller uses only its pure-Go parts (the cost planner, the window), which
// stay valid whatever happens next.
func (c *core) peek() *loaded { return c.ready.Load() }

// info returns the loaded model directory and the effective maximum
// sequence length, loading the model if needed.
func (c *core) info() (models.ModelDir, int, error) {
	m, err := c.acquire()
	if err != nil {
		return models.ModelDir{}, 0, err
	}
	defer c.release()
	return m.dir, m.maxLen, nil
}

// load loads the model now (first use otherwise loads it).
func (c *core) load() error {
	if _, err := c.acquire(); err != nil {
		return err
	}
	c.release()
	return nil
}

// close marks the model closed, waits for in-flight calls, saves what the
// cost planner learned (a failure is logged: it costs the next load a
// calibration, not a result) and frees the runtime sessions and the
// tokenizer. Later calls return nil.
func (c *core) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	m := c.m
	c.m = nil
	c.ready.Store(nil)
	c.mu.Unlock()
	c.inflight.Wait()
	if m == nil {
		return nil
	}
	if m.cost != nil {
		if err := m.cost.save(); err != nil {
			slog.Warn("models/ort: cannot save the learned cost model", "model", m.dir.Dir, "err", err)
		}
	}
	return errors.Join(m.run.close(), closeEncoder(m.enc))
}

// provider reports the loaded model's execution provider, "" before load.
func (c *core) provider() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return ""
	}
	return c.m.run.provider()
}

// plan returns the loaded model's plan, or a zero Plan before the model
// has loaded.
func (c *core) plan() Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return Plan{}
	}
	p := c.m.accel
	p.Why = slices.Clone(p.Why)
	return p
}

// batchingInfo reports how the model plans batches, loading it if needed.
func (c *core) batchingInfo() (BatchingInfo, error) {
	m, err := c.acquire()
	if err != nil {
		return BatchingInfo{}, err
	}
	defer c.release()
	info := m.batching
	info.Notes = slices.Clone(info.Notes)
	if info.Table != nil {
		info.Table = info.Table.Clone()
	}
	if info.Mode == "" { // a loader that left it unset plans by tokens
		info.Mode = models.BatchingTokens
	}
	return info, nil
}

// runBatches runs fn on every batch, on up to workers goroutines, and
// returns the first error (the other batches stop at their next start).
func runBatches(ctx context.Context, workers int, batches [][]int, fn func(ctx context.Context, bi int) error) error {
	if len(batches) == 0 {
		return nil
	}
	workers = min(workers, len(batches))
	if workers <= 1 {
		for bi := range batches {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(ctx, bi); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for bi := range next {
				if ctx.Err() != nil {
					continue // drain
				}
				if err := fn(ctx, bi); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for bi := range batches {
		select {
		case next <- bi:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// tokenize encodes n inputs with enc, polling ctx every 64 inputs (a
// document can take up to MaxChars of tokenizer work).
func tokenize(ctx context.Context, n int, enc func(i int) (seq, error)) ([]seq, []int, error) {
	seqs := make([]seq, n)
	lens := make([]int, n)
	for i := range n {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		s, err := enc(i)
		if err != nil {
			return nil, nil, fmt.Errorf("text %d: %w", i, err)
		}
		seqs[i] = s
		lens[i] = len(s.ids)
	}
	return seqs, lens, nil
}

func errTooMany(n, limit int) error {
	return fmt.Errorf("%w: %d > models.MaxDocs %d (raise models.Config.MaxDocs or split the call)", models.ErrTooManyDocs, n, limit)
}
