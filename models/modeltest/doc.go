// Package modeltest has deterministic stand-ins for models.Reranker and
// models.Embedder, for the tests of what calls models (the queue, the
// server): every score and vector can be recomputed from the text
// (PairScore, Vector, RawVector), every call is recorded, and a call can
// be delayed, held or failed (Scorer's fields). Not for production: the
// scores are word overlaps and the vectors hashes.
package modeltest
