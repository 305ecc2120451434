// Package peers runs the programs hybrank is measured against (bm25s,
// faiss-cpu, ONNX Runtime's Python package with Hugging Face tokenizers,
// PyTorch on a GPU) from the benchmark drivers, in the same process run
// and on the same data and files. The harness scripts live beside this
// file (README.md lists them) and are embedded, so the bench binary runs
// from anywhere; the packages are those `make peers` installs into
// HYBRANK_PEERS, which goes on PYTHONPATH (New), or for the torch peer the
// interpreter's own (NewSystem).
//
// A script writes its raw output (a run file, neighbour ids, scores) to
// files and its timings as one JSON line on stdout. Runner.Run runs a
// script and decodes that line; BM25s, FaissHNSW and Rerank (the ORT and
// torch scripts) are the typed calls of the scripts, which also read the
// raw output back
// (ReadRun, ReadInt64s, ReadFloat32s) so that the drivers compute every
// metric with the same code as for hybrank.
//
// StartInference runs the one peer that is a server, not a script that
// exits: weaviate_inference.py, Weaviate's text2vec-transformers and
// reranker-transformers containers reproduced (FastAPI, sentence-
// transformers, PyTorch), from the packages `make peers-weaviate` installs
// into their own folder (InferenceConfig); InferenceCmd is its command for
// a caller that owns the process (make cluster). An Inference is stopped
// by Close, or killed by Kill as a crash would.
//
// # Errors
//
// New fails with ErrNotInstalled, naming `make peers` (or the Config's
// Target), when the packages folder lacks the marker a complete install
// leaves; a script that cannot import a package fails the same way; a
// missing interpreter is ErrNoPython; output that cannot be read is
// ErrOutput. StartInference reports the same errors, and a peer that exits
// during start with the end of its stderr.
//
// # Concurrency
//
// Config is a plain value. A Runner is safe for concurrent use: each call
// runs in its own temporary folder, removed when it returns. The drivers
// run peers one at a time, after their own measurements, so the timings
// do not disturb each other. A cancelled context kills the script; for
// StartInference it bounds the start only (the peer runs until Close).
package peers
