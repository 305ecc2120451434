package postings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestPruningEqualsExhaustive is the property test: over random corpora
// (vocabulary sizes, doc lengths, shared Refs), random incremental updates
// and deletes, random queries (repeated and unknown terms), allow-lists and k
// from 1 to more than the corpus, for every variant, MaxScore returns
// exactly the exhaustive hits (IDs, order and bit-identical scores), and
// both agree with a direct reference scorer.
func TestPruningEqualsExhaustive(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for _, v := range allVariants {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", v, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(seed), 99))
				vocab := 5 + r.IntN(300)
				nDocs := 1 + r.IntN(400)
				cfg := cfgFor(v)
				cfg.K1 = []float64{1.2, 0.9, 2.0}[r.IntN(3)]
				cfg.B = []float64{0.75, 0.4, 1.0, 0}[r.IntN(4)]
				ix := mustNew(t, cfg)
				if seed%2 == 0 {
					ix.pruneGate = 0 // try pruning whenever possible
				}
				live := map[string]Doc{}
				docs := randCorpus(r, nDocs, vocab, 1+r.IntN(60), "d")
				commitDocs(t, ix, docs...)
				for _, d := range docs {
					live[d.ID] = d
				}
				// Incremental changes: updates, deletes, new docs.
				if r.IntN(2) == 0 {
					b := ix.NewBatch()
					for _, d := range randCorpus(r, r.IntN(50), vocab, 40, "d") { // same IDs → updates
						b.Add(d)
						live[d.ID] = d
					}
					for range r.IntN(30) {
						id := fmt.Sprintf("d%d", r.IntN(nDocs))
						b.Delete(id)
						delete(live, id)
					}
					for _, d := range randCorpus(r, r.IntN(50), vocab, 40, "n") {
						b.Add(d)
						live[d.ID] = d
					}
					if err := ix.Commit(b); err != nil {
						t.Fatal(err)
					}
				}
				st := ix.Stats()
				if st.Docs != len(live) {
					t.Fatalf("Docs = %d, want %d", st.Docs, len(live))
				}
				for qi := range 40 {
					q := Query{Terms: randQuery(r, vocab), K: 1 + r.IntN(nDocs+20), Allow: randAllow(r)}
					pruned := search(t, ix, q)
					q.Exhaustive = true
					exh := search(t, ix, q)
					if !reflect.DeepEqual(pruned, exh) {
						t.Fatalf("query %d %+v:\npruned     %v\nexhaustive %v", qi, q, pruned, exh)
					}
					ref := refSearch(cfg, live, st.BuildAvgDL, q)
					if err := sameScores(exh, ref); err != nil {
						t.Fatalf("query %d %+v: exhaustive vs reference: %v\n%v\n%v", qi, q, err, exh, ref)
					}
					for _, h := range exh {
						if _, ok := live[h.ID]; !ok {
							t.Fatalf("deleted doc %s returned", h.ID)
						}
						if !matches(live[h.ID], q.Allow) {
							t.Fatalf("doc %s outside allow-list %v returned", h.ID, q.Allow)
						}
					}
				}
			})
		}
	}
}

