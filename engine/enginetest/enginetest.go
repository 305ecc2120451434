// Package enginetest provides small deterministic stand-ins for the model
// interfaces the engine consumes (models.Embedder, models.Reranker and
// engine.TokenCounter), for tests and examples that must not load ONNX
// models. They are not meant for production use.
//
// All types are safe for concurrent use.
package enginetest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hybrank/hybrank/models"
)

// Tokens lowercases text and splits it into runs of letters and digits.
func Tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// eachTokenHash calls f with the FNV-1a hash of every token of text, as
// Tokens splits it, without allocating: benchmarks that ingest through
// the engine with this embedder measure the engine's allocations, not the
// stand-in's.
func eachTokenHash(text string, f func(uint64)) {
	const offset, prime = 14695981039346656037, 1099511628211
	h, in := uint64(offset), false
	var enc [utf8.UTFMax]byte
	for _, r := range text {
		r = unicode.ToLower(r)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if in {
				f(h)
			}
			h, in = offset, false
			continue
		}
		for _, b := range enc[:utf8.EncodeRune(enc[:], r)] {
			h = (h ^ uint64(b)) * prime
		}
		in = true
	}
	if in {
		f(h)
	}
}

// HashEmbedder is a hashing bag-of-words embedder: every token adds ±1 to
// the bucket its FNV-1a hash selects; the vector is L2 normalised. Texts
// sharing words get a positive cosine, so dense retrieval behaves plausibly.
type HashEmbedder struct {
	// D is the dimension.
	D int
	// Err, when set, is returned by every Embed call.
	Err error
	// Calls and Texts count Embed calls and embedded texts.
	Calls, Texts atomic.Int64
}

// NewHashEmbedder returns an embedder of dimension d.
func NewHashEmbedder(d int) *HashEmbedder { return &HashEmbedder{D: d} }

// Dim returns D.
func (h *HashEmbedder) Dim() int { return h.D }

// EmbedPooled implements models.Embedder: Embed's vectors, unit length
// already.
func (h *HashEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := h.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts), Batches: 1}, err
}

// EmbedSpans implements models.Embedder: it cannot chunk.
func (h *HashEmbedder) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

// Capabilities implements models.Embedder: none (its vectors are unit
// length as they are).
func (h *HashEmbedder) Capabilities() models.Capabilities { return models.Capabilities{} }

// Load implements models.Embedder: nothing to load.
func (h *HashEmbedder) Load() error { return nil }

// Embed returns one vector per text. The input kind is ignored: queries and
// documents share one space, as with a model that has no prompts.
func (h *HashEmbedder) Embed(ctx context.Context, _ models.Input, texts []string) ([][]float32, error) {
	if h.Err != nil {
		return nil, h.Err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.Calls.Add(1)
	h.Texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, h.D)
		eachTokenHash(t, func(x uint64) {
			sign := float32(1)
			if x>>63 == 1 {
				sign = -1
			}
			v[x%uint64(h.D)] += sign
		})
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			v[0], n = 1, 1
		}
		inv := float32(1 / math.Sqrt(n))
		for j := range v {
			v[j] *= inv
		}
		out[i] = v
	}
	return out, nil
}

// OverlapReranker scores a document by the fraction of distinct query
// tokens it contains, plus 0.001 per extra occurrence (capped at 0.1), and
// sleeps PerDoc for every document, returning ctx.Err() if the context ends
// first (as a real reranker cancelled mid-run would).
type OverlapReranker struct {
	// PerDoc is the simulated cost of one document.
	PerDoc time.Duration
	// Err, when set, is returned by every Score call.
	Err error
	// Calls counts Score calls, Docs the documents scored, BatchSizes the
	// size of every call in order (guarded by an atomic append-only log).
	Calls, Docs atomic.Int64
	sizes       atomic.Pointer[[]int]
}

// ScorePairs implements models.Reranker: Score per run of pairs of one
// query.
func (r *OverlapReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

// ScoreSpans implements models.Reranker: it cannot chunk.
func (r *OverlapReranker) ScoreSpans(context.Context, string, []string, models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

// Capabilities implements models.Reranker: none.
func (r *OverlapReranker) Capabilities() models.Capabilities { return models.Capabilities{} }

// Load implements models.Reranker: nothing to load.
func (r *OverlapReranker) Load() error { return nil }

// Score scores docs against query (one call, as ScorePairs makes for one
// query).
func (r *OverlapReranker) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	r.Calls.Add(1)
	for {
		old := r.sizes.Load()
		var next []int
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, len(docs))
		if r.sizes.CompareAndSwap(old, &next) {
			break
		}
	}
	if err := sleep(ctx, r.PerDoc*time.Duration(len(docs))); err != nil {
		return nil, err
	}
	q := map[string]bool{}
	for _, t := range Tokens(query) {
		q[t] = true
	}
	out := make([]float32, len(docs))
	for i, d := range docs {
		seen := map[string]bool{}
		extra := 0.0
		for _, t := range Tokens(d) {
			if q[t] {
				if seen[t] {
					extra += 0.001
				}
				seen[t] = true
			}
		}
		if len(q) > 0 {
			out[i] = float32(float64(len(seen))/float64(len(q)) + math.Min(extra, 0.1))
		}
	}
	r.Docs.Add(int64(len(docs)))
	return out, nil
}

