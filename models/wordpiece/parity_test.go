package wordpiece_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/beir"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// edgeCases are texts that exercise every corner of the pipeline.
var edgeCases = []string{
	"",
	" ",
	"\t\n\r ",
	"Héllo Wörld, Ça va? naïve café résumé",
	"ÀÉÎÕÜ àéîõü ñÑ çÇ åÅ øØ æÆ œŒ",
	"中文分词测试，你好世界。汉字㐀𠀀",
	"日本語のテキストとカタカナ、ひらがな",
	"한국어 텍스트 테스트입니다",
	"emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🥰",
	"ctrl\x00chars\x01\x02\x07\x1b[0m\x7f and \u0085 next\u200bzero\u200cwidth\u200djoiner\ufeffbom",
	"nbsp\u00a0here\u2002en\u2003em\u2009thin\u202fnarrow\u3000ideographic\u2028line\u2029para",
	"tab\tnewline\nvtab\vformfeed\fcr\rend",
	strings.Repeat("a", 101) + " " + strings.Repeat("b", 100) + " " + strings.Repeat("é", 100) + "x",
	strings.Repeat("supercalifragilistic", 6),
	"pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
	"!!!...???,,,;;;:::---___((()))[[[]]]{{{}}}",
	"$100 + 5% = <tag> ^ `code` | ~tilde @at #hash &amp *star /slash \\back",
	"İstanbul IŞIK ılık İİİ i̇",
	"Straße STRASSE ß ẞ Maßstab",
	"ΣΊΣΥΦΟΣ ΟΔΥΣΣΕΥΣ σοφός ΣΑΣ ς",
	"e\u0301 a\u0308 o\u0302\u0323 combining\u0336strike Z\u0351\u0352a\u0353\u0354l\u0355g\u0356o",
	"שלום עולם مرحبا بالعالم \u200fRTL\u200e mark",
	"mixed English русский ελληνικά हिन्दी ไทย",
	"0123456789 3.14159 1,000,000 2024-01-15 10:30am ½ ² ① ٣",
	"https://example.com/path?q=a&b=c#frag user@example.org",
	"func main() { fmt.Println(\"hi\"); x := a[i] != b->c }",
	"[CLS] [SEP] [MASK] [PAD] [UNK] [cls] [SEP][SEP]x[MASK]y",
	"invalid\xff\xfeutf8\xc3",
	"\ufffd replacement \ufffd",
	"ﬁ ﬂ ﬀ ligatures ㎏ ℃ ™ Ⅻ ｆｕｌｌｗｉｄｔｈ",
	"Ǆemo ǅ ǆ Ⓐ ⓐ 𝐀𝐁𝐂 𝔄",
	"\U000E0001\U000E0041 tags \U000F0000 private \ue000 use",
	"𑤸 U+11938 and ᜴ U+1734",
	"word-with-hyphens and_underscores and.dots",
	"UPPERCASE lowercase MiXeD CaSe",
}

// corpusTexts returns the first n documents of the BEIR folder dir (all of
// them when n < 0) as the tokenizer sees them: title + " " + text
// (beir.Doc.IndexText).
func corpusTexts(t testing.TB, dir string, n int) []string {
	t.Helper()
	docs, err := beir.ReadCorpusN(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.IndexText()
	}
	return out
}

// queryTexts returns the texts of the first n queries of the BEIR folder
// dir (all of them when n < 0).
func queryTexts(t testing.TB, dir string, n int) []string {
	t.Helper()
	qs, err := beir.ReadQueriesN(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Text
	}
	return out
}

// group is one query with several documents.
type group struct {
	Q    string
	Docs []string
}

// parityData builds ≥ 2,000 (query, document) pairs from the datasets plus
// the edge cases, and the single texts.
func parityData(t testing.TB) ([]group, []string) {
	t.Helper()
	var groups []group
	var singles []string
	for _, ds := range []struct {
		name    string
		perQ    int
		queries int
	}{{"scifact", 4, 300}, {"cisi", 5, 76}, {"cran", 3, 225}} {
		dir := testenv.NeedDataset(t, ds.name)
		qs := queryTexts(t, dir, ds.queries)
		docs := corpusTexts(t, dir, -1)
		for i, q := range qs {
			g := group{Q: q}
			for j := 0; j < ds.perQ; j++ {
				g.Docs = append(g.Docs, docs[(i*7919+j*104729)%len(docs)])
			}
			groups = append(groups, g)
		}
		singles = append(singles, qs[:50]...)
		singles = append(singles, docs[:100]...)
		// Long documents cross the 4 KiB chunks the tokenizer works in.
		long := strings.Join(docs[:30], " ")
		groups = append(groups, group{Q: qs[0], Docs: []string{long, strings.Join(edgeCases, " ") + long}})
		singles = append(singles, long)
	}
	doc0 := groups[0].Docs[0]
	for i, e := range edgeCases {
		groups = append(groups,
			group{Q: e, Docs: []string{doc0, e, edgeCases[(i+1)%len(edgeCases)], ""}},
			group{Q: groups[i].Q, Docs: []string{e}})
	}
	singles = append(singles, edgeCases...)
	return groups, singles
}