// TestAllowNoLeak: with k far above the allowed set, only allowed docs
// that match a query term come back — never others with score 0.
func TestAllowNoLeak(t *testing.T) {
	for _, v := range allVariants {
		for _, ex := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exhaustive=%v", v, ex), func(t *testing.T) {
				ix := mustNew(t, cfgFor(v))
				commitDocs(t, ix,
					Doc{ID: "a1", Terms: []string{"apple", "pie"}, Ref: 1},
					Doc{ID: "a2", Terms: []string{"banana"}, Ref: 2},
					Doc{ID: "a3", Terms: []string{"apple"}, Ref: 3},
					Doc{ID: "b1", Terms: []string{"apple", "apple"}, Ref: 4},
					Doc{ID: "b2", Terms: []string{"cherry"}, Ref: 5},
					// Two documents sharing a Ref.
					Doc{ID: "b3", Terms: []string{"apple"}, Ref: 6},
					Doc{ID: "b4", Terms: []string{"apple", "tart"}, Ref: 6},
					// Padding so that robertson's idf of "apple" stays positive.
					Doc{ID: "c1", Terms: []string{"kiwi"}, Ref: 7},
					Doc{ID: "c2", Terms: []string{"kiwi"}, Ref: 7},
					Doc{ID: "c3", Terms: []string{"kiwi"}, Ref: 7},
					Doc{ID: "c4", Terms: []string{"kiwi"}, Ref: 7},
				)
				cases := []struct {
					name  string
					allow *roaring.Bitmap
					want  []string
				}{
					{"a", roaring.BitmapOf(1, 2, 3), []string{"a1", "a3"}},
					{"a1 a2", roaring.BitmapOf(1, 2), []string{"a1"}},
					{"a1 a2 b1", roaring.BitmapOf(1, 2, 4), []string{"a1", "b1"}},
					{"shared ref", roaring.BitmapOf(6), []string{"b3", "b4"}},
					{"no apple", roaring.BitmapOf(2, 5, 7), nil},
					{"unknown ref", roaring.BitmapOf(99), nil},
					{"empty", roaring.New(), nil},
					{"nil", nil, []string{"a1", "a3", "b1", "b3", "b4"}},
				}
				for _, tc := range cases {
					hits := search(t, ix, Query{Terms: []string{"apple"}, K: 100, Allow: tc.allow, Exhaustive: ex})
					got := map[string]bool{}
					for _, h := range hits {
						got[h.ID] = true
						if h.Score <= 0 && v != BM25L && v != BM25Plus {
							t.Errorf("%s: score %v hit", tc.name, h.Score)
						}
					}
					want := map[string]bool{}
					for _, id := range tc.want {
						want[id] = true
					}
					if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
						t.Errorf("%s: got %v, want %v", tc.name, hits, tc.want)
					}
				}
			})
		}
	}
}

func TestSearchInputs(t *testing.T) {
	ix := mustNew(t, DefaultConfig())
	if h := search(t, ix, Query{Terms: []string{"x"}, K: 5}); len(h) != 0 {
		t.Fatalf("empty index returned %v", h)
	}
	commitDocs(t, ix, Doc{ID: "a", Terms: []string{"x"}})
	if _, err := ix.Search(context.Background(), Query{Terms: []string{"x"}, K: -1}); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("k=-1: %v", err)
	}
	if h := search(t, ix, Query{Terms: []string{"x"}, K: 0}); len(h) != 0 {
		t.Fatalf("k=0 returned %v", h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, Query{Terms: []string{"x"}, K: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: %v", err)
	}
}

// TestPruningModes drives the pruned path through its continue mode, both
// scanning and probing the remaining lists (white-box counters), and checks
// it still equals exhaustive scoring.
func TestPruningModes(t *testing.T) {
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			ix := mustNew(t, cfgFor(v))
			ix.pruneGate = 0
			docs := synthCorpus(11, 6000, 3000, 5, 40)
			for i := range docs {
				if i%97 == 0 {
					docs[i].Terms = append(docs[i].Terms, "rare", "rare2")
				}
				if i%2 == 0 {
					docs[i].Terms = append(docs[i].Terms, "half")
				}
			}
			commitDocs(t, ix, docs...)
			s := ix.cur.Load()
			var scanned, probed int
			for _, q := range [][]string{{"rare", "half"}, {"rare", "rare2", "half", "t3"}, {"rare2", "t2", "t5", "t1"}} {
				for _, k := range []int{1, 5, 20} {
					sc := &searchScratch{}
					s.prepare(sc, q)
					sc.top.reset(k, s.docIDs)
					if err := s.search(context.Background(), sc, nil, k, true); err != nil {
						t.Fatal(err)
					}
					scanned += sc.scanned
					probed += sc.probed
					pr := search(t, ix, Query{Terms: q, K: k})
					ex := search(t, ix, Query{Terms: q, K: k, Exhaustive: true})
					if !reflect.DeepEqual(pr, ex) {
						t.Fatalf("%v k=%d:\npruned     %v\nexhaustive %v", q, k, pr, ex)
					}
				}
			}
			if probed == 0 {
				t.Errorf("continue mode never probed (scanned %d)", scanned)
			}
		})
	}
}

