package ort

import (
	"cmp"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// PeakGFLOPs writes a random n×n MatMul model (onnxpb.MatMulModel) to a
// temporary file, runs it runs times on an n×n input after one warm-up
// and returns the best GFLOP/s: the ceiling, which other load on the
// machine can only lower. Benchmarks divide a model's effective GFLOP/s
// by it.
func PeakGFLOPs(ctx context.Context, n, threads int, provider string, runs int) (float64, error) {
	if err := onnx.Init(onnx.RuntimeConfig{}); err != nil {
		return 0, err
	}
	m, err := onnxpb.MatMulModel(n, 1)
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "hybrank-peak-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "matmul.onnx")
	if err := m.WriteFile(path); err != nil {
		return 0, err
	}
	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.Provider(cmp.Or(provider, "cpu"))
	sc.IntraOpThreads = threads
	sess, err := onnx.NewSession(path, []string{"x"}, []string{"y"}, sc)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	x := make([]float32, n*n)
	r := rand.New(rand.NewPCG(2, 3))
	for i := range x {
		x[i] = r.Float32() - 0.5
	}
	in := []onnx.Input{{Name: "x", Shape: []int64{int64(n), int64(n)}, Float32: x}}
	if _, err := sess.Run(ctx, in); err != nil {
		return 0, err
	}
	rates := make([]float64, 0, runs)
	for range max(runs, 1) {
		t0 := time.Now()
		if _, err := sess.Run(ctx, in); err != nil {
			return 0, err
		}
		rates = append(rates, 2*float64(n)*float64(n)*float64(n)/time.Since(t0).Seconds()/1e9)
	}
	return slices.Max(rates), nil
}
