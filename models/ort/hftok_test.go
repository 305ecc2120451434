package ort_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/hftok"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// unigramDir copies a generated cross-encoder directory and gives it the
// Unigram tokenizer.json of package hftok's tests (XLM-R layout, ids below
// the model's vocab_size) and no vocab.txt.
func unigramDir(t *testing.T, g *genModel) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(g.dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "vocab.txt")); err != nil {
		t.Fatal(err)
	}
	tj, err := os.ReadFile(filepath.Join("..", "hftok", "testdata", "unigram.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNonWordPieceTokenizer: a Unigram tokenizer.json loads through HF's
// library when it is linked (scores equal the float64 reference on HF's
// ids), and otherwise fails on first use with an error naming the tag.
func TestNonWordPieceTokenizer(t *testing.T) {
	g := generated(t, smallConfig(bertgen.CrossEncoder))
	dir := unigramDir(t, g)
	cfg := cpuConfig(dir, models.ProfileFast)
	cfg.MaxLength = 12
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	query := "hello worlds reranker hello"
	docs := []string{"", "hello", "worlds reranker hello worlds reranker hello worlds", "zzz hello"}
	got, err := ce.Score(context.Background(), query, docs)
	if !hftok.Available {
		if !errors.Is(err, hftok.ErrUnavailable) || !errors.Is(err, models.ErrModelDir) || !strings.Contains(err.Error(), "-tags hftokenizers") {
			t.Fatalf("Score without the library: %v, want ErrUnavailable naming the tag", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	hf, err := hftok.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	// The query keeps (12-3)/2 = 4 tokens (its first four: ▁hello ▁world s
	// ▁rerank); then only the document is cut.
	cut, err := hf.Tokenize(query)
	if err != nil {
		t.Fatal(err)
	}
	q := query[:cut.Offsets[3][1]]
	if q != "hello worlds rerank" {
		t.Fatalf("query cut %q", q)
	}
	for i, d := range docs {
		e, err := hf.EncodePair(q, d, 12, wordpiece.OnlySecond)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := bertgen.Reference(context.Background(), g.w, [][]int64{to64(e.IDs)}, [][]int64{ones(e.Len())}, [][]int64{to64(e.TypeIDs)})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(got[i])-ref.Logits[0]) > 1e-4 {
			t.Errorf("doc %d: score %.6f, reference %.6f", i, got[i], ref.Logits[0])
		}
	}
}
