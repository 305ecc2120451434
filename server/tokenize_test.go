package server

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestAppendJSONString: the encoder decodes to what encoding/json's
// encoding of the same string decodes to, for strings of quotes,
// backslashes, control characters, multi-byte runes, U+2028 and bytes that
// are not UTF-8.
func TestAppendJSONString(t *testing.T) {
	pieces := []string{"a", "Z", " ", `"`, `\`, "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "中", "\u2028", "\U0001F600", "\xff", "\xe4\xb8", "</>&"}
	rng := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		var got, want string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil {
			t.Fatalf("%q: %s does not decode: %v", s, appendJSONString(nil, s), err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q: decodes to %q, encoding/json's to %q", s, got, want)
		}
	}
}

// TestTokenListsJSON: the reply encodes as TEI's token objects (null
// offsets for special tokens, [] for an input without tokens), the same
// JSON as encoding/json writes for the equivalent maps.
func TestTokenListsJSON(t *testing.T) {
	l := tokenLists{
		{{ID: 101, Text: "[CLS]", Special: true}, {ID: 7, Text: `he said "hi"`, Start: 0, Stop: 12}, {ID: 102, Text: "[SEP]", Special: true, Start: 12, Stop: 12}},
		nil,
	}
	got, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal([][]map[string]any{
		{{"id": 101, "text": "[CLS]", "special": true, "start": nil, "stop": nil},
			{"id": 7, "text": `he said "hi"`, "special": false, "start": 0, "stop": 12},
			{"id": 102, "text": "[SEP]", "special": true, "start": nil, "stop": nil}},
		{},
	})
	if string(got) != string(want) { // encoding/json sorts map keys: compare as parsed values
		var g, w any
		mustJSON(t, got, &g)
		mustJSON(t, want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
}

// TestTokenizeTokenCap: /tokenize answers 413 past max_inputs ×
// max_input_tokens tokens in one request, and serves a request at the cap.
func TestTokenizeTokenCap(t *testing.T) {
	ts := newTestServer(t, func(c *Config, _ *Services) { c.MaxInputs, c.MaxInputTokens = 2, 4 })
	code, _, body := ts.do(t, "POST", "/tokenize", "", map[string]any{"inputs": []string{"a b c d", "e f g h"}, "add_special_tokens": false})
	var toks [][]Token
	mustJSON(t, body, &toks)
	if code != 200 || len(toks) != 2 || len(toks[1]) != 4 || toks[1][3].Text != "h" || toks[1][3].Start != 6 {
		t.Fatalf("at the cap: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/tokenize", "", map[string]any{"inputs": []string{"a b c d", "e f g h i"}})
	expectError(t, code, body, 413, TypeTooLarge, "more than 8 tokens")
}

// droppingTokenizer is fakeTokenizer that keeps nothing of U+200B.
type droppingTokenizer struct{ fakeTokenizer }

func (droppingTokenizer) CountTokens(text string) int {
	return len(strings.Fields(strings.ReplaceAll(text, "\u200b", " ")))
}

// TestRerankQueryWithoutTokens: a query of characters the tokenizer drops
// is the request's 400, not an error of the batch it would share with
// other requests.
func TestRerankQueryWithoutTokens(t *testing.T) {
	ts := newTestServer(t, func(_ *Config, b *Services) { b.Tokenizer = droppingTokenizer{} })
	code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "\u200b", "documents": []string{"a cat"}})
	expectError(t, code, body, 400, TypeInvalidRequest, "no tokens")
	if code, _, body := ts.do(t, "POST", "/v1/rerank", "", map[string]any{"query": "cat", "documents": []string{"a cat"}}); code != 200 {
		t.Fatalf("a query with tokens: %d %s", code, body)
	}
}
