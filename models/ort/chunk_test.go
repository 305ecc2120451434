package ort

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// longDoc is n space-separated words of 1 to 12 letters.
func longDoc(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 9))
	words := make([]string, n)
	for i := range words {
		words[i] = strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(12))
	}
	return strings.Join(words, " ")
}

func TestScoreSpansMatchesWindowsAlone(t *testing.T) {
	cfg := testCfg() // MaxLength 64
	cfg.Batching = models.BatchingTokens
	cfg.MaxBatchTokens = 1 << 16 // every window in one runtime call
	r := &fakeRunner{}
	ce := newFakeCE(t, cfg, r, 64)
	query := "what is a long document"
	docs := []string{longDoc(1, 300), "short one", "", longDoc(2, 61), longDoc(3, 1000)}
	for _, ch := range []models.Chunking{
		{Stride: 30},
		{Stride: 10, MaxChunks: 5},
		{Stride: 100}, // more than the window: adjacent windows
		{Stride: 20, Aggregate: models.AggregateMeanTopK, TopK: 2},
	} {
		t.Run(ch.String(), func(t *testing.T) {
			r.calls.Store(0)
			got, usage, err := ce.ScoreSpans(context.Background(), query, docs, ch)
			if err != nil {
				t.Fatal(err)
			}
			if calls := r.calls.Load(); calls != 1 {
				t.Fatalf("%d runtime calls: the windows of all documents should share one batch", calls)
			}
			size := models.PairWindow(64, 5)
			windows := 0
			for d, s := range got {
				windows += len(s.Windows)
				if len(s.Windows) > ch.Cap() || s.Total < len(s.Windows) {
					t.Fatalf("doc %d: %d windows of %d, cap %d", d, len(s.Windows), s.Total, ch.Cap())
				}
				pairs := make([]models.Pair, len(s.Windows))
				for i, w := range s.Windows {
					text := docs[d][w.Start:w.End]
					if n := len(strings.Fields(text)); n > size {
						t.Fatalf("doc %d window %d has %d tokens > %d", d, i, n, size)
					}
					pairs[i] = models.Pair{Query: query, Doc: text}
				}
				alone, _, err := ce.ScorePairs(context.Background(), pairs)
				if err != nil {
					t.Fatal(err)
				}
				for i := range alone {
					if alone[i] != s.Scores[i] {
						t.Fatalf("doc %d window %d: %v in ScoreSpans, %v alone", d, i, s.Scores[i], alone[i])
					}
					if want := reference(query, pairs[i].Doc, 64, false); alone[i] != want {
						t.Fatalf("doc %d window %d: %v, reference %v", d, i, alone[i], want)
					}
				}
				score, best := ch.Combine(alone)
				if s.Score != score || s.Span != s.Windows[best] {
					t.Fatalf("doc %d: score %v span %v, want %v %v", d, s.Score, s.Span, score, s.Windows[best])
				}
			}
			if usage.Pairs != windows {
				t.Fatalf("usage counts %d pairs, %d windows", usage.Pairs, windows)
			}
			// A short document is one window: its whole text, scored as Score does.
			whole, err := ce.Score(context.Background(), query, docs[1:2])
			if err != nil {
				t.Fatal(err)
			}
			if got[1].Total != 1 || got[1].Span != (models.Span{Start: 0, End: len(docs[1])}) || got[1].Score != whole[0] {
				t.Fatalf("short document: %+v, Score %v", got[1], whole[0])
			}
			if got[4].Total <= ch.Cap() && ch.MaxChunks > 0 {
				t.Fatalf("long document: %d windows, cap %d not reached", got[4].Total, ch.Cap())
			}
		})
	}
}

