// Package analysis turns text into index terms: a Unicode-aware word
// scanner, lowercasing, stopword removal, Snowball English stemming, an
// optional code-aware splitter (camelCase, snake_case, letter/digit
// boundaries) and an optional query-expansion dictionary.
//
// # Parity with bm25s
//
// DefaultConfig reproduces the tokenization of xhluca/bm25s
// (bm25s.tokenize with stopwords="en" and a PyStemmer English stemmer):
//
//  1. lowercase the text (Python str.lower);
//  2. split with the regex (?u)\b\w\w+\b, i.e. keep every maximal run of
//     two or more "word" code points, where a word code point is a Unicode
//     letter (L*), a Unicode number (N*) or '_' — the set Python's re
//     module uses for \w; combining marks (M*) are not word characters;
//  3. drop tokens found in bm25s's STOPWORDS_EN (33 words, checked before
//     stemming);
//  4. stem each remaining token with the Snowball English (Porter2)
//     stemmer; tokens of one or two code points are left unchanged.
//
// The stemmer is our own, in subpackage porter2: its output is identical
// to github.com/kljensen/snowball/english.Stem (stemStopWords=true), with
// which the bm25s parity of package bench was established, and the tests
// check that on the official Snowball vocabulary, on every token of the
// scifact, cisi and cran corpora, and by fuzzing. kljensen/snowball is a
// test dependency only, so that programs importing this package do not link
// it (its romance package imports testing).
//
// Python's full lowercase mapping is followed where it differs from Go's
// simple one: U+0130 (İ) becomes "i" followed by a word break (Python
// writes "i" + U+0307, not a word character), and capital sigma becomes
// final ς by the Final_Sigma rule. A differential test over 20,000 random
// Unicode strings and the scifact, cisi and cran corpora found no other
// difference from bm25s's regex.
//
// # Versions
//
// Version returns a string derived from every setting that changes the
// produced terms. An index stores it and refuses to be queried with an
// analyzer whose version differs, since terms would silently not match.
//
// # Concurrency and ownership
//
// An Analyzer is immutable after New apart from its internal stem cache,
// which is guarded by sharded locks; it is safe for concurrent use by any
// number of goroutines. The strings it returns are shared with the cache
// and with other results and must be treated as read-only (Go strings are
// immutable, so this holds automatically); the returned slices belong to
// the caller.
package analysis
