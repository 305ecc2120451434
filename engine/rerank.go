package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hybrank/hybrank/models"
)

// costModel keeps, per rerank profile, an exponentially weighted moving
// average of the wall time one document costs the reranker. It is safe for
// concurrent use.
type costModel struct {
	alpha  float64
	mu     sync.Mutex         // guards perDoc
	perDoc map[string]float64 // profile → EWMA of ns per document
}

func newCostModel(alpha float64) *costModel {
	return &costModel{alpha: alpha, perDoc: map[string]float64{}}
}

// estimate returns the EWMA ns/doc of profile and whether one exists.
func (m *costModel) estimate(profile string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.perDoc[profile]
	return v, ok
}

// observe folds one batch (n docs in d) into the profile's average.
func (m *costModel) observe(profile string, n int, d time.Duration) {
	if n <= 0 {
		return
	}
	x := float64(d.Nanoseconds()) / float64(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.perDoc[profile]; ok {
		m.perDoc[profile] = m.alpha*x + (1-m.alpha)*old
	} else {
		m.perDoc[profile] = x
	}
}

// relax lowers profile's estimate by factor. The loop calls it when it
// skips reranking because not even MinBatch documents are predicted to fit:
// a skipped search measures nothing, so without this an estimate raised by
// one slow (or cut) batch would stop reranking at that budget for good;
// with it, later searches probe again after a few skips.
func (m *costModel) relax(profile string, factor float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.perDoc[profile]; ok {
		m.perDoc[profile] = v * factor
	}
}

// observeCut records a batch of n docs that the deadline cut after d: its
// true cost is unknown but more than d. The estimate is raised to at least
// 2·d/n (as if the batch had been half done), so the next batch the loop
// predicts is about half as large; without this a profile whose first
// batch never finishes would keep its missing (or too low) estimate, and
// every later search would start a batch that overruns.
func (m *costModel) observeCut(profile string, n int, d time.Duration) {
	if n <= 0 {
		return
	}
	x := 2 * float64(d.Nanoseconds()) / float64(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.perDoc[profile]; !ok || old < x {
		m.perDoc[profile] = x
	}
}

// skipRelax is the factor a skipped search applies to the profile's cost
// estimate (see costModel.relax): after k skips the estimate is 0.85^k of
// what it was, so a probe follows within a handful of searches.
const skipRelax = 0.85

// rerankOutcome is what the budgeted rerank loop did.
type rerankOutcome struct {
	scored   int  // candidates scored, a prefix of the input
	degraded bool // the budget stopped it before the end
	fallback *Fallback
	// noChunking is set when chunking was asked for and the reranker
	// does not chunk (the stage truncated instead).
	noChunking *Fallback
}

// costKey is the cost model's key of a profile: chunked reranking costs a
// document several pairs, so it has an estimate of its own.
func costKey(profile string, ch models.Chunking) string {
	if ch.Enabled() {
		return profile + " chunked"
	}
	return profile
}

// chunkedScorer scores one batch of a rerank stage: with the reranker's
// ScoreSpans when the stage chunks, else with Score. It drops to Score,
// and records why, when the reranker turns out not to chunk.
type chunkedScorer struct {
	r          models.Reranker
	profile    string
	ch         models.Chunking
	noChunking *Fallback
}

func newChunkedScorer(r models.Reranker, profile string, ch models.Chunking) *chunkedScorer {
	s := &chunkedScorer{r: r, profile: profile, ch: ch}
	if _, ok := r.(models.SpanReranker); ch.Enabled() && !ok {
		s.off(fmt.Sprintf("profile %q does not score in windows; candidates truncated to its window", profile))
	}
	return s
}

func (s *chunkedScorer) off(detail string) {
	s.ch = models.Chunking{}
	s.noChunking = &Fallback{Code: FallbackNoChunking, Detail: detail}
}

// score returns one score per text and, when chunking, the best window of
// each (byte offsets into the text).
func (s *chunkedScorer) score(ctx context.Context, query string, texts []string) ([]float32, []models.Span, error) {
	if s.ch.Enabled() {
		res, _, err := s.r.(models.SpanReranker).ScoreSpans(ctx, query, texts, s.ch)
		if err == nil {
			if len(res) != len(texts) {
				return nil, nil, fmt.Errorf("reranker returned %d chunked scores for %d documents", len(res), len(texts))
			}
			scores, spans := make([]float32, len(res)), make([]models.Span, len(res))
			for i, r := range res {
				scores[i], spans[i] = r.Score, r.Span
			}
			return scores, spans, nil
		}
		if !errors.Is(err, models.ErrNoChunking) {
			return nil, nil, err
		}
		s.off(fmt.Sprintf("profile %q: %v; candidates truncated to its window", s.profile, err))
	}
	scores, err := s.r.Score(ctx, query, texts)
	return scores, nil, err
}

// textSpan maps a byte span of docText(d) to one of d.Text: the title and
// its separator are cut off, a window starting in the title starts at 0.
func textSpan(d *Document, s models.Span) Span {
	off := 0
	if d.Title != "" {
		off = len(d.Title) + 1
	}
	return Span{Start: max(s.Start-off, 0), End: max(s.End-off, 0)}
}

// rerankBudgeted scores cands (in fused order) with r in batches and stores
// the scores in cands[i].rerank for the scored prefix.
//
// The first batch of a profile with no cost estimate has cfg.FirstBatch
// documents. Afterwards each batch is sized so that its predicted time
// (size × EWMA ns/doc) fits in the time left before deadline minus margin,
// clamped to [MinBatch, MaxBatch]; when even MinBatch documents (or the
// remaining ones, if fewer) are predicted not to fit, the loop stops and the
// outcome is degraded. A batch that still overruns is cut at deadline −
// margin, discarded, raises the profile's estimate (observeCut) and ends
// the loop as degraded. A zero deadline
// means no budget: every candidate is scored in MaxBatch batches.
//
// A reranker error (other than the deadline) discards every score and
// returns a rerank_error fallback: the caller keeps fused order. A
// cancellation of the parent context is returned as an error.
//
// With ch enabled the batches are scored in windows (models.SpanReranker)
// and each scored candidate gets its best window's span; a reranker that
// does not chunk truncates instead and the outcome says so (noChunking).
// The cost estimate of a chunked stage is kept apart (costKey).
func rerankBudgeted(ctx context.Context, parent context.Context, r models.Reranker, profile string, query string, ch models.Chunking, cands []*candidate, cfg RerankConfig, costs *costModel, deadline time.Time, margin time.Duration) (out rerankOutcome, err error) {
	sc := newChunkedScorer(r, profile, ch)
	defer func() { out.noChunking = sc.noChunking }()
	profile = costKey(profile, sc.ch)
	if !deadline.IsZero() {
		// Batches are cut at deadline − margin, not at the deadline: the
		// margin pays for the model noticing the cut (ONNX Runtime checks
		// its terminate flag between operators) and for MMR and packing.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
	}
	texts := make([]string, 0, cfg.MaxBatch)
	for out.scored < len(cands) {
		left := len(cands) - out.scored
		n := cfg.MaxBatch
		if !deadline.IsZero() {
			avail := time.Until(deadline) - margin
			est, ok := costs.estimate(profile)
			switch {
			case avail <= 0:
				n = 0
			case !ok:
				n = cfg.FirstBatch
			default:
				n = int(float64(avail.Nanoseconds()) / math.Max(est, 1))
				n = min(n, cfg.MaxBatch)
				if n < min(cfg.MinBatch, left) {
					n = 0
					costs.relax(profile, skipRelax)
				}
			}
			if n == 0 {
				out.degraded = true
				break
			}
		}
		n = min(n, left)
		batch := cands[out.scored : out.scored+n]
		texts = texts[:0]
		for _, c := range batch {
			texts = append(texts, docText(&c.rec.doc))
		}
		start := time.Now()
		chunked := sc.ch.Enabled()
		scores, spans, err := sc.score(ctx, query, texts)
		elapsed := time.Since(start)
		if chunked && !sc.ch.Enabled() {
			profile = costKey(sc.profile, sc.ch) // it fell back: a truncated batch's cost
		}
		if err == nil && len(scores) != len(batch) {
			err = fmt.Errorf("reranker returned %d scores for %d documents", len(scores), len(batch))
		}
		if err == nil {
			for _, s := range scores {
				if math.IsNaN(float64(s)) {
					err = errors.New("reranker returned NaN")
					break
				}
			}
		}
		if err != nil {
			if perr := parent.Err(); perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
				return out, fmt.Errorf("rerank: %w", perr)
			}
			if ctx.Err() != nil { // our deadline cut the batch
				costs.observeCut(profile, n, elapsed)
				out.degraded = true
				break
			}
			for _, c := range cands[:out.scored] {
				c.reranked, c.rerank, c.spanned, c.span = false, 0, false, Span{}
			}
			out.scored = 0
			out.fallback = &Fallback{Code: FallbackRerankError, Detail: fmt.Sprintf("profile %q: %v", sc.profile, err)}
			return out, nil
		}
		costs.observe(profile, n, elapsed)
		for i, c := range batch {
			c.reranked, c.rerank = true, float64(scores[i])
			if spans != nil {
				c.spanned, c.span = true, textSpan(&c.rec.doc, spans[i])
			}
		}
		out.scored += n
	}
	if out.degraded && out.scored == 0 {
		out.fallback = &Fallback{Code: FallbackRerankBudget, Detail: fmt.Sprintf("profile %q: no time left to rerank", sc.profile)}
	}
	return out, nil
}

// docText is what the analyzer, the reranker and the embedder see of a
// document: the title and the text separated by a space (or just the
// text), as BEIR and MTEB join them.
func docText(d *Document) string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + " " + d.Text
}

