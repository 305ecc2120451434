package engine

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/models"
)

func rec(id, tenant string, meta map[string]string, links ...string) *record {
	return &record{doc: Document{ID: id, Tenant: tenant, Metadata: meta, Links: links, Text: id}}
}

func TestMMR(t *testing.T) {
	dup := []string{"alpha", "beta", "gamma"}
	mk := func(id string, terms []string, vec []float32) *candidate {
		return &candidate{id: id, rec: &record{doc: Document{ID: id}, termSet: termSet(terms), vec: vec}}
	}
	tests := []struct {
		name   string
		cands  []*candidate
		rel    []float64
		lambda float64
		k      int
		want   []string
	}{
		{"jaccard diversity", []*candidate{mk("a", dup, nil), mk("b", dup, nil), mk("c", []string{"delta"}, nil)},
			[]float64{1, 0.9, 0.5}, 0.5, 3, []string{"a", "c", "b"}},
		{"lambda 1 keeps order", []*candidate{mk("a", dup, nil), mk("b", dup, nil), mk("c", []string{"delta"}, nil)},
			[]float64{1, 0.9, 0.5}, 1, 3, []string{"a", "b", "c"}},
		{"k truncates", []*candidate{mk("a", dup, nil), mk("b", dup, nil), mk("c", []string{"delta"}, nil)},
			[]float64{1, 0.9, 0.5}, 0.5, 2, []string{"a", "c"}},
		// b is a near-copy of a by cosine (0.995); c is orthogonal.
		{"cosine diversity", []*candidate{mk("a", nil, []float32{1, 0}), mk("b", nil, []float32{0.995, 0.0999}), mk("c", nil, []float32{0, 1})},
			[]float64{1, 0.95, 0.6}, 0.6, 2, []string{"a", "c"}},
		// c points away from a (cosine −1): 0.5·0.45 + 0.5 beats b's
		// 0.5·0.5 − 0 (a floor of 0 under the similarity picked b).
		{"negative cosine", []*candidate{mk("a", nil, []float32{1, 0}), mk("b", nil, []float32{0, 1}), mk("c", nil, []float32{-1, 0})},
			[]float64{1, 0.5, 0.45}, 0.5, 2, []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top, _ := mmr(context.Background(), tt.cands, tt.rel, tt.k, tt.lambda)
			got := ids(top)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v want %v", got, tt.want)
			}
		})
	}
}

func TestSimilarity(t *testing.T) {
	if got := jaccard(termSet([]string{"a", "b", "c", "a"}), termSet([]string{"b", "c", "d"})); got != 0.5 {
		t.Errorf("jaccard = %v, want 0.5", got)
	}
	if got := jaccard(nil, nil); got != 0 {
		t.Errorf("jaccard of empties = %v", got)
	}
}

func TestRelevanceTiers(t *testing.T) {
	cs := []*candidate{
		{id: "a", reranked: true, rerank: 3, fused: 0.1},
		{id: "b", reranked: true, rerank: 1, fused: 0.9},
		{id: "c", fused: 0.5},
		{id: "d", fused: 0.3},
	}
	want := []float64{1, 0.5, 0.5, 0}
	if got := relevance(cs); !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	// A cascade's final order: the second stage's, then what only the
	// first stage scored (by its score, whatever the fused), then the rest.
	cs = []*candidate{
		{id: "a", first: true, firstScore: 5, reranked: true, rerank: 2},
		{id: "b", first: true, firstScore: 9, reranked: true, rerank: 1},
		{id: "c", first: true, firstScore: 4, fused: 0.1},
		{id: "d", first: true, firstScore: 1, fused: 0.9},
		{id: "e", fused: 0.7},
		{id: "f", fused: 0.2},
	}
	got := relevance(cs)
	for i := 1; i < len(got); i++ {
		if got[i] > got[i-1] {
			t.Fatalf("cascade tiers: relevance %v rises at %s", got, cs[i].id)
		}
	}
	const eps = 1e-12
	if got[2] <= got[3] || got[2] > 2.0/3+eps || got[3] < 1.0/3-eps || got[4] > 1.0/3+eps {
		t.Fatalf("cascade tiers: %v, want the first-stage tier in [1/3, 2/3] by its score", got)
	}
	top, _ := mmr(context.Background(), cs, got, len(cs), 1)
	if order := ids(top); !slices.Equal(order, []string{"a", "b", "c", "d", "e", "f"}) {
		t.Fatalf("λ = 1 reordered a cascade's list: %v", order)
	}
}

