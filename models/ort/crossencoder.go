package ort

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models"
)

// CrossEncoder scores (query, document) pairs with a BERT cross-encoder
// run by ONNX Runtime. It implements Reranker.
//
// A CrossEncoder is safe for concurrent use: concurrent calls share the
// session pool, and the batches of one call run concurrently when the pool
// has more than one session. The model loads on first use (or Load).
type CrossEncoder struct {
	c *core
}

var _ models.Reranker = (*CrossEncoder)(nil)

// NewCrossEncoder validates cfg and returns a cross-encoder that loads its
// model directory on first use. Errors wrap ErrInvalidConfig or
// ErrUnknownProfile; a bad directory is reported by the first call.
func NewCrossEncoder(cfg models.Config) (*CrossEncoder, error) {
	c, err := newCore(cfg, models.KindCrossEncoder, loadORT)
	if err != nil {
		return nil, err
	}
	return &CrossEncoder{c: c}, nil
}

// Load loads the model now instead of on first use, so a bad directory or
// runtime is reported at start-up. A failed Load may be retried.
func (ce *CrossEncoder) Load() error { return ce.c.load() }

// Config returns the configuration the cross-encoder was built with.
func (ce *CrossEncoder) Config() models.Config { return ce.c.cfg }

// Provider returns the execution provider in use ("cpu", "cuda"), or ""
// before the model has loaded.
func (ce *CrossEncoder) Provider() string { return ce.c.provider() }

// Plan is the loaded model's acceleration plan: what runs and why, and
// in Plan.Loaded what the load made of it (the provider, what the graph
// rewrites changed: e.g. "12 SkipLayerNorm (12 with bias), first token:
// 22 nodes (6 MatMul)", "none", "off"). A zero Plan before the model has
// loaded (PlanFor gives the same plan without loading).
func (ce *CrossEncoder) Plan() Plan { return ce.c.plan() }

// Info returns the loaded model directory and the effective maximum
// sequence length, loading the model if needed.
func (ce *CrossEncoder) Info() (models.ModelDir, int, error) { return ce.c.info() }

// Batching reports how the cross-encoder plans its batches: the mode in
// effect and, in cost mode, where its cost model came from. It loads the
// model if needed (which may calibrate).
func (ce *CrossEncoder) Batching() (BatchingInfo, error) { return ce.c.batchingInfo() }

// Close waits for in-flight calls, writes what the batch planner learned
// from them to the calibration cache (see the package documentation) and
// frees the runtime sessions. It is idempotent; later calls return
// ErrClosed.
func (ce *CrossEncoder) Close() error { return ce.c.close() }

// Capabilities implements models.Reranker: it scores in windows
// (ScoreSpans), and once loaded it knows its window and, unless it batches
// by tokens, predicts its calls (EstimateScore).
func (ce *CrossEncoder) Capabilities() models.Capabilities {
	c := models.Capabilities{Chunking: true, Cost: ce.EstimateScore}
	if m := ce.c.peek(); m != nil {
		c.Window = m.maxLen
	}
	return c
}

// EstimateScore is the cost of Capabilities: the time the batches a
// Score call would plan for pairs of these lengths are predicted to take
// by the cost model that plans them, spread over the session pool (the
// call takes at least its costliest batch). Lengths are cut to the
// model's window (and below 1 count as 1). It is false before the model
// has loaded (it does not wait for a load in progress), after Close and
// in tokens mode (Config.Batching "tokens", or no cost model could be
// built).
func (ce *CrossEncoder) EstimateScore(pairTokens []int) (time.Duration, bool) {
	m := ce.c.peek()
	if m == nil || m.cost == nil {
		return 0, false
	}
	if len(pairTokens) == 0 {
		return 0, true
	}
	lens := make([]int, len(pairTokens))
	for i, l := range pairTokens {
		lens[i] = min(max(l, 1), m.maxLen)
	}
	total, costliest, batches, ok := m.cost.estimate(lens)
	if !ok {
		return 0, false
	}
	// Batches run PoolSize at a time: the call takes its share of them,
	// and at least its costliest batch.
	ms := max(total/float64(min(ce.c.cfg.PoolSize, batches)), costliest)
	return time.Duration(ms * float64(time.Millisecond)), true
}