// rerank runs req's rerank stage on cands (fused order) and returns them
// in final order: one budgeted stage, or a cascade (rerankCascade). An
// unknown profile is a fallback: fused order.
func (e *Engine) rerank(ctx, parent context.Context, req *Request, cands []*candidate, deadline time.Time, margin time.Duration, res *Result) ([]*candidate, error) {
	r, ok := e.rerankers[req.Rerank]
	if !ok {
		res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackRerankUnknown, Detail: fmt.Sprintf("no reranker %q; fused order", req.Rerank)})
		return cands, nil
	}
	if req.Cascade.First != "" {
		if first, ok := e.rerankers[req.Cascade.First]; ok {
			return e.rerankCascade(ctx, parent, req, first, r, cands, deadline, margin, res)
		}
		res.Fallbacks = append(res.Fallbacks, Fallback{Code: FallbackRerankUnknown,
			Detail: fmt.Sprintf("no reranker %q for the cascade's first stage; %q alone", req.Cascade.First, req.Rerank)})
	}
	out, err := rerankBudgeted(ctx, parent, r, req.Rerank, req.Query, req.Chunking, cands, e.cfg.Rerank, e.costs, deadline, margin)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	res.record(out)
	return finalOrder(cands, out.scored), nil
}

// record adds one rerank stage's outcome to res.
func (res *Result) record(out rerankOutcome) {
	res.Reranked = out.scored
	res.recordFallbacks(out)
}