func TestExpand(t *testing.T) {
	store := map[string]*record{
		"s1": rec("s1", "t", nil, "x1", "f1", "m1", "missing", "s2"),
		"s2": rec("s2", "t", nil, "x1"),
		"x1": rec("x1", "t", nil, "x2", "s1"),
		"x2": rec("x2", "t", nil, "f2"),
		"f1": rec("f1", "u", nil, "x3"),
		"f2": rec("f2", "u", nil),
		"m1": rec("m1", "t", map[string]string{"lang": "fr"}),
		"x3": rec("x3", "t", nil),
		"s3": rec("s3", "t", nil, "x4"),
		"x4": rec("x4", "t", nil),
	}
	lookup := func(id string) *record { return store[id] }
	seeds := func() []*candidate {
		return []*candidate{
			{id: "s1", rec: store["s1"], fused: 1, fusedRank: 1, origin: Origin{Kind: OriginRetrieved}},
			{id: "s2", rec: store["s2"], fused: 0.8, fusedRank: 2, origin: Origin{Kind: OriginRetrieved}},
			{id: "s3", rec: store["s3"], fused: 0.1, fusedRank: 3, origin: Origin{Kind: OriginRetrieved}},
		}
	}
	type exp struct {
		id    string
		score float64
		from  string
		hop   int
	}
	tests := []struct {
		name string
		x    expansion // its tenant is set to "t"
		want []exp
	}{
		{"no hops", expansion{hops: 0, decay: 0.5, seeds: 3}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"s3", 0.1, "", 0}}},
		// f1 and f2 belong to tenant u and are never admitted, nor is x3,
		// reachable only through f1; "missing" is not stored.
		{"one hop", expansion{hops: 1, decay: 0.5, seeds: 3}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"x1", 0.5, "s1", 1}, {"m1", 0.5, "s1", 1}, {"s3", 0.1, "", 0}, {"x4", 0.05, "s3", 1}}},
		{"two hops decay", expansion{hops: 2, decay: 0.5, seeds: 3}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"x1", 0.5, "s1", 1}, {"m1", 0.5, "s1", 1}, {"x2", 0.25, "x1", 2}, {"s3", 0.1, "", 0}, {"x4", 0.05, "s3", 1}}},
		{"decay 0.2", expansion{hops: 2, decay: 0.2, seeds: 3}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"x1", 0.2, "s1", 1}, {"m1", 0.2, "s1", 1}, {"s3", 0.1, "", 0}, {"x2", 0.04, "x1", 2}, {"x4", 0.02, "s3", 1}}},
		{"seeds limit", expansion{hops: 2, decay: 0.5, seeds: 1}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"x1", 0.5, "s1", 1}, {"m1", 0.5, "s1", 1}, {"x2", 0.25, "x1", 2}, {"s3", 0.1, "", 0}}},
		{"filter admits matching only", expansion{filter: map[string]string{"lang": "fr"}, hops: 2, decay: 0.5, seeds: 3}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"m1", 0.5, "s1", 1}, {"s3", 0.1, "", 0}}},
		// The threshold (0.3) keeps x2 (0.25) and x4 (0.05) out, and m1,
		// which it dropped when retrieved, does not come back through s1's
		// link with s1's decayed score.
		{"threshold", expansion{hops: 2, decay: 0.5, seeds: 3, minScore: 0.3, dropped: map[string]bool{"m1": true}}, []exp{{"s1", 1, "", 0}, {"s2", 0.8, "", 0}, {"x1", 0.5, "s1", 1}, {"s3", 0.1, "", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.x.tenant = "t"
			got := expand(seeds(), lookup, tt.x)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v want %v", ids(got), tt.want)
			}
			for i, c := range got {
				w := tt.want[i]
				if c.id != w.id || math.Abs(c.fused-w.score) > 1e-12 || c.origin.From != w.from || c.origin.Hop != w.hop || c.fusedRank != i+1 {
					t.Errorf("#%d = %s %.3f from %q hop %d rank %d, want %+v", i, c.id, c.fused, c.origin.From, c.origin.Hop, c.fusedRank, w)
				}
				if c.rec.doc.Tenant != "t" {
					t.Errorf("foreign document %s (tenant %q) expanded", c.id, c.rec.doc.Tenant)
				}
			}
		})
	}
}

func hit(id, source string, span Span, text string, rank int) Hit {
	return Hit{Document: Document{ID: id, Source: source, Span: span, Text: text}, Score: float64(100 - rank), Provenance: Provenance{FinalRank: rank}}
}

