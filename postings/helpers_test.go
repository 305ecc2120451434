package postings

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

var allVariants = []Variant{Lucene, Robertson, ATIRE, BM25L, BM25Plus}

func cfgFor(v Variant) Config {
	c := DefaultConfig()
	c.Variant = v
	return c
}

func mustNew(t testing.TB, cfg Config) *Index {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func commitDocs(t testing.TB, ix *Index, docs ...Doc) {
	t.Helper()
	b := ix.NewBatch()
	for _, d := range docs {
		b.Add(d)
	}
	if err := ix.Commit(b); err != nil {
		t.Fatal(err)
	}
}

func search(t testing.TB, ix *Index, q Query) []Hit {
	t.Helper()
	h, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// randCorpus makes n docs over a Zipf-ish vocabulary of size vocab.
func randCorpus(r *rand.Rand, n, vocab, maxLen int, prefix string) []Doc {
	docs := make([]Doc, n)
	tenants := []string{"", "acme", "globex", "initech"}
	for i := range docs {
		l := r.IntN(maxLen + 1)
		terms := make([]string, l)
		for j := range terms {
			terms[j] = randTerm(r, vocab)
		}
		d := Doc{ID: fmt.Sprintf("%s%d", prefix, i), Terms: terms, Tenant: tenants[r.IntN(len(tenants))]}
		if r.IntN(2) == 0 {
			d.Meta = map[string]string{"lang": []string{"en", "fr"}[r.IntN(2)]}
			if r.IntN(3) == 0 {
				d.Meta["kind"] = []string{"a", "b", "c"}[r.IntN(3)]
			}
		}
		docs[i] = d
	}
	return docs
}

func randTerm(r *rand.Rand, vocab int) string {
	// Skewed: small ids much more frequent.
	x := r.Float64()
	return fmt.Sprintf("t%d", int(math.Pow(x, 3)*float64(vocab)))
}

func randQuery(r *rand.Rand, vocab int) []string {
	n := 1 + r.IntN(8)
	q := make([]string, n)
	for i := range q {
		if r.IntN(10) == 0 {
			q[i] = "unknown-term"
		} else {
			q[i] = fmt.Sprintf("t%d", r.IntN(vocab))
		}
	}
	if n > 1 && r.IntN(3) == 0 {
		q[n-1] = q[0] // repeated query term
	}
	return q
}

// refSearch scores live docs directly from their terms with the bm25s
// formulas (independent of postings), at the given build avgdl.
func refSearch(cfg Config, live map[string]Doc, avgdlBuild float64, q Query) []Hit {
	cfg = cfg.normalized()
	sc := newScorer(cfg)
	N := len(live)
	df := map[string]int{}
	for _, d := range live {
		seen := map[string]bool{}
		for _, t := range d.Terms {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	var hits []Hit
	var constant float32
	for _, t := range q.Terms {
		if df[t] > 0 {
			constant += float32(sc.weights(df[t], N).nonOcc)
		}
	}
	for _, d := range live {
		if q.Filter != nil && !matches(d, q.Filter) {
			continue
		}
		tf := map[string]int{}
		for _, t := range d.Terms {
			tf[t]++
		}
		nb := sc.normB(len(d.Terms), avgdlBuild)
		var s float32
		for _, t := range q.Terms {
			if tf[t] == 0 {
				continue
			}
			s += sc.posting(sc.weights(df[t], N), uint32(tf[t]), nb)
		}
		if s > 0 {
			hits = append(hits, Hit{ID: d.ID, Score: s + constant})
		}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > q.K {
		hits = hits[:q.K]
	}
	return hits
}

func matches(d Doc, f *Filter) bool {
	if f.Tenant != "" && d.Tenant != f.Tenant {
		return false
	}
	for k, v := range f.Meta {
		if d.Meta[k] != v {
			return false
		}
	}
	return true
}

func randFilter(r *rand.Rand) *Filter {
	switch r.IntN(5) {
	case 0:
		return &Filter{Tenant: "acme"}
	case 1:
		return &Filter{Meta: map[string]string{"lang": "fr"}}
	case 2:
		return &Filter{Tenant: "globex", Meta: map[string]string{"lang": "en"}}
	case 3:
		return &Filter{Meta: map[string]string{"kind": "b", "lang": "en"}}
	}
	return nil
}

// sameScores compares hit lists by score rank-wise within a relative
// tolerance (float32 summation order differs from the reference).
func sameScores(a, b []Hit) error {
	if len(a) != len(b) {
		return fmt.Errorf("len %d != %d", len(a), len(b))
	}
	for i := range a {
		if d := math.Abs(float64(a[i].Score - b[i].Score)); d > 1e-5*math.Max(1, math.Abs(float64(b[i].Score))) {
			return fmt.Errorf("rank %d: %v vs %v", i, a[i], b[i])
		}
	}
	return nil
}