// TestKernelFallbacks covers the postings outside the tf-component table —
// documents longer than tfcTabLens, frequencies ≥ tfcTabTF and overflowed
// frequencies ≥ 255 — mixed with tabled ones: exhaustive and pruned
// (always trying to prune) agree bit for bit and match the reference.
func TestKernelFallbacks(t *testing.T) {
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			cfg := cfgFor(v)
			ix := mustNew(t, cfg)
			ix.pruneGate = 0
			r := rand.New(rand.NewPCG(7, 7))
			docs := randCorpus(r, 300, 40, 30, "d")
			rep := func(term string, n int) []string {
				out := make([]string, n)
				for i := range out {
					out[i] = term
				}
				return out
			}
			for i, n := range []int{tfcTabLens + 5, tfcTabLens - 1, 2 * tfcTabLens} {
				docs[i].Terms = append(rep(randTerm(r, 40), n), docs[i].Terms...) // long, high tf
			}
			for i := 10; i < 60; i++ {
				docs[i].Terms = append(docs[i].Terms, rep(randTerm(r, 40), []int{16, 17, 254, 255, 256, 300}[i%6])...)
			}
			commitDocs(t, ix, docs...)
			live := map[string]Doc{}
			for _, d := range docs {
				live[d.ID] = d
			}
			st := ix.Stats()
			for qi := range 30 {
				q := Query{Terms: randQuery(r, 40), K: 1 + r.IntN(40)}
				pr := search(t, ix, q)
				q.Exhaustive = true
				ex := search(t, ix, q)
				if !reflect.DeepEqual(pr, ex) {
					t.Fatalf("query %d %v:\npruned     %v\nexhaustive %v", qi, q.Terms, pr, ex)
				}
				if err := sameScores(ex, refSearch(cfg, live, st.BuildAvgDL, q)); err != nil {
					t.Fatalf("query %d %v: %v", qi, q.Terms, err)
				}
			}
		})
	}
}

// TestSelectTop: selectTop keeps exactly the items scoring at least the
// k-th largest score (ties included), and blockMaxLowerBound never exceeds
// the k-th largest accumulator, with zeros and negatives among them.
func TestSelectTop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, k     int
		distinct int // number of distinct positive scores (ties when small)
		zeros    bool
	}{
		{"few", 5, 10, 100, false},
		{"equal-k", 10, 10, 100, false},
		{"many", 5000, 100, 1 << 20, true},
		{"ties", 5000, 100, 7, true},
		{"k1", 3000, 1, 50, true},
		{"just-above-8k", 801, 100, 1000, false},
		{"blocks-of-16", 5183, 100, 1 << 20, true},
		{"blocks-of-16-ties", 3201, 100, 3, true},
		{"skewed", 20000, 10, 1 << 24, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
			acc := make([]float32, tc.n)
			for i := range acc {
				switch {
				case tc.zeros && r.IntN(3) == 0:
					acc[i] = 0
				case tc.zeros && r.IntN(50) == 0:
					acc[i] = -float32(r.IntN(5) + 1)
				default:
					acc[i] = float32(1+r.IntN(tc.distinct)) / 8
				}
			}
			var pos []float32
			var sel []scored
			for d, v := range acc {
				if v > 0 {
					pos = append(pos, v)
					sel = append(sel, scored{score: v, doc: uint32(d)})
				}
			}
			slices.SortFunc(pos, func(a, b float32) int { return cmp.Compare(b, a) })
			want := 0
			kth := float32(0)
			if len(pos) > 0 {
				kth = pos[min(tc.k, len(pos))-1]
				for _, v := range pos {
					if v >= kth {
						want++
					}
				}
			}
			got, _ := selectTop(sel, tc.k, nil)
			reach := 0
			for _, x := range got {
				if acc[x.doc] != x.score {
					t.Fatalf("kept %+v not from acc", x)
				}
				if x.score >= kth {
					reach++
				}
			}
			if reach != want || len(got) < min(tc.k, len(pos)) || len(got) > max(2*tc.k, want) {
				t.Fatalf("selectTop kept %d (%d reaching the k-th score %v), want all %d of those and at most %d", len(got), reach, kth, want, max(2*tc.k, want))
			}
			if lb, bs := float32(0), topBlock(len(acc), tc.k); len(pos) > 0 {
				var maxima []uint32
				if bs > 0 {
					lb, maxima = blockMaxLowerBound(acc, tc.k, nil)
				}
				if lb > kth {
					t.Fatalf("block-max bound %v above the k-th score %v", lb, kth)
				}
				if bs > 0 {
					n := 0
					for _, x := range gatherBlocks(nil, acc, maxima, bs, lb) {
						if acc[x.doc] != x.score || x.score < lb || x.score <= 0 {
							t.Fatalf("gathered %+v below %v or not from acc", x, lb)
						}
						n++
					}
					if n != len(gatherAtLeast(nil, acc, max(lb, math.SmallestNonzeroFloat32))) {
						t.Fatalf("gatherBlocks found %d entries ≥ %v, want %d", n, lb, len(gatherAtLeast(nil, acc, max(lb, math.SmallestNonzeroFloat32))))
					}
				}
			}
		})
	}
}

