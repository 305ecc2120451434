package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
)

// index adapts an engine.Engine to server.Searcher and server.DocumentStore.
// Engine IDs are global across tenants, so Apply checks ownership before a
// scoped batch overwrites or deletes an ID; mu makes check-then-commit
// atomic (the server is the engine's only writer).
type index struct {
	e  *engine.Engine
	mu sync.Mutex
}

func toEngineDoc(d server.Document) engine.Document {
	return engine.Document{ID: d.ID, Title: d.Title, Text: d.Text, Tenant: d.Tenant, Metadata: d.Metadata,
		Source: d.Source, Span: engine.Span{Start: d.Span.Start, End: d.Span.End}, Links: d.Links}
}

func fromEngineDoc(d engine.Document) server.Document {
	return server.Document{ID: d.ID, Title: d.Title, Text: d.Text, Tenant: d.Tenant, Metadata: d.Metadata,
		Source: d.Source, Span: server.Span{Start: d.Span.Start, End: d.Span.End}, Links: d.Links}
}

func (x *index) Apply(ctx context.Context, b server.DocumentBatch) (server.CommitResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	batch := x.e.NewBatch()
	var res server.CommitResult
	for _, d := range b.Upserts {
		if old, ok := x.e.Get(d.ID); ok && b.Scoped && old.Tenant != b.Tenant {
			return server.CommitResult{}, fmt.Errorf("%w: document id %q belongs to another tenant", server.ErrForbidden, d.ID)
		}
		batch.Add(toEngineDoc(d))
		res.Upserted++
	}
	for _, id := range b.Deletes {
		if old, ok := x.e.Get(id); ok && (!b.Scoped || old.Tenant == b.Tenant) {
			batch.Delete(id)
			res.Deleted++
		}
	}
	if err := x.e.Commit(ctx, batch); err != nil {
		if errors.Is(err, engine.ErrInvalidDocument) {
			err = fmt.Errorf("%w: %w", server.ErrInvalid, err)
		}
		return server.CommitResult{}, err
	}
	return res, nil
}

func (x *index) Search(ctx context.Context, r server.SearchRequest) (*server.SearchResponse, error) {
	req := engine.Request{
		Query: r.Query, Tenant: r.Tenant, Filter: r.Filter, TopK: r.TopK, Candidates: r.Candidates,
		Fusion: engine.Fusion(r.Fusion), RRFK: r.RRFK, Alpha: r.Alpha, ScoreThreshold: r.ScoreThreshold,
		MMRLambda: r.MMRLambda, Expand: engine.Expansion{Hops: r.Expand.Hops, Decay: r.Expand.Decay, Seeds: r.Expand.Seeds},
		Rerank: r.Rerank, Budget: time.Duration(r.BudgetMS) * time.Millisecond, TokenBudget: r.TokenBudget, Reserve: r.Reserve,
	}
	res, err := x.e.Search(ctx, req)
	if err != nil {
		if errors.Is(err, engine.ErrInvalidRequest) {
			err = fmt.Errorf("%w: %w", server.ErrInvalid, err)
		}
		return nil, err
	}
	out := &server.SearchResponse{
		Hits: make([]server.SearchHit, len(res.Hits)), Tokens: res.Tokens, Candidates: res.Candidates,
		Reranked: res.Reranked, Degraded: res.Degraded,
	}
	for i, h := range res.Hits {
		prov, err := json.Marshal(h.Provenance)
		if err != nil {
			return nil, err
		}
		out.Hits[i] = server.SearchHit{Document: fromEngineDoc(h.Document), Score: h.Score, Provenance: prov}
	}
	if out.Passages, err = json.Marshal(res.Passages); err != nil {
		return nil, err
	}
	if len(res.Fallbacks) > 0 {
		if out.Fallbacks, err = json.Marshal(res.Fallbacks); err != nil {
			return nil, err
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	t := res.Timings
	out.Timings = map[string]float64{
		"analysis": ms(t.Analysis), "bm25": ms(t.BM25), "dense": ms(t.Dense), "fusion": ms(t.Fusion),
		"expansion": ms(t.Expansion), "mmr": ms(t.MMR), "rerank": ms(t.Rerank), "packing": ms(t.Packing), "total": ms(t.Total),
	}
	return out, nil
}
