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

// costModel keeps, per rerank profile, what a batch costs the reranker:
// an exponentially weighted moving average of the wall time per document
// and, for rerankers that predict their own cost (models.Capabilities Cost),
// one of the ratio of observed to predicted wall time (which carries what
// the reranker's own model does not see: tokenization, waiting for a
// session behind other searches, a machine busier than at calibration).
// It is safe for concurrent use.
type costModel struct {
	alpha float64
	mu    sync.Mutex // guards costs
	costs map[string]profileCost
}

// profileCost is one profile's averages; a zero perDoc or ratio means
// none yet.
type profileCost struct {
	perDoc float64 // ns per document
	ratio  float64 // observed / predicted
	// dev is the mean absolute deviation of observed / predicted from
	// ratio, 0 until a second prediction was observed; the first
	// deviation is averaged with that 0 (weight alpha), like every later
	// one, so a single outlier raises it by alpha times its distance.
	dev float64
}

// ratioMin and ratioMax bound the observed/predicted ratio: a reranker
// whose prediction is that far off is mis-calibrated, and an unbounded
// ratio would take many batches to come back.
const ratioMin, ratioMax = 0.05, 20.0

func newCostModel(alpha float64) *costModel {
	return &costModel{alpha: alpha, costs: map[string]profileCost{}}
}

// estimate returns the EWMA ns/doc of profile and whether one exists.
func (m *costModel) estimate(profile string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.costs[profile].perDoc
	return v, v > 0
}

// ratio returns what batches are sized with: the EWMA of profile's
// observed/predicted wall time plus its mean deviation (so that a batch
// whose time varies by ±10 % is rarely cut), 1 before any batch was
// predicted.
func (m *costModel) ratio(profile string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.costs[profile]; c.ratio > 0 {
		return min(c.ratio+c.dev, ratioMax)
	}
	return 1
}

// ewma folds x into old with weight alpha (old 0: none yet).
func (m *costModel) ewma(old, x float64) float64 {
	if old <= 0 {
		return x
	}
	return m.alpha*x + (1-m.alpha)*old
}

// observe folds one batch (n docs in d, predicted to take pred; 0: no
// prediction) into the profile's averages.
func (m *costModel) observe(profile string, n int, d, pred time.Duration) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.costs[profile]
	c.perDoc = m.ewma(c.perDoc, max(float64(d.Nanoseconds())/float64(n), 1))
	if pred > 0 {
		x := min(max(float64(d)/float64(pred), ratioMin), ratioMax)
		if c.ratio > 0 {
			// Not m.ewma: a deviation of 0 is a value, not "none yet".
			c.dev = m.alpha*math.Abs(x-c.ratio) + (1-m.alpha)*c.dev
		}
		c.ratio = m.ewma(c.ratio, x)
	}
	m.costs[profile] = c
}

// relax lowers profile's averages by factor: the per-document time, and
// the observed/predicted ratio with its deviation (batches are sized with
// their sum, and one slow batch raises both). The loop calls it when it
// skips reranking because not even MinBatch documents are predicted to fit:
// a skipped search measures nothing, so without this an estimate raised by
// one slow (or cut) batch would stop reranking at that budget for good;
// with it, later searches probe again after a few skips. predicted says
// the skip came from the reranker's prediction: then a ratio not observed
// yet (1) is lowered too, since the reranker's own model may be the one
// that is too high, and nothing but a call would correct it.
func (m *costModel) relax(profile string, factor float64, predicted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.costs[profile]
	c.perDoc *= factor
	if c.ratio == 0 && predicted {
		c.ratio = 1
	}
	if c.ratio > 0 {
		c.ratio = max(c.ratio*factor, ratioMin)
	}
	c.dev *= factor
	m.costs[profile] = c
}

// observeCut records a batch of n docs (predicted to take pred; 0: no
// prediction) that the deadline cut after d: its true cost is unknown but
// more than d. The per-document average is raised to at least 2·d/n (as
// if the batch had been half done), so the next batch the loop predicts
// is about half as large; without this a profile whose first batch never
// finishes would keep its missing (or too low) estimate, and every later
// search would start a batch that overruns. A predicted batch raises the
// ratio to at least cutRatio · d/pred instead: such a batch was sized to
// fit, so it is usually cut by a prediction short by a few percent, and
// halving the next batches would waste more than the cut did; a
// prediction far off is raised by cutRatio at every cut until it fits.
func (m *costModel) observeCut(profile string, n int, d, pred time.Duration) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.costs[profile]
	c.perDoc = max(c.perDoc, 2*float64(d.Nanoseconds())/float64(n))
	if pred > 0 {
		c.ratio = max(c.ratio, min(max(cutRatio*float64(d)/float64(pred), ratioMin), ratioMax))
	}
	m.costs[profile] = c
}