// sleep waits d (nothing when d ≤ 0), or returns ctx.Err() if ctx ends
// first, as a model run cancelled midway would.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// BatchSizes returns the size of every Score call so far, in order.
func (r *OverlapReranker) BatchSizes() []int {
	if p := r.sizes.Load(); p != nil {
		return append([]int(nil), *p...)
	}
	return nil
}

// CostReranker is an OverlapReranker that predicts its own cost
// (models.Capabilities Cost, EstimateScore): PerCall plus PerToken for every token of the
// pairs it is asked about (models.EstimatePairTokens). It scores as
// OverlapReranker does, taking OverlapReranker.PerDoc per document
// whatever it predicted, or, with Run set, the time it predicts.
type CostReranker struct {
	OverlapReranker
	PerCall, PerToken time.Duration
	// Unready makes EstimateScore report nothing to predict from (Run
	// still takes the time).
	Unready bool
	// Run makes Score take PerCall + PerToken per token, returning
	// ctx.Err() if the context ends first.
	Run bool
}

// ScorePairs implements models.Reranker with CostReranker's Score.
func (r *CostReranker) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

// Capabilities implements models.Reranker: its Cost is EstimateScore.
func (r *CostReranker) Capabilities() models.Capabilities {
	return models.Capabilities{Cost: r.EstimateScore}
}

// Score is OverlapReranker's, taking the time Run says first.
func (r *CostReranker) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	if r.Run {
		d := r.PerCall
		for _, doc := range docs {
			d += time.Duration(models.EstimatePairTokens(query, doc)) * r.PerToken
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
	}
	return r.OverlapReranker.Score(ctx, query, docs)
}

// EstimateScore predicts a call on pairs of these token lengths.
func (r *CostReranker) EstimateScore(pairTokens []int) (time.Duration, bool) {
	if r.Unready {
		return 0, false
	}
	d := r.PerCall
	for _, n := range pairTokens {
		d += time.Duration(n) * r.PerToken
	}
	return d, true
}

// WindowReranker is an OverlapReranker that also scores long documents in
// windows (models.Capabilities Chunking): a document's tokens are its
// whitespace-separated words, a window holds at most Window of them (the
// stand-in for a model's window) and each window is scored as Score scores
// its text.
type WindowReranker struct {
	OverlapReranker
	// Window is the words one window holds (at least 1).
	Window int
}

// Capabilities implements models.Reranker: it chunks.
func (r *WindowReranker) Capabilities() models.Capabilities {
	return models.Capabilities{Chunking: true}
}

// ScoreSpans implements models.Reranker.
func (r *WindowReranker) ScoreSpans(ctx context.Context, query string, docs []string, ch models.Chunking) ([]models.SpanScore, models.Usage, error) {
	if err := ch.Validate(); err != nil {
		return nil, models.Usage{}, err
	}
	if !ch.Enabled() {
		return nil, models.Usage{}, fmt.Errorf("%w: chunking is off", models.ErrInvalidConfig)
	}
	plan, err := ch.Plan(docs, max(r.Window, 1), WordSpans)
	if err != nil {
		return nil, models.Usage{}, err
	}
	scores, err := r.Score(ctx, query, plan.Texts())
	if err != nil {
		return nil, models.Usage{}, err
	}
	out, err := plan.Scores(ch, scores)
	return out, models.Usage{Pairs: len(scores)}, err
}

// WordSpans returns the byte spans of text's whitespace-separated words.
func WordSpans(text string) ([]models.Span, error) {
	var out []models.Span
	start := -1
	for i, c := range text {
		if unicode.IsSpace(c) {
			if start >= 0 {
				out = append(out, models.Span{Start: start, End: i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, models.Span{Start: start, End: len(text)})
	}
	return out, nil
}

// WordCounter counts whitespace-separated words, one token each.
type WordCounter struct{}

// CountTokens implements engine.TokenCounter.
func (WordCounter) CountTokens(text string) int { return len(strings.Fields(text)) }
