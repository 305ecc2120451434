package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

var corpus = []engine.Document{
	{ID: "go1", Tenant: "acme", Title: "Go channels", Text: "Channels let goroutines communicate and synchronise.", Metadata: map[string]string{"lang": "en"}, Source: "go.md", Span: engine.Span{Start: 1, End: 2}, Links: []string{"go2"}},
	{ID: "go2", Tenant: "acme", Title: "Go select", Text: "The select statement waits on several channel operations.", Metadata: map[string]string{"lang": "en"}, Source: "go.md", Span: engine.Span{Start: 2, End: 3}},
	{ID: "rs1", Tenant: "acme", Title: "Rust ownership", Text: "Ownership and borrowing make Rust memory safe.", Metadata: map[string]string{"lang": "en"}},
	{ID: "de1", Tenant: "acme", Title: "Kanäle", Text: "Kanäle verbinden Goroutinen.", Metadata: map[string]string{"lang": "de"}},
	{ID: "ev1", Tenant: "evil", Title: "Go channels leak", Text: "Channels goroutines channels select statement.", Links: []string{"go1"}},
}

func open(t testing.TB, dir string, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, err := engine.Open(dir, engine.DefaultConfig(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func commit(t testing.TB, e *engine.Engine, docs ...engine.Document) {
	t.Helper()
	b := e.NewBatch()
	b.Add(docs...)
	if err := e.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func hitIDs(r *engine.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Document.ID)
	}
	return out
}

func TestSearchBM25Only(t *testing.T) {
	e := open(t, "")
	commit(t, e, corpus...)
	res, err := e.Search(context.Background(), engine.Request{Query: "channels goroutines", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.HasFallback(engine.FallbackNoEmbedder) {
		t.Errorf("fallbacks %v, want no_embedder", res.Fallbacks)
	}
	if got := hitIDs(res); len(got) == 0 || got[0] != "go1" || slices.Contains(got, "ev1") {
		t.Fatalf("hits %v", got)
	}
	h := res.Hits[0]
	if h.Provenance.BM25Rank != 1 || h.Provenance.BM25Score <= 0 || h.Provenance.DenseRank != 0 || h.Provenance.FinalRank != 1 || h.Provenance.Origin.Kind != engine.OriginRetrieved {
		t.Errorf("provenance %+v", h.Provenance)
	}
	if res.Timings.Total <= 0 || res.Timings.Total < res.Timings.BM25 {
		t.Errorf("timings %+v", res.Timings)
	}
}

func TestSearchHybrid(t *testing.T) {
	emb := enginetest.NewHashEmbedder(32)
	e := open(t, "", engine.WithEmbedder(emb))
	docs := make([]engine.Document, 0, 70)
	for i := 0; i < 70; i++ {
		docs = append(docs, engine.Document{ID: fmt.Sprintf("d%02d", i), Tenant: "t", Text: fmt.Sprintf("common word%d text%d", i%7, i)})
	}
	commit(t, e, docs...)
	// 70 docs in batches of 32: 3 embed calls.
	if got := emb.Calls.Load(); got != 3 {
		t.Errorf("embed calls %d, want 3 batches", got)
	}
	for _, f := range []engine.Fusion{engine.FusionRRF, engine.FusionWeighted, engine.FusionRelative} {
		res, err := e.Search(context.Background(), engine.Request{Query: "word3 text10", Tenant: "t", Fusion: f, TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Fallbacks) != 0 {
			t.Errorf("%s: fallbacks %v", f, res.Fallbacks)
		}
		if len(res.Hits) != 5 || res.Hits[0].Provenance.DenseRank == 0 || res.Hits[0].Provenance.BM25Rank == 0 {
			t.Errorf("%s: hits %v prov %+v", f, hitIDs(res), res.Hits[0].Provenance)
		}
	}
}

func TestCommitSemantics(t *testing.T) {
	ctx := context.Background()
	e := open(t, "")
	commit(t, e, corpus...)
	b := e.NewBatch()
	b.Add(engine.Document{ID: "rs1", Tenant: "acme", Text: "Rust lifetimes"})
	b.DeleteIn("acme", "go2")
	b.Add(engine.Document{ID: "tmp", Tenant: "acme", Text: "temporary"})
	b.DeleteIn("acme", "tmp") // last operation wins
	if err := e.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.GetIn("acme", "go2"); ok {
		t.Error("go2 not deleted")
	}
	if _, ok := e.GetIn("acme", "tmp"); ok {
		t.Error("tmp added despite later delete")
	}
	if d, _ := e.GetIn("acme", "rs1"); d.Text != "Rust lifetimes" {
		t.Errorf("rs1 not replaced: %q", d.Text)
	}
	res, _ := e.Search(ctx, engine.Request{Query: "ownership borrowing", Tenant: "acme"})
	if len(res.Hits) != 0 {
		t.Errorf("old rs1 text still indexed: %v", hitIDs(res))
	}
	// An invalid document rejects the whole batch.
	b = e.NewBatch()
	b.Add(engine.Document{ID: "ok", Tenant: "acme", Text: "fine"}, engine.Document{ID: "", Text: "no id"})
	if err := e.Commit(ctx, b); !errors.Is(err, engine.ErrInvalidDocument) {
		t.Fatalf("err %v", err)
	}
	if _, ok := e.GetIn("acme", "ok"); ok {
		t.Error("partial batch applied")
	}
	// A failing embedder rejects the whole batch too.
	emb := enginetest.NewHashEmbedder(8)
	e2 := open(t, "", engine.WithEmbedder(emb))
	emb.Err = errors.New("down")
	b = e2.NewBatch()
	b.Add(corpus...)
	if err := e2.Commit(ctx, b); !errors.Is(err, engine.ErrEmbed) || e2.Len() != 0 {
		t.Fatalf("err %v len %d", err, e2.Len())
	}
}

func TestFallbacks(t *testing.T) {
	ctx := context.Background()
	emb := enginetest.NewHashEmbedder(16)
	e := open(t, "", engine.WithEmbedder(emb),
		engine.WithReranker("fast", &enginetest.OverlapReranker{}),
		engine.WithReranker("broken", &enginetest.OverlapReranker{Err: errors.New("session lost")}))
	commit(t, e, corpus...)
	base, err := e.Search(ctx, engine.Request{Query: "channels select", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		rerank  string
		code    engine.FallbackCode
		reorder bool
	}{
		{"unknown profile", "accurate", engine.FallbackRerankUnknown, false},
		{"erroring reranker", "broken", engine.FallbackRerankError, false},
		{"working reranker", "fast", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Search(ctx, engine.Request{Query: "channels select", Tenant: "acme", Rerank: tt.rerank})
			if err != nil {
				t.Fatal(err)
			}
			if tt.code != "" && !res.HasFallback(tt.code) {
				t.Errorf("fallbacks %v, want %s", res.Fallbacks, tt.code)
			}
			if !tt.reorder && !slices.Equal(hitIDs(res), hitIDs(base)) {
				t.Errorf("order %v, want fused order %v", hitIDs(res), hitIDs(base))
			}
			if tt.reorder && (res.Reranked != res.Candidates || !res.Hits[0].Provenance.Reranked) {
				t.Errorf("reranked %d of %d", res.Reranked, res.Candidates)
			}
		})
	}
	emb.Err = errors.New("gpu on fire")
	res, err := e.Search(ctx, engine.Request{Query: "channels", Tenant: "acme"})
	if err != nil || !res.HasFallback(engine.FallbackEmbedError) || len(res.Hits) == 0 {
		t.Errorf("embed error: %v %v", err, res)
	}
}

func TestNoVectorsFallback(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir)
	commit(t, e, corpus...)
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e2 := open(t, dir, engine.WithEmbedder(enginetest.NewHashEmbedder(8)))
	res, err := e2.Search(context.Background(), engine.Request{Query: "channels", Tenant: "acme"})
	if err != nil || !res.HasFallback(engine.FallbackNoVectors) || len(res.Hits) == 0 {
		t.Fatalf("err %v res %+v", err, res)
	}
}

func TestBudgetDegradation(t *testing.T) {
	slow := &enginetest.OverlapReranker{PerDoc: 2 * time.Millisecond}
	e := open(t, "", engine.WithReranker("accurate", slow))
	var docs []engine.Document
	for i := 0; i < 120; i++ {
		docs = append(docs, engine.Document{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("alpha beta filler%d", i%9)})
	}
	commit(t, e, docs...)
	req := engine.Request{Query: "alpha filler3", Rerank: "accurate", Budget: 80 * time.Millisecond, TopK: 120, Candidates: 120}
	// How long the search took is not asserted (a loaded machine decides
	// that); TestRerankBudgeted checks that no batch runs past the deadline.
	res, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Degraded || res.Reranked >= res.Candidates || res.Candidates != 120 {
		t.Fatalf("degraded %v reranked %d of %d", res.Degraded, res.Reranked, res.Candidates)
	}
	// Reranked hits first, then the rest in fused order.
	n := 0
	for i, h := range res.Hits {
		if h.Provenance.Reranked {
			if i != n {
				t.Fatalf("reranked hit at %d after unreranked ones", i)
			}
			n++
		}
	}
	if n != res.Reranked {
		t.Errorf("%d reranked hits, result says %d", n, res.Reranked)
	}
	rest := res.Hits[n:]
	if !slices.IsSortedFunc(rest, func(a, b engine.Hit) int { return a.Provenance.FusedRank - b.Provenance.FusedRank }) {
		t.Error("unreranked hits not in fused order")
	}
	// The reranked ones are exactly the best fused ranks 1..n.
	for _, h := range res.Hits[:n] {
		if h.Provenance.FusedRank > n {
			t.Errorf("reranked %s has fused rank %d > %d", h.Document.ID, h.Provenance.FusedRank, n)
		}
	}
	// Without a budget everything is reranked.
	req.Budget = 0
	res, err = e.Search(context.Background(), req)
	if err != nil || res.Degraded || res.Reranked != 120 {
		t.Fatalf("no budget: err %v degraded %v reranked %d", err, res.Degraded, res.Reranked)
	}
}

func TestCancelledContext(t *testing.T) {
	e := open(t, "", engine.WithReranker("slow", &enginetest.OverlapReranker{PerDoc: 50 * time.Millisecond}))
	commit(t, e, corpus...)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := e.Search(ctx, engine.Request{Query: "channels", Tenant: "acme", Rerank: "slow"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want Canceled", err)
	}
}

func TestPackingThroughSearch(t *testing.T) {
	e := open(t, "", engine.WithTokenCounter(enginetest.WordCounter{}))
	commit(t, e,
		engine.Document{ID: "a", Source: "f.txt", Span: engine.Span{Start: 1, End: 3}, Text: "needle one\nline two"},
		engine.Document{ID: "b", Source: "f.txt", Span: engine.Span{Start: 2, End: 4}, Text: "line two\nneedle three"},
		engine.Document{ID: "c", Source: "g.txt", Text: "needle needle " + strings.Repeat("long ", 50)},
	)
	res, err := e.Search(context.Background(), engine.Request{Query: "needle", TokenBudget: 20, Reserve: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Passages) != 1 || res.Passages[0].Text != "needle one\nline two\nneedle three" || res.Passages[0].Span != (engine.Span{Start: 1, End: 4}) || res.Tokens > 15 {
		t.Fatalf("passages %+v tokens %d", res.Passages, res.Tokens)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		req  engine.Request
		ok   bool
	}{
		{"ok", engine.Request{Query: "x"}, true},
		{"empty query", engine.Request{Query: "  "}, false},
		{"negative topk", engine.Request{Query: "x", TopK: -1}, false},
		{"unknown fusion", engine.Request{Query: "x", Fusion: "max"}, false},
		{"alpha above 1", engine.Request{Query: "x", Alpha: engine.Float(1.5)}, false},
		{"alpha 0 ok", engine.Request{Query: "x", Alpha: engine.Float(0)}, true},
		{"mmr above 1", engine.Request{Query: "x", MMRLambda: 2}, false},
		{"hops", engine.Request{Query: "x", Expand: engine.Expansion{Hops: 99}}, false},
		{"reserve eats budget", engine.Request{Query: "x", TokenBudget: 10, Reserve: 10}, false},
		{"negative budget", engine.Request{Query: "x", Budget: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, engine.ErrInvalidRequest)) {
				t.Fatalf("err %v, ok want %v", err, tt.ok)
			}
		})
	}
	docs := []struct {
		name string
		doc  engine.Document
	}{
		{"empty id", engine.Document{}},
		{"bad span", engine.Document{ID: "x", Span: engine.Span{Start: 5, End: 2}}},
		{"bad utf8", engine.Document{ID: "x", Text: "\xff"}},
		{"empty link", engine.Document{ID: "x", Links: []string{""}}},
		{"empty meta key", engine.Document{ID: "x", Metadata: map[string]string{"": "v"}}},
	}
	for _, tt := range docs {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.doc.Validate(); !errors.Is(err, engine.ErrInvalidDocument) {
				t.Fatalf("err %v", err)
			}
		})
	}
	cfg := engine.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Rerank.MinBatch = 0
	if _, err := engine.Open("", cfg); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("err %v", err)
	}
}

func TestClose(t *testing.T) {
	e := open(t, "")
	commit(t, e, corpus...)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := e.Search(context.Background(), engine.Request{Query: "x"}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("search after close: %v", err)
	}
	b := e.NewBatch()
	b.Add(corpus[0])
	if err := e.Commit(context.Background(), b); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("commit after close: %v", err)
	}
	if err := e.Snapshot(); !errors.Is(err, engine.ErrNoDir) {
		t.Errorf("snapshot of in-memory engine: %v", err)
	}
}

