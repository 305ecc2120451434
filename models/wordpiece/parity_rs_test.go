//go:build hftokenizers && cgo

package wordpiece_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/hftok"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// The tests in this file compare us with Hugging Face tokenizers linked in
// process (package models/hftok, `make test-hf`), with the same inputs and
// checks as the Node-based TestParityHF and TestTruncationGridHF.

// loadHF loads a tokenizer.json into the Rust library.
func loadHF(t testing.TB, path string) *hftok.Tokenizer {
	t.Helper()
	tk, err := hftok.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

// bertTokenizerJSON writes the tokenizer.json of a vocab.txt under the
// bert-base rules (what hf_encode.js builds with BertWordPieceTokenizer's
// pieces: BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing and
// the five special tokens) and returns its path.
func bertTokenizerJSON(t testing.TB, vocabPath string, lowercase bool) string {
	t.Helper()
	raw, err := os.ReadFile(vocabPath)
	if err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	for i, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if _, dup := vocab[line]; !dup {
			vocab[line] = i
		}
	}
	var added []map[string]any
	for _, s := range []string{"[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"} {
		id, ok := vocab[s]
		if !ok {
			t.Fatalf("%s: no %s", vocabPath, s)
		}
		added = append(added, map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": lowercase},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", vocab["[SEP]"]}, "cls": []any{"[CLS]", vocab["[CLS]"]}},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": vocab},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hfTokenizerJSON is the tokenizer.json HF loads for a parity setup's
// hf_encode.js input.
func hfTokenizerJSON(t *testing.T, src map[string]any) string {
	t.Helper()
	if _, ok := src["tokenizer_json"]; ok {
		return testenv.NeedTokenizerJSON(t) // the file src names, or a skip
	}
	return bertTokenizerJSON(t, testenv.NeedVocabTxt(t), src["lowercase"].(bool))
}

// rustGoldens encodes the pairs (both strategies) and singles of the parity
// data with HF in process, in the form hf_encode.js writes.
func rustGoldens(t testing.TB, hf *hftok.Tokenizer, groups []group, singles []string, maxLens []int) *goldens {
	t.Helper()
	rec := func(e hftok.Encoding, err error) golden {
		if err != nil {
			if !errors.Is(err, hftok.ErrSequenceTooShort) {
				t.Fatalf("HF: %v", err)
			}
			return golden{Err: err.Error()}
		}
		return golden{IDs: e.IDs, Types: e.TypeIDs, Mask: e.AttentionMask}
	}
	g := &goldens{Pairs: map[string][]golden{}, Singles: map[string][]golden{}}
	for _, maxLen := range maxLens {
		for _, strat := range []wordpiece.Truncation{wordpiece.LongestFirst, wordpiece.OnlySecond} {
			key := fmt.Sprintf("%d/%s", maxLen, map[wordpiece.Truncation]string{wordpiece.LongestFirst: "LongestFirst", wordpiece.OnlySecond: "OnlySecond"}[strat])
			for _, gr := range groups {
				for _, d := range gr.Docs {
					g.Pairs[key] = append(g.Pairs[key], rec(hf.EncodePair(gr.Q, d, maxLen, strat)))
				}
			}
		}
		for _, s := range singles {
			g.Singles[strconv.Itoa(maxLen)] = append(g.Singles[strconv.Itoa(maxLen)], rec(hf.Encode(s, maxLen)))
		}
	}
	return g
}

// TestParityHFRust is TestParityHF against HF in process (padded batches
// stay with the Node test: padding is ours on both sides here).
func TestParityHFRust(t *testing.T) {
	if testing.Short() {
		t.Skip("parity run against the HF library is slow; skipped with -short")
	}
	groups, singles := parityData(t)
	maxLens := []int{512, 64}
	for _, s := range paritySetups() {
		t.Run(s.name, func(t *testing.T) {
			tk := s.load(t)
			g := rustGoldens(t, loadHF(t, hfTokenizerJSON(t, s.src)), groups, singles, maxLens)
			matched, total := compareGoldens(t, tk, g, groups, singles, maxLens)
			t.Logf("%s: %d / %d pair encodings identical", s.name, matched, total)
		})
	}
}

// TestParityHFRustScifact2000 is the acceptance check: 2,000 scifact
// (query, document) pairs, each query with 5 documents picked by the stride
// `bench tokenize` uses, at max lengths 512 and 128, both strategies: ids
// and type ids 100 % identical to HF.
func TestParityHFRustScifact2000(t *testing.T) {
	if testing.Short() {
		t.Skip("parity run against the HF library is slow; skipped with -short")
	}
	dir := testenv.NeedDataset(t, "scifact")
	qs := queryTexts(t, dir, -1)
	docs := corpusTexts(t, dir, -1)
	const pairs, perQ = 2000, 5
	var groups []group
	for i := 0; i < pairs; i += perQ {
		g := group{Q: qs[(i/perQ)%len(qs)]}
		for j := i; j < i+perQ; j++ {
			g.Docs = append(g.Docs, docs[(j*7919)%len(docs)])
		}
		groups = append(groups, g)
	}
	tj := testenv.NeedTokenizerJSON(t)
	tk, err := wordpiece.LoadTokenizerJSON(tj, -1)
	if err != nil {
		t.Fatal(err)
	}
	maxLens := []int{512, 128}
	g := rustGoldens(t, loadHF(t, tj), groups, nil, maxLens)
	matched, total := compareGoldens(t, tk, g, groups, nil, maxLens)
	if total != pairs*len(maxLens)*2 {
		t.Fatalf("compared %d encodings, want %d", total, pairs*len(maxLens)*2)
	}
	t.Logf("scifact: %d / %d pair encodings identical (2,000 pairs × max 512, 128 × longest_first, only_second)", matched, total)
}

// TestTruncationGridHFRust is TestTruncationGridHF against HF in process,
// comparing whole encodings rather than kept lengths.
func TestTruncationGridHFRust(t *testing.T) {
	tj := testenv.NeedTokenizerJSON(t)
	hf := loadHF(t, tj)
	tk, err := wordpiece.LoadTokenizerJSON(tj, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases, bad := 0, 0
	for _, maxLen := range []int{3, 4, 5, 6, 7, 8, 10, 13} {
		for _, word := range []string{"a ", "xxxxxx "} { // one and three pieces
			for n1 := 0; n1 <= 15; n1++ {
				for n2 := 0; n2 <= 15; n2++ {
					q, d := strings.Repeat(word, n1), strings.Repeat("b ", n2)
					cases++
					w, werr := hf.EncodePair(q, d, maxLen, wordpiece.LongestFirst)
					e, err := tk.EncodePair(q, d, maxLen, wordpiece.LongestFirst)
					if werr != nil || err != nil || !eqEnc(e, golden{IDs: w.IDs, Types: w.TypeIDs, Mask: w.AttentionMask}) {
						bad++
						if bad < 10 {
							t.Errorf("max %d q %q d %q: ours %v (%v), HF %v (%v)", maxLen, q, d, e.IDs, err, w.IDs, werr)
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases, %d differ", cases, bad)
}