// Score returns one relevance score per document, in input order: the
// model's logit, or its sigmoid when Config.Sigmoid is set.
//
// An empty query (all space, or nothing the tokenizer keeps: invalid
// UTF-8, zero-width characters) is an error wrapping ErrEmptyQuery; no
// documents give an empty slice and no error; more than Config.MaxDocs
// documents is an error wrapping ErrTooManyDocs. Empty documents are
// scored as [CLS] query [SEP] [SEP]. Invalid UTF-8 is replaced by U+FFFD
// (dropped by the tokenizer), each document is cut to Config.MaxChars
// characters and then truncated to fit MaxLength tokens.
func (ce *CrossEncoder) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	if len(docs) > ce.c.cfg.MaxDocs {
		return nil, errTooMany(len(docs), ce.c.cfg.MaxDocs)
	}
	if strings.TrimSpace(query) == "" {
		return nil, models.ErrEmptyQuery
	}
	pairs := make([]models.Pair, len(docs))
	for i, d := range docs {
		pairs[i] = models.Pair{Query: query, Doc: d}
	}
	scores, _, err := ce.scorePairs(ctx, pairs, true)
	return scores, err
}

// ScoreWithUsage is Score that also reports the work done.
func (ce *CrossEncoder) ScoreWithUsage(ctx context.Context, query string, docs []string) ([]float32, models.Usage, error) {
	if len(docs) > ce.c.cfg.MaxDocs {
		return nil, models.Usage{}, errTooMany(len(docs), ce.c.cfg.MaxDocs)
	}
	if strings.TrimSpace(query) == "" {
		return nil, models.Usage{}, models.ErrEmptyQuery
	}
	pairs := make([]models.Pair, len(docs))
	for i, d := range docs {
		pairs[i] = models.Pair{Query: query, Doc: d}
	}
	return ce.scorePairs(ctx, pairs, true)
}

// ScorePairs scores pairs that may come from different queries (the
// model's queue (models/queue) merges the candidates of concurrent
// requests), one score per pair in input order. MaxDocs does not apply:
// the caller bounds the merged size, and any number of pairs is split
// into batches as Config.Batching says. A pair with an empty query is an error
// wrapping ErrEmptyQuery that names its index. Text handling is as for
// Score.
func (ce *CrossEncoder) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	for i, p := range pairs {
		if strings.TrimSpace(p.Query) == "" {
			return nil, models.Usage{}, fmt.Errorf("pair %d: %w", i, models.ErrEmptyQuery)
		}
	}
	return ce.scorePairs(ctx, pairs, false)
}

// ScoreSpans scores documents longer than the model's window in
// overlapping windows (models.Reranker): each document is split by its
// tokens' byte offsets (the model's own tokenizer) into windows of
// models.PairWindow tokens, the size that fits beside the query, as ch
// says; the windows of all documents are scored together as ordinary
// pairs (one planned set of batches, the cost model sees each window as a
// pair), each window exactly as ScorePairs scores the pair (query, its
// text); and each document gets ch's aggregate of its windows' scores with
// the best window's byte span in the document. Usage counts the windows.
//
// ch must be enabled and valid (else an error wrapping ErrInvalidConfig);
// query and document limits are as for Score (MaxDocs counts documents,
// not windows). Config.MaxChars does not cut the documents: the windows
// cover them and ch.MaxChunks bounds the model's work, so callers bound
// the text they pass. Spans are byte offsets into each document as given
// (when it is not valid UTF-8, into its text with each run of invalid
// bytes replaced by one U+FFFD).
func (ce *CrossEncoder) ScoreSpans(ctx context.Context, query string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	if err := checkChunking(ch); err != nil {
		return nil, models.Usage{}, err
	}
	if len(docs) > ce.c.cfg.MaxDocs {
		return nil, models.Usage{}, errTooMany(len(docs), ce.c.cfg.MaxDocs)
	}
	if strings.TrimSpace(query) == "" {
		return nil, models.Usage{}, models.ErrEmptyQuery
	}
	if len(docs) == 0 {
		return []models.SpanScore{}, models.Usage{}, nil
	}
	m, err := ce.c.acquire()
	if err != nil {
		return nil, models.Usage{}, err
	}
	defer ce.c.release()
	q := m.enc.cutQuery(cleanText(query, ce.c.cfg.MaxChars), models.MaxQueryTokens(m.maxLen))
	plan, err := ch.Plan(docs, models.PairWindow(m.maxLen, m.enc.countTokens(q)), m.enc.offsets)
	if err != nil {
		return nil, models.Usage{}, err
	}
	// Windows are bounded in tokens already: MaxChars does not cut them.
	scores, usage, err := ce.scoreOn(ctx, m, plan.Pairs(query), math.MaxInt, true)
	if err != nil {
		return nil, models.Usage{}, err
	}
	out, err := plan.Scores(ch, scores)
	return out, usage, err
}