// recordFallbacks adds a rerank stage's degradation and fallbacks to res.
func (res *Result) recordFallbacks(out rerankOutcome) {
	res.Degraded = res.Degraded || out.degraded
	for _, f := range []*Fallback{out.noChunking, out.fallback} {
		if f != nil {
			res.Fallbacks = append(res.Fallbacks, *f)
		}
	}
}

// rerankCascade scores cands with first (the cheap profile), then the best
// req.Cascade.Keep of what it scored with second, each stage budgeted as
// rerankBudgeted does. The first stage's deadline leaves the second its
// predicted cost (Keep × its cost estimate), at most half of the time
// left; without an estimate, half. The final order is: what the second
// stage scored (by its score), then what only the first scored (by the
// first's score), then the rest in fused order.
func (e *Engine) rerankCascade(ctx, parent context.Context, req *Request, first, second models.Reranker, cands []*candidate, deadline time.Time, margin time.Duration, res *Result) ([]*candidate, error) {
	keep := req.Cascade.Keep
	d1 := deadline
	if !deadline.IsZero() {
		reserve := time.Until(deadline) / 2
		if est, ok := e.costs.estimate(costKey(req.Rerank, req.Chunking)); ok {
			reserve = min(reserve, time.Duration(est*float64(keep)))
		}
		d1 = deadline.Add(-max(reserve, 0))
	}
	out1, err := rerankBudgeted(ctx, parent, first, req.Cascade.First, req.Query, req.Chunking, cands, e.cfg.Rerank, e.costs, d1, margin)
	if err != nil {
		return nil, fmt.Errorf("search: cascade first stage: %w", err)
	}
	res.FirstStage = out1.scored
	res.recordFallbacks(out1)
	for _, c := range cands[:out1.scored] {
		c.first, c.firstScore, c.reranked, c.rerank, c.spanned = true, c.rerank, false, 0, false
	}
	// The first stage's best (or, if it scored nothing, the fused best).
	byFirst := slices.Clone(cands)
	sort.SliceStable(byFirst[:out1.scored], func(i, j int) bool { return byFirst[i].firstScore > byFirst[j].firstScore })
	top := byFirst[:min(keep, len(byFirst))]
	out2, err := rerankBudgeted(ctx, parent, second, req.Rerank, req.Query, req.Chunking, top, e.cfg.Rerank, e.costs, deadline, margin)
	if err != nil {
		return nil, fmt.Errorf("search: cascade second stage: %w", err)
	}
	res.record(out2)
	final := finalOrder(top[:out2.scored], out2.scored)
	for _, c := range byFirst {
		if !c.reranked {
			final = append(final, c)
		}
	}
	return final, nil
}