func TestPack(t *testing.T) {
	wc := enginetest.WordCounter{}
	lines := func(from, to int) string { // lines "lN" for N in [from, to)
		var s []string
		for i := from; i < to; i++ {
			s = append(s, "l"+string(rune('0'+i)))
		}
		return strings.Join(s, "\n")
	}
	tests := []struct {
		name      string
		hits      []Hit
		budget    int
		wantTexts []string
		wantSpans []Span
		wantParts [][]string
		wantTok   int
	}{
		{"greedy skips what does not fit", []Hit{
			hit("a", "", Span{}, "one two three", 1),
			hit("b", "", Span{}, "one two three four five", 2),
			hit("c", "", Span{}, "six", 3),
		}, 4, []string{"one two three", "six"}, []Span{{}, {}}, [][]string{{"a"}, {"c"}}, 4},
		{"no budget keeps all", []Hit{
			hit("a", "", Span{}, "x y", 1), hit("b", "", Span{}, "z", 2),
		}, 0, []string{"x y", "z"}, []Span{{}, {}}, [][]string{{"a"}, {"b"}}, 3},
		{"overlapping line spans coalesce", []Hit{
			hit("b", "f.go", Span{Start: 3, End: 6}, lines(3, 6), 1),
			hit("a", "f.go", Span{Start: 1, End: 4}, lines(1, 4), 2),
		}, 0, []string{lines(1, 6)}, []Span{{Start: 1, End: 6}}, [][]string{{"b", "a"}}, 5},
		{"adjacent spans coalesce, others stay", []Hit{
			hit("a", "f.go", Span{Start: 1, End: 3}, lines(1, 3), 1),
			hit("x", "g.go", Span{Start: 3, End: 5}, lines(3, 5), 2),
			hit("b", "f.go", Span{Start: 3, End: 5}, lines(3, 5), 3),
			hit("c", "f.go", Span{Start: 7, End: 9}, lines(7, 9), 4),
		}, 0, []string{lines(1, 5), lines(3, 5), lines(7, 9)}, []Span{{Start: 1, End: 5}, {Start: 3, End: 5}, {Start: 7, End: 9}}, [][]string{{"a", "b"}, {"x"}, {"c"}}, 8},
		{"non line-aligned text is joined", []Hit{
			hit("a", "doc", Span{Start: 0, End: 10}, "alpha beta", 1),
			hit("b", "doc", Span{Start: 5, End: 20}, "gamma", 2),
		}, 0, []string{"alpha beta\ngamma"}, []Span{{Start: 0, End: 20}}, [][]string{{"a", "b"}}, 3},
		// Three parts chain; the best-ranked one sits in the middle of the
		// span order, and the passage keeps its score (TestPackScores).
		{"chain keeps the best part first", []Hit{
			hit("mid", "f", Span{Start: 2, End: 4}, lines(2, 4), 1),
			hit("right", "f", Span{Start: 4, End: 6}, lines(4, 6), 2),
			hit("left", "f", Span{Start: 0, End: 2}, lines(0, 2), 3),
		}, 0, []string{lines(0, 6)}, []Span{{Start: 0, End: 6}}, [][]string{{"mid", "right", "left"}}, 6},
		{"contained span adds nothing", []Hit{
			hit("a", "f", Span{Start: 1, End: 5}, lines(1, 5), 1),
			hit("b", "f", Span{Start: 2, End: 4}, lines(2, 4), 2),
		}, 0, []string{lines(1, 5)}, []Span{{Start: 1, End: 5}}, [][]string{{"a", "b"}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, tok := pack(tt.hits, wc, tt.budget)
			if tok != tt.wantTok {
				t.Errorf("tokens %d want %d", tok, tt.wantTok)
			}
			if tt.budget > 0 && tok > tt.budget {
				t.Errorf("tokens %d over budget %d", tok, tt.budget)
			}
			if len(ps) != len(tt.wantTexts) {
				t.Fatalf("got %d passages %+v", len(ps), ps)
			}
			for i, p := range ps {
				var parts []string
				for _, pp := range p.Parts {
					parts = append(parts, pp.ID)
				}
				if p.Text != tt.wantTexts[i] || p.Span != tt.wantSpans[i] || !slices.Equal(parts, tt.wantParts[i]) {
					t.Errorf("passage %d = %q %v %v, want %q %v %v", i, p.Text, p.Span, parts, tt.wantTexts[i], tt.wantSpans[i], tt.wantParts[i])
				}
				if p.Tokens != wc.CountTokens(p.Text) {
					t.Errorf("passage %d tokens %d, text counts %d", i, p.Tokens, wc.CountTokens(p.Text))
				}
				// A passage scores as its best-ranked part, listed first.
				for _, h := range tt.hits {
					if h.Document.ID == p.Parts[0].ID && p.Score != h.Score {
						t.Errorf("passage %d score %v, its best part %s scored %v", i, p.Score, h.Document.ID, h.Score)
					}
				}
			}
		})
	}
}

func TestWordCounterFallback(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{{"", 0}, {"one", 1}, {"a b c d e f g h i j", 10}, {"well-known", 3}} {
		if got := (wordCounter{}).CountTokens(tc.text); got != tc.want {
			t.Errorf("%q: %d want %d", tc.text, got, tc.want)
		}
	}
}

func mkCands(n int) []*candidate {
	out := make([]*candidate, n)
	for i := range out {
		id := "d" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		txt := "filler"
		if i%3 == 0 {
			txt = "apple banana"
		}
		out[i] = &candidate{id: id, rec: &record{doc: Document{ID: id, Text: txt}}, fused: float64(n - i), fusedRank: i + 1}
	}
	return out
}

