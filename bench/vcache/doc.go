// Package vcache is the benchmarks' vector cache: a models.Embedder that
// remembers every vector it has computed, on disk, so that a corpus is
// embedded once per model however many drivers (dense quality, hybrid,
// real-vector HNSW sweeps) and runs read it.
//
// A vector is keyed by the model (Key: a hash of the ONNX file, the
// sentence-transformers settings, the sequence length and models/ort's
// plan for the Config, ort.Plan.Key), the input kind
// (query, document, raw: the prompts differ) and the sha256 of the text.
// Each (model, kind) pair has one append-only file of fixed-size records
// (text hash, then the float32 vector, little endian); a torn last record,
// left by a killed run, is ignored and overwritten. Texts are embedded in
// order of length, so batches pad little, and each vector is returned in
// its text's place.
//
// # Concurrency
//
// An Embedder is safe for concurrent use. The cache file has one writer
// at a time: two processes appending to the same model's file at once
// write at the offsets each saw and overwrite each other's records (a
// record lost is computed again by a later run; a batch over the 1 MiB
// write buffer could leave a record mixing two texts), so run one bench
// per cache folder at a time.
package vcache