type golden struct {
	IDs   []int32 `json:"ids"`
	Types []int32 `json:"types"`
	Mask  []int32 `json:"mask"`
	Err   string  `json:"err"`
}

type goldens struct {
	Pairs   map[string][]golden `json:"pairs"`
	Singles map[string][]golden `json:"singles"`
	Padded  []golden            `json:"padded"`
}

func hfGoldens(t *testing.T, src map[string]any, groups []group, singles []string, maxLens []int) *goldens {
	t.Helper()
	addon := filepath.Dir(testenv.NeedHFTokenizers(t))
	addon, _ = filepath.Abs(addon)
	node := needNodeBin(t)
	var pairs [][2]string
	for _, g := range groups {
		for _, d := range g.Docs {
			pairs = append(pairs, [2]string{g.Q, d})
		}
	}
	in := map[string]any{
		"max_lens":   maxLens,
		"strategies": []string{"LongestFirst", "OnlySecond"},
		"pairs":      pairs,
		"singles":    singles,
		"pad_chunk":  16,
	}
	for k, v := range src {
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
	runNodeScript(t, node, "hf_encode.js", addon, inPath, outPath)
	data, err = os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var g goldens
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

func eqEnc(e wordpiece.Encoding, g golden) bool {
	if len(e.IDs) != len(g.IDs) || len(e.TypeIDs) != len(g.Types) || len(g.Mask) != len(g.IDs) {
		return false
	}
	for i := range e.IDs {
		if e.IDs[i] != g.IDs[i] || e.TypeIDs[i] != g.Types[i] || g.Mask[i] != 1 {
			return false
		}
	}
	return true
}

func toks(tk *wordpiece.Tokenizer, ids []int32) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tk.IDToToken(id))
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 120 {
		return strconv.Quote(s[:120]) + "…"
	}
	return strconv.Quote(s)
}

// paritySetup is one way of building our tokenizer, with the input that
// tells hf_encode.js (and TestParityHFRust) how to build HF's equivalent:
// {"tokenizer_json": path} or {"vocab": path, "lowercase": bool}.
type paritySetup struct {
	name string
	load func(t *testing.T) *wordpiece.Tokenizer
	src  map[string]any
}

// paritySetups are the tokenizer.json path and the vocab.txt path, uncased
// and cased.
func paritySetups() []paritySetup {
	no := false
	cased := wordpiece.DefaultConfig()
	cased.Lowercase, cased.StripAccents = false, &no
	return []paritySetup{
		{"tokenizer.json", func(t *testing.T) *wordpiece.Tokenizer {
			tk, err := wordpiece.LoadTokenizerJSON(testenv.NeedTokenizerJSON(t), -1)
			if err != nil {
				t.Fatal(err)
			}
			return tk
		}, map[string]any{"tokenizer_json": artifacts.TokenizerJSON()}},
		{"vocab.txt", func(t *testing.T) *wordpiece.Tokenizer {
			tk, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), wordpiece.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			return tk
		}, map[string]any{"vocab": artifacts.VocabTxt(), "lowercase": true}},
		{"vocab.txt-cased", func(t *testing.T) *wordpiece.Tokenizer {
			tk, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(t), cased)
			if err != nil {
				t.Fatal(err)
			}
			return tk
		}, map[string]any{"vocab": artifacts.VocabTxt(), "lowercase": false}},
	}
}