// lenCands returns candidates whose texts have these numbers of words
// (one estimated token each).
func lenCands(words ...int) []*candidate {
	out := mkCands(len(words))
	for i, w := range words {
		out[i].rec.doc.Text = strings.TrimSpace(strings.Repeat("w ", w))
	}
	return out
}

// A cut batch raises the observed/predicted ratio to cutRatio × its
// elapsed over its prediction, within the ratio's bounds.
func TestCostModelCutRatio(t *testing.T) {
	m := newCostModel(0.3)
	m.observeCut("p", 4, time.Nanosecond, time.Hour)
	if got := m.ratio("p"); got != ratioMin {
		t.Errorf("ratio %v after a cut long before its prediction, want the floor %v", got, ratioMin)
	}
	m.observeCut("p", 4, time.Second, time.Second)
	if got := m.ratio("p"); got != cutRatio {
		t.Errorf("ratio %v after a cut at its prediction, want %v", got, cutRatio)
	}
	m.observeCut("p", 4, time.Hour, time.Second)
	if got := m.ratio("p"); got != ratioMax {
		t.Errorf("ratio %v, want the ceiling %v", got, ratioMax)
	}
}

// TestCostModelRelaxAfterOutlier: one batch far slower than predicted (a
// cold GPU shape, a pause) raises both the ratio and its deviation; skips
// must lower their sum, which batches are sized with, or a budget that the
// sum does not fit is skipped for good.
func TestCostModelRelaxAfterOutlier(t *testing.T) {
	m := newCostModel(0.3)
	for range 3 {
		m.observe("p", 4, time.Second, time.Second)
	}
	m.observe("p", 4, 15*time.Second, time.Second)
	// ratio 0.7·1 + 0.3·15, deviation 0.3·14 (after three exact batches
	// the deviation is 0, a value the outlier is averaged with).
	before := m.ratio("p")
	if want := 5.2 + 4.2; math.Abs(before-want) > 1e-9 {
		t.Fatalf("ratio %v after a 15× batch, want %v", before, want)
	}
	const skips = 20
	for range skips {
		m.relax("p", skipRelax, true)
	}
	if got, want := m.ratio("p"), before*math.Pow(skipRelax, skips); got > want*1.0001 {
		t.Errorf("ratio %v after %d skips, want ≤ %v (%v·%v^%d)", got, skips, want, before, skipRelax, skips)
	}

	// The same through the loop: a budget that one call fits once the
	// outlier is forgotten gets a call again within a few searches. Calls
	// are counted when they start, so a slow machine that cuts the 1 ms
	// call does not change the count.
	ctx := context.Background()
	cfg := DefaultConfig().Rerank
	costs := newCostModel(cfg.EWMAAlpha)
	r := &startCounter{CostReranker: enginetest.CostReranker{PerCall: time.Millisecond, Run: true}}
	cands := lenCands(100, 100, 100, 100)
	for range 3 {
		costs.observe("p", 4, time.Millisecond, time.Millisecond)
	}
	costs.observe("p", 4, 15*time.Millisecond, time.Millisecond)
	searches := 0
	for ; searches < 50 && r.started.Load() == 0; searches++ {
		if _, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, cands, cfg, costs, time.Now().Add(3*time.Millisecond), 0); err != nil {
			t.Fatal(err)
		}
	}
	if r.started.Load() == 0 {
		t.Errorf("no call in %d searches of 3 ms for a 1 ms call after one 15 ms outlier", searches)
	}
}

// startCounter is a CostReranker that counts the Score calls it starts.
type startCounter struct {
	enginetest.CostReranker
	started atomic.Int32
}

func (r *startCounter) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

func (r *startCounter) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	r.started.Add(1)
	return r.CostReranker.Score(ctx, query, docs)
}

// BenchmarkBudgetCallCost reranks 100 candidates of scifact-like lengths
// (150–500 tokens) under a 20 ms budget with a reranker shaped like the
// balanced profile on a GPU (about 1 ms a call, 0.6 µs a token: 8 ms for
// 32 pairs), sized by its prediction or by the per-document average, and
// reports the candidates scored per search.
func BenchmarkBudgetCallCost(b *testing.B) {
	cfg := DefaultConfig().Rerank
	rng := rand.New(rand.NewPCG(7, 7))
	words := make([]int, 100)
	for i := range words {
		words[i] = 150 + rng.IntN(350)
	}
	for _, mode := range []struct {
		name    string
		unready bool
	}{{"predicted", false}, {"per-document", true}} {
		b.Run(mode.name, func(b *testing.B) {
			r := &enginetest.CostReranker{PerCall: time.Millisecond, PerToken: 600 * time.Nanosecond, Run: true, Unready: mode.unready}
			costs := newCostModel(cfg.EWMAAlpha)
			budget := 20 * time.Millisecond
			margin := cfg.Margin + time.Duration(cfg.MarginFraction*float64(budget))
			scored, searches := 0, 0
			for b.Loop() {
				out, err := rerankBudgeted(context.Background(), context.Background(), r, "p", "apple", models.Chunking{}, lenCands(words...), cfg, costs, time.Now().Add(budget), margin)
				if err != nil {
					b.Fatal(err)
				}
				scored += out.scored
				searches++
			}
			b.ReportMetric(float64(scored)/float64(searches), "reranked/search")
		})
	}
}

