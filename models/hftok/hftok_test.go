//go:build hftokenizers && cgo

package hftok_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/hftok"
	"github.com/hybrank/hybrank/models/wordpiece"
)

func load(t *testing.T, path string) *hftok.Tokenizer {
	t.Helper()
	tk, err := hftok.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"model": {"type": "Nonsense"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.json"), bad, "nul\x00byte"} {
		if _, err := hftok.Load(p); !errors.Is(err, hftok.ErrLoad) {
			t.Errorf("Load(%q) = %v, want ErrLoad", p, err)
		}
	}
}

// TestUnigram checks a hand-computed Viterbi segmentation (XLM-R layout:
// Metaspace, RobertaProcessing) and that tokenizer.json's own truncation
// (max_length 4) does not apply: callers choose maxLen per call.
func TestUnigram(t *testing.T) {
	tk := load(t, filepath.Join("testdata", "unigram.json"))
	if tk.PadID() != 1 || tk.VocabSize() != 20 || tk.AddedTokens(false) != 2 || tk.AddedTokens(true) != 4 {
		t.Fatalf("pad %d vocab %d added %d/%d", tk.PadID(), tk.VocabSize(), tk.AddedTokens(false), tk.AddedTokens(true))
	}
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"hello", []int32{0, 5, 2}},                                // ▁hello (-3) beats ▁he + llo (-8.5)
		{"hello worlds reranker", []int32{0, 5, 6, 11, 14, 15, 2}}, // ▁world s; ▁rerank er (-10) beats ▁re rank er (-12.5)
		{"hello z", []int32{0, 5, 4, 3, 2}},                        // ▁ then <unk> for z
		{"", []int32{0, 2}},
		{"ｈｅｌｌｏ", []int32{0, 5, 2}}, // NFKC folds full-width letters
	} {
		e, err := tk.Encode(c.text, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e.IDs, c.want) || len(e.TypeIDs) != len(c.want) || len(e.AttentionMask) != len(c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, e.IDs, c.want)
		}
	}
	e, err := tk.EncodePair("hello", "worlds", 0, wordpiece.LongestFirst)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 5, 2, 2, 6, 11, 2}; !slices.Equal(e.IDs, want) || !slices.Equal(e.TypeIDs, make([]int32, 7)) {
		t.Errorf("pair = %v types %v, want %v and zeros", e.IDs, e.TypeIDs, want)
	}
	// Budget 6 for 3 + 2 content tokens and 4 specials: LongestFirst cuts
	// the longer (first) sequence to 1; OnlySecond cuts the second to 2-1.
	e, err = tk.EncodePair("hello worlds", "reranker", 6, wordpiece.LongestFirst)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 5, 2, 2, 14, 2}; !slices.Equal(e.IDs, want) {
		t.Errorf("longest_first = %v, want %v", e.IDs, want)
	}
	if _, err := tk.EncodePair("hello worlds", "reranker", 6, wordpiece.OnlySecond); !errors.Is(err, hftok.ErrSequenceTooShort) {
		t.Errorf("only_second with a first sequence over budget: %v, want ErrSequenceTooShort", err)
	}
	if _, err := tk.EncodePair("a", "b", 3, wordpiece.LongestFirst); !errors.Is(err, hftok.ErrMaxLen) {
		t.Errorf("max len 3 < 4 specials: %v, want ErrMaxLen", err)
	}
	// More max lengths than the library caches truncating tokenizers for.
	for m := 2; m <= 20; m++ {
		e, err := tk.Encode("hello worlds reranker", m)
		if err != nil || e.Len() != min(m, 7) || e.IDs[0] != 0 || e.IDs[e.Len()-1] != 2 {
			t.Errorf("Encode at max %d = %v, %v", m, e.IDs, err)
		}
	}
	if _, err := tk.Encode("a", -1); !errors.Is(err, hftok.ErrMaxLen) {
		t.Errorf("max len -1: %v, want ErrMaxLen", err)
	}
	tok, err := tk.Tokenize("hello worlds")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 5}, {5, 11}, {11, 12}}; !slices.Equal(tok.IDs, []int32{5, 6, 11}) || !slices.Equal(tok.Offsets, want) {
		t.Errorf("Tokenize = %v %v, want [5 6 11] %v", tok.IDs, tok.Offsets, want)
	}
	s, err := tk.Decode([]int32{0, 5, 6, 11, 2}, true)
	if err != nil || s != "hello worlds" {
		t.Errorf("Decode = %q, %v", s, err)
	}
	if _, err := tk.Decode([]int32{20}, true); !errors.Is(err, hftok.ErrEncode) {
		t.Errorf("Decode of an id past the vocabulary: %v, want ErrEncode", err)
	}
}

