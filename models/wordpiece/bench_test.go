package wordpiece_test

import (
	"context"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// benchSetup loads the real bert-base-uncased vocab and scifact (query, doc)
// pairs.
func benchSetup(b *testing.B) (*wordpiece.Tokenizer, []string, []string) {
	b.Helper()
	tk, err := wordpiece.LoadVocab(testenv.NeedVocabTxt(b), wordpiece.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	dir := testenv.NeedDataset(b, "scifact")
	qs := queryTexts(b, dir, 300)
	docs := corpusTexts(b, dir, 1000)
	return tk, qs, docs
}

func BenchmarkEncodePair(b *testing.B) {
	tk, qs, docs := benchSetup(b)
	var bytes int64
	for i := range docs {
		bytes += int64(len(qs[i%len(qs)]) + len(docs[i]))
	}
	b.SetBytes(bytes / int64(len(docs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(docs)
		if _, err := tk.EncodePair(qs[j%len(qs)], docs[j], 512, wordpiece.LongestFirst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func BenchmarkEncodePairs100(b *testing.B) {
	tk, qs, docs := benchSetup(b)
	docs = docs[:100]
	var bytes int64
	for _, d := range docs {
		bytes += int64(len(qs[0]) + len(d))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.EncodePairs(context.Background(), qs[i%len(qs)], docs, 512, wordpiece.LongestFirst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(docs))/b.Elapsed().Seconds(), "pairs/s")
}

func BenchmarkCountTokens(b *testing.B) {
	tk, _, docs := benchSetup(b)
	b.ReportAllocs()
	var bytes int64
	for _, d := range docs {
		bytes += int64(len(d))
	}
	b.SetBytes(bytes / int64(len(docs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.CountTokens(docs[i%len(docs)])
	}
}

func BenchmarkCountTokensNonASCII(b *testing.B) {
	tk, _, _ := benchSetup(b)
	text := "Ünïcödé téxt wïth áccents, 中文字符 and ΕΛΛΗΝΙΚΆ — plus “quotes” and emoji 😀 repeated. "
	for len(text) < 2000 {
		text += text
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.CountTokens(text)
	}
}

func BenchmarkPadBatch(b *testing.B) {
	tk, qs, docs := benchSetup(b)
	encs, err := tk.EncodePairs(context.Background(), qs[0], docs[:64], 512, wordpiece.LongestFirst)
	if err != nil {
		b.Fatal(err)
	}
	var ids, types, mask []int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ids, types, mask, _ = tk.PadBatch(encs, ids, types, mask)
	}
}

func BenchmarkEncodePairParallel(b *testing.B) {
	tk, qs, docs := benchSetup(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			j := i % len(docs)
			if _, err := tk.EncodePair(qs[j%len(qs)], docs[j], 512, wordpiece.LongestFirst); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
