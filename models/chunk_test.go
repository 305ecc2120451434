package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/hybrank/hybrank/models"
)

// pieces tokenizes text as a word-piece tokenizer would, for the tests:
// words are runs of non-space characters, cut into pieces of at most 3
// bytes (so long words are several tokens with no whitespace between).
func pieces(text string) []models.Span {
	var out []models.Span
	start := -1
	flush := func(end int) {
		for s := start; s < end; s += 3 {
			out = append(out, models.Span{Start: s, End: min(s+3, end)})
		}
	}
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				flush(i)
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		flush(len(text))
	}
	return out
}

// randomText is n words of 1 to 9 letters separated by one or two spaces.
func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(strings.Repeat(" ", 1+r.IntN(2)))
		}
		for range 1 + r.IntN(9) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
	}
	return b.String()
}

// tokenIndex returns the index of the token starting (or ending) at byte
// offset off, or -1.
func tokenIndex(toks []models.Span, off int, end bool) int {
	for i, t := range toks {
		if (!end && t.Start == off) || (end && t.End == off) {
			return i
		}
	}
	return -1
}

func TestWindowsInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ words, size, stride int }{
		{0, 10, 5}, {1, 10, 5}, {3, 10, 5}, {50, 64, 32}, {400, 64, 32}, {400, 64, 64},
		{400, 64, 200}, {400, 64, 1}, {400, 40, 13}, {1000, 250, 125}, {1000, 510, 256},
	} {
		t.Run(fmt.Sprintf("words=%d size=%d stride=%d", tc.words, tc.size, tc.stride), func(t *testing.T) {
			text := randomText(r, tc.words)
			toks := pieces(text)
			ch := models.Chunking{Stride: tc.stride, MaxChunks: models.MaxChunksLimit}
			wins, total := ch.Windows(text, toks, tc.size)
			if total != len(wins) {
				t.Fatalf("total %d, kept %d, uncapped", total, len(wins))
			}
			if len(toks) == 0 {
				if len(wins) != 1 || !wins[0].IsZero() {
					t.Fatalf("empty document: %v", wins)
				}
				return
			}
			prevFrom, prevTo := -1, 0
			for k, w := range wins {
				from, to := tokenIndex(toks, w.Start, false), tokenIndex(toks, w.End, true)+1
				if from < 0 || to <= from {
					t.Fatalf("window %d %v does not start and end on tokens", k, w)
				}
				if to-from > tc.size {
					t.Fatalf("window %d has %d tokens > %d", k, to-from, tc.size)
				}
				if k == 0 && from != 0 {
					t.Fatalf("first window starts at token %d", from)
				}
				if k > 0 {
					if from <= prevFrom || from > prevTo {
						t.Fatalf("window %d starts at token %d after [%d, %d): no progress or a gap", k, from, prevFrom, prevTo)
					}
					// The stride is kept up to the snap to a word start.
					step := min(tc.stride, tc.size)
					if from > prevFrom+step || from < prevFrom+step-min(32, step/2) && from != prevTo {
						t.Fatalf("window %d starts %d tokens after the previous, stride %d", k, from-prevFrom, step)
					}
				}
				// Edges lie at whitespace when the snap could find one
				// (words here are at most 3 pieces).
				if from > 0 && tc.stride >= 8 && !unicode.IsSpace(rune(text[w.Start-1])) {
					t.Fatalf("window %d starts inside a word: %q", k, text[max(0, w.Start-5):w.Start+5])
				}
				if to < len(toks) && tc.size >= 8 && !unicode.IsSpace(rune(text[w.End])) {
					t.Fatalf("window %d ends inside a word", k)
				}
				// The window's text is exactly its tokens.
				if got := pieces(text[w.Start:w.End]); len(got) != to-from && w.Start > 0 && tc.stride >= 8 {
					t.Fatalf("window %d text has %d tokens, want %d", k, len(got), to-from)
				}
				prevFrom, prevTo = from, to
			}
			if prevTo != len(toks) {
				t.Fatalf("last window ends at token %d of %d", prevTo, len(toks))
			}
		})
	}
}

