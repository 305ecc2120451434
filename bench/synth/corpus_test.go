package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/bench"
)

func collect(t *testing.T, s *Corpus, from, to int) [][]string {
	t.Helper()
	var out [][]string
	if err := s.Each(context.Background(), from, to, func(i int, terms []string) error {
		out = append(out, slices.Clone(terms))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyntheticDeterministic(t *testing.T) {
	cfg := DefaultCorpusConfig(500)
	cfg.Vocab, cfg.Queries = 20_000, 50
	a, err := NewCorpus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewCorpus(cfg)
	da, db := collect(t, a, 0, 500), collect(t, b, 0, 500)
	for i := range da {
		if !slices.Equal(da[i], db[i]) {
			t.Fatalf("doc %d differs between runs", i)
		}
	}
	// A sub-range reproduces the same documents.
	if part := collect(t, a, 300, 310); !slices.Equal(part[3], da[303]) {
		t.Errorf("range generation differs")
	}
	cfg.Seed = 2
	c, _ := NewCorpus(cfg)
	if slices.Equal(collect(t, c, 0, 1)[0], da[0]) {
		t.Errorf("seed does not change the corpus")
	}
}

func TestSyntheticShape(t *testing.T) {
	cfg := DefaultCorpusConfig(3000)
	cfg.Vocab, cfg.Queries = 20_000, 100
	s, err := NewCorpus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	docs := collect(t, s, 0, cfg.Docs)
	freq := map[string]int{}
	var lens []float64
	for _, d := range docs {
		lens = append(lens, float64(len(d)))
		for _, w := range d {
			freq[w]++
		}
	}
	slices.Sort(lens)
	if med := lens[len(lens)/2]; math.Abs(med-cfg.MedianLen) > 0.15*cfg.MedianLen {
		t.Errorf("median length %v, want ≈ %v", med, cfg.MedianLen)
	}
	if lens[0] < float64(cfg.MinLen) || lens[len(lens)-1] > float64(cfg.MaxLen) {
		t.Errorf("length range [%v,%v] outside clamp", lens[0], lens[len(lens)-1])
	}
	v := s.Vocab()
	// Zipf: rank 0 about twice as frequent as rank 1, ten times rank 9.
	r01 := float64(freq[v[0]]) / float64(freq[v[1]])
	r09 := float64(freq[v[0]]) / float64(freq[v[9]])
	if r01 < 1.7 || r01 > 2.4 || r09 < 8 || r09 > 14 {
		t.Errorf("rank ratios %.2f %.2f not Zipf-like", r01, r09)
	}
	// Planted documents contain their query's terms.
	for _, q := range s.Queries()[:20] {
		for id, grade := range s.Qrels()[q.ID] {
			var i int
			if _, err := fmt.Sscanf(id, "d%d", &i); err != nil {
				t.Fatal(err)
			}
			has := 0
			for _, term := range q.Terms {
				if slices.Contains(docs[i], term) {
					has++
				}
			}
			if grade == 2 && has < len(q.Terms)-1 || has == 0 {
				t.Errorf("query %s doc %s grade %d holds %d/%d terms", q.ID, id, grade, has, len(q.Terms))
			}
		}
	}
}

func TestSyntheticValidate(t *testing.T) {
	bad := []func(*CorpusConfig){
		func(c *CorpusConfig) { c.Docs = 0 },
		func(c *CorpusConfig) { c.Vocab = 10 },
		func(c *CorpusConfig) { c.ZipfS = 0 },
		func(c *CorpusConfig) { c.MaxLen = 1 },
		func(c *CorpusConfig) { c.RelPerQuery = 0 },
		func(c *CorpusConfig) { c.QueryTerms = 100 },
	}
	for i, f := range bad {
		c := DefaultCorpusConfig(10)
		f(&c)
		if _, err := NewCorpus(c); !errors.Is(err, bench.ErrBadOption) {
			t.Errorf("case %d: err = %v", i, err)
		}
	}
	s, _ := NewCorpus(DefaultCorpusConfig(10))
	if err := s.Each(context.Background(), 5, 11, func(int, []string) error { return nil }); !errors.Is(err, bench.ErrBadOption) {
		t.Errorf("bad range: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Each(ctx, 0, 10, func(int, []string) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func BenchmarkCorpus(b *testing.B) {
	s, err := NewCorpus(DefaultCorpusConfig(100_000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		from := (i * 1000) % 99_000
		_ = s.Each(context.Background(), from, from+1000, func(_ int, terms []string) error { n += len(terms); return nil })
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "docs/s")
}
