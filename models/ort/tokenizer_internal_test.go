package ort

import (
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// TestCutQueryRoundTrip checks that a cut query tokenizes to exactly the
// first n pieces of the original.
func TestCutQueryRoundTrip(t *testing.T) {
	tok, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	enc := wpEncoder{tok}
	queries := []string{
		"short query",
		strings.Repeat("Unbelievably long-winded QUESTIONS about tokenization, café naïveté & 漢字! ", 20),
		strings.Repeat("supercalifragilisticexpialidocious antidisestablishmentarianism ", 30),
		strings.Repeat("[UNK] [SEP] tokens 12345.678 ", 40),
	}
	for _, q := range queries {
		for _, n := range []int{1, 2, 7, 30, 254} {
			got := enc.cutQuery(q, n)
			want := tok.Tokens(q)
			want = want[:min(n, len(want))]
			if have := tok.Tokens(got); !slices.Equal(have, want) {
				t.Fatalf("cutQuery(%.30q, %d) = %q → %q, want %q", q, n, got, have, want)
			}
		}
	}
}