// checkChunking refuses a Chunking that is off or invalid.
func checkChunking(ch models.Chunking) error {
	if err := ch.Validate(); err != nil {
		return err
	}
	if !ch.Enabled() {
		return fmt.Errorf("%w: chunking is off (stride 0)", models.ErrInvalidConfig)
	}
	return nil
}

func (ce *CrossEncoder) scorePairs(ctx context.Context, pairs []models.Pair, strictQuery bool) ([]float32, models.Usage, error) {
	if len(pairs) == 0 {
		return []float32{}, models.Usage{}, nil
	}
	m, err := ce.c.acquire()
	if err != nil {
		return nil, models.Usage{}, err
	}
	defer ce.c.release()
	return ce.scoreOn(ctx, m, pairs, ce.c.cfg.MaxChars, strictQuery)
}

// scoreOn scores pairs on the loaded model m (acquired by the caller),
// documents cut to docChars characters first (queries to MaxChars). With
// strictQuery a query the tokenizer keeps nothing of is ErrEmptyQuery (the
// one-query calls); without, as in ScorePairs, whose pairs may come from
// many requests that one such query must not fail, it is scored as
// [CLS] [SEP] document [SEP].
func (ce *CrossEncoder) scoreOn(ctx context.Context, m *loaded, pairs []models.Pair, docChars int, strictQuery bool) ([]float32, models.Usage, error) {
	if len(pairs) == 0 {
		return []float32{}, models.Usage{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, models.Usage{}, err
	}
	cfg := ce.c.cfg

	// Queries repeat (Score passes one query n times): prepare each once.
	// A query keeps at most half the token budget, the same prefix for
	// every document, so all documents of a ranking see the same query.
	qMax := models.MaxQueryTokens(m.maxLen)
	var lastQ, lastClean string
	seqs, lens, err := tokenize(ctx, len(pairs), func(i int) (seq, error) {
		q := pairs[i].Query
		if q != lastQ || i == 0 {
			lastQ, lastClean = q, m.enc.cutQuery(cleanText(q, cfg.MaxChars), qMax)
			// Not blank yet nothing to the tokenizer (invalid UTF-8,
			// zero-width or control characters only): as empty.
			if strictQuery && m.enc.countTokens(lastClean) == 0 {
				return seq{}, models.ErrEmptyQuery
			}
		}
		return m.enc.pair(lastClean, cleanText(pairs[i].Doc, docChars), m.maxLen)
	})
	if err != nil {
		return nil, models.Usage{}, err
	}
	batches := m.plan(lens, cfg.MaxBatchTokens)
	scores := make([]float32, len(pairs))
	usage := models.Usage{Pairs: len(pairs), Batches: len(batches)}
	padded := make([]int, len(batches))
	err = runBatches(ctx, cfg.PoolSize, batches, func(ctx context.Context, bi int) error {
		idx := batches[bi]
		b := pad(seqs, idx, m.enc.padID())
		out, shape, err := m.runBatch(ctx, &b)
		if err != nil {
			return err
		}
		if len(shape) == 0 || shape[0] != int64(b.n) || len(out) != b.n {
			return fmt.Errorf("%w: output %s has shape %v for a batch of %d (want [%d, 1])",
				models.ErrUnsupportedModel, m.output, shape, b.n, b.n)
		}
		for r, i := range idx {
			s := out[r]
			if cfg.Sigmoid {
				s = float32(models.Sigmoid(s))
			}
			scores[i] = s
		}
		padded[bi] = b.n * b.seqLen
		return nil
	})
	if err != nil {
		return nil, models.Usage{}, err
	}
	for i := range lens {
		usage.Tokens += lens[i]
	}
	for _, p := range padded {
		usage.PaddedTokens += p
	}
	return scores, usage, nil
}
