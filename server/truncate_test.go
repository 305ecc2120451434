package server

import (
	"testing"
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
			s := &Server{b: Backends{Tokenizer: tc.tok}}
			got := s.truncateTokens(tc.text, tc.max)
			if got != tc.want {
				t.Fatalf("truncateTokens(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
			}
			if n := s.countTokens(got); n > tc.max {
				t.Fatalf("result has %d tokens > %d", n, tc.max)
			}
		})
	}
}
