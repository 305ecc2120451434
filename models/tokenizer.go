package models

import (
	"fmt"

	"github.com/hybrank/hybrank/models/wordpiece"
)

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