// spanCostReranker scores in windows and predicts its (unchunked) cost.
type spanCostReranker struct {
	enginetest.WindowReranker
}

func (*spanCostReranker) Capabilities() models.Capabilities {
	return models.Capabilities{Chunking: true, Cost: func([]int) (time.Duration, bool) { return time.Second, true }}
}

// A stage is predicted unless its reranker cannot, or it scores in
// windows (a reranker that cannot score in windows truncates: predicted).
func TestStagePredictor(t *testing.T) {
	on, cands := models.Chunking{Stride: 4}, mkCands(3)
	for _, tc := range []struct {
		name string
		r    models.Reranker
		ch   models.Chunking
		want bool
	}{
		{"no estimator", &enginetest.OverlapReranker{}, models.Chunking{}, false},
		{"estimator", &enginetest.CostReranker{}, models.Chunking{}, true},
		{"estimator, chunking asked, truncates", &enginetest.CostReranker{}, on, true},
		{"estimator scoring in windows", &spanCostReranker{}, on, false},
		{"estimator able to chunk, chunking off", &spanCostReranker{}, models.Chunking{}, true},
	} {
		if got := stagePredictor(tc.r, "q", tc.ch, cands) != nil; got != tc.want {
			t.Errorf("%s: predicted %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The cascade's first stage leaves the second what the second reranker
// predicts for Keep candidates, scaled by its observed ratio: the ratio of
// its truncated calls when chunking is asked for and it cannot chunk.
func TestCascadeReserveFromPrediction(t *testing.T) {
	for name, ch := range map[string]models.Chunking{"no chunking": {}, "chunking asked, second truncates": {Stride: 4}} {
		t.Run(name, func(t *testing.T) { testCascadeReserve(t, ch) })
	}
}

func testCascadeReserve(t *testing.T, ch models.Chunking) {
	first := &ctxRecorder{inner: &enginetest.OverlapReranker{}}
	second := &enginetest.CostReranker{PerCall: time.Second, PerToken: 100 * time.Millisecond}
	e, err := Open("", DefaultConfig(), WithReranker("fast", first), WithReranker("accurate", second))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.costs.observe("accurate", 1, 2*time.Second, time.Second) // ratio 2
	req := &Request{Query: "apple", Rerank: "accurate", Cascade: Cascade{First: "fast", Keep: 2}, Chunking: ch}
	margin := 10 * time.Millisecond
	deadline := time.Now().Add(time.Hour)
	// The first two in fused order: pairs of 10 tokens, 3 s predicted, 6 s
	// with the ratio.
	cands := lenCands(6, 6, 30, 30)
	if _, err := e.rerankCascade(context.Background(), context.Background(), req, first, second, cands, deadline, margin, &Result{}); err != nil {
		t.Fatal(err)
	}
	calls := first.snapshot()
	want := deadline.Add(-6*time.Second - margin)
	if len(calls) == 0 || !calls[0].deadline.Equal(want) {
		t.Fatalf("first stage calls %+v: want the first cut at %v", calls, want)
	}
	if second.Docs.Load() != 2 {
		t.Fatalf("second stage scored %d documents, want 2", second.Docs.Load())
	}
}

func TestRerankBudgeted(t *testing.T) {
	cfg := DefaultConfig().Rerank
	ctx := context.Background()
	t.Run("no deadline scores all in max batches", func(t *testing.T) {
		r := &enginetest.OverlapReranker{}
		cands := mkCands(70)
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, cands, cfg, newCostModel(0.3), time.Time{}, 0)
		if err != nil || out.scored != 70 || out.degraded || out.fallback != nil {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got := r.BatchSizes(); !slices.Equal(got, []int{32, 32, 6}) {
			t.Errorf("batches %v", got)
		}
		ord := finalOrder(cands, out.scored)
		for i, c := range ord[:24] { // 24 of 70 contain "apple" (i%3==0)
			if c.rerank < 1 {
				t.Fatalf("rank %d: %s rerank %v, want matching docs first", i, c.id, c.rerank)
			}
		}
		if !slices.IsSortedFunc(ord[:24], func(a, b *candidate) int { return a.fusedRank - b.fusedRank }) {
			t.Errorf("equal rerank scores must keep fused order")
		}
	})
	// The budget tests below assert what the loop decided (batch sizes,
	// the deadline it gave the reranker, the estimates it kept), never how
	// long it took: the sleeps are long against the budgets, so a loaded
	// machine can only make the loop stop earlier, which the assertions
	// allow.
	t.Run("slow reranker degrades within budget", func(t *testing.T) {
		r := &ctxRecorder{inner: &enginetest.OverlapReranker{PerDoc: 10 * time.Millisecond}}
		cands := mkCands(100) // 1 s of work
		costs := newCostModel(0.3)
		margin := 5 * time.Millisecond
		deadline := time.Now().Add(600 * time.Millisecond)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		out, err := rerankBudgeted(dctx, ctx, r, "slow", "apple", models.Chunking{}, cands, cfg, costs, deadline, margin)
		if err != nil {
			t.Fatal(err)
		}
		if !out.degraded || out.scored >= 100 {
			t.Fatalf("want degraded, got %+v", out)
		}
		calls := r.snapshot()
		if len(calls) == 0 || calls[0].size != cfg.FirstBatch {
			t.Fatalf("calls %+v, want a first batch of %d", calls, cfg.FirstBatch)
		}
		sum := 0
		for i, c := range calls {
			// No batch may run past deadline − margin: each is given
			// exactly that deadline.
			if !c.hasDeadline || !c.deadline.Equal(deadline.Add(-margin)) {
				t.Fatalf("call %d had deadline %v (set %v), want %v", i, c.deadline, c.hasDeadline, deadline.Add(-margin))
			}
			if c.err == nil {
				sum += c.size
			} else if i != len(calls)-1 {
				t.Fatalf("call %d failed (%v) but the loop went on", i, c.err)
			}
		}
		// Exactly the batches that completed are counted.
		if out.scored != sum {
			t.Errorf("scored %d, completed batches %+v", out.scored, calls)
		}
		for i, c := range cands {
			if c.reranked != (i < out.scored) {
				t.Fatalf("candidate %d reranked=%v with %d scored: must be a prefix", i, c.reranked, out.scored)
			}
		}
		// The estimate includes the time of a completed batch of ≥ 10 ms per
		// document, or the cut rule's 2·elapsed/n.
		if est, ok := costs.estimate("slow"); !ok || est < float64(time.Millisecond) {
			t.Errorf("cost estimate %v %v, want ≈10ms/doc", est, ok)
		}
	})
	t.Run("a wrong answer after the deadline is an error, not a cut", func(t *testing.T) {
		// The reranker answers with NaN once its cut has passed: that call
		// failed, whatever the clock says.
		r := models.RerankFunc(func(ctx context.Context, _ string, _ []string) ([]float32, error) {
			<-ctx.Done()
			return []float32{float32(math.NaN())}, nil
		})
		deadline := time.Now().Add(300 * time.Millisecond)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		out, err := rerankBudgeted(dctx, ctx, r, "nan", "apple", models.Chunking{}, mkCands(1), cfg, newCostModel(0.3), deadline, 0)
		if err != nil || out.degraded || out.scored != 0 || out.fallback == nil || out.fallback.Code != FallbackRerankError {
			t.Fatalf("out %+v err %v, want a rerank_error fallback", out, err)
		}
	})
	t.Run("cut batch stops at deadline minus margin and raises the estimate", func(t *testing.T) {
		// The first batch (4 docs, 40 s) cannot fit a 60 ms budget: it
		// must be cut at deadline − margin, and the next search must not
		// start a batch the raised estimate says cannot fit.
		inner := &enginetest.OverlapReranker{PerDoc: 10 * time.Second}
		r := &ctxRecorder{inner: inner}
		costs := newCostModel(0.3)
		margin := 20 * time.Millisecond
		deadline := time.Now().Add(60 * time.Millisecond)
		out, err := rerankBudgeted(ctx, ctx, r, "slow", "apple", models.Chunking{}, mkCands(10), cfg, costs, deadline, margin)
		if err != nil || !out.degraded || out.scored != 0 || out.fallback == nil || out.fallback.Code != FallbackRerankBudget {
			t.Fatalf("out %+v err %v", out, err)
		}
		calls := r.snapshot()
		if len(calls) != 1 || !calls[0].hasDeadline || !calls[0].deadline.Equal(deadline.Add(-margin)) || !errors.Is(calls[0].err, context.DeadlineExceeded) {
			t.Fatalf("calls %+v: want one batch cut at deadline − margin %v", calls, deadline.Add(-margin))
		}
		est, ok := costs.estimate("slow")
		// The loop times the call around the reranker, so its elapsed is at
		// least what the reranker saw.
		if !ok || est < 2*float64(calls[0].took)/float64(calls[0].size) {
			t.Fatalf("estimate after a cut %v ns/doc (%v), want ≥ 2·%v/%d", est, ok, calls[0].took, calls[0].size)
		}
		// Second search with less time than MinBatch = 2 documents need at
		// that estimate (1.5 of them): no call at all.
		second := time.Now().Add(margin + time.Duration(1.5*est))
		out, err = rerankBudgeted(ctx, ctx, r, "slow", "apple", models.Chunking{}, mkCands(10), cfg, costs, second, margin)
		if err != nil || !out.degraded || out.scored != 0 {
			t.Fatalf("second out %+v err %v", out, err)
		}
		if inner.Calls.Load() != 1 {
			t.Errorf("second search called the reranker (%d calls)", inner.Calls.Load())
		}
		// Skipped searches relax the estimate, so a later one probes again.
		after, _ := costs.estimate("slow")
		if after >= est {
			t.Errorf("estimate %v after a skip, was %v: want lower", after, est)
		}
		for i := 0; i < 200 && inner.Calls.Load() < 2; i++ { // 0.85^200: any estimate relaxes below the budget
			if _, err := rerankBudgeted(ctx, ctx, r, "slow", "apple", models.Chunking{}, mkCands(10), cfg, costs, time.Now().Add(60*time.Millisecond), margin); err != nil {
				t.Fatal(err)
			}
		}
		if inner.Calls.Load() < 2 {
			t.Errorf("no probe in 200 searches after skips")
		}
	})
	t.Run("known cost sizes batch to the time left", func(t *testing.T) {
		r := &enginetest.OverlapReranker{}
		costs := newCostModel(0.3)
		costs.observe("p", 1, time.Millisecond, 0) // 1 ms/doc
		deadline := time.Now().Add(time.Hour)
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, mkCands(10), cfg, costs, deadline, 0)
		if err != nil || out.scored != 10 || out.degraded {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got := r.BatchSizes(); !slices.Equal(got, []int{10}) {
			t.Errorf("batches %v, want one batch of all 10", got)
		}
	})
	t.Run("no time left", func(t *testing.T) {
		r := &enginetest.OverlapReranker{}
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, mkCands(10), cfg, newCostModel(0.3), time.Now().Add(-time.Second), 0)
		if err != nil || out.scored != 0 || !out.degraded || out.fallback == nil || out.fallback.Code != FallbackRerankBudget {
			t.Fatalf("out %+v err %v", out, err)
		}
		if r.Calls.Load() != 0 {
			t.Errorf("reranker called with no time left")
		}
	})
	t.Run("a reranker's own prediction sizes the batch by length", func(t *testing.T) {
		// Pair tokens 10, 10, 20, 10, …: predicted 2 s, 3 s, 5 s, 6 s for
		// the first 1..4 documents. 5.5 s left: three documents, not the
		// four a per-document average would allow.
		r := &enginetest.CostReranker{PerCall: time.Second, PerToken: 100 * time.Millisecond}
		costs := newCostModel(0.3)
		cands := lenCands(6, 6, 16, 6, 6, 6, 6, 6, 6, 6)
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, cands, cfg, costs, time.Now().Add(5500*time.Millisecond), 0)
		if err != nil || out.scored != 10 || out.degraded {
			t.Fatalf("out %+v err %v", out, err)
		}
		// The first call took microseconds against 5 s predicted: the ratio
		// drops to its floor and the other seven fit in one call.
		if got := r.BatchSizes(); !slices.Equal(got, []int{3, 7}) {
			t.Errorf("batches %v, want [3 7]", got)
		}
		if got := costs.ratio("p"); got > 0.2 {
			t.Errorf("ratio %v after calls far faster than predicted, want near the floor %v", got, ratioMin)
		}
	})
	t.Run("the observed ratio scales the prediction; below MinBatch nothing runs", func(t *testing.T) {
		// Calls have taken twice the prediction: one document (2 s × 2)
		// fits 5.5 s, two (3 s × 2) do not, and one is below MinBatch.
		r := &enginetest.CostReranker{PerCall: time.Second, PerToken: 100 * time.Millisecond}
		costs := newCostModel(0.3)
		costs.observe("p", 1, 2*time.Second, time.Second)
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, lenCands(6, 6, 6, 6), cfg, costs, time.Now().Add(5500*time.Millisecond), 0)
		if err != nil || out.scored != 0 || !out.degraded || out.fallback == nil || out.fallback.Code != FallbackRerankBudget {
			t.Fatalf("out %+v err %v", out, err)
		}
		if r.Calls.Load() != 0 {
			t.Errorf("reranker called (%v)", r.BatchSizes())
		}
		if got := costs.ratio("p"); math.Abs(got-2*skipRelax) > 1e-9 {
			t.Errorf("ratio %v after a skip, want %v", got, 2*skipRelax)
		}
	})
	t.Run("skips lower a prediction that was never observed, so a later search probes", func(t *testing.T) {
		// 10 s per call predicted, 5.5 s left: nothing fits until skips
		// have scaled the prediction down (0.85^k), with no call to
		// correct the reranker's own model.
		r := &enginetest.CostReranker{PerCall: 10 * time.Second, PerToken: 100 * time.Millisecond}
		costs := newCostModel(0.3)
		for i := 0; i < 20 && r.Calls.Load() == 0; i++ {
			if _, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, lenCands(6, 6, 6, 6), cfg, costs, time.Now().Add(5500*time.Millisecond), 0); err != nil {
				t.Fatal(err)
			}
		}
		if r.Calls.Load() == 0 {
			t.Fatalf("no probe in 20 searches; ratio %v", costs.ratio("p"))
		}
	})
	t.Run("without a prediction the per-document average sizes the batch", func(t *testing.T) {
		r := &enginetest.CostReranker{PerCall: time.Hour, Unready: true}
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, mkCands(10), cfg, newCostModel(0.3), time.Now().Add(time.Hour), 0)
		if err != nil || out.scored != 10 {
			t.Fatalf("out %+v err %v", out, err)
		}
		if got := r.BatchSizes(); !slices.Equal(got, []int{cfg.FirstBatch, 10 - cfg.FirstBatch}) {
			t.Errorf("batches %v, want FirstBatch then the rest", got)
		}
	})
	t.Run("error falls back to fused order", func(t *testing.T) {
		r := &enginetest.OverlapReranker{Err: errors.New("model gone")}
		cands := mkCands(10)
		out, err := rerankBudgeted(ctx, ctx, r, "p", "apple", models.Chunking{}, cands, cfg, newCostModel(0.3), time.Time{}, 0)
		if err != nil || out.scored != 0 || out.fallback == nil || out.fallback.Code != FallbackRerankError {
			t.Fatalf("out %+v err %v", out, err)
		}
		for _, c := range cands {
			if c.reranked {
				t.Fatal("scores kept after error")
			}
		}
	})
	t.Run("cancelled parent is an error", func(t *testing.T) {
		r := &enginetest.OverlapReranker{PerDoc: 10 * time.Millisecond}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := rerankBudgeted(cctx, cctx, r, "p", "apple", models.Chunking{}, mkCands(10), cfg, newCostModel(0.3), time.Time{}, 0)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	})
}

