package hybrid

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/vcache"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// modelSet is the embedder and rerankers a run loads, and whether each
// holds real weights.
type modelSet struct {
	embed  models.Config // zero Dir: no embedder
	rerank map[string]models.Config
	real   map[string]bool // by profile ("embed", "fast", …)
}

// resolveModels looks up the models that setups and the sweep need.
func resolveModels(r *modeldir.Resolver, c Config, setups []Setup) (modelSet, error) {
	ms := modelSet{rerank: map[string]models.Config{}, real: map[string]bool{}}
	needDense := len(c.Sweep.Budgets) > 0 && !c.NoDense
	var rerank []string
	if len(c.Sweep.Budgets) > 0 {
		rerank = append(rerank, rerankProfiles(c.Sweep.Profiles)...)
	}
	if c.Replay.Searches > 0 {
		if s, ok := findSetup(Matrix(c.Profiles), c.Replay.Setup); ok {
			setups = append(slices.Clip(setups), s)
		}
	}
	for _, s := range setups {
		needDense = needDense || s.Dense
		if s.Rerank != "" {
			rerank = append(rerank, s.Rerank)
		}
	}
	config := func(profile, explicit string) (models.Config, error) {
		mc, err := models.ProfileConfig(profile)
		if err != nil {
			return mc, err
		}
		if mc.Dir, err = r.Dir(profile, explicit); err != nil {
			return mc, err
		}
		mc.Provider = c.Provider
		if c.Threads > 0 {
			mc.IntraOpThreads = c.Threads
		}
		ms.real[profile] = modeldir.RealWeights(mc.Dir)
		return mc, nil
	}
	if needDense {
		mc, err := config(models.ProfileEmbed, c.EmbedDir)
		if err != nil {
			return ms, err
		}
		mc.MaxLength = c.MaxDocTokens
		ms.embed = mc
	}
	for _, p := range rerank {
		if _, done := ms.rerank[p]; done {
			continue
		}
		mc, err := config(p, c.RerankDir)
		if err != nil {
			return ms, err
		}
		mc.Quantize = c.Quantize
		ms.rerank[p] = mc
	}
	return ms, nil
}

// engines holds the engines of one dataset so that every setup reuses one
// embedding of the corpus: a BM25-only engine and, with an embedder, a
// hybrid engine with every reranker attached. Not safe for concurrent use
// (runs are sequential so latencies do not interfere).
type engines struct {
	ds      *eval.Dataset
	cfg     Config
	ms      modelSet
	lexical *engine.Engine
	hybrid  *engine.Engine // nil without an embedder
	// embedder (nil without one) and rerankers are the loaded models, for
	// engines built later (the replay's, behind caches).
	embedder  models.Embedder
	rerankers map[string]models.Reranker
	closers   []func() error
	// commitLexical and commitHybrid are the commit (analysis, and for the
	// hybrid engine embedding) wall times.
	commitLexical, commitHybrid time.Duration
}

// openEngines loads the models and commits ds (title and text, one batch)
// into the engines.
func openEngines(ctx context.Context, ds *eval.Dataset, cfg Config, ms modelSet) (_ *engines, err error) {
	h := &engines{ds: ds, cfg: cfg, ms: ms, rerankers: map[string]models.Reranker{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close())
		}
	}()
	ropts, err := h.loadRerankers(ctx)
	if err != nil {
		return nil, err
	}
	if h.lexical, err = engine.Open("", cfg.Engine, ropts...); err != nil {
		return nil, err
	}
	h.closers = append(h.closers, h.lexical.Close)
	if h.commitLexical, err = h.commit(ctx, h.lexical); err != nil {
		return nil, err
	}
	if ms.embed.Dir == "" {
		return h, nil
	}
	be, err := ort.NewBiEncoder(ms.embed)
	if err != nil {
		return nil, fmt.Errorf("hybrid: embedder: %w", err)
	}
	h.closers = append(h.closers, be.Close)
	if err := be.Load(); err != nil {
		return nil, fmt.Errorf("hybrid: embedder: %w", err)
	}
	ce, err := vcache.Wrap(be, ms.embed, cfg.CacheDir, vcache.WithOnly(models.InputDocument))
	if err != nil {
		return nil, fmt.Errorf("hybrid: embedder: %w", err)
	}
	h.closers = append(h.closers, ce.Close)
	h.embedder = ce
	if h.hybrid, err = engine.Open("", cfg.Engine, append([]engine.Option{engine.WithEmbedder(ce)}, ropts...)...); err != nil {
		return nil, err
	}
	h.closers = append(h.closers, h.hybrid.Close)
	bar := measure.NewProgress("embed "+ds.Name, 1, cfg.Progress)
	h.commitHybrid, err = h.commit(ctx, h.hybrid)
	bar.Done()
	return h, err
}

// loadRerankers loads and warms up every reranker, in profile order.
func (h *engines) loadRerankers(ctx context.Context) ([]engine.Option, error) {
	profiles := make([]string, 0, len(h.ms.rerank))
	for p := range h.ms.rerank {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	var opts []engine.Option
	for _, p := range profiles {
		ce, err := ort.NewCrossEncoder(h.ms.rerank[p])
		if err != nil {
			return nil, fmt.Errorf("hybrid: reranker %s: %w", p, err)
		}
		h.closers = append(h.closers, ce.Close)
		if err := ce.Load(); err != nil {
			return nil, fmt.Errorf("hybrid: reranker %s: %w", p, err)
		}
		// One call so the runtime's first-run set-up is not timed (nor
		// taken by the engine for the model's cost).
		if _, err := ce.Score(ctx, "warm up", []string{"a short document", "another one"}); err != nil {
			return nil, fmt.Errorf("hybrid: reranker %s: %w", p, err)
		}
		opts = append(opts, engine.WithReranker(p, ce))
		h.rerankers[p] = ce
	}
	return opts, nil
}

// commit adds the corpus to e in one batch and returns the commit time.
func (h *engines) commit(ctx context.Context, e *engine.Engine) (time.Duration, error) {
	runtime.GC()
	b := e.NewBatch()
	for _, d := range h.ds.Docs {
		b.Add(engine.Document{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	start := time.Now()
	if err := e.Commit(ctx, b); err != nil {
		return 0, fmt.Errorf("hybrid %s: commit: %w", h.ds.Name, err)
	}
	return time.Since(start), nil
}

// Close closes the engines and the models (engines first). Safe to call
// twice.
func (h *engines) Close() error {
	var err error
	for i := len(h.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, h.closers[i]())
	}
	h.closers = nil
	return err
}

// queries returns n judged queries (all for 0), cycling when n exceeds
// them.
func (h *engines) queries(n int) []eval.Query {
	qs := h.ds.Queries
	if n <= 0 || n == len(qs) || len(qs) == 0 {
		return qs
	}
	out := make([]eval.Query, n)
	for i := range out {
		out[i] = qs[i%len(qs)]
	}
	return out
}

// warm runs cfg.Warmup unrecorded searches (a timeout is fine here).
func (h *engines) warm(ctx context.Context, e *engine.Engine, qs []eval.Query, req func(string) engine.Request) error {
	for i := 0; i < h.cfg.Warmup && len(qs) > 0; i++ {
		_, err := e.Search(ctx, req(qs[len(qs)-1-i%len(qs)].Text))
		if err != nil && !retrievalTimeout(ctx, err) {
			return fmt.Errorf("hybrid: warm-up: %w", err)
		}
	}
	return nil
}

// retrievalTimeout reports whether err is a search whose retrieval missed
// its budget (not the run being cancelled).
func retrievalTimeout(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}
