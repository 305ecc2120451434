// Package hftok runs Hugging Face's tokenizers library (the Rust crate,
// pinned in rust/Cargo.lock) in process through cgo. It is the reference our
// pure-Go WordPiece tokenizer (package models/wordpiece) is checked and timed
// against, and the loader for tokenizer.json files that are not WordPiece
// (BPE, Unigram: RoBERTa, XLM-R and other models), which package models/ort
// falls back to.
//
// # Build tag
//
// The Rust library is a static archive that `make hftokenizers-rs` builds
// with cargo into .deps/hftok/libhftok.a (a few minutes on two cores; not a
// prerequisite of `make test`). Only builds with the tag link it:
//
//	make hftokenizers-rs
//	go test -tags hftokenizers ./models/hftok
//
// The go command does not hash the archive: after changing rust/src/lib.rs
// and rebuilding it, rebuild Go binaries with -a (tests too) so that none
// links a stale copy.
//
// Without the tag (or without cgo) the package still compiles: Load returns
// ErrUnavailable, whose message names the tag and the make target, and
// Available is false. Programs that never meet a non-WordPiece tokenizer.json
// need neither.
//
// # Encoding
//
// Encode and EncodePair add the tokenizer's special tokens and truncate to
// maxLen tokens (special tokens included; 0 = no truncation) with HF's own
// truncation, so LongestFirst ties, early stopping and errors are HF's.
// Padding from tokenizer.json is turned off: callers pad batches themselves
// with PadID. Tokenize returns the tokens of a text without special tokens,
// with byte offsets into the text.
//
// Go strings may hold invalid UTF-8, Rust strings cannot: each invalid byte
// is replaced by U+FFFD first (as Go's range loop and encoding/json do, so
// the results equal those of the wordpiece package and of the Node addon fed
// through JSON); offsets then index the replaced text.
//
// # Concurrency and lifetime
//
// A Tokenizer is safe for concurrent use; HF encodes with &self, and the
// per-(max length, strategy) tokenizer clones the library needs are cached
// behind a lock on the Rust side. Close frees the native tokenizer: it waits
// for in-flight calls, is idempotent, and later calls return ErrClosed.
// Encodings are Go memory owned by the caller.
package hftok
