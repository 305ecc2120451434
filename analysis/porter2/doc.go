// Package porter2 is the Snowball English (Porter2) stemmer, written from
// the algorithm's published description: exceptional forms, R1 and R2
// (with the gener/commun/arsen prefixes), steps 0, 1a, 1b, 1c, 2, 3, 4
// and 5, consonant y marked as Y, and apostrophe handling.
//
// # Reference
//
// The output is identical to github.com/kljensen/snowball/english.Stem
// (v0.10.0) called with stemStopWords=true, which the analysis package used
// before and with which our BM25 results match bm25s (PyStemmer). Where
// that implementation reads the description in its own way, this package
// does the same, on purpose:
//
//   - words of at most two bytes (not code points) after trimming and
//     lowercasing are returned unchanged;
//   - the forms listed for after Step 1a (inning, outings, proceeded, ...)
//     are exceptions only as whole words;
//   - every leading apostrophe is removed, not just one;
//   - vowels are a e i o u y only; any other code point is a non-vowel.
//
// The tests check this against the official Snowball vocabulary, against
// kljensen/snowball on every token of the scifact, cisi and cran corpora,
// and by fuzzing.
//
// # Speed
//
// Stem works on a byte buffer on the stack (one byte per code point), with
// no regexp and no per-step allocation; a word whose stem is itself or a
// prefix of itself costs no allocation at all. Non-ASCII code points are
// carried through as a placeholder byte and put back at the end.
//
// # Concurrency
//
// Stem keeps no state and is safe for concurrent use.
package porter2
