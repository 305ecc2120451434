package synth

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/bench"
)

func TestVectors(t *testing.T) {
	c := VectorConfig{N: 50, Dim: 8, Clusters: 3, Rank: 2, Noise: 0.1, Seed: 7}
	a, err := Vectors(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Vectors(context.Background(), c)
	if len(a) != 50 || len(a[0]) != 8 {
		t.Fatalf("shape %d×%d", len(a), len(a[0]))
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("vector %d differs between runs", i)
		}
	}
	c.Seed = 8
	if d, _ := Vectors(context.Background(), c); slices.Equal(d[0], a[0]) {
		t.Error("seed does not change the data")
	}
	for _, bad := range []VectorConfig{{N: 0, Dim: 1, Clusters: 1}, {N: 1, Dim: 1, Clusters: 0}, {N: 1, Dim: 1, Clusters: 1, Noise: -1}} {
		if _, err := Vectors(context.Background(), bad); !errors.Is(err, bench.ErrBadOption) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Vectors(ctx, VectorConfig{N: 10, Dim: 2, Clusters: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
