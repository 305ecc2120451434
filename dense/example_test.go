package dense_test

import (
	"context"
	"fmt"

	"github.com/hybrank/hybrank/dense"
)

func Example() {
	ix, err := dense.New(dense.DefaultConfig(3))
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	_ = ix.Add(
		dense.Item{ID: "a", Vector: []float32{1, 0, 0}, Tenant: "acme"},
		dense.Item{ID: "b", Vector: []float32{1, 1, 0}, Tenant: "acme"},
		dense.Item{ID: "c", Vector: []float32{1, 0, 0}, Tenant: "other"},
	)
	hits, _ := ix.Search(context.Background(), []float32{2, 0, 0}, 5, &dense.Filter{Tenant: "acme"})
	for _, h := range hits {
		fmt.Printf("%s %.3f\n", h.ID, h.Score)
	}
	// Output:
	// a 1.000
	// b 0.707
}
