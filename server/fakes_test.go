package server

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/modeltest"
	"github.com/hybrank/hybrank/models/queue"
)

// fakeTokenizer splits on spaces; ids are word lengths.
type fakeTokenizer struct{}

func (fakeTokenizer) Tokenize(text string, addSpecial bool) ([]Token, error) {
	var out []Token
	if addSpecial {
		out = append(out, Token{ID: 101, Text: "[CLS]", Special: true})
	}
	start := -1
	for i := 0; i <= len(text); i++ {
		if i == len(text) || text[i] == ' ' {
			if start >= 0 {
				out = append(out, Token{ID: i - start, Text: text[start:i], Start: start, Stop: i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if addSpecial {
		out = append(out, Token{ID: 102, Text: "[SEP]", Special: true, Start: len(text), Stop: len(text)})
	}
	return out, nil
}

// fakeIndex is an in-memory Searcher and DocumentStore with tenant-scoped
// IDs, keyed by docKey. leak makes Search ignore the tenant, to test the
// server's own tenant filter.
type fakeIndex struct {
	mu   sync.Mutex
	docs map[string]engine.Document
	leak bool
	wait time.Duration
}

func newFakeIndex() *fakeIndex { return &fakeIndex{docs: map[string]engine.Document{}} }

// docKey is a document's key in fakeIndex.docs.
func docKey(tenant, id string) string { return tenant + "\x00" + id }

func (x *fakeIndex) Apply(ctx context.Context, b DocumentBatch) (CommitResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var res CommitResult
	for _, d := range b.Upserts { // the batch rule: upserts in order, then deletes
		x.docs[docKey(d.Tenant, d.ID)] = d
		res.Upserted++
	}
	for _, id := range b.Deletes {
		if _, ok := x.docs[docKey(b.Tenant, id)]; ok {
			delete(x.docs, docKey(b.Tenant, id))
			res.Deleted++
		}
	}
	res.Generation = uint64(len(x.docs))
	return res, nil
}

func (x *fakeIndex) Get(_ context.Context, tenant, id string) (engine.Document, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	d, ok := x.docs[docKey(tenant, id)]
	return d, ok, nil
}

func (x *fakeIndex) Search(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if x.wait > 0 {
		select {
		case <-time.After(x.wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	resp := &engine.Result{Timings: engine.Timings{BM25: 100 * time.Microsecond}}
	for _, d := range x.docs {
		if !x.leak && d.Tenant != req.Tenant {
			continue
		}
		s := modeltest.PairScore(models.Pair{Query: req.Query, Doc: d.Text})
		if s <= 0 {
			continue
		}
		resp.Hits = append(resp.Hits, engine.Hit{Document: d, Score: float64(s),
			Provenance: engine.Provenance{BM25Rank: 1, Origin: engine.Origin{Kind: engine.OriginRetrieved}}})
	}
	sort.Slice(resp.Hits, func(i, j int) bool { return resp.Hits[i].Score > resp.Hits[j].Score })
	if req.TopK > 0 && len(resp.Hits) > req.TopK {
		resp.Hits = resp.Hits[:req.TopK]
	}
	if req.TokenBudget > 0 {
		// One passage per hit, as the engine packs one that fits.
		for i, h := range resp.Hits {
			resp.Passages = append(resp.Passages, engine.Passage{Source: h.Document.Source, Span: h.Document.Span, Text: h.Document.Text,
				Tokens: len(strings.Fields(h.Document.Text)), Score: h.Score,
				Parts: []engine.PassagePart{{ID: h.Document.ID, Span: h.Document.Span, FinalRank: i + 1}}})
		}
	}
	return resp, nil
}

func (fakeTokenizer) CountTokens(text string) int { return len(strings.Fields(text)) }

func (x *fakeIndex) Stats() engine.Stats {
	x.mu.Lock()
	defer x.mu.Unlock()
	st := engine.Stats{Documents: len(x.docs)}
	st.Durability.Commits, st.Durability.LogSyncs = 7, 2
	return st
}

// defaultReranker returns Services.Rerankers serving r as DefaultConfig's
// one reranker.
func defaultReranker(r models.Reranker) map[string]models.Reranker {
	return map[string]models.Reranker{DefaultConfig().RerankModel: r}
}

// queued puts the models of b behind queues built from cfg, as
// backend.Open does (cfg.Rerank for each reranker, cfg.Embed for the
// embedder), lists the queues in b.Queues under the models' served names
// and closes them when the test ends (after a server closed in a cleanup
// registered later). A model that b.Queues has a queue for already (a
// test that put a cache in front of its queue, as backend.Open does) is
// left as it is.
func queued(t testing.TB, cfg Config, b *Services) {
	t.Helper()
	if b.Queues == nil {
		b.Queues = map[string]QueueStats{}
	}
	for name, r := range b.Rerankers {
		if _, ok := b.Queues[name]; ok || r == nil {
			continue
		}
		q := rerankQueue(t, r, cfg.Rerank)
		b.Rerankers[name], b.Queues[name] = q, q
	}
	if _, ok := b.Queues[cfg.EmbedModel]; !ok && b.Embedder != nil {
		q := embedQueue(t, b.Embedder, cfg.Embed)
		b.Embedder, b.Queues[cfg.EmbedModel] = q, q
	}
}

// rerankQueue is queue.NewReranker(r, cfg), closed when the test ends.
func rerankQueue(t testing.TB, r models.Reranker, cfg queue.Config) *queue.Reranker {
	t.Helper()
	q, err := queue.NewReranker(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// embedQueue is queue.NewEmbedder(e, cfg), closed when the test ends.
func embedQueue(t testing.TB, e models.Embedder, cfg queue.Config) *queue.Embedder {
	t.Helper()
	q, err := queue.NewEmbedder(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}
