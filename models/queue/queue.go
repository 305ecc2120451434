package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hybrank/hybrank/models"
)

// Reranker is a models.Reranker that queues the calls to one model: the
// pairs of concurrent ScorePairs calls (HTTP requests, engine searches)
// are merged into shared model calls as Config says, and each call gets
// exactly its own scores back. It keeps the model's Capabilities, its Cost
// including the predicted wait in the queue. Safe for concurrent use;
// Close it before the model.
type Reranker struct {
	inner  models.Reranker
	b      *batcher[models.Pair, float32]
	st     *stats
	window int
	stop   func()
}

// NewReranker queues r's calls as cfg says. r should be loaded (Load)
// first, so that the queue knows its window; a window not known yet
// counts as models.MaxSupportedLength.
func NewReranker(r models.Reranker, cfg Config) (*Reranker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	q := &Reranker{inner: r, st: newStats(), window: windowOf(r.Capabilities())}
	q.b = newBatcher(base, cfg, r.ScorePairs, q.pairCost, q.st)
	q.b.predict = func(costs []int) (d time.Duration, ok bool) {
		if f := r.Capabilities().Cost; f != nil {
			return f(costs)
		}
		return 0, false
	}
	q.stop = sync.OnceFunc(func() { q.b.Close(); cancel() })
	return q, nil
}

func windowOf(c models.Capabilities) int {
	if c.Window > 0 {
		return c.Window
	}
	return models.MaxSupportedLength
}

// pairCost is a pair's estimated tokens, capped at the model's window (and
// read only as far as the window: a request's every pair shares its query,
// however long).
func (q *Reranker) pairCost(p models.Pair) int {
	return models.EstimatePairTokensUpTo(p.Query, p.Doc, q.window)
}

// ScorePairs implements models.Reranker through the queue. It returns an
// error wrapping ErrFull when the queue is at capacity, ErrClosed after
// Close, and ctx's error when ctx ends first (a deadline on ctx is the
// deadline of the queued job: what is not dispatched by then is dropped).
func (q *Reranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return q.b.Submit(ctx, pairs)
}

// ScoreSpans implements models.Reranker: the model's own ScoreSpans, which
// windows the documents with the model's tokenizer, run in one of the
// queue's worker slots (so it counts against Workers) but not merged with
// other calls.
func (q *Reranker) ScoreSpans(ctx context.Context, query string, docs []string, ch models.Chunking) (out []models.SpanScore, u models.Usage, err error) {
	err = q.b.slot(ctx, func() error {
		out, u, err = q.inner.ScoreSpans(ctx, query, docs, ch)
		return err
	})
	return out, u, err
}

// Capabilities implements models.Reranker: the model's, with a Cost that
// adds the wait a call submitted now is predicted to have in the queue.
func (q *Reranker) Capabilities() models.Capabilities {
	c := q.inner.Capabilities()
	if cost := c.Cost; cost != nil {
		c.Cost = func(pairTokens []int) (time.Duration, bool) {
			w, ok := q.b.wait(len(pairTokens))
			d, ok2 := cost(pairTokens)
			return w + d, ok && ok2
		}
	}
	return c
}

// Load implements models.Reranker: the model's Load.
func (q *Reranker) Load() error { return q.inner.Load() }

// Stats returns the queue's counters.
func (q *Reranker) Stats() Stats { return q.st.snapshot() }

// Close stops the queue after the model calls in flight; calls still
// queued fail with ErrClosed. It does not close the model. Idempotent.
func (q *Reranker) Close() error { q.stop(); return nil }

// Embedder is a models.Embedder that queues the calls to one model, as
// Reranker does: the texts of concurrent EmbedPooled calls share model
// calls (a batch holding texts of several kinds makes one model call per
// kind, so that each gets its prompt). Safe for concurrent use; Close it
// before the model.
type Embedder struct {
	inner  models.Embedder
	b      *batcher[text, []float32]
	st     *stats
	window int
	stop   func()
}

// text is one queued text and its kind.
type text struct {
	in models.Input
	s  string
}

// NewEmbedder queues e's calls as cfg says (load e first, as for
// NewReranker).
func NewEmbedder(e models.Embedder, cfg Config) (*Embedder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	q := &Embedder{inner: e, st: newStats(), window: windowOf(e.Capabilities())}
	q.b = newBatcher(base, cfg, q.run, q.textCost, q.st)
	q.stop = sync.OnceFunc(func() { q.b.Close(); cancel() })
	return q, nil
}

// textCost is a text's estimated tokens with [CLS] and [SEP], capped at
// the model's window.
func (q *Embedder) textCost(t text) int {
	return min(models.EstimateTokensUpTo(t.s, q.window)+2, q.window)
}

// run embeds one batch: one model call per kind of text in it.
func (q *Embedder) run(ctx context.Context, batch []text) ([][]float32, models.Usage, error) {
	out := make([][]float32, len(batch))
	var usage models.Usage
	done := make([]bool, len(batch))
	for i := range batch {
		if done[i] {
			continue
		}
		in := batch[i].in
		var idx []int
		var texts []string
		for j := i; j < len(batch); j++ {
			if !done[j] && batch[j].in == in {
				idx, texts, done[j] = append(idx, j), append(texts, batch[j].s), true
			}
		}
		v, u, err := q.inner.EmbedPooled(ctx, in, texts)
		if err != nil {
			return nil, usage, err
		}
		if len(v) != len(texts) {
			return nil, usage, fmt.Errorf("%w: model returned %d vectors for %d texts", ErrMismatch, len(v), len(texts))
		}
		for k, j := range idx {
			out[j] = v[k]
		}
		usage.Add(u)
	}
	return out, usage, nil
}

// EmbedPooled implements models.Embedder through the queue, with the
// errors of Reranker.ScorePairs.
func (q *Embedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	items := make([]text, len(texts))
	for i, t := range texts {
		items[i] = text{in: in, s: t}
	}
	return q.b.Submit(ctx, items)
}

// EmbedSpans implements models.Embedder: the model's own, in one of the
// queue's worker slots, as Reranker.ScoreSpans.
func (q *Embedder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) (out []models.SpanVectors, u models.Usage, err error) {
	err = q.b.slot(ctx, func() error {
		out, u, err = q.inner.EmbedSpans(ctx, in, texts, ch)
		return err
	})
	return out, u, err
}

// Dim implements models.Embedder: the model's.
func (q *Embedder) Dim() int { return q.inner.Dim() }

// Capabilities implements models.Embedder: the model's.
func (q *Embedder) Capabilities() models.Capabilities { return q.inner.Capabilities() }

// Load implements models.Embedder: the model's Load.
func (q *Embedder) Load() error { return q.inner.Load() }

// Stats returns the queue's counters.
func (q *Embedder) Stats() Stats { return q.st.snapshot() }

// Close stops the queue as Reranker.Close does.
func (q *Embedder) Close() error { q.stop(); return nil }
