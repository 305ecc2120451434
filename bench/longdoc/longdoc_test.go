package longdoc

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// words counts whitespace-separated words: the tests' tokenizer.
func words(s string) int { return len(strings.Fields(s)) }

// synthetic is a small BEIR dataset: 6 queries with one or two relevant
// documents of 20–60 words each, 200 unjudged documents of 5–80 words.
func synthetic() *eval.Dataset {
	ds := &eval.Dataset{Name: "synthetic", Qrels: eval.Qrels{}}
	text := func(tag string, n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("%s%d", tag, i%17)
		}
		return strings.Join(w, " ")
	}
	for q := range 6 {
		qid := fmt.Sprintf("q%d", q)
		ds.Queries = append(ds.Queries, eval.Query{ID: qid, Text: fmt.Sprintf("rel%d question", q)})
		ds.Qrels[qid] = map[string]int{}
		for r := range 1 + q%2 {
			id := fmt.Sprintf("rel%d-%d", q, r)
			ds.Docs = append(ds.Docs, eval.Doc{ID: id, Title: "Relevant " + id, Text: text(fmt.Sprintf("rel%d", q), 20+10*q)})
			ds.Qrels[qid][id] = 1 + r
		}
	}
	for i := range 200 {
		ds.Docs = append(ds.Docs, eval.Doc{ID: fmt.Sprintf("f%d", i), Title: "Filler", Text: text("fill", 5+i%76)})
	}
	return ds
}

func TestBuild(t *testing.T) {
	ds := synthetic()
	cfg := BuildConfig{Queries: 5, Distractors: 4, MinTokens: 300, MaxTokens: 500, Seed: 7}
	set, err := Build(ds, cfg, words)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]eval.Doc{}
	for _, d := range ds.Docs {
		byID[d.ID] = d
	}
	if len(set.Queries) != 5 || len(set.Docs) != 7+4 { // queries 0..4 have 1,2,1,2,1 relevant
		t.Fatalf("%d queries, %d documents", len(set.Queries), len(set.Docs))
	}
	for _, d := range set.Docs {
		if n := words(d.Text); n != d.Tokens || n < cfg.MinTokens || n > cfg.MaxTokens {
			t.Fatalf("%s: %d tokens (recorded %d), want %d..%d", d.ID, n, d.Tokens, cfg.MinTokens, cfg.MaxTokens)
		}
		if strings.Contains(d.Text, "Relevant rel") != (d.Source != "") {
			t.Fatalf("%s: relevant text where it should not be (or missing)", d.ID)
		}
		if d.Source == "" {
			if !d.Span.IsZero() {
				t.Fatalf("distractor %s has a span", d.ID)
			}
			continue
		}
		if got, want := d.Text[d.Span.Start:d.Span.End], byID[d.Source].IndexText(); got != want {
			t.Fatalf("%s: text at %v is %.40q, want %.40q", d.ID, d.Span, got, want)
		}
		if strings.Count(d.Text, "Relevant rel") != 1 {
			t.Fatalf("%s: buried more than once", d.ID)
		}
		if d.Span.Start > 0 && d.Text[d.Span.Start-2:d.Span.Start] != "\n\n" {
			t.Fatalf("%s: not at a document boundary", d.ID)
		}
	}
	// The abstracts land at different depths.
	starts := map[int]bool{}
	for _, d := range set.Docs {
		if d.Source != "" {
			starts[d.Span.Start*10/len(d.Text)] = true
		}
	}
	if len(starts) < 3 {
		t.Fatalf("buried at depths %v only", starts)
	}
	for qi, q := range set.Queries {
		rel := set.Qrels[q.ID]
		if len(set.Candidates[qi]) != len(rel)+cfg.Distractors {
			t.Fatalf("%s: %d candidates for %d relevant", q.ID, len(set.Candidates[qi]), len(rel))
		}
		for k, di := range set.Candidates[qi] {
			d := set.Docs[di]
			grade, ok := rel[d.ID]
			if (k < len(rel)) != ok || (ok && grade != ds.Qrels[q.ID][d.Source]) {
				t.Fatalf("%s candidate %d %s: grade %d %v", q.ID, k, d.ID, grade, ok)
			}
		}
	}
	again, err := Build(ds, cfg, words)
	if err != nil || !reflect.DeepEqual(set, again) {
		t.Fatal("the same seed built another collection")
	}
	cfg.Seed++
	if other, _ := Build(ds, cfg, words); reflect.DeepEqual(set.Docs, other.Docs) {
		t.Fatal("another seed built the same collection")
	}
}