// cutRatio is how far a cut predicted batch raises the profile's ratio
// past what the batch had taken when it was cut (see observeCut).
const cutRatio = 1.25

// skipRelax is the factor a skipped search applies to the profile's cost
// estimate (see costModel.relax): after k skips the estimate is 0.85^k of
// what it was, so a probe follows within a handful of searches.
const skipRelax = 0.85

// predictor predicts the wall time of scoring runs of a stage's
// candidates with a reranker's own cost model (models.Capabilities Cost), from
// their estimated pair lengths (models.EstimatePairTokens, the query's
// part estimated once), which it computes once per candidate, when first
// asked.
type predictor struct {
	est    func(pairTokens []int) (time.Duration, bool)
	query  int   // the query's estimated tokens
	lens   []int // pair tokens of cands[:len(lens)]
	cands  []*candidate
	failed bool // the estimator had nothing to predict from
}

// stagePredictor returns a predictor for a stage of r on cands, or nil
// when r does not predict its cost or the stage scores in windows (a
// chunked call's cost is its windows', which the prediction cannot see).
// ch is the stage's chunking as asked: a reranker that cannot score in
// windows truncates, and its calls are predicted.
func stagePredictor(r models.Reranker, query string, ch models.Chunking, cands []*candidate) *predictor {
	caps := r.Capabilities()
	if caps.Cost == nil || ch.Enabled() && caps.Chunking {
		return nil
	}
	est := caps.Cost
	return &predictor{est: est, query: models.EstimateTokens(query), cands: cands}
}

// predict returns the predicted wall time of one call scoring
// cands[from:from+n]; false when the reranker cannot predict.
func (p *predictor) predict(from, n int) (time.Duration, bool) {
	if p == nil || p.failed {
		return 0, false
	}
	for i := len(p.lens); i < from+n; i++ {
		p.lens = append(p.lens, models.EstimatePairTokensWith(p.query, docText(&p.cands[i].rec.doc)))
	}
	d, ok := p.est(p.lens[from : from+n])
	p.failed = !ok
	return d, ok
}

// predictCalls returns the predicted wall time of scoring cands[:n] in
// calls of at most maxBatch, as a stage without a deadline would.
func (p *predictor) predictCalls(n, maxBatch int) (time.Duration, bool) {
	var total time.Duration
	for from := 0; from < n; from += maxBatch {
		d, ok := p.predict(from, min(maxBatch, n-from))
		if !ok {
			return 0, false
		}
		total += d
	}
	return total, true
}

// fit returns the largest n in [1, hi] whose predicted time of scoring
// cands[from:from+n], times ratio, is within avail (0 when not even one
// fits), and that batch's raw prediction. ok is false when the reranker
// cannot predict. Predictions grow with n, but not strictly (a cost table
// is measured): the search finds an n that fits whose successor does not.
func (p *predictor) fit(from, hi int, ratio float64, avail time.Duration) (n int, pred time.Duration, ok bool) {
	fits := func(k int) (time.Duration, bool, bool) {
		d, ok := p.predict(from, k)
		return d, ok && time.Duration(float64(d)*ratio) <= avail, ok
	}
	d, in, ok := fits(hi)
	if !ok {
		return 0, 0, false
	}
	if in {
		return hi, d, true
	}
	lo := 0 // fits (0 always does); hi does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		dm, in, ok := fits(mid)
		if !ok {
			return 0, 0, false
		}
		if in {
			lo, pred = mid, dm
		} else {
			hi = mid
		}
	}
	return lo, pred, true
}

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
	if ch.Enabled() && !stageChunking(r, ch).Enabled() {
		s.off(fmt.Sprintf("profile %q does not score in windows; candidates truncated to its window", profile))
	}
	return s
}

// stageChunking is the chunking a stage of r runs when ch is asked for:
// none when r cannot score in windows (it truncates instead).
func stageChunking(r models.Reranker, ch models.Chunking) models.Chunking {
	if ch.Enabled() && !r.Capabilities().Chunking {
		return models.Chunking{}
	}
	return ch
}

func (s *chunkedScorer) off(detail string) {
	s.ch = models.Chunking{}
	s.noChunking = &Fallback{Code: FallbackNoChunking, Detail: detail}
}

