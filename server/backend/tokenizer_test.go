package backend_test

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// writeVocab writes a tiny BERT vocabulary and returns its path: ids are
// line numbers, so [CLS] is 2, "cat" 5 and "##s" 7.
func writeVocab(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vocab.txt")
	vocab := "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncat\nsat\n##s\n"
	if err := os.WriteFile(path, []byte(vocab), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTokenizer(t *testing.T) {
	wp, err := wordpiece.LoadVocab(writeVocab(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tok := backend.NewTokenizer(wp)
	// Texts are the input's slices and offsets are bytes, as TEI's.
	words := []server.Token{{ID: 5, Text: "Cat", Start: 0, Stop: 3}, {ID: 7, Text: "s", Start: 3, Stop: 4}, {ID: 6, Text: "sät", Start: 5, Stop: 9}}
	tests := []struct {
		name    string
		special bool
		want    []server.Token
	}{
		{"plain", false, words},
		{"special", true, append(append([]server.Token{{ID: 2, Text: "[CLS]", Special: true}}, words...), server.Token{ID: 3, Text: "[SEP]", Special: true})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tok.Tokenize("Cats sät", tc.special)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Tokenize = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if n := tok.CountTokens("Cats sat"); n != 3 {
		t.Fatalf("CountTokens = %d, want 3", n)
	}
}

// TestTokenizeRoute drives /tokenize over the WordPiece adapter: TEI's
// shape, with byte offsets into the input for word pieces and null offsets
// for the special tokens.
func TestTokenizeRoute(t *testing.T) {
	wp, err := wordpiece.LoadVocab(writeVocab(t), wordpiece.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.DefaultConfig(), server.Services{Tokenizer: backend.NewTokenizer(wp)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := ts.Client().Post(ts.URL+"/tokenize", "application/json", strings.NewReader(`{"inputs": ["Cats sät", "sat"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `[[{"id":2,"text":"[CLS]","special":true,"start":null,"stop":null},` +
		`{"id":5,"text":"Cat","special":false,"start":0,"stop":3},` +
		`{"id":7,"text":"s","special":false,"start":3,"stop":4},` +
		`{"id":6,"text":"sät","special":false,"start":5,"stop":9},` +
		`{"id":3,"text":"[SEP]","special":true,"start":null,"stop":null}],` +
		`[{"id":2,"text":"[CLS]","special":true,"start":null,"stop":null},` +
		`{"id":6,"text":"sat","special":false,"start":0,"stop":3},` +
		`{"id":3,"text":"[SEP]","special":true,"start":null,"stop":null}]]`
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("/tokenize %d:\n%s\nwant\n%s", resp.StatusCode, body, want)
	}
}
