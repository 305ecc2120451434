package ort_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
)

// chunkText is a long text of real words: punctuation, accents, numbers
// and words of several word pieces.
func chunkText(sentences int) string {
	parts := []string{
		"Über-long documents, like scientific abstracts (e.g. SciFact's), are cut by rerankers.",
		"The naïve café serves hyperparameterization and immunohistochemistry at 12.5 °C;",
		"chunked scoring keeps every window, whose best one names the span!",
		"Mitochondrial dysfunction precedes neurodegeneration in 37 % of cases.",
	}
	var b strings.Builder
	for i := range sentences {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d. %s", i, parts[i%len(parts)])
	}
	return b.String()
}

// TestScoreSpansRealTokenizer checks chunked reranking on the real
// tokenizer and runtime: every window fits beside the query, its text
// tokenizes alone to exactly the document's tokens it covers, and its score
// in ScoreSpans is ScorePairs' for (query, window text).
func TestScoreSpansRealTokenizer(t *testing.T) {
	g := generated(t, smallConfig(bertgen.CrossEncoder))
	cfg := cpuConfig(g.dir, models.ProfileFast)
	cfg.MaxLength, cfg.MaxBatchTokens = 64, 1024
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	tok := tokenizer(t, g.dir)
	query := "which windows do long documents get"
	docs := []string{chunkText(40), "a short document", chunkText(3)}
	ch := models.Chunking{Stride: 24, MaxChunks: 64}
	got, usage, err := ce.ScoreSpans(context.Background(), query, docs, ch)
	if err != nil {
		t.Fatal(err)
	}
	size := models.PairWindow(64, tok.CountTokens(query))
	n := 0
	for d, s := range got {
		spans := tok.TokenSpans(nil, docs[d])
		pairs := make([]models.Pair, len(s.Windows))
		for i, w := range s.Windows {
			text := docs[d][w.Start:w.End]
			var covered []int32
			for _, sp := range spans {
				if sp.Start >= w.Start && sp.End <= w.End {
					covered = append(covered, sp.ID)
				}
			}
			if ids := tok.IDs(nil, text); !slices.Equal(ids, covered) {
				t.Fatalf("doc %d window %d %q: alone %d tokens, covers %d", d, i, text, len(ids), len(covered))
			}
			if len(covered) > size {
				t.Fatalf("doc %d window %d: %d tokens > %d", d, i, len(covered), size)
			}
			pairs[i] = models.Pair{Query: query, Doc: text}
		}
		n += len(pairs)
		alone, _, err := ce.ScorePairs(context.Background(), pairs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			if math.Abs(float64(alone[i]-s.Scores[i])) > 1e-5 {
				t.Fatalf("doc %d window %d: %v in ScoreSpans, %v alone", d, i, s.Scores[i], alone[i])
			}
		}
		if best := slices.Index(s.Windows, s.Span); best < 0 || s.Scores[best] != slices.Max(s.Scores) || s.Score != s.Scores[best] {
			t.Fatalf("doc %d: score %v span %v is not the best window's", d, s.Score, s.Span)
		}
	}
	if got[0].Total < 10 || got[1].Total != 1 || usage.Pairs != n {
		t.Fatalf("windows %d, %d; usage %+v for %d", got[0].Total, got[1].Total, usage, n)
	}
}

// TestEmbedSpansRealTokenizer checks chunked embedding on the real
// tokenizer and runtime against embedding each window's text alone.
func TestEmbedSpansRealTokenizer(t *testing.T) {
	g := generated(t, smallConfig(bertgen.BiEncoder))
	cfg := cpuConfig(g.dir, models.ProfileEmbed)
	cfg.MaxLength, cfg.MaxBatchTokens = 32, 1024
	cfg.DocumentPrefix = "passage: "
	be, err := ort.NewBiEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	docs := []string{chunkText(12), "tiny"}
	got, _, err := be.EmbedSpans(context.Background(), models.InputDocument, docs, models.Chunking{Stride: 16, MaxChunks: 64})
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizer(t, g.dir)
	for d, sv := range got {
		texts := make([]string, len(sv.Windows))
		for i, w := range sv.Windows {
			texts[i] = docs[d][w.Start:w.End]
			if n := tok.CountTokens(cfg.DocumentPrefix + texts[i]); n > 30 {
				t.Fatalf("doc %d window %d: %d tokens with the prefix > 30", d, i, n)
			}
		}
		alone, err := be.Embed(context.Background(), models.InputDocument, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			for k := range alone[i] {
				if math.Abs(float64(alone[i][k]-sv.Vectors[i][k])) > 1e-5 {
					t.Fatalf("doc %d window %d dim %d: %v, alone %v", d, i, k, sv.Vectors[i][k], alone[i][k])
				}
			}
		}
	}
	if got[0].Total < 4 {
		t.Fatalf("%d windows", got[0].Total)
	}
}