// score returns one score per text and, when chunking, the best window of
// each (byte offsets into the text).
func (s *chunkedScorer) score(ctx context.Context, query string, texts []string) ([]float32, []models.Span, error) {
	if s.ch.Enabled() {
		res, _, err := s.r.ScoreSpans(ctx, query, texts, s.ch)
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
	scores, _, err := models.Score(ctx, s.r, query, texts)
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
// Each batch is sized so that its predicted time fits in the time left
// before deadline minus margin, at most MaxBatch documents. A reranker
// that predicts its own cost (models.Capabilities Cost) predicts the batch:
// from its documents' estimated lengths, its fixed cost per call and its
// batching, scaled by the profile's observed/predicted ratio; the batch
// is the longest run of the next candidates that fits. Otherwise (and in
// chunked stages) the prediction is size × the profile's EWMA ns/doc,
// and the first batch of a profile with no estimate has cfg.FirstBatch
// documents. When even MinBatch documents (or the remaining ones, if
// fewer) are predicted not to fit, the loop stops and the outcome is
// degraded. A batch that still overruns is cut at deadline −
// margin, discarded, raises the profile's estimate (observeCut) and ends
// the loop as degraded. A zero deadline
// means no budget: every candidate is scored in MaxBatch batches.
//
// A reranker error (other than the deadline) discards every score and
// returns a rerank_error fallback: the caller keeps fused order. A
// cancellation of the parent context is returned as an error.
//
// With ch enabled the batches are scored in windows (Reranker.ScoreSpans)
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
	pr := stagePredictor(r, query, sc.ch, cands)
	for out.scored < len(cands) {
		left := len(cands) - out.scored
		n, pred := min(cfg.MaxBatch, left), time.Duration(0)
		if !deadline.IsZero() {
			avail := time.Until(deadline) - margin
			est, ok := costs.estimate(profile)
			fitted := false
			if avail > 0 && pr != nil {
				n, pred, fitted = pr.fit(out.scored, min(cfg.MaxBatch, left), costs.ratio(profile), avail)
			}
			switch {
			case avail <= 0:
				n = 0
			case !fitted && !ok:
				n = cfg.FirstBatch
			default:
				if !fitted {
					n = min(int(float64(avail.Nanoseconds())/math.Max(est, 1)), cfg.MaxBatch)
				}
				if n < min(cfg.MinBatch, left) {
					n = 0
					costs.relax(profile, skipRelax, fitted)
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
			// It fell back: what follows costs truncated batches.
			profile = costKey(sc.profile, sc.ch)
			pr = stagePredictor(r, query, sc.ch, cands)
		}
		// A call that returned but answered wrongly failed, even when the
		// deadline passed meanwhile: it was not cut.
		returned := err == nil
		if err == nil && len(scores) != len(batch) {
			err = fmt.Errorf("reranker returned %d scores for %d documents", len(scores), len(batch))
		}
		if err == nil {
			for _, s := range scores {
				if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
					err = fmt.Errorf("reranker returned a score of %v", s) // no order, no JSON
					break
				}
			}
		}
		if err != nil {
			if perr := parent.Err(); perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
				return out, fmt.Errorf("rerank: %w", perr)
			}
			if ctx.Err() != nil && !returned { // our deadline cut the batch
				costs.observeCut(profile, n, elapsed, pred)
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
		costs.observe(profile, n, elapsed, pred)
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
// predicted cost, at most half of the time left: the second reranker's
// own prediction for the first Keep candidates in fused order, in calls
// of at most MaxBatch (their lengths stand in for those the first stage
// will pick), when it makes one, else Keep × its cost estimate per
// document; with neither, half. The final order is: what the second
// stage scored (by its score), then what only the first scored (by the
// first's score), then the rest in fused order.
func (e *Engine) rerankCascade(ctx, parent context.Context, req *Request, first, second models.Reranker, cands []*candidate, deadline time.Time, margin time.Duration, res *Result) ([]*candidate, error) {
	keep := req.Cascade.Keep
	d1 := deadline
	if !deadline.IsZero() {
		reserve := time.Until(deadline) / 2
		n := min(keep, len(cands))
		// Keyed as the second stage will run: truncated, when its
		// reranker cannot score in windows.
		ch := stageChunking(second, req.Chunking)
		key := costKey(req.Rerank, ch)
		pr := stagePredictor(second, req.Query, ch, cands)
		if d, ok := pr.predictCalls(n, e.cfg.Rerank.MaxBatch); ok {
			reserve = min(reserve, time.Duration(float64(d)*e.costs.ratio(key)))
		} else if est, ok := e.costs.estimate(key); ok {
			reserve = min(reserve, time.Duration(est*float64(n)))
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
