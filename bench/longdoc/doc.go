// Package longdoc is `bench longdoc`: what chunked scoring (models.Chunking)
// gains over truncation on documents far longer than a model's window, and
// what it costs.
//
// The collection is built from a BEIR dataset (scifact) by Build: every
// relevant abstract of a judged query is buried at a random, seeded
// position between whole unjudged documents, in a long document of 2,000
// to 4,000 tokens; distractors of the same length hold no relevant text. A
// query's candidates are its relevant long documents and the distractors,
// and every ranking of them is scored by nDCG@10.
//
// No real cross-encoder weights are available, and a generated one scores
// at random, so quality is measured with a real bi-encoder
// (all-MiniLM-L6-v2, a 256-token window): cosine of the query and the
// truncated document, or of the query and each window (the bi-encoder's
// chunking path, Embedder.EmbedSpans), aggregated by max or by the mean of
// the top k. The generated cross-encoder (balanced profile) gives the
// speed and cost rows, marked real_weights=false: truncated and chunked
// (models.SpanReranker) at a few strides and caps, pairs scored and time.
//
// Run is sequential; Config and Result are plain values.
package longdoc
