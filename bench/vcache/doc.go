// Package vcache is the benchmarks' vector cache: a models.Embedder that
// remembers every vector it has computed, on disk, so that a corpus is
// embedded once per model however many drivers (dense quality, hybrid,
// real-vector HNSW sweeps) and runs read it.
//
// A vector is keyed by the model (Key: a hash of the ONNX file, the
// sentence-transformers settings and the sequence length), the input kind
// (query, document, raw: the prompts differ) and the sha256 of the text.
// Each (model, kind) pair has one append-only file of fixed-size records
// (text hash, then the float32 vector, little endian); a torn last record,
// left by a killed run, is ignored and overwritten. Texts are embedded in
// order of length, so batches pad little, and each vector is returned in
// its text's place.
//
// # Concurrency
//
// An Embedder is safe for concurrent use; two processes sharing a folder
// at once may each embed the same texts (both records are valid; the
// later one wins on the next open).
package vcache
