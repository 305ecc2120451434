package hftok

import "errors"

var (
	// ErrUnavailable: the package was built without the hftokenizers tag
	// (or without cgo), so the Rust library is not linked.
	ErrUnavailable = errors.New("hftok: Hugging Face tokenizers not linked: run `make hftokenizers-rs` and build with -tags hftokenizers (cgo on)")
	// ErrLoad: the tokenizer.json could not be read or parsed by the library.
	ErrLoad = errors.New("hftok: load tokenizer")
	// ErrEncode: the library failed to encode (the message says why).
	ErrEncode = errors.New("hftok: encode")
	// ErrMaxLen: maxLen is negative or smaller than the special tokens the
	// tokenizer adds.
	ErrMaxLen = errors.New("hftok: max length smaller than the special tokens")
	// ErrSequenceTooShort: HF's truncation error "sequence to truncate too
	// short to respect the provided max_length" (OnlySecond or OnlyFirst
	// with the other sequence alone over maxLen).
	ErrSequenceTooShort = errors.New("hftok: sequence to truncate too short for max length")
	// ErrClosed: the Tokenizer was closed.
	ErrClosed = errors.New("hftok: tokenizer closed")
)