// TestBuildNearMax builds with a narrow range, where the filler often
// cannot land exactly on the drawn length: every document still ends in
// range.
func TestBuildNearMax(t *testing.T) {
	for seed := range uint64(20) {
		cfg := BuildConfig{Distractors: 10, MinTokens: 300, MaxTokens: 320, Seed: seed}
		set, err := Build(synthetic(), cfg, words)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, d := range set.Docs {
			if d.Tokens < cfg.MinTokens || d.Tokens > cfg.MaxTokens {
				t.Fatalf("seed %d: %s has %d tokens", seed, d.ID, d.Tokens)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	ds := synthetic()
	for _, cfg := range []BuildConfig{
		{MinTokens: 0, MaxTokens: 10},
		{MinTokens: 20, MaxTokens: 10},
		{Queries: -1, MinTokens: 10, MaxTokens: 20},
		{MinTokens: 5, MaxTokens: 10}, // the relevant documents are longer
	} {
		if _, err := Build(ds, cfg, words); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// TestBuildScifact builds the default collection's shape from scifact with
// the real tokenizer: every document in range, every abstract in place.
func TestBuildScifact(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes a few hundred thousand tokens")
	}
	dir := testenv.NeedDataset(t, "scifact")
	tok, err := wordpiece.LoadTokenizerJSON(testenv.NeedTokenizerJSON(t), 1<<14)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultBuildConfig()
	cfg.Queries, cfg.Distractors = 20, 5
	set, err := Build(ds, cfg, tok.CountTokens)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]eval.Doc{}
	for _, d := range ds.Docs {
		byID[d.ID] = d
	}
	for _, d := range set.Docs {
		if n := tok.CountTokens(d.Text); n != d.Tokens || n < cfg.MinTokens || n > cfg.MaxTokens {
			t.Fatalf("%s: %d tokens (recorded %d)", d.ID, n, d.Tokens)
		}
		if d.Source != "" && d.Text[d.Span.Start:d.Span.End] != byID[d.Source].IndexText() {
			t.Fatalf("%s: span %v is not the abstract", d.ID, d.Span)
		}
	}
}

// wordEmbedder embeds with enginetest.HashEmbedder and chunks in windows
// of a fixed number of words: the Embedder of the quality rows, without a
// model.
type wordEmbedder struct {
	*enginetest.HashEmbedder
	window int
}

func (w wordEmbedder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	plan, err := ch.Plan(texts, w.window, enginetest.WordSpans)
	if err != nil {
		return nil, models.Usage{}, err
	}
	vecs, err := w.Embed(ctx, in, plan.Texts())
	if err != nil {
		return nil, models.Usage{}, err
	}
	out, err := plan.Vectors(vecs)
	return out, models.Usage{Pairs: len(vecs)}, err
}

// wordReranker is enginetest.WindowReranker with the Reranker interface's
// truncation: Score sees the first window's words only.
type wordReranker struct{ enginetest.WindowReranker }

func (w *wordReranker) Score(ctx context.Context, q string, docs []string) ([]float32, error) {
	cut := make([]string, len(docs))
	for i, d := range docs {
		f := strings.Fields(d)
		cut[i] = strings.Join(f[:min(len(f), w.Window)], " ")
	}
	return w.WindowReranker.Score(ctx, q, cut)
}

// TestQualityAndRerankRows runs the rows on the synthetic collection with
// stand-in models: chunking finds the buried abstracts that truncation
// misses, and the rows count what was scored.
func TestQualityAndRerankRows(t *testing.T) {
	set, err := Build(synthetic(), BuildConfig{Distractors: 6, MinTokens: 300, MaxTokens: 500, Seed: 3}, words)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Strides, cfg.Batch = []int{32, 64}, 4
	ctx := context.Background()
	rows, err := Quality(ctx, cfg, set, wordEmbedder{enginetest.NewHashEmbedder(256), 64}, Model{Name: "hash", Real: true, Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*len(cfg.Strides) || rows[0].Mode != "truncate" || rows[0].Pairs != len(set.Docs) {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows[1:] {
		if r.Mode != "chunk" || r.Pairs <= len(set.Docs)*300/64 || r.NDCG10 <= rows[0].NDCG10 || r.SpanHit < 0.5 {
			t.Fatalf("chunked row %+v vs truncated %+v", r, rows[0])
		}
	}
	if rows[1].Pairs <= rows[3].Pairs || rows[1].Seconds != rows[2].Seconds {
		t.Fatalf("stride 32 should cost more than 64, and its two aggregates share one pass: %+v", rows)
	}
	if cs := Checks(rows); len(cs) != 4 || cs[0].Value <= 0 {
		t.Fatalf("checks %v", cs)
	}

	cfg.Rerank.Queries, cfg.Rerank.Docs = 2, 3
	rr := &wordReranker{enginetest.WindowReranker{Window: 40}}
	rows, err = Rerank(ctx, cfg, set, rr, Model{Name: "gen", Real: false, Window: 43})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(cfg.Rerank.Chunkings) || rows[0].Docs != 6 || rows[0].Pairs != 6 {
		t.Fatalf("rerank rows %+v", rows)
	}
	for i, r := range rows[1:] {
		ch := cfg.Rerank.Chunkings[i]
		if r.Mode != "chunk" || r.Stride != ch.Stride || r.MaxChunks != ch.Cap() || r.Pairs < 6 || r.NDCG10 != 0 {
			t.Fatalf("rerank row %+v for %+v", r, ch)
		}
		if ch.MaxChunks > 0 && r.Pairs > 6*ch.MaxChunks {
			t.Fatalf("cap %d: %d pairs", ch.MaxChunks, r.Pairs)
		}
	}
	rep := Report(cfg, Result{Rows: rows, Docs: len(set.Docs)}, "bench longdoc")
	if len(rep.Rows) != len(rows) || len(rep.Notes) == 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"no data":        func(c *Config) { c.Data = "" },
		"zero stride":    func(c *Config) { c.Strides = []int{0} },
		"cap over limit": func(c *Config) { c.MaxChunks = models.MaxChunksLimit + 1 },
		"batch":          func(c *Config) { c.Batch = 0 },
		"top k":          func(c *Config) { c.TopK = 0 },
		"rerank docs":    func(c *Config) { c.Rerank.Docs = 0 },
		"rerank off":     func(c *Config) { c.Rerank.Chunkings = []models.Chunking{{}} },
		"tokens":         func(c *Config) { c.Build.MaxTokens = 10 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
