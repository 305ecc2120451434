//go:build !hftokenizers || !cgo

// This file stands in for hftok.go in builds without the hftokenizers tag
// (or without cgo): the Rust library is not linked, Load returns
// ErrUnavailable, and the rest of the program (the pure-Go WordPiece path)
// is unaffected. Build with -tags hftokenizers after `make hftokenizers-rs`
// to link it.

package hftok

import "github.com/hybrank/hybrank/models/wordpiece"

// Available reports whether the Rust library is linked (build tag
// hftokenizers with cgo).
const Available = false

// Tokenizer is a Hugging Face tokenizer; in this build none can be loaded.
// Safe for concurrent use (it holds nothing).
type Tokenizer struct{}

// Load returns ErrUnavailable: this build does not link the library.
func Load(path string) (*Tokenizer, error) { return nil, ErrUnavailable }

// Close does nothing.
func (t *Tokenizer) Close() error { return nil }

// PadID returns -1.
func (t *Tokenizer) PadID() int32 { return -1 }

// VocabSize returns 0.
func (t *Tokenizer) VocabSize() int { return 0 }

// AddedTokens returns 0.
func (t *Tokenizer) AddedTokens(pair bool) int { return 0 }

// Encode returns ErrUnavailable.
func (t *Tokenizer) Encode(text string, maxLen int) (Encoding, error) {
	return Encoding{}, ErrUnavailable
}

// EncodePair returns ErrUnavailable.
func (t *Tokenizer) EncodePair(a, b string, maxLen int, strat wordpiece.Truncation) (Encoding, error) {
	return Encoding{}, ErrUnavailable
}

// Tokenize returns ErrUnavailable.
func (t *Tokenizer) Tokenize(text string) (Encoding, error) { return Encoding{}, ErrUnavailable }

// Decode returns ErrUnavailable.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	return "", ErrUnavailable
}
