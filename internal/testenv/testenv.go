// Package testenv skips a test with a message naming the fix when a
// third-party artifact or dataset it needs is missing. Locations come from
// package internal/artifacts (environment variables set by the Makefile, else
// the default folders under the module root).
//
// In CI (CI=true) a missing artifact fetched by the Makefile fails the test
// instead of skipping it, so a broken fetch step cannot turn into a green run.
package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/internal/artifacts"
)

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
	return need(t, artifacts.ORTLib(), "ONNX Runtime library", "`make runtime` or set HYBRANK_ORT_LIB")
}

// NeedVocabTxt returns the bert-base-uncased vocab.txt path or skips.
func NeedVocabTxt(t testing.TB) string {
	return need(t, artifacts.VocabTxt(), "bert-base-uncased vocab.txt", "`make assets`")
}

// NeedTokenizerJSON returns the all-MiniLM-L6-v2 tokenizer.json path or skips.
func NeedTokenizerJSON(t testing.TB) string {
	return need(t, artifacts.TokenizerJSON(), "all-MiniLM-L6-v2 tokenizer.json", "`make assets`")
}

// NeedBPETokenizerJSON returns the byte-level BPE tokenizer.json path or skips.
func NeedBPETokenizerJSON(t testing.TB) string {
	return need(t, artifacts.BPETokenizerJSON(), "BPE tokenizer.json (cohere-tokenizer.json)", "`make assets`")
}

// NeedHFTokenizers returns the HF tokenizers addon folder or skips.
func NeedHFTokenizers(t testing.TB) string {
	return need(t, filepath.Join(artifacts.HFTokenizers(), "package.json"), "HF tokenizers Node addon", "`make hftokenizers`")
}

// NeedDataset returns a dataset folder or skips the test. Datasets live
// outside the repository, so their absence always skips, in CI too.
func NeedDataset(t testing.TB, name string) string {
	t.Helper()
	p := artifacts.Dataset(name)
	if !exists(filepath.Join(p, "corpus.jsonl")) {
		t.Skipf("dataset %s not found at %q: set HYBRANK_DATASETS to a folder of BEIR datasets", name, p)
	}
	return p
}

// NeedRealModel returns the directory of one real model (e.g.
// "all-minilm-l6-v2") or skips the test. `make models` is not part of `make
// test`, so its absence always skips, in CI too.
func NeedRealModel(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(artifacts.RealModels(), name)
	if !exists(filepath.Join(p, "config.json")) {
		t.Skipf("real model %s not found at %q: run `make models` or set HYBRANK_REAL_MODELS", name, p)
	}
	return p
}

// NeedPeers returns the folder of the peers' Python packages or skips the
// test. The peers are not part of `make test` (only of `make bench`), so
// their absence always skips, in CI too.
func NeedPeers(t testing.TB) string {
	t.Helper()
	p := artifacts.Peers()
	if !exists(filepath.Join(p, artifacts.PeersMarker)) {
		t.Skipf("peers not installed at %q: run `make peers` or set HYBRANK_PEERS", p)
	}
	return p
}

// NeedWeaviate returns the weaviate-server binary or skips the test. `make
// cluster` (which builds it) is not part of `make test`, so its absence
// always skips, in CI too.
func NeedWeaviate(t testing.TB) string {
	t.Helper()
	p := artifacts.Weaviate()
	if !exists(p) {
		t.Skipf("weaviate-server not found at %q: run `make cluster` (builds it) or set HYBRANK_WEAVIATE", p)
	}
	return p
}
