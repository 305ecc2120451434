package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybrank/hybrank/models"
)

func TestTruncateTokens(t *testing.T) {
	tests := []struct {
		name string
		tok  Tokenizer
		text string
		max  int
		want string
	}{
		{"fits", fakeTokenizer{}, "a b c", 3, "a b c"},
		{"cut at word", fakeTokenizer{}, "one two three four", 2, "one two"},
		{"extra spaces", fakeTokenizer{}, "  one   two three ", 2, "  one   two"},
		{"estimate fits", nil, "hello world", 2, "hello world"},
		{"estimate cut", nil, "hello world again", 2, "hello world"},
		{"estimate long word", nil, "abcdefghijklmnopqrstuvwxyz", 2, "abcdefghijkl"},
		// The whole first word is the first prefix over the limit.
		{"estimate word over by its last rune", nil, "abcdefg rest", 1, "abcdef"},
		{"estimate only word over by its last rune", nil, "abcdefg", 1, "abcdef"},
		{"estimate punctuation", nil, "a, b, c", 3, "a,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{b: Services{Tokenizer: tc.tok}}
			got, err := s.truncateTokens(context.Background(), tc.text, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("truncateTokens(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
			}
			if n := s.countTokens(got); n > tc.max {
				t.Fatalf("result has %d tokens > %d", n, tc.max)
			}
		})
	}
}

// truncateReference is truncateTokens by brute force: the longest prefix
// ending at a word end that fits, else the longest prefix ending at a rune
// boundary inside the first word that fits.
func truncateReference(s *Server, text string, maxTokens int) string {
	if s.countTokens(text) <= maxTokens {
		return text
	}
	best := -1
	for i := 1; i < len(text); i++ {
		if isSpaceByte(text[i]) && !isSpaceByte(text[i-1]) && s.countTokens(text[:i]) <= maxTokens {
			best = i
		}
	}
	if best >= 0 {
		return text[:best]
	}
	for i := len(text) - 1; i > 0; i-- {
		if utf8.RuneStart(text[i]) && s.countTokens(text[:i]) <= maxTokens {
			return text[:i]
		}
	}
	return ""
}

// TestTruncateTokensMatchesReference: on random texts of short and long
// words, spaces and multi-byte runes, with counts that grow with the prefix
// (the estimate, the fake word tokenizer), the doubling probes and binary
// searches find the brute-force cut.
func TestTruncateTokensMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	pieces := []string{"a", "bc", "def", "word", "中", "日本", "é", ",", ".", " ", " ", "  ", "\n", strings.Repeat("x", 300), strings.Repeat("語", 120)}
	for _, tok := range []Tokenizer{nil, fakeTokenizer{}} {
		s := &Server{b: Services{Tokenizer: tok}}
		for range 300 {
			text := randomText(rng, pieces, 80)
			total := s.countTokens(text)
			for _, maxTokens := range []int{1, 2, 3, total / 3, total / 2, total - 1, total, total + 1} {
				if maxTokens <= 0 {
					continue
				}
				got, err := s.truncateTokens(context.Background(), text, maxTokens)
				if err != nil {
					t.Fatal(err)
				}
				if want := truncateReference(s, text, maxTokens); got != want {
					t.Fatalf("tokenizer %T, max %d, text %q:\ngot  %q\nwant %q", tok, maxTokens, text, got, want)
				}
			}
		}
	}
}

// countingTokenizer counts the bytes CountTokens is asked to read.
type countingTokenizer struct {
	fakeTokenizer
	bytes *int
}

func (c countingTokenizer) CountTokens(text string) int {
	*c.bytes += len(text)
	return models.EstimateTokens(text)
}

// TestTruncateTokensBoundedWork: cutting a 4 MB text to 512 tokens reads
// a bounded number of bytes, with spaces, without (CJK) and as one long
// run of letters: the work of the cut, not of the text (it was quadratic
// in the text without spaces). A cancelled context stops it.
func TestTruncateTokensBoundedWork(t *testing.T) {
	const size = 4 << 20
	for name, text := range map[string]string{
		"words":   strings.Repeat("token ", size/6),
		"cjk":     strings.Repeat("中文", size/6),
		"letters": strings.Repeat("abcdefgh", size/8),
	} {
		var n int
		s := &Server{b: Services{Tokenizer: countingTokenizer{bytes: &n}}}
		got, err := s.truncateTokens(context.Background(), text, 512)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.countTokens(got); c > 512 || c < 500 {
			t.Errorf("%s: cut to %d tokens, want 500–512", name, c)
		}
		n -= len(got) // the check above
		if n > 64*len(got)+64<<10 {
			t.Errorf("%s: read %d bytes to cut %d of %d", name, n, len(got), len(text))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.truncateTokens(ctx, text, 512); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled context: err %v", name, err)
		}
	}
}

// TestCountTokensUpTo: with counts that grow with the prefix it is exactly
// min(countTokens, limit), and it reads about as far as the limit needs.
func TestCountTokensUpTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	pieces := []string{"a", "word", "中", ",", " ", "  ", strings.Repeat("x", 300)}
	s := &Server{}
	for range 300 {
		text := randomText(rng, pieces, 200)
		total := s.countTokens(text)
		for _, limit := range []int{0, 1, 5, total / 2, total, total + 3} {
			if got, want := s.countTokensUpTo(text, limit), max(0, min(total, limit)); got != want {
				t.Fatalf("countTokensUpTo(%q, %d) = %d, want %d", text, limit, got, want)
			}
		}
	}
	var n int
	c := &Server{b: Services{Tokenizer: countingTokenizer{bytes: &n}}}
	if got := c.countTokensUpTo(strings.Repeat("token ", 1<<20), 512); got != 512 || n > 64<<10 {
		t.Fatalf("512 of a 6 MB text: %d tokens, %d bytes read", got, n)
	}
}

// randomText joins fewer than most random pieces.
func randomText(rng *rand.Rand, pieces []string, most int) string {
	var b strings.Builder
	for n := rng.IntN(most); n > 0; n-- {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}
