package backend

import (
	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/server"
)

// Tokenizer serves a WordPiece tokenizer as the server's Tokenizer
// (/tokenize, truncation and input-length checks). It is safe for
// concurrent use, as the wordpiece.Tokenizer is.
type Tokenizer struct {
	t *wordpiece.Tokenizer
}

var _ server.Tokenizer = Tokenizer{}

// NewTokenizer returns t as a server.Tokenizer.
func NewTokenizer(t *wordpiece.Tokenizer) Tokenizer { return Tokenizer{t: t} }

// CountTokens counts text's word pieces, special tokens excluded.
func (t Tokenizer) CountTokens(text string) int { return t.t.CountTokens(text) }

// Tokenize returns text's word pieces, framed by [CLS] and [SEP] when
// addSpecial is set and the vocabulary has them. Offsets are not tracked
// (Start and Stop are 0).
func (t Tokenizer) Tokenize(text string, addSpecial bool) ([]server.Token, error) {
	ids := t.t.IDs(nil, text)
	out := make([]server.Token, 0, len(ids)+2)
	special := func(tok string) {
		if id, ok := t.t.TokenToID(tok); ok {
			out = append(out, server.Token{ID: int(id), Text: tok, Special: true})
		}
	}
	if addSpecial {
		special("[CLS]")
	}
	for _, id := range ids {
		out = append(out, server.Token{ID: int(id), Text: t.t.IDToToken(id)})
	}
	if addSpecial {
		special("[SEP]")
	}
	return out, nil
}