func TestWindowsOverlap(t *testing.T) {
	// Single-token words: windows are exact, stride and overlap too.
	text := strings.TrimSpace(strings.Repeat("ab ", 100))
	toks := pieces(text)
	wins, total := models.Chunking{Stride: 30}.Windows(text, toks, 40)
	want := []int{0, 30, 60}
	if total != len(want) || len(wins) != len(want) {
		t.Fatalf("windows %v (total %d), want starts %v", wins, total, want)
	}
	for k, w := range wins {
		from := tokenIndex(toks, w.Start, false)
		if from != want[k] {
			t.Fatalf("window %d starts at token %d, want %d", k, from, want[k])
		}
		if k < len(wins)-1 && tokenIndex(toks, w.End, true)+1-from != 40 {
			t.Fatalf("window %d is not 40 tokens", k)
		}
	}
	if last := wins[len(wins)-1]; last.End != len(text) {
		t.Fatalf("last window ends at %d of %d", last.End, len(text))
	}
}

func TestWindowsCapSpreads(t *testing.T) {
	text := strings.TrimSpace(strings.Repeat("ab ", 1000))
	toks := pieces(text)
	all, total := models.Chunking{Stride: 10, MaxChunks: models.MaxChunksLimit}.Windows(text, toks, 10)
	if total != 100 || len(all) != 100 {
		t.Fatalf("uncapped: %d windows, total %d", len(all), total)
	}
	for _, keep := range []int{1, 2, 3, 7, 32, 99, 100} {
		kept, total := models.Chunking{Stride: 10, MaxChunks: keep}.Windows(text, toks, 10)
		if total != 100 || len(kept) != keep {
			t.Fatalf("cap %d: kept %d, total %d", keep, len(kept), total)
		}
		if kept[0] != all[0] || (keep > 1 && kept[keep-1] != all[99]) {
			t.Fatalf("cap %d: first or last window not kept", keep)
		}
		for k := 1; k < keep; k++ {
			i, j := slices.Index(all, kept[k-1]), slices.Index(all, kept[k])
			step := 99.0 / float64(keep-1)
			if j <= i || math.Abs(float64(j-i)-step) > 1 {
				t.Fatalf("cap %d: kept windows %d and %d, want about %.1f apart", keep, i, j, step)
			}
		}
	}
	// The default cap.
	kept, _ := models.Chunking{Stride: 10}.Windows(text, toks, 10)
	if len(kept) != models.DefaultMaxChunks {
		t.Fatalf("default cap kept %d", len(kept))
	}
}

func TestWindowsLongWord(t *testing.T) {
	// One 300-byte word is 100 tokens without whitespace: windows cut it.
	text := "start " + strings.Repeat("x", 300) + " end"
	toks := pieces(text)
	wins, _ := models.Chunking{Stride: 16, MaxChunks: models.MaxChunksLimit}.Windows(text, toks, 32)
	if wins[len(wins)-1].End != len(text) {
		t.Fatalf("last window %v does not reach the end %d", wins[len(wins)-1], len(text))
	}
	for _, w := range wins {
		if n := len(pieces(text[w.Start:w.End])); n > 32 {
			t.Fatalf("window %v has %d tokens", w, n)
		}
	}
}

func TestCombine(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		ch     models.Chunking
		scores []float32
		want   float32
		best   int
	}{
		{"max", models.Chunking{Stride: 1}, []float32{0.1, 0.9, 0.3}, 0.9, 1},
		{"max first of ties", models.Chunking{Stride: 1, Aggregate: models.AggregateMax}, []float32{2, 5, 5}, 5, 1},
		{"max negative", models.Chunking{Stride: 1}, []float32{-3, -1, -2}, -1, 1},
		{"mean top 2", models.Chunking{Stride: 1, Aggregate: models.AggregateMeanTopK, TopK: 2}, []float32{1, 4, 2, 6}, 5, 3},
		{"mean top default 3", models.Chunking{Stride: 1, Aggregate: models.AggregateMeanTopK}, []float32{1, 4, 2, 6}, 4, 3},
		{"mean top k over fewer", models.Chunking{Stride: 1, Aggregate: models.AggregateMeanTopK, TopK: 5}, []float32{1, 3}, 2, 1},
		{"one window", models.Chunking{Stride: 1, Aggregate: models.AggregateMeanTopK}, []float32{7}, 7, 0},
		{"nan skipped", models.Chunking{Stride: 1}, []float32{nan, 2, 1}, 2, 1},
		{"all nan", models.Chunking{Stride: 1}, []float32{nan}, nan, -1},
		{"none", models.Chunking{Stride: 1}, nil, nan, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, best := tt.ch.Combine(tt.scores)
			if best != tt.best || (got != tt.want && !(got != got && tt.want != tt.want)) {
				t.Fatalf("Combine(%v) = %v, %d; want %v, %d", tt.scores, got, best, tt.want, tt.best)
			}
		})
	}
}