// TestWordPiece checks the all-MiniLM-L6-v2 tokenizer.json against ids
// known from bert-base-uncased, invalid UTF-8 handling and NUL bytes.
func TestWordPiece(t *testing.T) {
	tk := load(t, testenv.NeedTokenizerJSON(t))
	e, err := tk.EncodePair("Hello world", "hello", 0, wordpiece.LongestFirst)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{101, 7592, 2088, 102, 7592, 102}; !slices.Equal(e.IDs, want) || !slices.Equal(e.TypeIDs, []int32{0, 0, 0, 0, 1, 1}) {
		t.Errorf("pair = %v %v, want %v", e.IDs, e.TypeIDs, want)
	}
	if tk.PadID() != 0 {
		t.Errorf("PadID = %d", tk.PadID())
	}
	// Each invalid byte is one U+FFFD, which BertNormalizer drops; a NUL
	// byte is a control character it drops too (not the end of the text).
	for _, pair := range [][2]string{{"hello\xff\xfeworld", "hello\ufffd\ufffdworld"}, {"hello\x00world", "helloworld"}} {
		a, err1 := tk.Encode(pair[0], 0)
		b, err2 := tk.Encode(pair[1], 0)
		if err1 != nil || err2 != nil || !slices.Equal(a.IDs, b.IDs) {
			t.Errorf("%q: %v vs %q: %v (%v %v)", pair[0], a.IDs, pair[1], b.IDs, err1, err2)
		}
	}
}

// TestBPE loads a byte-level BPE tokenizer.json: decoding gives the text
// back, offsets cover the text in order (the byte tokens of one character
// all carry that character's span), and the pair template
// (<BOS_TOKEN> A <EOP_TOKEN> B) applies.
func TestBPE(t *testing.T) {
	tk := load(t, testenv.NeedBPETokenizerJSON(t))
	texts := []string{
		"Hybrid retrieval fuses BM25 and dense scores.",
		"naïve café – 中文 emoji 😀 tabs\tand\nnewlines",
		"  leading and trailing spaces  ",
	}
	for _, text := range texts {
		e, err := tk.Tokenize(text)
		if err != nil {
			t.Fatal(err)
		}
		if e.Len() == 0 || len(e.Offsets) != e.Len() {
			t.Fatalf("%q: %d ids, %d offsets", text, e.Len(), len(e.Offsets))
		}
		got, err := tk.Decode(e.IDs, false)
		if err != nil || got != text {
			t.Errorf("Decode(Tokenize(%q)) = %q, %v", text, got, err)
		}
		var b strings.Builder
		end := 0
		for _, o := range e.Offsets {
			if o[0] >= end {
				b.WriteString(text[o[0]:o[1]])
				end = o[1]
			}
		}
		if b.String() != text {
			t.Errorf("offsets of %q rebuild %q", text, b.String())
		}
	}
	e, err := tk.EncodePair(texts[0], texts[1], 0, wordpiece.LongestFirst)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tk.Tokenize(texts[0])
	b, _ := tk.Tokenize(texts[1])
	want := slices.Concat([]int32{5}, a.IDs, []int32{7}, b.IDs)
	if !slices.Equal(e.IDs, want) || e.TypeIDs[len(e.TypeIDs)-1] != 1 || e.TypeIDs[0] != 0 {
		t.Errorf("pair = %v types %v, want %v", e.IDs, e.TypeIDs, want)
	}
	if tk.PadID() != 0 {
		t.Errorf("PadID = %d, want 0 (<PAD>)", tk.PadID())
	}
}

// TestCloseWaitsAndIsIdempotent encodes from several goroutines while
// Close runs: every call either succeeds or returns ErrClosed.
func TestCloseWaitsAndIsIdempotent(t *testing.T) {
	tk, err := hftok.Load(filepath.Join("testdata", "unigram.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			<-start
			for range 200 {
				_, err := tk.EncodePair("hello worlds", "reranker", 6, wordpiece.LongestFirst)
				if err != nil && !errors.Is(err, hftok.ErrClosed) {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Encode("hello", 0); !errors.Is(err, hftok.ErrClosed) {
		t.Errorf("Encode after Close: %v", err)
	}
}