// ctxRecorder wraps a reranker and records, per call, the batch size, the
// deadline of the context it was given, how long the inner call took and
// its error.
type ctxRecorder struct {
	inner interface {
		Score(ctx context.Context, query string, docs []string) ([]float32, error)
	}
	mu    sync.Mutex // guards calls
	calls []recordedCall
}

type recordedCall struct {
	size        int
	deadline    time.Time
	hasDeadline bool
	took        time.Duration
	err         error
}

func (r *ctxRecorder) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	return models.RerankFunc(r.Score).ScorePairs(ctx, pairs)
}

func (r *ctxRecorder) ScoreSpans(context.Context, string, []string, models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

func (r *ctxRecorder) Capabilities() models.Capabilities {
	if c, ok := r.inner.(interface{ Capabilities() models.Capabilities }); ok {
		c := c.Capabilities()
		c.Chunking = false
		return c
	}
	return models.Capabilities{}
}

func (r *ctxRecorder) Load() error { return nil }

func (r *ctxRecorder) Score(ctx context.Context, query string, docs []string) ([]float32, error) {
	d, ok := ctx.Deadline()
	start := time.Now()
	out, err := r.inner.Score(ctx, query, docs)
	took := time.Since(start)
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{size: len(docs), deadline: d, hasDeadline: ok, took: took, err: err})
	r.mu.Unlock()
	return out, err
}

