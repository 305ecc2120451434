package models

import (
	"fmt"

	"github.com/hybrank/hybrank/models/wordpiece"
)

// pairTruncation is the cut applied to (query, document) pairs. HF's
// longest_first (what sentence-transformers' CrossEncoder uses) keeps a
// query of at most half the budget whole and cuts only the document; a
// longer query is cut to about half and the document gets the rest.
const pairTruncation = wordpiece.LongestFirst

// wpEncoder adapts *wordpiece.Tokenizer (safe for concurrent use).
type wpEncoder struct {
	t *wordpiece.Tokenizer
}

// Tokenizer loads the directory's tokenizer: tokenizer.json when present
// (as transformers' fast tokenizers do), else vocab.txt with LowerCase.
// Errors wrap ErrModelDir. The tokenizer is safe for concurrent use.
func (md ModelDir) Tokenizer() (*wordpiece.Tokenizer, error) {
	wcfg := wordpiece.DefaultConfig()
	if md.TokenizerJSON != "" {
		t, err := wordpiece.LoadTokenizerJSON(md.TokenizerJSON, wcfg.WordCacheSize)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrModelDir, err)
		}
		return t, nil
	}
	if md.VocabTxt == "" {
		return nil, fmt.Errorf("%w: %s: no tokenizer.json or vocab.txt", ErrModelDir, md.Dir)
	}
	wcfg.Lowercase = md.LowerCase
	t, err := wordpiece.LoadVocab(md.VocabTxt, wcfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelDir, err)
	}
	return t, nil
}

func loadTokenizer(md ModelDir) (encoder, error) {
	t, err := md.Tokenizer()
	if err != nil {
		return nil, err
	}
	return wpEncoder{t}, nil
}

func (w wpEncoder) pair(q, d string, maxLen int) (seq, error) {
	e, err := w.t.EncodePair(q, d, maxLen, pairTruncation)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

func (w wpEncoder) single(text string, maxLen int) (seq, error) {
	e, err := w.t.Encode(text, maxLen)
	return seq{ids: e.IDs, types: e.TypeIDs}, err
}

func (w wpEncoder) countTokens(text string) int { return w.t.CountTokens(text) }
func (w wpEncoder) padID() int64                { return int64(w.t.PadID()) }