func TestScoreSpansErrors(t *testing.T) {
	cfg := testCfg()
	cfg.MaxDocs = 2
	ce := newFakeCE(t, cfg, &fakeRunner{}, 64)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		query string
		docs  []string
		ch    models.Chunking
		want  error
	}{
		{"off", "q", []string{"d"}, models.Chunking{}, models.ErrInvalidConfig},
		{"invalid", "q", []string{"d"}, models.Chunking{Stride: 4, Aggregate: "sum"}, models.ErrInvalidConfig},
		{"empty query", " ", []string{"d"}, models.Chunking{Stride: 4}, models.ErrEmptyQuery},
		{"too many", "q", []string{"a", "b", "c"}, models.Chunking{Stride: 4}, models.ErrTooManyDocs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ce.ScoreSpans(ctx, tc.query, tc.docs, tc.ch); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	got, _, err := ce.ScoreSpans(ctx, "q", nil, models.Chunking{Stride: 4})
	if err != nil || len(got) != 0 {
		t.Fatalf("no documents: %v %v", got, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := ce.ScoreSpans(canceled, "q", []string{"d"}, models.Chunking{Stride: 4}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

func TestEmbedSpansMatchesWindowsAlone(t *testing.T) {
	cfg := models.DefaultEmbedderConfig()
	cfg.Dir = "unused"
	cfg.MaxLength, cfg.MaxBatchTokens = 32, 32
	cfg.DocumentPrefix = "passage:"
	c, err := newCore(cfg, models.KindEmbedder, fakeLoader(&fakeRunner{dim: 4}, 4, 32))
	if err != nil {
		t.Fatal(err)
	}
	be := &BiEncoder{c: c}
	defer be.Close()
	docs := []string{longDoc(4, 100), "tiny", longDoc(5, 29)}
	ch := models.Chunking{Stride: 15}
	got, usage, err := be.EmbedSpans(context.Background(), models.InputDocument, docs, ch)
	if err != nil {
		t.Fatal(err)
	}
	size := 32 - 2 - 1 // [CLS] passage: window [SEP]
	n := 0
	for d, sv := range got {
		texts := make([]string, len(sv.Windows))
		for i, w := range sv.Windows {
			texts[i] = docs[d][w.Start:w.End]
			if k := len(strings.Fields(texts[i])); k > size {
				t.Fatalf("doc %d window %d: %d tokens > %d", d, i, k, size)
			}
		}
		n += len(texts)
		alone, err := be.Embed(context.Background(), models.InputDocument, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			if fmt.Sprint(alone[i]) != fmt.Sprint(sv.Vectors[i]) {
				t.Fatalf("doc %d window %d: %v in EmbedSpans, %v alone", d, i, sv.Vectors[i], alone[i])
			}
		}
	}
	if got[0].Total < 6 || got[1].Total != 1 || usage.Pairs != n {
		t.Fatalf("totals %d %d, usage %d of %d windows", got[0].Total, got[1].Total, usage.Pairs, n)
	}
	if _, _, err := be.EmbedSpans(context.Background(), models.InputDocument, docs, models.Chunking{}); !errors.Is(err, models.ErrInvalidConfig) {
		t.Fatalf("chunking off: %v", err)
	}
}

// TestScoreSpansWindowNotCutByMaxChars: Config.MaxChars does not cut
// chunk windows (they are bounded in tokens). A 25,000-character word is
// one [UNK] token; its window had been cut at MaxChars, and the words
// after it never scored.
func TestScoreSpansWindowNotCutByMaxChars(t *testing.T) {
	tok, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := testCfg() // MaxLength 64, default MaxChars 20000
	cfg.Batching = models.BatchingTokens
	cfg.MaxBatchTokens = 1 << 16
	r := &fakeRunner{}
	ce := newCE(t, cfg, func(cfg models.Config, kind models.Kind) (*loaded, error) {
		md := models.ModelDir{Config: models.HFConfig{HiddenSize: 8, MaxPositionEmbeddings: 512}}
		return &loaded{dir: md, enc: wpEncoder{tok}, run: r, maxLen: 64, output: "fake"}, nil
	})
	// A base64-like blob is one [UNK] token (words over 100 chars), then
	// 20 ordinary words: 21 tokens, one window.
	doc := strings.Repeat("x", 25000) + " " + strings.Repeat("relevant ", 20)
	got, usage, err := ce.ScoreSpans(context.Background(), "query", []string{doc}, models.Chunking{Stride: 30})
	if err != nil {
		t.Fatal(err)
	}
	w := got[0].Windows[0]
	windowTokens := tok.CountTokens(doc[w.Start:w.End])
	want := 3 + 1 + windowTokens // [CLS] query [SEP] window [SEP]
	if usage.Tokens != want {
		t.Fatalf("window scored with %d tokens, want %d: the window text was cut by MaxChars", usage.Tokens, want)
	}
}

// TestEmbedSpansWindowNotCutByMaxChars: the same for embedding windows.
func TestEmbedSpansWindowNotCutByMaxChars(t *testing.T) {
	tok, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.DefaultEmbedderConfig()
	cfg.Dir, cfg.MaxLength, cfg.Batching, cfg.MaxBatchTokens = "unused", 64, models.BatchingTokens, 1<<16
	r := &fakeRunner{dim: 4}
	c, err := newCore(cfg, models.KindEmbedder, func(cfg models.Config, kind models.Kind) (*loaded, error) {
		md := models.ModelDir{Config: models.HFConfig{HiddenSize: 4, MaxPositionEmbeddings: 512}}
		return &loaded{dir: md, enc: wpEncoder{tok}, run: r, maxLen: 64, output: "fake", embedding: md.Embedding(cfg)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	be := &BiEncoder{c: c}
	defer be.Close()
	doc := strings.Repeat("x", 25000) + " " + strings.Repeat("relevant ", 20)
	got, usage, err := be.EmbedSpans(context.Background(), models.InputRaw, []string{doc}, models.Chunking{Stride: 30})
	if err != nil {
		t.Fatal(err)
	}
	w := got[0].Windows[0]
	want := 2 + tok.CountTokens(doc[w.Start:w.End])
	if usage.Tokens != want {
		t.Fatalf("window %v embedded with %d tokens, want %d", w, usage.Tokens, want)
	}
}
