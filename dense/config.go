package dense

import (
	"fmt"
	"math"
)

// MetricCosine is the only supported metric: cosine similarity, computed as
// the dot product of L2-normalised vectors.
const MetricCosine = "cosine"

// Config parameterises an Index. It is a plain value; DefaultConfig fills it
// and Validate checks it.
type Config struct {
	// Dim is the vector dimension; every vector added or searched must have it.
	Dim int `json:"dim"`
	// M is the maximum number of links per node on the upper layers of the
	// graph; layer 0 keeps up to 2M.
	M int `json:"m"`
	// Ml is the level multiplier: a node's top layer is floor(-ln(U)·Ml)
	// for uniform U. The paper's choice, used by DefaultConfig, is 1/ln(M).
	Ml float64 `json:"ml"`
	// EfConstruction is the beam width while inserting.
	EfConstruction int `json:"ef_construction"`
	// EfSearch is the beam width of a graph search: max(k, EfSearch) nodes
	// are kept while searching and the best k returned.
	EfSearch int `json:"ef_search"`
	// Metric must be MetricCosine.
	Metric string `json:"metric"`
	// FlatThreshold: a search whose candidate set (live vectors passing the
	// filter) has at most this many vectors is exact. Exact search costs
	// about one memory pass over the candidates (~0.2 ms per 4K rows of
	// 384 floats), comparable to a graph search at EfSearch 64.
	FlatThreshold int `json:"flat_threshold"`
	// MaxOverfetch: when the graph holds more than MaxOverfetch nodes per
	// candidate (the filter keeps under 1/MaxOverfetch of them), a graph
	// search would wander through mostly excluded nodes, so the search is
	// exact instead.
	MaxOverfetch int `json:"max_overfetch"`
	// Seed seeds the level generator, so builds from the same input in the
	// same order produce the same graph.
	Seed int64 `json:"seed"`
}

// DefaultConfig returns the defaults for vectors of dimension dim. EfSearch
// 64 is the smallest value of the sweep in bench/results/dense.md (100K ×
// 384 clustered synthetic vectors, M=16, EfConstruction=128) reaching
// recall@10 >= 0.95: 0.998 there, against 0.945 at 32. M=8 stays below
// 0.9 even at EfSearch 256 on that data.
func DefaultConfig(dim int) Config {
	return Config{
		Dim:            dim,
		M:              16,
		Ml:             1 / math.Log(16),
		EfConstruction: 128,
		EfSearch:       64,
		Metric:         MetricCosine,
		FlatThreshold:  4096,
		MaxOverfetch:   16,
		Seed:           1,
	}
}

// Validate reports the first invalid field, wrapping ErrConfig.
func (c Config) Validate() error {
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("%w: Dim %d must be positive", ErrConfig, c.Dim)
	case c.M < 2:
		return fmt.Errorf("%w: M %d must be at least 2", ErrConfig, c.M)
	case c.M > 1000:
		return fmt.Errorf("%w: M %d must be at most 1000", ErrConfig, c.M)
	case !(c.Ml > 0 && c.Ml <= 2):
		return fmt.Errorf("%w: Ml %v must be in (0, 2]", ErrConfig, c.Ml)
	case c.EfConstruction < 1:
		return fmt.Errorf("%w: EfConstruction %d must be positive", ErrConfig, c.EfConstruction)
	case c.EfSearch < 1:
		return fmt.Errorf("%w: EfSearch %d must be positive", ErrConfig, c.EfSearch)
	case c.Metric != MetricCosine:
		return fmt.Errorf("%w: Metric %q unsupported (want %q)", ErrConfig, c.Metric, MetricCosine)
	case c.FlatThreshold < 0:
		return fmt.Errorf("%w: FlatThreshold %d must not be negative", ErrConfig, c.FlatThreshold)
	case c.MaxOverfetch < 1:
		return fmt.Errorf("%w: MaxOverfetch %d must be at least 1", ErrConfig, c.MaxOverfetch)
	}
	return nil
}
