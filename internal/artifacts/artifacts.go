// Package artifacts locates the third-party artifacts and datasets that
// tests, benchmarks and tools need. It has no test dependencies, so commands
// (cmd/bench) use it; package internal/testenv builds the skip-or-fail
// helpers for tests on top of it.
//
// Locations come from environment variables (set by the Makefile), else from
// the default folders under the module root:
//
//	HYBRANK_ORT_LIB        .deps/ort/libonnxruntime.so.1   (make runtime)
//	HYBRANK_ASSETS         .deps/assets                   (make assets)
//	HYBRANK_HF_TOKENIZERS  .deps/node_modules/tokenizers  (make hftokenizers)
//	HYBRANK_DATASETS       ../shared/datasets
//	HYBRANK_REAL_MODELS    .deps/realmodels               (make models)
//	HYBRANK_PEERS          .deps/peers                    (make peers)
//	HYBRANK_WEAVIATE       .deps/weaviate/weaviate-server (make cluster)
//	HYBRANK_CLUSTER        .deps/cluster                  (make cluster)
//
// The functions only compute paths; none checks that the path exists.
package artifacts

import (
	"os"
	"path/filepath"
	"sync"
)

var (
	rootOnce sync.Once
	root     string
)

// ModuleRoot returns the directory holding go.mod, or "" if none is found.
func ModuleRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	return root
}

func lookup(env, rel string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	if r := ModuleRoot(); r != "" {
		return filepath.Join(r, rel)
	}
	return ""
}

// ORTLib is the path of the ONNX Runtime shared library.
func ORTLib() string { return lookup("HYBRANK_ORT_LIB", ".deps/ort/libonnxruntime.so.1") }

// Assets is the folder with vocab.txt and tokenizer.json files.
func Assets() string { return lookup("HYBRANK_ASSETS", ".deps/assets") }

// VocabTxt is the real bert-base-uncased vocab.txt.
func VocabTxt() string { return filepath.Join(Assets(), "bert-base-uncased-vocab.txt") }

// TokenizerJSON is the real all-MiniLM-L6-v2 tokenizer.json.
func TokenizerJSON() string { return filepath.Join(Assets(), "all-minilm-l6-v2-tokenizer.json") }

// BPETokenizerJSON is a byte-level BPE tokenizer.json (Cohere's, from the
// daulet/tokenizers module's test data), for the non-WordPiece path.
func BPETokenizerJSON() string { return filepath.Join(Assets(), "cohere-tokenizer.json") }

// HFTokenizers is the folder of the Hugging Face tokenizers Node addon.
func HFTokenizers() string { return lookup("HYBRANK_HF_TOKENIZERS", ".deps/node_modules/tokenizers") }

// RealModels is the folder of real model directories fetched by `make
// models` (all-minilm-l6-v2, bge-small-en-v1.5, …).
func RealModels() string { return lookup("HYBRANK_REAL_MODELS", ".deps/realmodels") }

// Datasets is the folder of BEIR-layout datasets.
func Datasets() string { return lookup("HYBRANK_DATASETS", "../shared/datasets") }

// Dataset returns the folder of one dataset (e.g. "scifact").
func Dataset(name string) string { return filepath.Join(Datasets(), name) }

// Peers is the folder of the peers' Python packages (bm25s, faiss-cpu,
// onnxruntime, tokenizers) that `make peers` installs; the benchmark
// drivers put it on PYTHONPATH.
func Peers() string { return lookup("HYBRANK_PEERS", ".deps/peers") }

// PeersMarker is the file `make peers` writes into the peers' folder last,
// after the installed packages imported: its presence means a complete
// install.
const PeersMarker = ".installed"

// Weaviate is the weaviate-server binary that `make cluster` builds (the
// version pinned in the Makefile).
func Weaviate() string { return lookup("HYBRANK_WEAVIATE", ".deps/weaviate/weaviate-server") }

// Cluster is the folder of the local Weaviate cluster that `make cluster`
// starts (package bench/cluster): its state file cluster.json, node data,
// logs and the tokenizer files of text2vec-openai.
func Cluster() string { return lookup("HYBRANK_CLUSTER", ".deps/cluster") }
