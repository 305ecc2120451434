package postings

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
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

// The test corpora's documents carry a tenant (0: none, 1 acme, 2
// globex, 3 initech), a language (0: none, 1 en, 2 fr) and a kind (0:
// none, 1 a, 2 b, 3 c) in their Ref, tenant<<4 | lang<<2 | kind, so that a
// filter over them is a set of Refs shared by many documents: what a
// caller's allow-list looks like.
const (
	acme, globex = 1, 2
	en, fr       = 1, 2
	kindB        = 2
)

func refOf(tenant, lang, kind int) uint32 { return uint32(tenant<<4 | lang<<2 | kind) }

// randCorpus makes n docs over a Zipf-ish vocabulary of size vocab.
func randCorpus(r *rand.Rand, n, vocab, maxLen int, prefix string) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		l := r.IntN(maxLen + 1)
		terms := make([]string, l)
		for j := range terms {
			terms[j] = randTerm(r, vocab)
		}
		tenant, lang, kind := r.IntN(4), 0, 0
		if r.IntN(2) == 0 {
			lang = 1 + r.IntN(2)
			if r.IntN(3) == 0 {
				kind = 1 + r.IntN(3)
			}
		}
		docs[i] = Doc{ID: fmt.Sprintf("%s%d", prefix, i), Terms: terms, Ref: refOf(tenant, lang, kind)}
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
		if !matches(d, q.Allow) {
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

// matches reports whether allow (nil: all) admits d.
func matches(d Doc, allow *roaring.Bitmap) bool { return allow == nil || allow.Contains(d.Ref) }

// allowWhere is the allow-list of the corpus Refs whose tenant, language
// and kind pass keep.
func allowWhere(keep func(tenant, lang, kind int) bool) *roaring.Bitmap {
	bm := roaring.New()
	for t := range 4 {
		for l := range 3 {
			for k := range 4 {
				if keep(t, l, k) {
					bm.Add(refOf(t, l, k))
				}
			}
		}
	}
	return bm
}

// randAllow is a random filter of the corpus as an allow-list, or nil.
func randAllow(r *rand.Rand) *roaring.Bitmap {
	switch r.IntN(5) {
	case 0:
		return allowWhere(func(t, _, _ int) bool { return t == acme })
	case 1:
		return allowWhere(func(_, l, _ int) bool { return l == fr })
	case 2:
		return allowWhere(func(t, l, _ int) bool { return t == globex && l == en })
	case 3:
		return allowWhere(func(_, l, k int) bool { return k == kindB && l == en })
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
