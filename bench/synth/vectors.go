package synth

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/simd"
)

// VectorConfig describes a seeded Gaussian mixture of vectors shaped like
// text embeddings: low local intrinsic dimension inside each cluster.
type VectorConfig struct {
	// N is the number of vectors and Dim their dimension (both ≥ 1).
	N   int `json:"n"`
	Dim int `json:"dim"`
	// Clusters is the number of mixture components (≥ 1).
	Clusters int `json:"clusters"`
	// Rank is the dimension of each cluster's random subspace (≥ 0): the
	// local intrinsic dimension of the data.
	Rank int `json:"rank"`
	// Noise is the isotropic noise σ (≥ 0).
	Noise float64 `json:"noise"`
	// Seed selects the data.
	Seed uint64 `json:"seed"`
}

// Validate reports whether c can generate vectors.
func (c VectorConfig) Validate() error {
	if c.N < 1 || c.Dim < 1 || c.Clusters < 1 || c.Rank < 0 || !(c.Noise >= 0) {
		return fmt.Errorf("%w: vectors n=%d dim=%d clusters=%d rank=%d noise=%v", bench.ErrBadOption, c.N, c.Dim, c.Clusters, c.Rank, c.Noise)
	}
	return nil
}

// Vectors returns c.N vectors of dimension c.Dim: c.Clusters centroids
// with N(0,1) coordinates; each point is its centroid, plus Σ z_j·b_j over
// a random c.Rank-dimensional basis of its cluster (b_j coordinates
// N(0, 0.35²), z_j ~ N(0,1)), plus isotropic N(0, c.Noise²) noise. The
// local intrinsic dimension is thus about c.Rank, as with real text
// embeddings, rather than c.Dim (uniform or isotropic data is far harder
// for any graph index and unlike real embeddings). The vectors share one
// backing array; ctx is polled every 1024 vectors.
func Vectors(ctx context.Context, c VectorConfig) ([][]float32, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n, dim, clusters, rank := c.N, c.Dim, c.Clusters, c.Rank
	r := rand.New(rand.NewPCG(c.Seed, 0xde45e))
	cents := make([]float32, clusters*dim)
	bases := make([]float32, clusters*rank*dim)
	for i := range cents {
		cents[i] = float32(r.NormFloat64())
	}
	for i := range bases {
		bases[i] = float32(r.NormFloat64()) * 0.35
	}
	out := make([][]float32, n)
	flat := make([]float32, n*dim)
	for i := range out {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		k := r.IntN(clusters)
		v := flat[i*dim : (i+1)*dim : (i+1)*dim]
		copy(v, cents[k*dim:(k+1)*dim])
		for j := range v {
			v[j] += float32(c.Noise * r.NormFloat64())
		}
		for j := 0; j < rank; j++ {
			simd.Axpy(v, float32(r.NormFloat64()), bases[(k*rank+j)*dim:(k*rank+j+1)*dim])
		}
		out[i] = v
	}
	return out, nil
}
