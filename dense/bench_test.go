package dense_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/dense"
)

// benchIndex builds n clustered vectors of dim (plus nq held-out queries).
func benchIndex(b *testing.B, n, dim, nq int) (*dense.Index, [][]float32) {
	b.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	all := clustered(r, n+nq, dim, 64)
	ix := mustNew(b, dense.DefaultConfig(dim))
	for i, v := range all[:n] {
		if err := ix.Add(dense.Item{ID: fmt.Sprint(i), Vector: v, Ref: uint32(i)}); err != nil {
			b.Fatal(err)
		}
	}
	return ix, all[n:]
}

func BenchmarkSearch(b *testing.B) {
	const n, dim = 10000, 128
	ix, qs := benchIndex(b, n, dim, 256)
	ctx := context.Background()
	quarter := roaring.New() // a tenant of every fourth item, as its Refs
	for i := uint32(1); i < n; i += 4 {
		quarter.Add(i)
	}
	for _, tc := range []struct {
		name string
		f    *roaring.Bitmap
	}{{"unfiltered", nil}, {"tenant-quarter", quarter}} {
		b.Run("hnsw/"+tc.name, func(b *testing.B) {
			var rec float64 // measured before the timed loop
			for _, q := range qs {
				got, err := ix.Search(ctx, q, 10, tc.f)
				if err != nil {
					b.Fatal(err)
				}
				want, _ := ix.SearchExact(ctx, q, 10, tc.f)
				rec += recallAt(got, want)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(ctx, qs[i%len(qs)], 10, tc.f); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(rec/float64(len(qs)), "recall@10")
		})
		b.Run("exact/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.SearchExact(ctx, qs[i%len(qs)], 10, tc.f); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	const dim = 128
	r := rand.New(rand.NewPCG(10, 10))
	vecs := clustered(r, 4096, dim, 32)
	ix := mustNew(b, dense.DefaultConfig(dim))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := ix.Add(dense.Item{ID: fmt.Sprint(i), Vector: vecs[i%len(vecs)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
