// Package modeldir is where the benchmarks get their models: the one place
// that turns a profile (fast, balanced, accurate, embed) into a model
// directory, and the driver of `bench models`.
//
// A Resolver looks a profile up as an explicit directory, else as
// ROOT/profile (ROOT from Source.Root, else $HYBRANK_MODELS, else a
// temporary folder), and when that holds no model it generates an
// architecture-exact stand-in with random weights (models/bertgen) from
// the vocabulary assets. RealWeights tells the two apart, so every report
// can say whether its quality figures mean anything; Shape gives the
// architecture for FLOP counts.
//
// Run(ctx, Config) writes every profile's directory into Config.Out.
//
// # Concurrency
//
// Config, Result and the row types are plain values: safe to share for
// reading between goroutines once built. A Resolver is for one goroutine
// (one driver run); Close removes its temporary folder and is safe to call
// twice. The other functions are safe for concurrent use on different
// directories.
package modeldir
