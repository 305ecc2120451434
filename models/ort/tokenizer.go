package ort

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/hftok"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// pairTruncation cuts (query, document) pairs. Queries are first cut to
// half the budget (cutQuery), so only the document is cut here: the same
// result as HF's longest_first (sentence-transformers' CrossEncoder)
// whenever the query fits in half the budget, which real queries do.
const pairTruncation = wordpiece.OnlySecond

// wpEncoder adapts *wordpiece.Tokenizer (safe for concurrent use).
type wpEncoder struct {
	t *wordpiece.Tokenizer
}

// loadTokenizer loads the directory's tokenizer: our WordPiece tokenizer
// when it can, else (a tokenizer.json it does not support: BPE, Unigram,
// other normalisers) Hugging Face's library through package hftok, which
// builds without the hftokenizers tag cannot load: the error then names the
// tag and the make target.
func loadTokenizer(md models.ModelDir) (encoder, error) {
	t, err := md.Tokenizer()
	if err == nil {
		return wpEncoder{t}, nil
	}
	if md.TokenizerJSON == "" || !errors.Is(err, wordpiece.ErrUnsupported) {
		return nil, err
	}
	h, herr := hftok.Load(md.TokenizerJSON)
	if herr != nil {
		return nil, fmt.Errorf("%w: %s: %w (WordPiece loader: %w)", models.ErrModelDir, md.TokenizerJSON, herr, err)
	}
	return hfEncoder{h}, nil
}

func (w wpEncoder) pair(q, d string, maxLen int) (seq, error) {
	e, err := w.t.EncodePair(q, d, maxLen, pairTruncation)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

func (w wpEncoder) single(text string, maxLen int) (seq, error) {
	e, err := w.t.Encode(text, maxLen)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

// cutQuery re-joins the first maxTokens word pieces of q ("##" pieces glued
// to the previous one); the pieces are normalised text, so they tokenize
// back to themselves.
func (w wpEncoder) cutQuery(q string, maxTokens int) string {
	if w.t.CountTokens(q) <= maxTokens {
		return q
	}
	var b strings.Builder
	for i, p := range w.t.Tokens(q)[:maxTokens] {
		if rest, ok := strings.CutPrefix(p, w.t.Config().ContinuingSubwordPrefix); ok && i > 0 {
			b.WriteString(rest)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (w wpEncoder) countTokens(text string) int { return w.t.CountTokens(text) }

// offsets are wordpiece.TokenSpans' byte offsets (ids exactly IDs').
func (w wpEncoder) offsets(text string) ([]models.Span, error) {
	ts := w.t.TokenSpans(nil, text)
	out := make([]models.Span, len(ts))
	for i, t := range ts {
		out[i] = models.Span{Start: t.Start, End: t.End}
	}
	return out, nil
}
func (w wpEncoder) padID() int64 { return int64(w.t.PadID()) }
