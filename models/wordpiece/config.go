package wordpiece

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Callers test them with errors.Is.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("wordpiece: invalid config")
	// ErrVocab reports an unreadable or inconsistent vocabulary (missing
	// [UNK], duplicate or empty tokens, too many entries).
	ErrVocab = errors.New("wordpiece: invalid vocabulary")
	// ErrUnsupported reports a tokenizer.json that uses a component or an
	// option this package does not implement (e.g. a BPE model, a
	// non-BERT normalizer, left truncation, normalized added tokens).
	ErrUnsupported = errors.New("wordpiece: unsupported tokenizer.json feature")
	// ErrMaxLen reports a max length too small to hold the special tokens
	// the post-processor adds (3 for a BERT pair, 2 for a single text).
	ErrMaxLen = errors.New("wordpiece: max length smaller than the special tokens")
	// ErrSequenceTooShort mirrors HF's TruncationError::SequenceTooShort:
	// with OnlySecond, the second sequence cannot be cut enough to fit.
	ErrSequenceTooShort = errors.New("wordpiece: sequence to truncate too short for max length")
)

// Truncation selects how a pair that is too long is cut, as in HF tokenizers.
type Truncation uint8

const (
	// LongestFirst cuts the longer sequence first (HF "longest_first").
	LongestFirst Truncation = iota
	// OnlySecond cuts only the second sequence (HF "only_second").
	OnlySecond
	// OnlyFirst cuts only the first sequence (HF "only_first").
	OnlyFirst
)

// String returns the HF name of the strategy.
func (t Truncation) String() string {
	switch t {
	case LongestFirst:
		return "longest_first"
	case OnlySecond:
		return "only_second"
	case OnlyFirst:
		return "only_first"
	}
	return fmt.Sprintf("Truncation(%d)", uint8(t))
}

// ParseTruncation parses an HF strategy name ("longest_first",
// "only_second", "only_first"; the CamelCase forms of tokenizer.json too).
func ParseTruncation(s string) (Truncation, error) {
	switch s {
	case "longest_first", "LongestFirst":
		return LongestFirst, nil
	case "only_second", "OnlySecond":
		return OnlySecond, nil
	case "only_first", "OnlyFirst":
		return OnlyFirst, nil
	}
	return 0, fmt.Errorf("%w: unknown truncation strategy %q", ErrConfig, s)
}

// Config describes a BERT WordPiece tokenizer built from a plain vocab.txt.
// A tokenizer.json carries its own settings and only uses WordCacheSize.
type Config struct {
	// Lowercase lowercases the text (BertNormalizer lowercase).
	Lowercase bool
	// StripAccents removes accents (NFD, then drop Mn marks). nil follows
	// Lowercase, as HF does for strip_accents: null.
	StripAccents *bool
	// CleanText drops control characters, U+0000 and U+FFFD and maps every
	// whitespace character to ' ' (BertNormalizer clean_text).
	CleanText bool
	// HandleChineseChars puts spaces around CJK ideographs so each one is a
	// word of its own.
	HandleChineseChars bool
	// UnkToken replaces words that cannot be split into vocabulary pieces.
	UnkToken string
	// ClsToken and SepToken frame sequences: [CLS] A [SEP] (B [SEP]).
	ClsToken, SepToken string
	// PadToken is the padding token; its id pads batches.
	PadToken string
	// SpecialTokens are matched verbatim in the raw text before
	// normalisation (HF added tokens with normalized=false), as
	// BertWordPieceTokenizer does for [UNK] [SEP] [CLS] [PAD] [MASK]. Tokens
	// missing from the vocabulary are ignored.
	SpecialTokens []string
	// ContinuingSubwordPrefix marks pieces that continue a word ("##").
	ContinuingSubwordPrefix string
	// MaxInputCharsPerWord maps longer words (counted in characters after
	// normalisation) to UnkToken.
	MaxInputCharsPerWord int
	// PadToMultipleOf rounds a padded batch's length up to a multiple of
	// this (0 or 1: no rounding).
	PadToMultipleOf int
	// WordCacheSize bounds the cache of words that need several pieces
	// (entries; 0 disables it). Whole-word vocabulary hits never use it.
	WordCacheSize int
}

// DefaultConfig returns bert-base-uncased behaviour.
func DefaultConfig() Config {
	return Config{
		Lowercase:               true,
		CleanText:               true,
		HandleChineseChars:      true,
		UnkToken:                "[UNK]",
		ClsToken:                "[CLS]",
		SepToken:                "[SEP]",
		PadToken:                "[PAD]",
		SpecialTokens:           []string{"[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"},
		ContinuingSubwordPrefix: "##",
		MaxInputCharsPerWord:    100,
		WordCacheSize:           1 << 16,
	}
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	switch {
	case c.UnkToken == "":
		return fmt.Errorf("%w: UnkToken is empty", ErrConfig)
	case c.ClsToken == "" || c.SepToken == "":
		return fmt.Errorf("%w: ClsToken and SepToken must be set", ErrConfig)
	case c.MaxInputCharsPerWord <= 0:
		return fmt.Errorf("%w: MaxInputCharsPerWord %d must be positive", ErrConfig, c.MaxInputCharsPerWord)
	case c.PadToMultipleOf < 0:
		return fmt.Errorf("%w: PadToMultipleOf %d is negative", ErrConfig, c.PadToMultipleOf)
	case c.WordCacheSize < 0:
		return fmt.Errorf("%w: WordCacheSize %d is negative", ErrConfig, c.WordCacheSize)
	}
	for _, s := range c.SpecialTokens {
		if s == "" {
			return fmt.Errorf("%w: empty special token", ErrConfig)
		}
	}
	return nil
}

// stripAccents resolves the StripAccents default.
func (c Config) stripAccents() bool {
	if c.StripAccents != nil {
		return *c.StripAccents
	}
	return c.Lowercase
}
