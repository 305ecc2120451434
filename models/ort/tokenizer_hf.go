package ort

import (
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/hftok"
)

// hfEncoder adapts *hftok.Tokenizer (Hugging Face's library, safe for
// concurrent use) for tokenizer.json files our WordPiece tokenizer does not
// handle. Unlike wpEncoder it owns native memory: core.close frees it.
type hfEncoder struct {
	t *hftok.Tokenizer
}

func (h hfEncoder) pair(q, d string, maxLen int) (seq, error) {
	e, err := h.t.EncodePair(q, d, maxLen, pairTruncation)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

func (h hfEncoder) single(text string, maxLen int) (seq, error) {
	e, err := h.t.Encode(text, maxLen)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

// cutQuery cuts q at the end offset of its maxTokens-th token. A BPE or
// Unigram prefix can tokenize differently from the whole (a character split
// into byte tokens, a word cut mid-way), so the cut is re-counted and moved
// one token back until it fits. On error (a closed tokenizer) q is returned
// and the pair call that follows reports it.
func (h hfEncoder) cutQuery(q string, maxTokens int) string {
	e, err := h.t.Tokenize(q)
	if err != nil || e.Len() <= maxTokens {
		return q
	}
	for k := maxTokens; k > 0; k-- {
		cut := q[:e.Offsets[k-1][1]]
		if h.countTokens(cut) <= maxTokens {
			return cut
		}
	}
	return ""
}

// countTokens returns the number of tokens of text without special tokens
// (0 on error: only a closed tokenizer fails here).
func (h hfEncoder) countTokens(text string) int {
	e, err := h.t.Tokenize(text)
	if err != nil {
		return 0
	}
	return e.Len()
}

// offsets are the tokens' byte offsets as Hugging Face's library reports
// them (a byte-level BPE token may include the space before it, so
// windows then cut between tokens rather than at whitespace).
func (h hfEncoder) offsets(text string) ([]models.Span, error) {
	e, err := h.t.Tokenize(text)
	if err != nil {
		return nil, err
	}
	out := make([]models.Span, len(e.Offsets))
	for i, o := range e.Offsets {
		out[i] = models.Span{Start: o[0], End: o[1]}
	}
	return out, nil
}

// padID is the tokenizer's pad id, 0 when it has none (padding is masked,
// so any valid id does).
func (h hfEncoder) padID() int64 {
	if p := h.t.PadID(); p >= 0 {
		return int64(p)
	}
	return 0
}

func (h hfEncoder) close() error { return h.t.Close() }
