// Package wordpiece is a BERT WordPiece tokenizer in pure Go that produces
// exactly the ids, token type ids and attention masks of Hugging Face's Rust
// tokenizers library (0.23) for BERT-style tokenizers.
//
// # Pipeline
//
// A Tokenizer is built from a tokenizer.json (LoadTokenizerJSON) or a plain
// vocab.txt plus a Config (LoadVocab; DefaultConfig is bert-base-uncased).
// Text goes through the same stages as in HF:
//
//  1. Added tokens: special tokens such as [SEP] or [MASK] that appear
//     verbatim in the raw text become their own id (leftmost-longest).
//  2. BertNormalizer: clean_text (drop U+0000, U+FFFD and Cc/Cf/Co control
//     characters except \t \n \r; map White_Space characters to ' '), spaces
//     around CJK ideographs, strip accents (NFD, drop Mn marks; follows
//     lowercase when unset), lowercase (Rust char::to_lowercase: 'İ' becomes
//     "i̇", 'Σ' is always 'σ').
//  3. BertPreTokenizer: split on whitespace, isolate every punctuation
//     character (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*).
//  4. WordPiece: greedy longest match first with the "##" continuation
//     prefix; a word with an unmatched rest, or longer than
//     max_input_chars_per_word characters, becomes [UNK].
//  5. Truncation: like HF 0.23, each sequence stops being tokenized at the
//     first pre-token boundary at or past max_length tokens; those lengths
//     decide which of two long sequences keeps the extra token.
//  6. Post-processing: [CLS] A [SEP] or [CLS] A [SEP] B [SEP] with type ids
//     from the template, after truncation with HF's truncate_encodings
//     (LongestFirst, OnlySecond, OnlyFirst) to a max length that counts the
//     special tokens.
//
// Character classes follow HF's tables, which are older than Go's Unicode
// tables; the exceptions are listed in unicode.go and checked for every code
// point against the real library by TestUnicodeParityHF.
//
// # Offsets
//
// TokenSpans gives each token the bytes of the original text it came from,
// with the same ids as IDs and the offsets of HF's Encoding (HF reports
// them in bytes; its Node and Python bindings convert them to characters).
// It is a separate, allocating path that normalises with alignment; the
// id paths above do not track offsets and are unchanged by it.
//
// # Invalid UTF-8
//
// Go strings may hold invalid UTF-8, JavaScript and Rust strings cannot. Each
// invalid byte decodes to U+FFFD (as Go's range loop does), which clean_text
// then removes; with clean_text off, U+FFFD is kept and tokenized like any
// other character. Bad input never panics.
//
// # Concurrency and ownership
//
// A Tokenizer is immutable after construction and safe for concurrent use.
// Scratch buffers come from a sync.Pool, and words that need several pieces
// are cached in a bounded, sharded, mutex-guarded cache. Encodings returned
// to the caller are owned by the caller; those from one EncodePairs call
// share backing arrays. PadBatch reuses the destination slices it is given.
//
// # Speed
//
// Text is processed in 4 KiB chunks cut at ASCII spaces, so a long document
// truncated to 512 tokens is not normalised to its end. ASCII text is
// normalised with byte tables in one pass; a whole word found in
// the vocabulary costs one map lookup with no allocation; only non-ASCII text
// pays for NFD and rune decoding.
package wordpiece
