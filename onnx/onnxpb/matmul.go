package onnxpb

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MatMulModel returns a model computing y = x · W for a random n×n float32
// weight W (seeded, std 1/sqrt(n)). Input "x" is float32 [rows, n] with a
// symbolic "rows" dimension; output "y" is float32 [rows, n]. One run with
// rows = n costs 2·n³ floating-point operations, which is how benchmarks
// measure the machine's peak GFLOP/s through the same runtime as the models.
func MatMulModel(n int, seed int64) (*Model, error) {
	return MatMulChainModel(n, 1, seed)
}

// MatMulChainModel returns a model applying depth MatMuls with the same n×n
// weight one after another: y = x · W · W · … · W. A run costs
// 2·rows·n²·depth operations spread over depth graph nodes, which makes it a
// long-running model whose runs can be terminated between nodes (used to test
// cancellation).
func MatMulChainModel(n, depth int, seed int64) (*Model, error) {
	if n <= 0 || depth <= 0 {
		return nil, fmt.Errorf("%w: MatMulChainModel needs n > 0 and depth > 0, got n=%d depth=%d", ErrInvalidGraph, n, depth)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6d61746d756c))
	w := make([]float32, n*n)
	std := 1 / math.Sqrt(float64(n))
	for i := range w {
		w[i] = float32(r.NormFloat64() * std)
	}
	g := NewGraph("matmul")
	g.AddInput("x", Float32, Symbolic("rows"), Fixed(int64(n)))
	g.AddFloat32("W", []int64{int64(n), int64(n)}, w)
	cur := "x"
	for i := range depth {
		name := fmt.Sprintf("matmul_%d", i)
		if i == depth-1 {
			name = "y"
		}
		cur = g.AddNode(name, "MatMul", []string{cur, "W"})
	}
	g.AddOutput("y", Float32, Symbolic("rows"), Fixed(int64(n)))
	return NewModel(g), nil
}
