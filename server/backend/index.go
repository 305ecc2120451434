package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
)

// Index serves an engine.Engine as the server's Searcher, DocumentStore
// and IndexStats. Document IDs are scoped to a tenant in the engine (the
// same ID in two tenants is two documents), so a batch can never touch
// another tenant's document: upserts write (Tenant, ID), deletes remove
// IDs of the batch's tenant. Apply returns once the engine's Commit has,
// that is once the batch is durable under the engine's sync policy;
// concurrent Applys commit concurrently, so they share the log's fsyncs.
// Engine errors about bad input are wrapped in server.ErrInvalid, as the
// server's interfaces ask.
//
// An Index is safe for concurrent use.
type Index struct {
	e *engine.Engine
}

var (
	_ server.Searcher      = (*Index)(nil)
	_ server.DocumentStore = (*Index)(nil)
	_ server.IndexStats    = (*Index)(nil)
	_ server.WriteState    = (*Index)(nil)
)

// NewIndex returns an Index over e; the caller keeps e and closes it.
func NewIndex(e *engine.Engine) *Index { return &Index{e: e} }

// Apply commits b atomically as one engine batch: the upserts in order,
// then the deletes, the last operation on a document winning (the
// engine's batch rule); the engine's Commit validates it (Batch.Validate,
// what b.Validate runs). Deleted counts the distinct IDs of b's deletes
// that existed in b's tenant just before the commit (a delete committed
// concurrently may count in both).
func (x *Index) Apply(ctx context.Context, b server.DocumentBatch) (server.CommitResult, error) {
	batch := x.e.NewBatch()
	var res server.CommitResult
	for _, d := range b.Upserts {
		batch.Add(d)
		res.Upserted++
	}
	counted := make(map[string]bool, len(b.Deletes))
	for _, id := range b.Deletes {
		if counted[id] {
			continue
		}
		counted[id] = true
		if _, ok := x.e.GetIn(b.Tenant, id); ok {
			res.Deleted++
		}
		batch.DeleteIn(b.Tenant, id)
	}
	if err := x.e.Commit(ctx, batch); err != nil {
		if errors.Is(err, engine.ErrInvalidDocument) {
			err = fmt.Errorf("%w: %w", server.ErrInvalid, err)
		}
		return server.CommitResult{}, err
	}
	return res, nil
}

// Get returns the document id of tenant.
func (x *Index) Get(_ context.Context, tenant, id string) (engine.Document, bool, error) {
	d, ok := x.e.GetIn(tenant, id)
	return d, ok, nil
}

// ReadOnly is the engine's: nil while it takes commits, else the
// engine.ErrReadOnly error (the failed log write or fsync) that Apply
// returns, which the server answers with 503.
func (x *Index) ReadOnly() error { return x.e.ReadOnly() }

// Stats is the engine's.
func (x *Index) Stats() engine.Stats { return x.e.Stats() }

// Search runs req on the engine, which sees only req.Tenant's documents.
func (x *Index) Search(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := x.e.Search(ctx, req)
	if errors.Is(err, engine.ErrInvalidRequest) {
		err = fmt.Errorf("%w: %w", server.ErrInvalid, err)
	}
	return res, err
}
