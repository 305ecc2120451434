// Package tokenize is the driver of `bench tokenize`: pairs/s and tokens/s
// of hybrank's WordPiece tokenizer (models/wordpiece) against Hugging
// Face's Rust tokenizers run through its Node addon on the same (query,
// document) pairs, with the parity of their ids checked against a target.
//
// Run(ctx, Config) measures both sides on one thread each (HF in a node
// child process, timed around its encode calls only) and returns the rows,
// the parity and the checks; Report renders bench/results/tokenize.md.
// Without the addon (Config.HFAddon "") only our rows are measured.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. Run measures on one goroutine and
// shares nothing with other calls.
package tokenize
