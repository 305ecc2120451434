package wordpiece_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/models/wordpiece"
)

// smallVocab is a hand-made vocabulary; ids are line numbers.
const smallVocab = `[PAD]
[UNK]
[CLS]
[SEP]
[MASK]
the
un
##aff
##able
aff
##a
a
b
,
.
!
中
i
##̇
σ
straße
strasse
cafe
café
hello
world
$
`

func newSmall(t testing.TB, mut func(*wordpiece.Config)) *wordpiece.Tokenizer {
	t.Helper()
	cfg := wordpiece.DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	tk, err := wordpiece.NewFromVocab(strings.NewReader(smallVocab), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTokens(t *testing.T) {
	no := false
	tests := []struct {
		name string
		mut  func(*wordpiece.Config)
		in   string
		want []string
	}{
		{"empty", nil, "", []string{}},
		{"whitespace only", nil, " \t\n\r\u00a0\u3000", []string{}},
		{"greedy longest match", nil, "unaffable", []string{"un", "##aff", "##able"}},
		{"lowercase", nil, "THE Hello", []string{"the", "hello"}},
		{"unknown piece makes word unk", nil, "unaffablez the", []string{"[UNK]", "the"}},
		{"punctuation isolated", nil, "hello,world!", []string{"hello", ",", "world", "!"}},
		{"ascii symbols are punctuation", nil, "a$b", []string{"a", "$", "b"}},
		{"strip accents", nil, "Café", []string{"cafe"}},
		{"keep accents", func(c *wordpiece.Config) { c.StripAccents = &no }, "Café", []string{"café"}},
		{"cjk padded", nil, "a中b", []string{"a", "中", "b"}},
		{"control chars removed", nil, "he\x00llo\u200b \x07world", []string{"hello", "world"}},
		{"invalid utf8 dropped", nil, "hel\xffl\xc3o", []string{"hello"}},
		{"special token verbatim", nil, "a[MASK]b [SEP]", []string{"a", "[MASK]", "b", "[SEP]"}},
		{"special token case sensitive", nil, "[mask]", []string{"[UNK]", "[UNK]", "[UNK]"}},
		{"dotted capital I no strip", func(c *wordpiece.Config) { c.StripAccents = &no }, "İ", []string{"i", "##̇"}},
		{"dotted capital I strip", nil, "İ", []string{"i"}},
		{"sigma never final", nil, "Σ", []string{"σ"}},
		{"eszett kept", nil, "Straße", []string{"straße"}},
		{"cased", func(c *wordpiece.Config) { c.Lowercase = false; c.StripAccents = &no }, "The the", []string{"[UNK]", "the"}},
		{"long word unk", nil, strings.Repeat("a", 101), []string{"[UNK]"}},
		{"100 chars ok", nil, strings.Repeat("a", 100), append([]string{"a"}, repeat("##a", 99)...)},
		{"max chars counted in runes", func(c *wordpiece.Config) { c.MaxInputCharsPerWord = 2 }, "中中 aa aaa", []string{"中", "中", "a", "##a", "[UNK]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newSmall(t, tt.mut)
			got := tk.Tokens(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if n := tk.CountTokens(tt.in); n != len(tt.want) {
				t.Errorf("CountTokens = %d, want %d", n, len(tt.want))
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestEncodePair(t *testing.T) {
	tk := newSmall(t, nil)
	tests := []struct {
		name      string
		q, d      string
		maxLen    int
		strat     wordpiece.Truncation
		wantIDs   []int32
		wantTypes []int32
		wantErr   error
	}{
		{"no truncation", "the a", "b", 0, wordpiece.LongestFirst,
			[]int32{2, 5, 11, 3, 12, 3}, []int32{0, 0, 0, 0, 1, 1}, nil},
		{"longest first cuts longer", "the", "a b a b", 6, wordpiece.LongestFirst,
			[]int32{2, 5, 3, 11, 12, 3}, []int32{0, 0, 0, 1, 1, 1}, nil},
		{"longest first tie gives second the extra", "a a a", "b b b", 6, wordpiece.LongestFirst,
			[]int32{2, 11, 3, 12, 12, 3}, []int32{0, 0, 0, 1, 1, 1}, nil},
		{"only second", "a a", "b b b", 6, wordpiece.OnlySecond,
			[]int32{2, 11, 11, 3, 12, 3}, []int32{0, 0, 0, 0, 1, 1}, nil},
		{"only second too short", "a a a a", "b", 6, wordpiece.OnlySecond, nil, nil, wordpiece.ErrSequenceTooShort},
		{"max len below specials", "a", "b", 2, wordpiece.LongestFirst, nil, nil, wordpiece.ErrMaxLen},
		{"max len equals specials", "a", "b", 3, wordpiece.LongestFirst,
			[]int32{2, 3, 3}, []int32{0, 0, 1}, nil},
		{"empty both", "", "", 512, wordpiece.LongestFirst,
			[]int32{2, 3, 3}, []int32{0, 0, 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := tk.EncodePair(tt.q, tt.d, tt.maxLen, tt.strat)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.IDs, tt.wantIDs) || !reflect.DeepEqual(e.TypeIDs, tt.wantTypes) {
				t.Errorf("got %v %v, want %v %v", e.IDs, e.TypeIDs, tt.wantIDs, tt.wantTypes)
			}
			batch, err := tk.EncodePairs(context.Background(), tt.q, []string{tt.d, tt.d}, tt.maxLen, tt.strat)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range batch {
				if !reflect.DeepEqual(b, e) {
					t.Errorf("EncodePairs %v != EncodePair %v", b, e)
				}
			}
		})
	}
}

func TestEncodeSingle(t *testing.T) {
	tk := newSmall(t, nil)
	e, err := tk.Encode("the a b a", 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{2, 5, 11, 3}; !reflect.DeepEqual(e.IDs, want) {
		t.Errorf("IDs = %v, want %v", e.IDs, want)
	}
	if _, err := tk.Encode("a", 1); !errors.Is(err, wordpiece.ErrMaxLen) {
		t.Errorf("err = %v, want ErrMaxLen", err)
	}
}

func TestPadBatch(t *testing.T) {
	tk := newSmall(t, func(c *wordpiece.Config) { c.PadToMultipleOf = 4 })
	e1, _ := tk.EncodePair("the", "a b", 0, wordpiece.LongestFirst)
	e2, _ := tk.Encode("a", 0)
	ids, types, mask, n := tk.PadBatch([]wordpiece.Encoding{e1, e2}, nil, nil, nil)
	if n != 8 {
		t.Fatalf("seqLen = %d, want 8 (6 rounded up to 4)", n)
	}
	wantIDs := []int64{2, 5, 3, 11, 12, 3, 0, 0, 2, 11, 3, 0, 0, 0, 0, 0}
	wantTypes := []int64{0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	wantMask := []int64{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0}
	if !reflect.DeepEqual(ids, wantIDs) || !reflect.DeepEqual(types, wantTypes) || !reflect.DeepEqual(mask, wantMask) {
		t.Errorf("got\n%v\n%v\n%v", ids, types, mask)
	}
	// Reuse: a big enough buffer is not reallocated.
	ids2, _, _, _ := tk.PadBatch([]wordpiece.Encoding{e2}, ids, types, mask)
	if &ids2[0] != &ids[0] {
		t.Error("PadBatch did not reuse the destination")
	}
	if _, _, _, n := tk.PadBatch(nil, nil, nil, nil); n != 0 {
		t.Errorf("empty batch seqLen = %d", n)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*wordpiece.Config)
		ok   bool
	}{
		{"default", func(*wordpiece.Config) {}, true},
		{"no unk", func(c *wordpiece.Config) { c.UnkToken = "" }, false},
		{"no cls", func(c *wordpiece.Config) { c.ClsToken = "" }, false},
		{"zero max chars", func(c *wordpiece.Config) { c.MaxInputCharsPerWord = 0 }, false},
		{"negative cache", func(c *wordpiece.Config) { c.WordCacheSize = -1 }, false},
		{"empty special", func(c *wordpiece.Config) { c.SpecialTokens = []string{""} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wordpiece.DefaultConfig()
			tt.mut(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, ok want %v", err, tt.ok)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := wordpiece.NewFromVocab(strings.NewReader("a\nb\n"), wordpiece.DefaultConfig()); !errors.Is(err, wordpiece.ErrVocab) {
		t.Errorf("vocab without [UNK]: err = %v", err)
	}
	for name, js := range map[string]string{
		"bpe":      `{"model":{"type":"BPE","vocab":{}}}`,
		"bad json": `{`,
		"no pretok": `{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0}},
			"normalizer":{"type":"BertNormalizer"}}`,
		"normalized added": `{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0}},
			"pre_tokenizer":{"type":"BertPreTokenizer"},
			"added_tokens":[{"id":0,"content":"[UNK]","normalized":true}]}`,
	} {
		if _, err := wordpiece.ParseTokenizerJSON([]byte(js), 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := wordpiece.LoadVocab("/nonexistent/vocab.txt", wordpiece.DefaultConfig()); err == nil {
		t.Error("missing file: no error")
	}
}

func TestParseTokenizerJSONBertProcessing(t *testing.T) {
	js := `{"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
		"max_input_chars_per_word":100,"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"hi":3,"##x":4}},
		"normalizer":{"type":"BertNormalizer","lowercase":true},
		"pre_tokenizer":{"type":"BertPreTokenizer"},
		"post_processor":{"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",1]}}`
	tk, err := wordpiece.ParseTokenizerJSON([]byte(js), 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tk.EncodePair("HIx", "hi", 0, wordpiece.LongestFirst)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 3, 4, 2, 3, 2}; !reflect.DeepEqual(e.IDs, want) {
		t.Errorf("IDs = %v, want %v", e.IDs, want)
	}
}

func TestConcurrent(t *testing.T) {
	tk := newSmall(t, func(c *wordpiece.Config) { c.WordCacheSize = 8 })
	want := tk.Tokens("unaffable café aaaa THE 中, b!")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if got := tk.Tokens("unaffable café aaaa THE 中, b!"); !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent Tokens = %q, want %q", got, want)
					return
				}
				_ = tk.CountTokens(strings.Repeat("unaffable ", i%7))
			}
		}()
	}
	wg.Wait()
}

func TestEncodePairsContext(t *testing.T) {
	tk := newSmall(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	docs := make([]string, 2048)
	if _, err := tk.EncodePairs(ctx, "a", docs, 0, wordpiece.LongestFirst); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range edgeCases {
		f.Add(s, "d")
	}
	tk := newSmall(f, nil)
	f.Fuzz(func(t *testing.T, q, d string) {
		e, err := tk.EncodePair(q, d, 16, wordpiece.LongestFirst)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.IDs) > 16 || len(e.IDs) != len(e.TypeIDs) {
			t.Fatalf("bad encoding %v", e)
		}
		_ = tk.CountTokens(q)
	})
}

// TestTokenizerJSONBadIDs: negative ids, and ids far past the number of
// tokens, are ErrVocab (they had panicked, sized a table of MaxInt32, or
// given [UNK] the id -1).
func TestTokenizerJSONBadIDs(t *testing.T) {
	doc := func(addedID, unkID string) []byte {
		return []byte(`{"added_tokens":[{"id":` + addedID + `,"content":"[X]","special":true}],
"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"},"post_processor":null,
"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":` + unkID + `,"a":1}}}`)
	}
	if _, err := wordpiece.ParseTokenizerJSON(doc("2", "0"), 0); err != nil {
		t.Fatalf("a good file: %v", err)
	}
	for _, ids := range [][2]string{{"-1", "0"}, {"2", "2147483647"}, {"2", "-1"}, {"2147483647", "0"}} {
		if _, err := wordpiece.ParseTokenizerJSON(doc(ids[0], ids[1]), 0); !errors.Is(err, wordpiece.ErrVocab) {
			t.Errorf("added id %s, [UNK] id %s: %v, want ErrVocab", ids[0], ids[1], err)
		}
	}
}
