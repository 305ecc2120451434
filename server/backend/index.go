package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
)

// Index serves an engine.Engine as the server's Searcher and DocumentStore.
//
// Engine IDs are global across tenants (adding an ID that exists replaces
// the document in whichever tenant it was), so Apply enforces ownership
// for scoped batches: overwriting another tenant's ID is refused with
// server.ErrForbidden and deleting one is skipped. The check and the commit
// happen under one lock, so the Index must be the engine's only writer.
// Engine errors about bad input are wrapped in server.ErrInvalid, as the
// server's interfaces ask.
//
// An Index is safe for concurrent use.
type Index struct {
	e  *engine.Engine
	mu sync.Mutex // makes Apply's ownership check and commit one step
}

var (
	_ server.Searcher      = (*Index)(nil)
	_ server.DocumentStore = (*Index)(nil)
)

// NewIndex returns an Index over e; the caller keeps e and closes it.
func NewIndex(e *engine.Engine) *Index { return &Index{e: e} }

// Apply commits b atomically after the tenant ownership checks.
func (x *Index) Apply(ctx context.Context, b server.DocumentBatch) (server.CommitResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	batch := x.e.NewBatch()
	var res server.CommitResult
	// Document IDs are scoped to a tenant in the engine: an upsert writes
	// (d.Tenant, d.ID) and can never touch another tenant's document, and a
	// delete names an ID of the batch's tenant only.
	for _, d := range b.Upserts {
		batch.Add(d)
		res.Upserted++
	}
	for _, id := range b.Deletes {
		if _, ok := x.e.GetIn(b.Tenant, id); ok {
			batch.DeleteIn(b.Tenant, id)
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

// Search runs req on the engine, which sees only req.Tenant's documents.
func (x *Index) Search(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := x.e.Search(ctx, req)
	if errors.Is(err, engine.ErrInvalidRequest) {
		err = fmt.Errorf("%w: %w", server.ErrInvalid, err)
	}
	return res, err
}
