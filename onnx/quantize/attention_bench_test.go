package quantize_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
)

// Attention's shape in MiniLM-L6 (balanced): 12 heads of 32.
const (
	attnHeads   = 12
	attnHeadDim = 32
)

// attentionModel is one layer's attention after the Q, K and V
// projections, inputs q, k and v of [batch, seq, 384], output [batch, seq,
// 384]. form "export" is the operators a Hugging Face export runs
// (reshape and transpose per head, Q·Kᵀ, scale, the additive padding mask
// m of [batch, 1, 1, seq], Softmax, P·V, transpose back); "export-nomask"
// the same without the mask; "mha" one com.microsoft MultiHeadAttention
// node without a mask, the form whose CPU kernel runs flash attention.
func attentionModel(form string) *onnxpb.Model {
	const d = attnHeads * attnHeadDim
	g := onnxpb.NewGraph("attention-" + form)
	dims := []onnxpb.Dim{onnxpb.Symbolic("batch"), onnxpb.Symbolic("seq"), onnxpb.Fixed(d)}
	for _, n := range []string{"q", "k", "v"} {
		g.AddInput(n, onnxpb.Float32, dims...)
	}
	if form == "mha" {
		g.AddNodeOutputs("mha", "MultiHeadAttention", []string{"q", "k", "v"}, []string{"out"}, onnxpb.AttrInt("num_heads", attnHeads))
		g.Nodes[len(g.Nodes)-1].Domain = onnxpb.MSDomain
		g.AddOutput("out", onnxpb.Float32, dims...)
		m := onnxpb.NewModel(g)
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: onnxpb.MSDomain, Version: 1})
		return m
	}
	if form == "hybrank" || form == "hybrank-bf16" {
		g.AddInput("m", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Fixed(1), onnxpb.Fixed(1), onnxpb.Symbolic("seq"))
		bf16 := int64(0)
		if form == "hybrank-bf16" {
			bf16 = 1
		}
		g.Nodes = append(g.Nodes, onnxpb.Node{Name: "att", OpType: "Attention", Domain: ops.Domain, Inputs: []string{"q", "k", "v", "m"}, Outputs: []string{"out"},
			Attrs: []onnxpb.Attr{onnxpb.AttrInt("num_heads", attnHeads), onnxpb.AttrFloat("scale", float32(1/math.Sqrt(attnHeadDim))), onnxpb.AttrInt("bf16", bf16)}})
		g.AddOutput("out", onnxpb.Float32, dims...)
		m := onnxpb.NewModel(g)
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: ops.Domain, Version: 1})
		return m
	}
	heads := g.AddInt64("heads", []int64{4}, []int64{0, 0, attnHeads, attnHeadDim})
	qt := g.AddNode("qt", "Transpose", []string{g.AddNode("qr", "Reshape", []string{"q", heads})}, onnxpb.AttrInts("perm", 0, 2, 1, 3))
	kt := g.AddNode("kt", "Transpose", []string{g.AddNode("kr", "Reshape", []string{"k", heads})}, onnxpb.AttrInts("perm", 0, 2, 3, 1))
	vt := g.AddNode("vt", "Transpose", []string{g.AddNode("vr", "Reshape", []string{"v", heads})}, onnxpb.AttrInts("perm", 0, 2, 1, 3))
	s := g.AddNode("scores", "Div", []string{g.AddNode("qk", "MatMul", []string{qt, kt}), g.AddFloat32("sqrt_d", nil, []float32{float32(math.Sqrt(attnHeadDim))})})
	if form == "export" {
		g.AddInput("m", onnxpb.Float32, onnxpb.Symbolic("batch"), onnxpb.Fixed(1), onnxpb.Fixed(1), onnxpb.Symbolic("seq"))
		s = g.AddNode("masked", "Add", []string{s, "m"})
	}
	p := g.AddNode("p", "Softmax", []string{s}, onnxpb.AttrInt("axis", -1))
	c := g.AddNode("ct", "Transpose", []string{g.AddNode("pv", "MatMul", []string{p, vt})}, onnxpb.AttrInts("perm", 0, 2, 1, 3))
	g.AddNodeOutputs("out", "Reshape", []string{c, g.AddInt64("merged", []int64{3}, []int64{0, 0, d})}, []string{"out"})
	g.AddOutput("out", onnxpb.Float32, dims...)
	return onnxpb.NewModel(g)
}

// BenchmarkAttentionForms times one layer's attention in ONNX Runtime's
// CPU provider (2 intra-op threads, optimisation "all") in the three forms
// of attentionModel, for one scifact-length sequence and for a batch of
// eight (the mask all zeros: no padding), after checking that the three
// agree. It bounds what a fused attention kernel could give either side
// of the int8 / float32 ratio (see the package documentation).
func BenchmarkAttentionForms(b *testing.B) {
	initORT(b)
	for _, shape := range [][2]int{{1, 384}, {8, 384}} {
		batch, seq := shape[0], shape[1]
		rng := rand.New(rand.NewPCG(1, 2))
		in := func() []float32 {
			x := make([]float32, batch*seq*attnHeads*attnHeadDim)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			return x
		}
		q, k, v := in(), in(), in()
		var ref []float32
		for _, form := range []string{"export", "export-nomask", "mha", "hybrank", "hybrank-bf16"} {
			if form == "hybrank-bf16" && !onnx.AttentionBF16() {
				continue
			}
			b.Run(fmt.Sprintf("%s/b%d-s%d", form, batch, seq), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "attention.onnx")
				if err := attentionModel(form).WriteFile(path); err != nil {
					b.Fatal(err)
				}
				names := []string{"q", "k", "v"}
				dims := []int64{int64(batch), int64(seq), attnHeads * attnHeadDim}
				inputs := []onnx.Input{{Name: "q", Shape: dims, Float32: q}, {Name: "k", Shape: dims, Float32: k}, {Name: "v", Shape: dims, Float32: v}}
				if form == "export" || form == "hybrank" || form == "hybrank-bf16" {
					names = append(names, "m")
					inputs = append(inputs, onnx.Input{Name: "m", Shape: []int64{int64(batch), 1, 1, int64(seq)}, Float32: make([]float32, batch*seq)})
				}
				sc := onnx.DefaultSessionConfig()
				sc.Provider, sc.IntraOpThreads = onnx.ProviderCPU, 2
				s, err := onnx.NewSession(path, names, []string{"out"}, sc)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				out, err := s.Run(context.Background(), inputs)
				if err != nil {
					b.Fatal(err)
				}
				if ref == nil {
					ref = out[0].Float32
				}
				tol := 1e-4
				if form == "hybrank-bf16" {
					tol = 3e-2 // bfloat16 products
				}
				for i, x := range out[0].Float32 {
					if math.Abs(float64(x-ref[i])) > tol {
						b.Fatalf("output %d: %g, the export form's %g", i, x, ref[i])
					}
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.Run(context.Background(), inputs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