func (r *ctxRecorder) snapshot() []recordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestMMRCut: with its context ended, mmr stops choosing and fills the
// remaining places in input order; steps says how many it chose.
func TestMMRCut(t *testing.T) {
	cs := mkCands(6)
	rel := []float64{1, 0.9, 0.8, 0.7, 0.6, 0.5}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	top, steps := mmr(ctx, cs, rel, 4, 0.5)
	if steps != 0 || len(top) != 4 {
		t.Fatalf("steps %d, %d places", steps, len(top))
	}
	for i, c := range top {
		if c != cs[i] {
			t.Fatalf("place %d holds %s, want the input order", i, c.id)
		}
	}
	if _, steps := mmr(context.Background(), cs, rel, 4, 0.5); steps != -1 {
		t.Fatalf("an uncut MMR says it stopped after %d steps", steps)
	}
	// NaN relevances (no score is NaN any more, but mmr must not index -1).
	nan := []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if top, _ := mmr(context.Background(), cs, nan, 3, 0.5); len(top) != 3 {
		t.Fatalf("%d places of 3", len(top))
	}
}

// TestReplayDropsNULMetadataKeys: a log written before metadata keys with
// a NUL byte were refused still opens; replay drops those keys (they had
// made the directory unopenable: ErrCorrupt at every replay).
func TestReplayDropsNULMetadataKeys(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// As an older engine logged it: Validate would refuse it today.
	rec := &record{doc: Document{ID: "x", Text: "apple", Metadata: map[string]string{"a\x00b": "c", "lang": "en"}}}
	payload, err := encodeLogRecord([]*record{rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.log.Append(payload); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, DefaultConfig())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e.Close()
	d, ok := e.GetIn("", "x")
	if !ok || len(d.Metadata) != 1 || d.Metadata["lang"] != "en" || e.Durability().Recovery.DroppedMetadataKeys != 1 {
		t.Fatalf("replayed %+v %v, recovery %+v", d, ok, e.Durability().Recovery)
	}
}
