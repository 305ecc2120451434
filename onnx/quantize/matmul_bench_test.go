package quantize_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// matMulModel is one weight product y = a·W + bias, a [batch, seq, k]: form
// "float32" MatMul and Add; "dqmm" com.microsoft DynamicQuantizeMatMul
// (onnx/quantize's int8 form: one activation scale per tensor);
// "quantmatmul" ai.hybrank.QuantMatMul with amx = 1 (one scale per token,
// AMX-INT8 tiles), "quantmatmul-smooth" the same with a per-channel a_mul.
func matMulModel(form string, k, n int, w []float32, codes []int8, scale, bias []float32) *onnxpb.Model {
	g := onnxpb.NewGraph("matmul-" + form)
	g.AddInput("a", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(int64(k)))
	raw := make([]byte, len(codes))
	for i, c := range codes {
		raw[i] = byte(c)
	}
	m := onnxpb.NewModel(g)
	switch form {
	case "float32":
		mm := g.AddNode("mm", "MatMul", []string{"a", g.AddFloat32("w", []int64{int64(k), int64(n)}, w)})
		g.AddNodeOutputs("bias", "Add", []string{mm, g.AddFloat32("b", []int64{int64(n)}, bias)}, []string{"y"})
	case "dqmm":
		g.AddRaw("w", onnxpb.Int8, []int64{int64(k), int64(n)}, raw)
		g.Nodes = append(g.Nodes, onnxpb.Node{Name: "dqmm", OpType: "DynamicQuantizeMatMul", Domain: onnxpb.MSDomain,
			Inputs: []string{"a", "w", g.AddFloat32("s", []int64{int64(n)}, scale), "", g.AddFloat32("b", []int64{int64(n)}, bias)}, Outputs: []string{"y"}})
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: onnxpb.MSDomain, Version: 1})
	default:
		g.AddRaw("w", onnxpb.Int8, []int64{int64(k), int64(n)}, raw)
		mul := ""
		if form == "quantmatmul-smooth" {
			f := make([]float32, k)
			for i := range f {
				f[i] = 0.5 + float32(i%7)/7
			}
			mul = g.AddFloat32("a_mul", []int64{int64(k)}, f)
		}
		g.Nodes = append(g.Nodes, onnxpb.Node{Name: "qmm", OpType: "QuantMatMul", Domain: ops.Domain,
			Inputs:  []string{"a", "w", g.AddFloat32("s", []int64{int64(n)}, scale), g.AddFloat32("b", []int64{int64(n)}, bias), mul},
			Outputs: []string{"y"}, Attrs: []onnxpb.Attr{onnxpb.AttrInt("amx", 1)}})
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: ops.Domain, Version: 1})
	}
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(int64(n)))
	return m
}

// BenchmarkMatMulForms times one weight product in ONNX Runtime's CPU
// provider (2 intra-op threads) in the forms of matMulModel, on eight
// scifact-length sequences (8 × 384 tokens) and one, for the shapes of
// balanced's layers (384 wide, feed-forward 1536) and fast's (128, 512).
// The ops' GOP/s is reported (2·M·K·N per run).
func BenchmarkMatMulForms(b *testing.B) {
	initORT(b)
	for _, kn := range [][2]int{{384, 384}, {384, 1536}, {1536, 384}, {128, 128}, {128, 512}, {512, 128}} {
		k, n := kn[0], kn[1]
		rng := rand.New(rand.NewPCG(uint64(k), uint64(n)))
		w := make([]float32, k*n)
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.05)
		}
		q, err := quantize.QuantizeMatrix(w, k, n, 8)
		if err != nil {
			b.Fatal(err)
		}
		bias := make([]float32, n)
		for _, batch := range []int{8, 1} {
			const seq = 384
			a := make([]float32, batch*seq*k)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for _, form := range []string{"float32", "dqmm", "quantmatmul", "quantmatmul-smooth"} {
				if form != "float32" && form != "dqmm" && !onnx.QuantMatMulAMX() {
					continue
				}
				b.Run(fmt.Sprintf("%s/m%d-k%d-n%d", form, batch*seq, k, n), func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "mm.onnx")
					if err := matMulModel(form, k, n, w, q.Q, q.Scale, bias).WriteFile(path); err != nil {
						b.Fatal(err)
					}
					sc := onnx.DefaultSessionConfig()
					sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 2
					s, err := onnx.NewSession(path, []string{"a"}, []string{"y"}, sc)
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					in := []onnx.Input{{Name: "a", Shape: []int64{int64(batch), seq, int64(k)}, Float32: a}}
					if _, err := s.Run(context.Background(), in); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for b.Loop() {
						if _, err := s.Run(context.Background(), in); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(2*float64(batch*seq*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
				})
			}
		}
	}
}