// TestParityHF compares ids, type ids and masks with HF tokenizers for the
// tokenizer.json and vocab.txt paths, max lengths 512 and 64, both
// truncation strategies, single texts and padded batches.
func TestParityHF(t *testing.T) {
	if testing.Short() {
		t.Skip("parity run against the HF library is slow; skipped with -short")
	}
	groups, singles := parityData(t)
	maxLens := []int{512, 64}
	for _, s := range paritySetups() {
		t.Run(s.name, func(t *testing.T) {
			tk := s.load(t)
			g := hfGoldens(t, s.src, groups, singles, maxLens)
			compareGoldens(t, tk, g, groups, singles, maxLens)
			// Padded batches of 16 singles, truncated at 512.
			var ids, types, mask []int64
			bad := 0
			for i := 0; i < len(singles); i += 16 {
				end := min(i+16, len(singles))
				encs := make([]wordpiece.Encoding, 0, 16)
				for _, s := range singles[i:end] {
					e, err := tk.Encode(s, maxLens[0])
					if err != nil {
						t.Fatal(err)
					}
					encs = append(encs, e)
				}
				var seqLen int
				ids, types, mask, seqLen = tk.PadBatch(encs, ids, types, mask)
				for r := range encs {
					w := g.Padded[i+r]
					if len(w.IDs) != seqLen {
						bad++
						t.Errorf("padded row %d: length %d, HF %d", i+r, seqLen, len(w.IDs))
						continue
					}
					for c := 0; c < seqLen; c++ {
						j := r*seqLen + c
						if ids[j] != int64(w.IDs[c]) || types[j] != int64(w.Types[c]) || mask[j] != int64(w.Mask[c]) {
							bad++
							t.Errorf("padded row %d col %d: ours (%d,%d,%d) HF (%d,%d,%d)", i+r, c, ids[j], types[j], mask[j], w.IDs[c], w.Types[c], w.Mask[c])
							break
						}
					}
				}
			}
			t.Logf("padded batches: %d rows, %d differ", len(singles), bad)
		})
	}
}

// compareGoldens checks our pair and single encodings against HF's goldens
// for every max length and both truncation strategies, logs the counts and
// returns how many pair encodings (HF errors included) matched out of how
// many.
func compareGoldens(t *testing.T, tk *wordpiece.Tokenizer, g *goldens, groups []group, singles []string, maxLens []int) (matched, total int) {
	t.Helper()
	for _, maxLen := range maxLens {
		for _, strat := range []wordpiece.Truncation{wordpiece.LongestFirst, wordpiece.OnlySecond} {
			key := fmt.Sprintf("%d/%s", maxLen, map[wordpiece.Truncation]string{wordpiece.LongestFirst: "LongestFirst", wordpiece.OnlySecond: "OnlySecond"}[strat])
			want := g.Pairs[key]
			k, same, bad, errs := 0, 0, 0, 0
			for gi, gr := range groups {
				batch, batchErr := tk.EncodePairs(context.Background(), gr.Q, gr.Docs, maxLen, strat)
				for di, d := range gr.Docs {
					w := want[k]
					k++
					e, err := tk.EncodePair(gr.Q, d, maxLen, strat)
					if w.Err != "" {
						errs++
						if !errors.Is(err, wordpiece.ErrSequenceTooShort) || batchErr == nil {
							bad++
							t.Errorf("%s group %d doc %d: HF error %q, ours %v / batch %v", key, gi, di, w.Err, err, batchErr)
						}
						continue
					}
					ok := err == nil && eqEnc(e, w) && batchErr == nil && eqEnc(batch[di], w)
					if ok {
						same++
						continue
					}
					bad++
					if bad <= 5 {
						t.Errorf("%s group %d doc %d mismatch (err %v, batch err %v)\n q=%s\n d=%s\n ours: %v\n       %s\n HF:   %v\n       %s\n types ours %v\n types HF   %v",
							key, gi, di, err, batchErr, short(gr.Q), short(d), e.IDs, toks(tk, e.IDs), w.IDs, toks(tk, w.IDs), e.TypeIDs, w.Types)
					}
				}
			}
			t.Logf("%s: %d pairs equal, %d HF errors matched, %d differ", key, same, errs, bad)
			matched += k - bad
			total += k
		}
		same, bad := 0, 0
		for i, s := range singles {
			w := g.Singles[strconv.Itoa(maxLen)][i]
			e, err := tk.Encode(s, maxLen)
			if err == nil && eqEnc(e, w) {
				same++
				continue
			}
			bad++
			if bad <= 5 {
				t.Errorf("single %d max %d: %s\n ours %s\n HF   %s", i, maxLen, short(s), toks(tk, e.IDs), toks(tk, w.IDs))
			}
		}
		t.Logf("singles max %d: %d equal, %d differ", maxLen, same, bad)
	}
	return matched, total
}