// TestKthLowerU32: the bucketed bound is a value of the input, at most the
// k-th largest, and at least k values reach it.
func TestKthLowerU32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for trial := range 200 {
		n := 1 + r.IntN(500)
		vals := make([]uint32, n)
		distinct := []int{1, 3, 1000, 1 << 20}[trial%4]
		for i := range vals {
			vals[i] = math.Float32bits(float32(r.IntN(distinct)) / 7) // ≥ 0, with zeros
		}
		k := 1 + r.IntN(n)
		sorted := slices.Clone(vals)
		slices.SortFunc(sorted, func(a, b uint32) int { return cmp.Compare(b, a) })
		got := kthLowerU32(slices.Clone(vals), k)
		if got > sorted[k-1] || !slices.Contains(vals, got) {
			t.Fatalf("trial %d: bound %d, k-th largest %d", trial, got, sorted[k-1])
		}
	}
}

// TestRadixSortHigh32: the radix sort orders keys by their high 32 bits
// like a comparison sort, keeping every key.
func TestRadixSortHigh32(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		spread uint64 // high halves are below this
	}{
		{"empty", 0, 1},
		{"one", 1, 1 << 32},
		{"equal-high", 100, 1},
		{"narrow", 120, 1 << 9},
		{"wide", 500, 1 << 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), tc.spread))
			keys := make([]uint64, tc.n)
			for i := range keys {
				keys[i] = (0xbf000000+r.Uint64N(tc.spread))<<32 | uint64(r.Uint32())
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			radixSortHigh32(keys, nil)
			for i := range keys {
				if keys[i]>>32 != want[i]>>32 {
					t.Fatalf("key %d: high %x, want %x", i, keys[i]>>32, want[i]>>32)
				}
			}
			slices.Sort(keys)
			if !slices.Equal(keys, want) {
				t.Fatal("keys lost or duplicated")
			}
		})
	}
}

// TestVectorKernel: the vector scoring kernel (where the CPU has one) gives
// bit-identical hits to the Go kernel, dense and sparse, with postings
// outside the table (long documents, tf ≥ 16, overflow) mixed in, and
// groups cut at every offset.
func TestVectorKernel(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no vector kernel on this CPU")
	}
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			ix := mustNew(t, cfgFor(v))
			r := rand.New(rand.NewPCG(11, 11))
			docs := randCorpus(r, 2000, 60, 40, "d")
			for i := 0; i < len(docs); i += 37 {
				n := []int{16, 40, 255, 300, tfcTabLens + 3}[i%5]
				for range n {
					docs[i].Terms = append(docs[i].Terms, randTerm(r, 60))
				}
			}
			commitDocs(t, ix, docs...)
			for qi := range 60 {
				q := Query{Terms: randQuery(r, 60), K: 1 + r.IntN(120), Exhaustive: qi%2 == 0}
				hasAVX512 = false
				want := search(t, ix, q)
				hasAVX512 = true
				got := search(t, ix, q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("query %d %v:\nvector %v\ngo     %v", qi, q.Terms, got, want)
				}
			}
		})
	}
}

