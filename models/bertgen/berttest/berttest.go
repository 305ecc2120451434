// Package berttest builds package bertgen's graphs and runs BERT-family
// ONNX files (the inputs of those graphs) through ONNX Runtime's CPU
// provider, for the tests of the packages that rewrite such graphs
// (onnx/quantize, onnx/fuse): one definition of "a generated model"
// and of "feed these ids and read that output".
package berttest

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Model returns the graph of cfg with its generated weights.
func Model(t testing.TB, cfg bertgen.Config) *onnxpb.Model {
	t.Helper()
	w, err := bertgen.GenerateWeights(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bertgen.BuildModel(w)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Batch is one padded batch of batch × seq token ids with their attention
// mask and token type ids (row-major, right-padded).
type Batch struct {
	Batch, Seq         int
	IDs, Mask, TypeIDs []int64
}

// Padded returns a batch of len(lens) sequences of seq positions, the
// b-th holding lens[b] random token ids in [lo, hi) and right padding (as
// the tokenizers pad), token type 1 past each sequence's middle.
func Padded(seed uint64, seq int, lens []int, lo, hi int) Batch {
	r := rand.New(rand.NewPCG(seed, seed+1))
	n := len(lens) * seq
	b := Batch{Batch: len(lens), Seq: seq, IDs: make([]int64, n), Mask: make([]int64, n), TypeIDs: make([]int64, n)}
	for s, l := range lens {
		for i := range min(l, seq) {
			b.IDs[s*seq+i], b.Mask[s*seq+i] = int64(lo+r.IntN(hi-lo)), 1
			if i > l/2 {
				b.TypeIDs[s*seq+i] = 1
			}
		}
	}
	return b
}

// Attended returns the batch of ids with every token attended and type 0.
func Attended(ids []int64, batch, seq int) Batch {
	mask, types := make([]int64, len(ids)), make([]int64, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	return Batch{Batch: batch, Seq: seq, IDs: ids, Mask: mask, TypeIDs: types}
}

// Run runs the model file at path on b in a one-thread CPU session at
// graph optimisation opt ("" = all) and returns the output called output
// (bertgen.Logits, bertgen.LastHiddenState). The runtime must have been
// initialised (onnx.Init). Failures end the test.
func Run(t testing.TB, path, output, opt string, b Batch) []float32 {
	t.Helper()
	sc := onnx.DefaultSessionConfig()
	sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 1
	if opt != "" {
		sc.GraphOptimization = opt
	}
	s, err := onnx.NewSession(path, []string{bertgen.InputIDs, bertgen.AttentionMask, bertgen.TokenTypeIDs}, []string{output}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dims := []int64{int64(b.Batch), int64(b.Seq)}
	out, err := s.Run(context.Background(), []onnx.Input{
		{Name: bertgen.InputIDs, Shape: dims, Int64: b.IDs},
		{Name: bertgen.AttentionMask, Shape: dims, Int64: b.Mask},
		{Name: bertgen.TokenTypeIDs, Shape: dims, Int64: b.TypeIDs},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Float32
}

// WriteTiny writes two generated (random-weight) models of the
// TinyBERT-L2 shape under root, as a models root holds profiles:
// root/fast, a cross-encoder, and root/embed, a bi-encoder; vocab and tok
// are the vocabulary and tokenizer files they ship.
func WriteTiny(t testing.TB, root, vocab, tok string) {
	t.Helper()
	small := bertgen.TinyBERTL2CrossEncoder()
	if err := bertgen.Write(filepath.Join(root, "fast"), small, vocab, tok); err != nil {
		t.Fatal(err)
	}
	small.Kind = bertgen.BiEncoder
	if err := bertgen.Write(filepath.Join(root, "embed"), small, vocab, tok); err != nil {
		t.Fatal(err)
	}
}
