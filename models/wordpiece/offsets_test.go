package wordpiece_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// checkSpans checks TokenSpans against IDs and the text: the ids are
// identical; spans are in order, inside the text and non-empty; and each
// span slices the original text to its token's surface form once
// normalised (lowercase, accents stripped as the tokenizer does), without
// the "##" prefix. Tokens sharing one span (a character that normalises to
// several, split into pieces) must together spell its normalised form.
// [UNK] tokens are only checked for order and bounds.
func checkSpans(t *testing.T, tk *wordpiece.Tokenizer, text string) {
	t.Helper()
	spans := tk.TokenSpans(nil, text)
	ids := tk.IDs(nil, text)
	got := make([]int32, len(spans))
	for i, s := range spans {
		got[i] = s.ID
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("%q: TokenSpans ids %v, IDs %v", short(text), got, ids)
	}
	unk, _ := tk.TokenToID(tk.Config().UnkToken)
	prefix := tk.Config().ContinuingSubwordPrefix
	prevEnd := 0
	for i := 0; i < len(spans); {
		s := spans[i]
		if s.Start < prevEnd || s.End <= s.Start || s.End > len(text) {
			t.Fatalf("%q: token %d span [%d,%d) after %d, text length %d", short(text), i, s.Start, s.End, prevEnd, len(text))
		}
		j, pieces := i, ""
		for ; j < len(spans) && spans[j].Start == s.Start && spans[j].End == s.End; j++ {
			pieces += strings.TrimPrefix(tk.IDToToken(spans[j].ID), prefix)
		}
		// Added tokens match verbatim; normalised CJK characters are
		// padded with spaces.
		if raw := text[s.Start:s.End]; s.ID != unk && raw != tk.IDToToken(s.ID) {
			surface := strings.ReplaceAll(tk.Normalized(raw), " ", "")
			if pieces != surface {
				t.Fatalf("%q: tokens %d..%d %q span [%d,%d) = %q, normalised %q", short(text), i, j-1, pieces, s.Start, s.End, text[s.Start:s.End], surface)
			}
		}
		prevEnd, i = s.End, j
	}
}

func TestTokenSpansSmall(t *testing.T) {
	tk := newSmall(t, nil)
	tests := []struct {
		text string
		want []wordpiece.TokenSpan
	}{
		{"", nil},
		{"The unaffable Café!", []wordpiece.TokenSpan{
			{ID: 5, Start: 0, End: 3}, {ID: 6, Start: 4, End: 6}, {ID: 7, Start: 6, End: 9}, {ID: 8, Start: 9, End: 13},
			{ID: 22, Start: 14, End: 19}, {ID: 15, Start: 19, End: 20}}},
		// A stripped combining accent is in no token, as with HF.
		{"  cafe\u0301 [SEP]the", []wordpiece.TokenSpan{{ID: 22, Start: 2, End: 6}, {ID: 3, Start: 9, End: 14}, {ID: 5, Start: 14, End: 17}}},
		{"İ", []wordpiece.TokenSpan{{ID: 17, Start: 0, End: 2}}},
		{"中 ,\x00a", []wordpiece.TokenSpan{{ID: 16, Start: 0, End: 3}, {ID: 13, Start: 4, End: 5}, {ID: 11, Start: 6, End: 7}}},
		{"zzz hello", []wordpiece.TokenSpan{{ID: 1, Start: 0, End: 3}, {ID: 24, Start: 4, End: 9}}},
	}
	for _, tc := range tests {
		got := tk.TokenSpans(nil, tc.text)
		if !slices.Equal(got, tc.want) {
			t.Errorf("TokenSpans(%q) = %v, want %v", tc.text, got, tc.want)
		}
		checkSpans(t, tk, tc.text)
	}
	for _, s := range edgeCases {
		checkSpans(t, tk, s)
	}
	// Lowercase without stripping accents makes İ "i" + U+0307: both
	// pieces span the one character.
	no := false
	keep := newSmall(t, func(c *wordpiece.Config) { c.StripAccents = &no })
	want := []wordpiece.TokenSpan{{ID: 21, Start: 0, End: 7}, {ID: 17, Start: 8, End: 10}, {ID: 18, Start: 8, End: 10}}
	if got := keep.TokenSpans(nil, "strasse İ"); !slices.Equal(got, want) {
		t.Errorf("TokenSpans(\"strasse İ\") = %v, want %v", got, want)
	}
	checkSpans(t, keep, "strasse İ")
	for _, s := range edgeCases {
		checkSpans(t, keep, s)
	}
}