// TestConcurrentCommitSearch checks batch atomicity under -race: every
// batch adds two documents sharing a unique term, so a reader must see zero
// or two of them, never one.
func TestConcurrentCommitSearch(t *testing.T) {
	e := open(t, "", engine.WithEmbedder(enginetest.NewHashEmbedder(16)), engine.WithReranker("fast", &enginetest.OverlapReranker{}))
	const batches = 40
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < batches; i++ {
			b := e.NewBatch()
			tag := fmt.Sprintf("tag%d", i)
			b.Add(engine.Document{ID: tag + "a", Text: tag + " first"}, engine.Document{ID: tag + "b", Text: tag + " second"})
			if i > 0 && i%5 == 0 {
				b.DeleteIn("", fmt.Sprintf("tag%da", i-5), fmt.Sprintf("tag%db", i-5))
			}
			if err := e.Commit(context.Background(), b); err != nil {
				errc <- err
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for i := 0; i < 150; i++ {
				tag := fmt.Sprintf("tag%d", rng.IntN(batches))
				res, err := e.Search(context.Background(), engine.Request{Query: tag, Rerank: "fast", Fusion: engine.FusionWeighted, Alpha: engine.Float(0)})
				if err != nil {
					errc <- err
					return
				}
				n := 0
				for _, h := range res.Hits {
					if strings.HasPrefix(h.Document.ID, tag) && len(h.Document.ID) == len(tag)+1 {
						n++
					}
				}
				if n == 1 {
					errc <- fmt.Errorf("saw half of batch %s: %v", tag, hitIDs(res))
					return
				}
			}
		}(r)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestSnapshotReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	emb := enginetest.NewHashEmbedder(24)
	rr := &enginetest.OverlapReranker{}
	e := open(t, dir, engine.WithEmbedder(emb), engine.WithReranker("fast", rr))
	rng := rand.New(rand.NewPCG(7, 7))
	docs := randomCorpus(rng, 300, 5)
	commit(t, e, docs...)
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	// A second snapshot keeps the first generation as its fallback.
	commit(t, e, engine.Document{ID: "late", Tenant: "t0", Text: "w1 w2 late"})
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var gens []string
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), "snap-") {
			gens = append(gens, ent.Name())
		}
	}
	if !slices.Equal(gens, []string{"snap-000001", "snap-000002"}) {
		t.Errorf("generations on disk %v", gens)
	}
	reqs := randomRequests(rand.New(rand.NewPCG(1, 2)), 200, 5)
	before := make([]*engine.Result, len(reqs))
	for i, r := range reqs {
		var err error
		if before[i], err = e.Search(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := open(t, dir, engine.WithEmbedder(emb), engine.WithReranker("fast", rr))
	if e2.Len() != len(docs)+1 || e2.Config().Dense.Dim != 24 {
		t.Fatalf("reopened len %d dim %d", e2.Len(), e2.Config().Dense.Dim)
	}
	for i, r := range reqs {
		got, err := e2.Search(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != len(before[i].Hits) {
			t.Fatalf("req %d: %d hits after reopen, %d before", i, len(got.Hits), len(before[i].Hits))
		}
		for j := range got.Hits {
			a, b := got.Hits[j], before[i].Hits[j]
			if a.Document.ID != b.Document.ID || a.Score != b.Score || a.Provenance != b.Provenance {
				t.Fatalf("req %d hit %d: %+v vs %+v", i, j, a.Provenance, b.Provenance)
			}
		}
	}
	e2.Close()
	// Leftovers of a crashed snapshot (a newer generation directory with no
	// manifest naming it, a temp manifest) are ignored by Open.
	os.MkdirAll(filepath.Join(dir, "snap-000003", "lexical"), 0o755)
	os.WriteFile(filepath.Join(dir, "snap-000003", "docs.gob"), []byte("partial"), 0o644)
	os.WriteFile(filepath.Join(dir, "MANIFEST.json.tmp"), []byte("{trunc"), 0o644)
	e3 := open(t, dir, engine.WithEmbedder(emb))
	if e3.Len() != len(docs)+1 {
		t.Fatalf("after crash leftovers: len %d", e3.Len())
	}
	e3.Close()
	// A damaged document file is detected: Open falls back to the
	// previous generation and the log, and says so.
	damage := func(gen string) {
		f := filepath.Join(dir, gen, "docs.gob")
		raw, _ := os.ReadFile(f)
		raw[len(raw)/2] ^= 0xff
		os.WriteFile(f, raw, 0o644)
	}
	damage("snap-000002")
	e4 := open(t, dir, engine.WithEmbedder(emb))
	if fb := e4.Durability().Recovery.FellBack; e4.Len() != len(docs)+1 || !strings.Contains(fb, "snap-000002") {
		t.Fatalf("after damage to generation 2: len %d, fell back %q", e4.Len(), fb)
	}
	e4.Close()
	// With the generation fallen back to damaged too, Open fails and
	// names the file.
	damage("snap-000001")
	if _, err := engine.Open(dir, engine.DefaultConfig()); !errors.Is(err, engine.ErrCorrupt) || !strings.Contains(err.Error(), "snap-000001") {
		t.Fatalf("open damaged: %v", err)
	}
}

func TestScoreThreshold(t *testing.T) {
	e := open(t, "")
	commit(t, e, corpus...)
	all, err := e.Search(context.Background(), engine.Request{Query: "channels select goroutines", Tenant: "acme", Fusion: engine.FusionRelative})
	if err != nil || len(all.Hits) < 2 {
		t.Fatalf("%v %v", err, all)
	}
	cut := all.Hits[0].Provenance.FusedScore
	for _, hops := range []int{0, 2} {
		// With expansion, documents reached by links are held to the
		// threshold too, and none it dropped comes back through a link.
		res, err := e.Search(context.Background(), engine.Request{Query: "channels select goroutines", Tenant: "acme", Fusion: engine.FusionRelative,
			ScoreThreshold: cut, Expand: engine.Expansion{Hops: hops, Decay: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if h.Provenance.FusedScore < cut {
				t.Errorf("hops %d: %s fused %v below threshold %v", hops, h.Document.ID, h.Provenance.FusedScore, cut)
			}
			if h.Provenance.Origin.Kind == engine.OriginExpanded {
				for _, a := range all.Hits {
					if a.Document.ID == h.Document.ID && a.Provenance.FusedScore < cut {
						t.Errorf("hops %d: %s, dropped by the threshold, came back by a link", hops, h.Document.ID)
					}
				}
			}
		}
		if len(res.Hits) < 1 || len(res.Hits) >= len(all.Hits) {
			t.Errorf("hops %d: threshold kept %d of %d", hops, len(res.Hits), len(all.Hits))
		}
	}
}

// blockingEmbedder embeds documents, and blocks query embeddings (single
// texts) until their context ends.
type blockingEmbedder struct{ *enginetest.HashEmbedder }

func (b blockingEmbedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := b.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts)}, err
}

func (b blockingEmbedder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	if in == models.InputQuery {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.HashEmbedder.Embed(ctx, in, texts)
}

// TestBudgetShorterThanRetrieval: a budget that runs out during the query
// embedding gives BM25 hits marked Degraded, reranking skipped; ctx's own
// deadline there is an error. A budget already spent before retrieval
// still gets BM25's hits.
func TestBudgetShorterThanRetrieval(t *testing.T) {
	rr := &enginetest.OverlapReranker{}
	e := open(t, "", engine.WithEmbedder(blockingEmbedder{enginetest.NewHashEmbedder(8)}), engine.WithReranker("fast", rr))
	commit(t, e, corpus...)
	req := engine.Request{Query: "channels goroutines", Tenant: "acme", Rerank: "fast", Budget: 5 * time.Millisecond}
	res, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Degraded || !res.HasFallback(engine.FallbackRetrievalBudget) || !res.HasFallback(engine.FallbackRerankBudget) || res.Reranked != 0 {
		t.Fatalf("degraded %v reranked %d fallbacks %+v", res.Degraded, res.Reranked, res.Fallbacks)
	}
	if ids := hitIDs(res); len(ids) == 0 || ids[0] != "go1" {
		t.Fatalf("hits %v", ids)
	}
	for _, h := range res.Hits {
		if h.Provenance.DenseRank != 0 || h.Provenance.BM25Rank == 0 {
			t.Fatalf("hit %s not BM25 only: %+v", h.Document.ID, h.Provenance)
		}
	}
	// The hard limit: ctx's deadline during retrieval is an error.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := e.Search(ctx, engine.Request{Query: "channels", Tenant: "acme"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx deadline during retrieval: %v", err)
	}
	// A budget spent before retrieval starts: BM25 still answers.
	bm := open(t, "", engine.WithReranker("fast", rr))
	commit(t, bm, corpus...)
	res, err = bm.Search(context.Background(), engine.Request{Query: "channels goroutines", Tenant: "acme", Rerank: "fast", Budget: time.Nanosecond})
	if err != nil || len(res.Hits) == 0 || !res.Degraded || res.Reranked != 0 {
		t.Fatalf("1 ns budget: %v %+v", err, res)
	}
}