func TestChunkingValidate(t *testing.T) {
	tests := []struct {
		name string
		ch   models.Chunking
		ok   bool
	}{
		{"zero is off", models.Chunking{}, true},
		{"stride", models.Chunking{Stride: 128}, true},
		{"all", models.Chunking{Stride: 64, MaxChunks: 8, Aggregate: models.AggregateMeanTopK, TopK: 2}, true},
		{"max", models.Chunking{Stride: 64, Aggregate: models.AggregateMax}, true},
		{"negative stride", models.Chunking{Stride: -1}, false},
		{"settings without stride", models.Chunking{Aggregate: models.AggregateMax}, false},
		{"cap without stride", models.Chunking{MaxChunks: 4}, false},
		{"negative cap", models.Chunking{Stride: 1, MaxChunks: -1}, false},
		{"cap over limit", models.Chunking{Stride: 1, MaxChunks: models.MaxChunksLimit + 1}, false},
		{"unknown aggregate", models.Chunking{Stride: 1, Aggregate: "sum"}, false},
		{"top k with max", models.Chunking{Stride: 1, TopK: 2}, false},
		{"negative top k", models.Chunking{Stride: 1, Aggregate: models.AggregateMeanTopK, TopK: -2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ch.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, models.ErrInvalidConfig)) {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tt.ch, err, tt.ok)
			}
		})
	}
}

func TestPairWindow(t *testing.T) {
	for _, tc := range []struct{ maxLen, q, want int }{
		{512, 10, 499}, {512, 0, 509}, {512, 400, 255}, {64, 30, 31}, {256, 3, 250},
	} {
		if got := models.PairWindow(tc.maxLen, tc.q); got != tc.want {
			t.Errorf("PairWindow(%d, %d) = %d, want %d", tc.maxLen, tc.q, got, tc.want)
		}
	}
}

func TestChunkPlan(t *testing.T) {
	docs := []string{strings.TrimSpace(strings.Repeat("ab ", 25)), "", "one two", "bad \xff byte"}
	ch := models.Chunking{Stride: 5}
	p, err := ch.Plan(docs, 10, func(s string) ([]models.Span, error) { return pieces(s), nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 4, 5, 6, 7}; !slices.Equal(p.Starts, want) {
		t.Fatalf("starts %v, want %v", p.Starts, want)
	}
	if p.Docs[3] != "bad \uFFFD byte" {
		t.Fatalf("invalid UTF-8 not replaced: %q", p.Docs[3])
	}
	texts := p.Texts()
	if texts[4] != "" || texts[5] != "one two" {
		t.Fatalf("texts %q", texts)
	}
	pairs := p.Pairs("q")
	if pairs[0].Query != "q" || pairs[0].Doc != strings.TrimSpace(strings.Repeat("ab ", 10)) {
		t.Fatalf("pair 0 %+v", pairs[0])
	}
	scores := []float32{1, 3, 2, 0, 5, 6, 7}
	got, err := p.Scores(ch, scores)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Score != 3 || got[0].Span != p.Windows[1] || got[0].Total != 4 || len(got[0].Windows) != 4 {
		t.Fatalf("document 0: %+v", got[0])
	}
	if got[1].Score != 5 || !got[1].Span.IsZero() {
		t.Fatalf("empty document: %+v", got[1])
	}
	if _, err := p.Scores(ch, scores[:3]); err == nil {
		t.Fatal("short scores: no error")
	}
	vecs := make([][]float32, len(p.Windows))
	for i := range vecs {
		vecs[i] = []float32{float32(i), 1}
	}
	sv, err := p.Vectors(vecs)
	if err != nil {
		t.Fatal(err)
	}
	if len(sv[0].Vectors) != 4 || sv[0].Vectors[3][0] != 3 || sv[2].Windows[0] != p.Windows[5] {
		t.Fatalf("vectors %+v", sv)
	}
	score, span := sv[0].Best(ch, []float32{1, 0})
	if score != 3 || span != p.Windows[3] {
		t.Fatalf("Best = %v %v", score, span)
	}
	if _, err := ch.Plan(docs, 10, func(string) ([]models.Span, error) { return nil, errors.New("boom") }); err == nil {
		t.Fatal("offsets error not returned")
	}
}
