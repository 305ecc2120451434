// Package synth generates the seeded synthetic data of the benchmarks:
// text corpora with a Zipf vocabulary, log-normal document lengths and
// planted relevance judgments (Corpus, for the lexical scaling runs), and
// clustered vectors shaped like text embeddings (Vectors, for the dense
// runs). The same configuration, seed included, always yields the same
// data, so figures from different machines describe the same work.
//
// # Concurrency and ownership
//
// A Corpus holds only its vocabulary, queries and judgments; documents are
// generated on demand by Each, which may run on several goroutines at once.
// Returned slices are shared and read-only unless their doc says
// otherwise. Generators poll their context every 1024 items.
package synth
