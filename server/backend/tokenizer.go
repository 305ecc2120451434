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
// addSpecial is set and the vocabulary has them. As with TEI, a word
// piece's Text is the slice of text it came from (original case and
// accents, no "##") and Start and Stop are its byte offsets
// (wordpiece.TokenSpans); special tokens carry their vocabulary form.
func (t Tokenizer) Tokenize(text string, addSpecial bool) ([]server.Token, error) {
	spans := t.t.TokenSpans(nil, text)
	out := make([]server.Token, 0, len(spans)+2)
	special := func(tok string) {
		if id, ok := t.t.TokenToID(tok); ok {
			out = append(out, server.Token{ID: int(id), Text: tok, Special: true})
		}
	}
	if addSpecial {
		special("[CLS]")
	}
	for _, s := range spans {
		out = append(out, server.Token{ID: int(s.ID), Text: text[s.Start:s.End], Start: s.Start, Stop: s.End})
	}
	if addSpecial {
		special("[SEP]")
	}
	return out, nil
}
