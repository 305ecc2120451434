package backend_test

import (
	"os"
	"path/filepath"
	"reflect"
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
	words := []server.Token{{ID: 5, Text: "cat"}, {ID: 7, Text: "##s"}, {ID: 6, Text: "sat"}}
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
			got, err := tok.Tokenize("Cats sat", tc.special)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Tokenize = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if n := tok.CountTokens("Cats sat"); n != 3 {
		t.Fatalf("CountTokens = %d, want 3", n)
	}
}
