package hybrid

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// Engines is one dataset committed into the engines of bench hybrid, for a
// driver that runs the same setups on another system beside them (bench
// cluster): the same models, commit and searches as Run, one setup at a
// time. Not safe for concurrent use; Close it.
type Engines struct {
	h *engines
	r *modeldir.Resolver
}

// Open loads the models that cfg's setups (cfg.Setups selected from
// Matrix(cfg.Profiles); cfg.Datasets is not used) need and commits ds into
// the engines, as Run does for each dataset.
func Open(ctx context.Context, cfg Config, ds *eval.Dataset) (_ *Engines, err error) {
	if err := cfg.Engine.Validate(); err != nil {
		return nil, fmt.Errorf("%w: hybrid: %w", bench.ErrBadOption, err)
	}
	if cfg.K <= 0 || cfg.Candidates <= 0 || cfg.Budget < 0 || cfg.Queries < 0 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("%w: hybrid: need K > 0, candidates > 0, budget ≥ 0, queries ≥ 0, warmup ≥ 0", bench.ErrBadOption)
	}
	setups, err := cfg.setups()
	if err != nil {
		return nil, err
	}
	r := modeldir.NewResolver(cfg.Models)
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	ms, err := resolveModels(r, cfg, setups)
	if err != nil {
		return nil, err
	}
	h, err := openEngines(ctx, ds, cfg, ms)
	if err != nil {
		return nil, err
	}
	return &Engines{h: h, r: r}, nil
}

// Run measures setup s over the first cfg.Queries judged queries, as Run
// measures a row of hybrid.md: the row and each query's ranked ids.
func (e *Engines) Run(ctx context.Context, s Setup) (Row, eval.Run, error) { return e.h.run(ctx, s) }

// Search runs setup s for query q once (under cfg.Budget when s reranks).
func (e *Engines) Search(ctx context.Context, s Setup, q string) (*engine.Result, error) {
	en := e.h.lexical
	if s.Dense {
		if en = e.h.hybrid; en == nil {
			return nil, fmt.Errorf("hybrid: setup %s needs an embedder", s.Name)
		}
	}
	budget := e.h.cfg.Budget
	if s.Rerank == "" {
		budget = 0
	}
	return en.Search(ctx, e.h.request(s, q, budget))
}

// Reranker is the loaded reranker of profile (false when no setup needed
// it).
func (e *Engines) Reranker(profile string) (models.Reranker, bool) {
	r, ok := e.h.rerankers[profile]
	return r, ok
}

// RealWeights reports whether profile's model holds real weights (false
// for a generated stand-in or a profile not loaded).
func (e *Engines) RealWeights(profile string) bool { return e.h.ms.real[profile] }

// Close closes the engines and models and removes a temporary model root.
// Safe to call twice.
func (e *Engines) Close() error { return errors.Join(e.h.Close(), e.r.Close()) }
