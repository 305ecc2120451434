package ort

import (
	"context"
	"errors"
	"fmt"
	"github.com/hybrank/hybrank/models"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// fakeEncoder tokenizes on spaces; each word is one token whose id is
// 1000 + its length, so tests can reason about ids.
type fakeEncoder struct{}

const fakeCLS, fakeSEP, fakePAD = 101, 102, 0

func (fakeEncoder) words(s string) []int32 {
	var ids []int32
	for _, w := range strings.Fields(s) {
		ids = append(ids, int32(1000+utf8.RuneCountInString(w)))
	}
	return ids
}

func (f fakeEncoder) pair(q, d string, maxLen int) (seq, error) {
	qi, di := f.words(q), f.words(d)
	budget := maxLen - 3
	if len(qi)+len(di) > budget {
		di = di[:budget-len(qi)]
	}
	s := seq{}
	s.ids = append(append(append(append([]int32{fakeCLS}, qi...), fakeSEP), di...), fakeSEP)
	s.types = make([]int32, len(s.ids))
	for i := len(qi) + 2; i < len(s.ids); i++ {
		s.types[i] = 1
	}
	return s, nil
}

func (f fakeEncoder) single(t string, maxLen int) (seq, error) {
	ti := f.words(t)
	if len(ti) > maxLen-2 {
		ti = ti[:maxLen-2]
	}
	ids := append(append([]int32{fakeCLS}, ti...), fakeSEP)
	return seq{ids: ids, types: make([]int32, len(ids))}, nil
}

func (f fakeEncoder) countTokens(t string) int { return len(f.words(t)) }

func (fakeEncoder) cutQuery(q string, n int) string {
	w := strings.Fields(q)
	return strings.Join(w[:min(n, len(w))], " ")
}
func (fakeEncoder) padID() int64 { return fakePAD }

// offsets are the byte spans of the space-separated words.
func (fakeEncoder) offsets(s string) ([]models.Span, error) {
	var out []models.Span
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' {
			if start >= 0 {
				out = append(out, models.Span{Start: start, End: i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out, nil
}

// fakeRunner scores a row as the masked sum of (id × (type+1)) — a value
// that does not depend on padding or batch mates — and, for embedders,
// emits hidden states id+k on real tokens and 1e6 on padding.
type fakeRunner struct {
	dim      int // 0: cross-encoder logits [n,1]
	pooled   bool
	calls    atomic.Int64
	maxBatch atomic.Int64 // largest n×seqLen seen
	active   atomic.Int64
	peak     atomic.Int64 // most concurrent runs
	fail     error
	closed   atomic.Int64
}

func (r *fakeRunner) run(ctx context.Context, b *batchTensors) ([]float32, []int64, error) {
	r.calls.Add(1)
	a := r.active.Add(1)
	defer r.active.Add(-1)
	for {
		p := r.peak.Load()
		if a <= p || r.peak.CompareAndSwap(p, a) {
			break
		}
	}
	for {
		m := r.maxBatch.Load()
		sz := int64(b.n * b.seqLen)
		if sz <= m || r.maxBatch.CompareAndSwap(m, sz) {
			break
		}
	}
	if r.fail != nil {
		return nil, nil, r.fail
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if r.dim == 0 {
		out := make([]float32, b.n)
		for i := range b.n {
			var s float64
			for j := range b.seqLen {
				k := i*b.seqLen + j
				s += float64(b.mask[k] * b.ids[k] * (b.types[k] + 1))
			}
			out[i] = float32(s / 1e4)
		}
		return out, []int64{int64(b.n), 1}, nil
	}
	if r.pooled {
		out := make([]float32, b.n*r.dim)
		for i := range b.n {
			for k := range r.dim {
				out[i*r.dim+k] = float32(b.ids[i*b.seqLen+1] + int64(k))
			}
		}
		return out, []int64{int64(b.n), int64(r.dim)}, nil
	}
	out := make([]float32, b.n*b.seqLen*r.dim)
	for t := range b.n * b.seqLen {
		for k := range r.dim {
			v := float32(1e6)
			if b.mask[t] == 1 {
				v = float32(b.ids[t] + int64(k))
			}
			out[t*r.dim+k] = v
		}
	}
	return out, []int64{int64(b.n), int64(b.seqLen), int64(r.dim)}, nil
}

func (r *fakeRunner) provider() string { return "fake" }
func (r *fakeRunner) close() error     { r.closed.Add(1); return nil }

func fakeLoader(r *fakeRunner, hidden, maxLen int) loaderFunc {
	return func(cfg models.Config, kind models.Kind) (*loaded, error) {
		md := models.ModelDir{Config: models.HFConfig{HiddenSize: hidden, MaxPositionEmbeddings: 512}}
		return &loaded{
			dir:       md,
			enc:       fakeEncoder{},
			run:       r,
			maxLen:    maxLen,
			output:    "fake",
			pooled:    r.pooled,
			embedding: md.Embedding(cfg),
		}, nil
	}
}

func newFakeCE(t *testing.T, cfg models.Config, r *fakeRunner, maxLen int) *CrossEncoder {
	t.Helper()
	return newCE(t, cfg, fakeLoader(r, 8, maxLen))
}

// newCE returns a cross-encoder on loader, closed when the test ends.
func newCE(t *testing.T, cfg models.Config, loader loaderFunc) *CrossEncoder {
	t.Helper()
	c, err := newCore(cfg, models.KindCrossEncoder, loader)
	if err != nil {
		t.Fatal(err)
	}
	ce := &CrossEncoder{c: c}
	t.Cleanup(func() { ce.Close() })
	return ce
}

func testCfg() models.Config {
	c := models.DefaultConfig()
	c.Dir = "unused"
	c.MaxLength = 64
	c.MaxBatchTokens = 64
	return c
}

// reference scores one document alone, the way fakeRunner would.
func reference(q, d string, maxLen int, sigmoidOn bool) float32 {
	s, _ := fakeEncoder{}.pair(fakeEncoder{}.cutQuery(q, (maxLen-3)/2), d, maxLen)
	var sum float64
	for i := range s.ids {
		sum += float64(s.ids[i] * (s.types[i] + 1))
	}
	v := float32(sum / 1e4)
	if sigmoidOn {
		v = float32(models.Sigmoid(v))
	}
	return v
}

func TestPlanBatches(t *testing.T) {
	tests := []struct {
		name      string
		lens      []int
		maxTokens int
		want      [][]int
	}{
		{"empty", nil, 10, nil},
		{"one", []int{5}, 10, [][]int{{0}}},
		{"sorted by length", []int{5, 1, 3}, 100, [][]int{{1, 2, 0}}},
		{"split on padded tokens", []int{4, 4, 4, 4, 4}, 8, [][]int{{0, 1}, {2, 3}, {4}}},
		{"longest decides", []int{1, 1, 1, 6}, 8, [][]int{{0, 1, 2}, {3}}},
		{"oversized alone", []int{20, 2}, 8, [][]int{{1}, {0}}},
		{"stable ties", []int{3, 2, 3, 2}, 6, [][]int{{1, 3}, {0, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planBatches(tt.lens, tt.maxTokens)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if !slices.Equal(got[i], tt.want[i]) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestPlanBatchesInvariants(t *testing.T) {
	lens := make([]int, 1000)
	for i := range lens {
		lens[i] = 3 + (i*7919)%200
	}
	for _, budget := range []int{256, 1024, 16384} {
		seen := make([]bool, len(lens))
		for _, b := range planBatches(lens, budget) {
			longest := 0
			for _, i := range b {
				if seen[i] {
					t.Fatalf("index %d twice", i)
				}
				seen[i] = true
				longest = max(longest, lens[i])
			}
			if len(b) > 1 && len(b)*longest > budget {
				t.Fatalf("budget %d: batch of %d × %d", budget, len(b), longest)
			}
		}
		for i, s := range seen {
			if !s {
				t.Fatalf("index %d missing", i)
			}
		}
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		maxChars int
		want     string
	}{
		{"short", "hello", 10, "hello"},
		{"cut ascii", "hello world", 5, "hello"},
		{"cut on rune boundary", "héllo", 2, "hé"},
		{"invalid utf8", "a\xffb", 10, "a\uFFFDb"},
		{"invalid run is one rune", "\xff\xfe\xfdab", 2, "\uFFFDa"},
		{"empty", "", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cleanText(tt.in, tt.maxChars)
			if got != tt.want {
				t.Fatalf("cleanText(%q, %d) = %q, want %q", tt.in, tt.maxChars, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out: %q", got)
			}
		})
	}
}

func TestPadMasksAndPads(t *testing.T) {
	seqs := []seq{{ids: []int32{1, 2, 3}, types: []int32{0, 0, 1}}, {ids: []int32{4}, types: []int32{0}}}
	b := pad(seqs, []int{1, 0}, 7)
	if b.n != 2 || b.seqLen != 3 || b.realTokens != 4 {
		t.Fatalf("n=%d seqLen=%d real=%d", b.n, b.seqLen, b.realTokens)
	}
	if want := []int64{4, 7, 7, 1, 2, 3}; !slices.Equal(b.ids, want) {
		t.Fatalf("ids %v, want %v", b.ids, want)
	}
	if want := []int64{1, 0, 0, 1, 1, 1}; !slices.Equal(b.mask, want) {
		t.Fatalf("mask %v, want %v", b.mask, want)
	}
	if want := []int64{0, 0, 0, 0, 0, 1}; !slices.Equal(b.types, want) {
		t.Fatalf("types %v, want %v", b.types, want)
	}
}

// scoreChecked scores n documents of 1 to 17 words with a fake
// cross-encoder, checks every score against reference (input order kept,
// no padding leak) and returns the usage.
func scoreChecked(t *testing.T, ce *CrossEncoder, n int) models.Usage {
	t.Helper()
	cfg := ce.Config()
	query := "what is a cross encoder"
	var docs []string
	for i := range n {
		docs = append(docs, strings.Repeat("word ", i%17)+fmt.Sprint(i))
	}
	got, usage, err := ce.ScoreWithUsage(context.Background(), query, docs)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if want := reference(query, d, cfg.MaxLength, cfg.Sigmoid); math.Abs(float64(got[i]-want)) > 1e-6 {
			t.Fatalf("doc %d: score %v, want %v (order or padding leak)", i, got[i], want)
		}
	}
	return usage
}

func TestScoreOrderAndBatching(t *testing.T) {
	for _, pool := range []int{1, 3} {
		for _, sig := range []bool{false, true} {
			t.Run(fmt.Sprintf("pool=%d/sigmoid=%v", pool, sig), func(t *testing.T) {
				cfg := testCfg()
				cfg.PoolSize = pool
				cfg.Sigmoid = sig
				r := &fakeRunner{}
				ce := newFakeCE(t, cfg, r, cfg.MaxLength)
				usage := scoreChecked(t, ce, 40)
				if usage.Pairs != 40 || usage.Batches < 2 || int(r.calls.Load()) != usage.Batches {
					t.Fatalf("usage %+v, runner calls %d", usage, r.calls.Load())
				}
				if usage.Tokens > usage.PaddedTokens || usage.PaddedTokens > usage.Batches*cfg.MaxBatchTokens {
					t.Fatalf("usage %+v", usage)
				}
				if r.maxBatch.Load() > int64(cfg.MaxBatchTokens) {
					t.Fatalf("batch of %d padded tokens > cap %d", r.maxBatch.Load(), cfg.MaxBatchTokens)
				}
				if pool == 1 && r.peak.Load() != 1 {
					t.Fatalf("pool 1 ran %d batches at once", r.peak.Load())
				}
			})
		}
	}
}

func TestScoreBadInput(t *testing.T) {
	cfg := testCfg()
	cfg.MaxDocs = 5
	cfg.MaxChars = 50
	ce := newFakeCE(t, cfg, &fakeRunner{}, cfg.MaxLength)
	ctx := context.Background()
	tests := []struct {
		name    string
		query   string
		docs    []string
		wantErr error
		wantN   int
	}{
		{"empty query", "", []string{"a"}, models.ErrEmptyQuery, 0},
		{"space query", " \t\n", []string{"a"}, models.ErrEmptyQuery, 0},
		{"no docs", "q", nil, nil, 0},
		{"empty doc", "q", []string{""}, nil, 1},
		{"too many docs", "q", make([]string, 6), models.ErrTooManyDocs, 0},
		{"at cap", "q", make([]string, 5), nil, 5},
		{"invalid utf8", "q\xff", []string{"\xff\xfe", "ok \xc3"}, nil, 2},
		{"huge doc", "q", []string{strings.Repeat("long words here ", 1<<16)}, nil, 1},
		{"huge query", strings.Repeat("query ", 1<<14), []string{"doc"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ce.Score(ctx, tt.query, tt.docs)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err == nil && (got == nil || len(got) != tt.wantN) {
				t.Fatalf("got %v, want %d scores", got, tt.wantN)
			}
		})
	}
	if _, _, err := ce.ScorePairs(ctx, []models.Pair{{Query: "q", Doc: "d"}, {Query: "", Doc: "d"}}); !errors.Is(err, models.ErrEmptyQuery) || !strings.Contains(err.Error(), "pair 1") {
		t.Fatalf("ScorePairs empty query: %v", err)
	}
}

func TestScorePairsMixedQueries(t *testing.T) {
	cfg := testCfg()
	cfg.MaxDocs = 2 // does not apply to ScorePairs
	ce := newFakeCE(t, cfg, &fakeRunner{}, cfg.MaxLength)
	pairs := []models.Pair{{Query: "a b c", Doc: "d"}, {Query: "x", Doc: "d e f g"}, {Query: "a b c", Doc: "h"}, {Query: "yy zz", Doc: ""}}
	got, usage, err := ce.ScorePairs(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		if want := reference(p.Query, p.Doc, cfg.MaxLength, false); got[i] != want {
			t.Fatalf("pair %d: %v, want %v", i, got[i], want)
		}
	}
	if usage.Pairs != 4 {
		t.Fatalf("usage %+v", usage)
	}
}

func TestRunErrorAndCancel(t *testing.T) {
	cfg := testCfg()
	cfg.PoolSize = 2
	boom := errors.New("boom")
	ce := newFakeCE(t, cfg, &fakeRunner{fail: boom}, cfg.MaxLength)
	docs := []string{"a", "b c d e f g h i j k l m n o p q r s t u v w x y z", "c"}
	if _, err := ce.Score(context.Background(), "q", docs); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	ce2 := newFakeCE(t, cfg, &fakeRunner{}, cfg.MaxLength)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ce2.Score(ctx, "q", docs); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
}

func TestLazyLoadRetryAndClose(t *testing.T) {
	cfg := testCfg()
	loads := 0
	r := &fakeRunner{}
	ok := fakeLoader(r, 8, 64)
	failing := true
	c, err := newCore(cfg, models.KindCrossEncoder, func(cfg models.Config, k models.Kind) (*loaded, error) {
		loads++
		if failing {
			return nil, fmt.Errorf("%w: not yet", models.ErrModelDir)
		}
		return ok(cfg, k)
	})
	if err != nil {
		t.Fatal(err)
	}
	ce := &CrossEncoder{c: c}
	if loads != 0 {
		t.Fatal("loaded eagerly")
	}
	if _, err := ce.Score(context.Background(), "q", []string{"d"}); !errors.Is(err, models.ErrModelDir) {
		t.Fatalf("err %v", err)
	}
	failing = false
	if _, err := ce.Score(context.Background(), "q", []string{"d"}); err != nil {
		t.Fatalf("retry after failed load: %v", err)
	}
	if _, err := ce.Score(context.Background(), "q", []string{"d"}); err != nil {
		t.Fatal(err)
	}
	if loads != 2 {
		t.Fatalf("loads = %d, want 2 (one failed, one cached)", loads)
	}
	if ce.Provider() != "fake" {
		t.Fatalf("provider %q", ce.Provider())
	}
	for range 2 {
		if err := ce.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if r.closed.Load() != 1 {
		t.Fatalf("runner closed %d times", r.closed.Load())
	}
	if _, err := ce.Score(context.Background(), "q", []string{"d"}); !errors.Is(err, models.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestConcurrentCallers(t *testing.T) {
	cfg := testCfg()
	cfg.PoolSize = 2
	ce := newFakeCE(t, cfg, &fakeRunner{}, cfg.MaxLength)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			q := fmt.Sprintf("query %d", g)
			docs := []string{"alpha", "beta gamma", strings.Repeat("x ", g)}
			for range 20 {
				got, err := ce.Score(context.Background(), q, docs)
				if err != nil {
					errs <- err
					return
				}
				for i, d := range docs {
					if want := reference(q, d, cfg.MaxLength, false); got[i] != want {
						errs <- fmt.Errorf("goroutine %d doc %d: %v want %v", g, i, got[i], want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestEmbedPooling(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		for _, norm := range []bool{false, true} {
			t.Run(fmt.Sprintf("pooled=%v/normalize=%v", pooled, norm), func(t *testing.T) {
				cfg := models.DefaultEmbedderConfig()
				cfg.Dir = "unused"
				cfg.MaxLength = 32
				cfg.MaxBatchTokens = 32
				cfg.Normalize = norm
				r := &fakeRunner{dim: 4, pooled: pooled}
				c, err := newCore(cfg, models.KindEmbedder, fakeLoader(r, 4, 32))
				if err != nil {
					t.Fatal(err)
				}
				be := &BiEncoder{c: c}
				defer be.Close()
				texts := []string{"a bb ccc", "", "dddd", strings.Repeat("e ", 40)}
				vecs, usage, err := be.EmbedWithUsage(context.Background(), models.InputRaw, texts)
				if err != nil {
					t.Fatal(err)
				}
				if be.Dim() != 4 || len(vecs) != len(texts) || usage.Pairs != 4 {
					t.Fatalf("dim %d, %d vectors, usage %+v", be.Dim(), len(vecs), usage)
				}
				for i, text := range texts {
					s, _ := fakeEncoder{}.single(text, 32)
					want := make([]float32, 4)
					for k := range want {
						if pooled {
							want[k] = float32(int64(s.ids[1]) + int64(k))
							continue
						}
						var sum float64
						for _, id := range s.ids {
							sum += float64(int64(id) + int64(k))
						}
						want[k] = float32(sum / float64(len(s.ids)))
					}
					if norm {
						var n float64
						for _, v := range want {
							n += float64(v * v)
						}
						for k := range want {
							want[k] /= float32(math.Sqrt(n))
						}
					}
					for k := range want {
						if math.Abs(float64(vecs[i][k]-want[k])) > 1e-3*math.Max(1, math.Abs(float64(want[k]))) {
							t.Fatalf("text %d: %v, want %v", i, vecs[i], want)
						}
					}
				}
				if _, err := be.Embed(context.Background(), models.InputRaw, make([]string, cfg.MaxDocs+1)); !errors.Is(err, models.ErrTooManyDocs) {
					t.Fatalf("too many: %v", err)
				}
				if v, err := be.Embed(context.Background(), models.InputRaw, nil); err != nil || v == nil || len(v) != 0 {
					t.Fatalf("no texts: %v %v", v, err)
				}
			})
		}
	}
}

func TestProfileKindMismatch(t *testing.T) {
	cfg := models.DefaultEmbedderConfig()
	if _, err := NewCrossEncoder(cfg); !errors.Is(err, models.ErrInvalidConfig) {
		t.Fatalf("embed profile as cross-encoder: %v", err)
	}
	if _, err := NewBiEncoder(models.DefaultConfig()); !errors.Is(err, models.ErrInvalidConfig) {
		t.Fatalf("balanced profile as embedder: %v", err)
	}
}