// TestVectorScans: the vector group maxima and gather agree with plain
// loops (strided blocks: 16 per 256 entries), with zeros and negatives.
func TestVectorScans(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no vector kernel on this CPU")
	}
	for _, tc := range []struct {
		name string
		n    int
		lb   float32
	}{{"one-group", 256, 0}, {"positive", 5183, 0}, {"bound", 5183, 40}, {"none", 1000, 1e9}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), 5))
			acc := make([]float32, padded(tc.n))
			for i := range acc[:tc.n] {
				switch r.IntN(4) {
				case 0:
				case 1:
					acc[i] = -float32(r.IntN(9))
				default:
					acc[i] = float32(r.IntN(1000)) / 10
				}
			}
			mx := groupMaxima(acc, nil)
			for b := range mx {
				g, j := b/16, b%16
				want := int32(0)
				for row := range 16 {
					want = max(want, int32(math.Float32bits(acc[g*256+row*16+j])))
				}
				if mx[b] != uint32(want) {
					t.Fatalf("block %d: max %x, want %x", b, mx[b], want)
				}
			}
			th := int32(max(math.Float32bits(tc.lb), 1))
			got, _, _ := gatherVec(nil, acc, th, nil, nil)
			want := gatherAtLeast(nil, acc, max(tc.lb, math.SmallestNonzeroFloat32))
			if !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("gathered %d entries, want %d", len(got), len(want))
			}
		})
	}
}

// TestPruningFloat32Tie: a document whose partial score plus the
// remaining bounds falls short of θ by less than the float32 rounding of
// the additions still to come ends on θ exactly and wins the tie by id in
// exhaustive scoring; pruning must keep it (it dropped it). The corpus was
// found by searching (tf, length, df) for an exact float32 tie.
func TestPruningFloat32Tie(t *testing.T) {
	doc := func(id string, tf map[string]int, length int) Doc {
		d := Doc{ID: id}
		for term, n := range tf {
			for range n {
				d.Terms = append(d.Terms, term)
			}
		}
		for i := len(d.Terms); i < length; i++ {
			d.Terms = append(d.Terms, fmt.Sprintf("%s-filler-%d", id, i))
		}
		return d
	}
	docs := []Doc{doc("z", map[string]int{"A": 6}, 11), doc("a", map[string]int{"A": 8, "B": 1}, 24)}
	for i := range 27 {
		docs = append(docs, doc(fmt.Sprintf("b%02d", i), map[string]int{"B": 1}, 42))
	}
	ix := mustNew(t, cfgFor(Lucene))
	ix.pruneGate = 0
	commitDocs(t, ix, docs...)
	q := Query{Terms: []string{"A", "B"}, K: 1}
	pruned := search(t, ix, q)
	q.Exhaustive = true
	exh := search(t, ix, q)
	if !reflect.DeepEqual(pruned, exh) {
		t.Fatalf("pruned %v, exhaustive %v", pruned, exh)
	}
}

// TestEmptyFirstCommitThenDocs: an index whose first commit held only
// empty documents (vector-only or stopword-only text) builds its norms at
// the first documents with terms: length normalisation is on, as after a
// rebuild (it stayed off, with no drift to ask for one).
func TestEmptyFirstCommitThenDocs(t *testing.T) {
	ix := mustNew(t, cfgFor(Lucene))
	commitDocs(t, ix, Doc{ID: "empty"})
	var docs []Doc
	for i := range 20 {
		d := Doc{ID: fmt.Sprintf("d%02d", i), Terms: []string{"x"}}
		for j := range i {
			d.Terms = append(d.Terms, fmt.Sprintf("f%d-%d", i, j))
		}
		docs = append(docs, d)
	}
	commitDocs(t, ix, docs...)
	if st := ix.Summary(); st.BuildAvgDL <= 0 {
		t.Fatalf("norms built at average length %v after documents with terms: %+v", st.BuildAvgDL, st)
	}
	before := search(t, ix, Query{Terms: []string{"x"}, K: 3})
	if before[0].Score == before[2].Score {
		t.Fatalf("length ignored: %v", before)
	}
	if err := ix.Rebuild(); err != nil {
		t.Fatal(err)
	}
	if after := search(t, ix, Query{Terms: []string{"x"}, K: 3}); !reflect.DeepEqual(before, after) {
		t.Fatalf("before a rebuild %v, after %v", before, after)
	}
}
