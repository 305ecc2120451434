// Package testenv locates the third-party artifacts and datasets that tests
// and benchmarks need, and skips a test with a message naming the fix when
// one is missing.
//
// Locations come from environment variables (set by the Makefile), else from
// the default folders under the module root:
//
//	HYBRANK_ORT_LIB        .deps/ort/libonnxruntime.so.1   (make runtime)
//	HYBRANK_ASSETS         .deps/assets                   (make assets)
//	HYBRANK_HF_TOKENIZERS  .deps/node_modules/tokenizers  (make hftokenizers)
//	HYBRANK_DATASETS       ../shared/datasets
//	HYBRANK_REAL_MODELS    .deps/realmodels               (make models)
//
// In CI (CI=true) a missing artifact fetched by the Makefile fails the test
// instead of skipping it, so a broken fetch step cannot turn into a green run.
package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
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

// HFTokenizers is the folder of the Hugging Face tokenizers Node addon.
func HFTokenizers() string { return lookup("HYBRANK_HF_TOKENIZERS", ".deps/node_modules/tokenizers") }

// RealModels is the folder of real model directories fetched by `make
// models` (all-minilm-l6-v2, bge-small-en-v1.5, …).
func RealModels() string { return lookup("HYBRANK_REAL_MODELS", ".deps/realmodels") }

// NeedRealModel returns the directory of one real model (e.g.
// "all-minilm-l6-v2") or skips the test. `make models` is not part of `make
// test`, so its absence always skips, in CI too.
func NeedRealModel(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(RealModels(), name)
	if !exists(filepath.Join(p, "config.json")) {
		t.Skipf("real model %s not found at %q: run `make models` or set HYBRANK_REAL_MODELS", name, p)
	}
	return p
}

// Datasets is the folder of BEIR-layout datasets.
func Datasets() string { return lookup("HYBRANK_DATASETS", "../shared/datasets") }

// Dataset returns the folder of one dataset (e.g. "scifact").
func Dataset(name string) string { return filepath.Join(Datasets(), name) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return p != "" && err == nil
}

// CI reports whether the tests run under CI, where fetched artifacts must exist.
func CI() bool { return os.Getenv("CI") == "true" }

// need skips (or, in CI, fails) when path is missing.
func need(t testing.TB, path, what, fix string) string {
	t.Helper()
	if !exists(path) {
		if CI() {
			t.Fatalf("%s not found at %q: run %s", what, path, fix)
		}
		t.Skipf("%s not found at %q: run %s", what, path, fix)
	}
	return path
}

// NeedORT returns the ONNX Runtime library path or skips the test.
func NeedORT(t testing.TB) string {
	return need(t, ORTLib(), "ONNX Runtime library", "`make runtime` or set HYBRANK_ORT_LIB")
}

// NeedVocabTxt returns the bert-base-uncased vocab.txt path or skips.
func NeedVocabTxt(t testing.TB) string {
	return need(t, VocabTxt(), "bert-base-uncased vocab.txt", "`make assets`")
}

// NeedTokenizerJSON returns the all-MiniLM-L6-v2 tokenizer.json path or skips.
func NeedTokenizerJSON(t testing.TB) string {
	return need(t, TokenizerJSON(), "all-MiniLM-L6-v2 tokenizer.json", "`make assets`")
}

// NeedHFTokenizers returns the HF tokenizers addon folder or skips.
func NeedHFTokenizers(t testing.TB) string {
	return need(t, filepath.Join(HFTokenizers(), "package.json"), "HF tokenizers Node addon", "`make hftokenizers`")
}

// NeedDataset returns a dataset folder or skips the test. Datasets live
// outside the repository, so their absence always skips, in CI too.
func NeedDataset(t testing.TB, name string) string {
	t.Helper()
	p := Dataset(name)
	if !exists(filepath.Join(p, "corpus.jsonl")) {
		t.Skipf("dataset %s not found at %q: set HYBRANK_DATASETS to a folder of BEIR datasets", name, p)
	}
	return p
}
