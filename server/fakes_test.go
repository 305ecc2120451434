package server

import (
	"context"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// fakeScore is the deterministic score of a pair: the number of query words
// found in the document, minus a small hash-based tie breaker, so tests can
// recompute every expected score.
func fakeScore(p models.Pair) float32 {
	doc := strings.Fields(strings.ToLower(p.Doc))
	set := map[string]bool{}
	for _, w := range doc {
		set[w] = true
	}
	n := 0
	for _, w := range strings.Fields(strings.ToLower(p.Query)) {
		if set[w] {
			n++
		}
	}
	h := fnv.New32a()
	h.Write([]byte(p.Doc))
	return float32(n) - float32(h.Sum32()%1000)/10000
}

// fakeScorer scores with fakeScore and records every batch.
type fakeScorer struct {
	mu      sync.Mutex
	batches [][]models.Pair
	delay   time.Duration
	gate    chan struct{} // when set, each call waits for a value
	started chan int      // when set, receives each batch's size on entry
	err     error
}

func (f *fakeScorer) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	f.mu.Lock()
	f.batches = append(f.batches, append([]models.Pair(nil), pairs...))
	f.mu.Unlock()
	if f.started != nil {
		f.started <- len(pairs)
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, models.Usage{}, ctx.Err()
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, models.Usage{}, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, models.Usage{}, f.err
	}
	out := make([]float32, len(pairs))
	tokens := 0
	for i, p := range pairs {
		out[i] = fakeScore(p)
		tokens += len(strings.Fields(p.Query)) + len(strings.Fields(p.Doc)) + 3
	}
	return out, models.Usage{Tokens: tokens, Pairs: len(pairs), Batches: 1}, nil
}

func (f *fakeScorer) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(f.batches))
	for i, b := range f.batches {
		out[i] = len(b)
	}
	return out
}

const fakeDim = 8

// fakeVector is the deterministic unit vector of a text.
func fakeVector(t string) []float32 {
	v := make([]float32, fakeDim)
	h := fnv.New64a()
	h.Write([]byte(t))
	x := h.Sum64()
	var ss float64
	for i := range v {
		v[i] = float32(int64(x>>(8*i))&0xff) - 127.5
		ss += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(ss))
	}
	return v
}

type fakeEmbedder struct {
	mu    sync.Mutex
	calls int
}

// fakeRawVector is the pooled (unnormalised) vector of a text: its unit
// vector scaled by a length that differs between texts.
func fakeRawVector(t string) []float32 {
	v := fakeVector(t)
	for i := range v {
		v[i] *= float32(len(t) + 2)
	}
	return v
}

func (f *fakeEmbedder) EmbedPooled(ctx context.Context, _ models.Input, texts []string) ([][]float32, models.Usage, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	out := make([][]float32, len(texts))
	tokens := 0
	for i, t := range texts {
		out[i] = fakeRawVector(t)
		tokens += len(strings.Fields(t)) + 2
	}
	return out, models.Usage{Tokens: tokens, Pairs: len(texts), Batches: 1}, nil
}

func (f *fakeEmbedder) Dim() int { return fakeDim }

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
		s := fakeScore(models.Pair{Query: req.Query, Doc: d.Text})
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

// scorers returns Services.Scorers serving sc as DefaultConfig's one
// reranker.
func scorers(sc PairScorer) map[string]PairScorer {
	return map[string]PairScorer{DefaultConfig().RerankModel: sc}
}
