package dense_test

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/dense"
)

func Example() {
	ix, err := dense.New(dense.DefaultConfig(3))
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	_ = ix.Add(
		dense.Item{ID: "a", Ref: 1, Vector: []float32{1, 0, 0}},
		dense.Item{ID: "b", Ref: 2, Vector: []float32{1, 1, 0}},
		dense.Item{ID: "c", Ref: 3, Vector: []float32{1, 0, 0}},
	)
	// The caller's filter (say, a tenant's items) is an allow-list of Refs.
	hits, _ := ix.Search(context.Background(), []float32{2, 0, 0}, 5, roaring.BitmapOf(1, 2))
	for _, h := range hits {
		fmt.Printf("%s %.3f\n", h.ID, h.Score)
	}
	// Output:
	// a 1.000
	// b 0.707
}