// TestTokenSpansReal checks the ids and offsets of the real vocabularies
// (uncased tokenizer.json and vocab.txt, cased vocab.txt) on the edge cases
// and on real documents.
func TestTokenSpansReal(t *testing.T) {
	texts := append([]string(nil), edgeCases...)
	if dir := artifactsDataset(t, "scifact"); dir != "" {
		texts = append(texts, corpusTexts(t, dir, 300)...)
		texts = append(texts, queryTexts(t, dir, 100)...)
	}
	texts = append(texts, strings.Join(edgeCases, " "))
	for _, s := range paritySetups() {
		t.Run(s.name, func(t *testing.T) {
			tk := s.load(t)
			for _, text := range texts {
				checkSpans(t, tk, text)
			}
		})
	}
}

// artifactsDataset returns a dataset folder, or "" when it is missing (the
// edge cases still run).
func artifactsDataset(t *testing.T, name string) (dir string) {
	t.Run("dataset "+name, func(t *testing.T) { dir = testenv.NeedDataset(t, name) })
	return dir
}

func FuzzTokenSpans(f *testing.F) {
	for _, s := range edgeCases {
		f.Add(s)
	}
	tk := newSmall(f, nil)
	f.Fuzz(func(t *testing.T, text string) {
		spans := tk.TokenSpans(nil, text)
		ids := tk.IDs(nil, text)
		if len(spans) != len(ids) {
			t.Fatalf("%d spans, %d ids", len(spans), len(ids))
		}
		for i, s := range spans {
			if s.ID != ids[i] || s.Start < 0 || s.End > len(text) || s.Start >= s.End {
				t.Fatalf("span %d = %+v, id %d, text length %d", i, s, ids[i], len(text))
			}
		}
	})
}

// TestTokenSpansParityHF compares TokenSpans with Hugging Face tokenizers'
// offsets (through the Node addon, which counts characters) on the edge
// cases and real documents, for the three parity setups.
func TestTokenSpansParityHF(t *testing.T) {
	if testing.Short() {
		t.Skip("parity run against the HF library; skipped with -short")
	}
	addon, _ := filepath.Abs(filepath.Dir(testenv.NeedHFTokenizers(t)))
	node := needNodeBin(t)
	texts := append([]string(nil), edgeCases...)
	if dir := artifactsDataset(t, "scifact"); dir != "" {
		texts = append(texts, corpusTexts(t, dir, 200)...)
	}
	for i, s := range texts {
		// JavaScript strings cannot hold invalid UTF-8.
		texts[i] = strings.ToValidUTF8(s, "\uFFFD")
	}
	for _, setup := range paritySetups() {
		t.Run(setup.name, func(t *testing.T) {
			tk := setup.load(t)
			in := map[string]any{"texts": texts}
			for k, v := range setup.src {
				in[k] = v
			}
			dir := t.TempDir()
			inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
			data, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(inPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			runNodeScript(t, node, "hf_offsets.js", addon, inPath, outPath)
			if data, err = os.ReadFile(outPath); err != nil {
				t.Fatal(err)
			}
			var want []struct {
				IDs     []int32  `json:"ids"`
				Offsets [][2]int `json:"offsets"`
			}
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, text := range texts {
				got := tk.TokenSpans(nil, text)
				chars := func(b int) int { return utf8.RuneCountInString(text[:b]) }
				ok := len(got) == len(want[i].IDs)
				for k := 0; ok && k < len(got); k++ {
					ok = got[k].ID == want[i].IDs[k] && chars(got[k].Start) == want[i].Offsets[k][0] && chars(got[k].End) == want[i].Offsets[k][1]
				}
				if !ok {
					bad++
					if bad <= 5 {
						t.Errorf("%q: ours %v, HF ids %v offsets %v (characters)", short(text), got, want[i].IDs, want[i].Offsets)
					}
				}
			}
			t.Logf("%d texts, %d differ", len(texts), bad)
		})
	}
}
