package wordpiece_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// TestChunkWindowsFitAlone: every window of a chunk plan tokenizes alone to
// at most the window size, with the real WordPiece vocabulary, also in a
// document of long words without spaces, where windows start inside a
// word (its first piece "##ab" then tokenizes alone as "a", "##b": more
// tokens than the window covered in the document).
func TestChunkWindowsFitAlone(t *testing.T) {
	tk, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	offsets := func(text string) ([]models.Span, error) {
		var out []models.Span
		for _, s := range tk.TokenSpans(nil, text) {
			out = append(out, models.Span{Start: s.Start, End: s.End})
		}
		return out, nil
	}
	rng := rand.New(rand.NewPCG(5, 5))
	var words []string
	for range 30 {
		var b strings.Builder
		for n := 20 + rng.IntN(80); n > 0; n-- {
			b.WriteByte("qwzjxvkyabcdefghi"[rng.IntN(17)])
		}
		words = append(words, b.String())
	}
	doc := strings.Join(words, " ")
	longer := 0
	for _, size := range []int{16, 40, 64} {
		plan, err := models.Chunking{Stride: size / 2, MaxChunks: 1000}.Plan([]string{doc}, size, offsets)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range plan.Texts() {
			if n := tk.CountTokens(w); n > size {
				t.Errorf("size %d, window %d %q: %d tokens alone", size, i, w, n)
			}
			if n := tk.CountTokens(w); n < size/2 {
				longer++ // only the last window may be short; counted below
			}
		}
	}
	if longer > 3 {
		t.Errorf("%d windows under half their size: fitting cut too much", longer)
	}
}

// TestLongestFirstSpecialTokenInText: a special token typed into a text
// does not stop its count short (Hugging Face checks the limit only after
// an ordinary word), so LongestFirst splits the pair as Hugging Face does
// (reference ids from tokenizers 0.23.2).
func TestLongestFirstSpecialTokenInText(t *testing.T) {
	tk, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q          string
		ids, type_ []int32
	}{
		{"a b c d e f g [MASK] h", []int32{101, 1037, 1038, 1039, 102, 1037, 1038, 102}, []int32{0, 0, 0, 0, 0, 1, 1, 1}},
		{"a b c d e f g [MASK] [MASK] h", []int32{101, 1037, 1038, 1039, 102, 1037, 1038, 102}, []int32{0, 0, 0, 0, 0, 1, 1, 1}},
	} {
		enc, err := tk.EncodePair(tc.q, "a b c d e f g h i", 8, wordpiece.LongestFirst)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(enc.IDs, tc.ids) || !slices.Equal(enc.TypeIDs, tc.type_) {
			t.Errorf("%q: ids %v types %v, want %v %v", tc.q, enc.IDs, enc.TypeIDs, tc.ids, tc.type_)
		}
	}
}
