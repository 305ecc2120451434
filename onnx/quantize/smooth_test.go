package quantize_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/onnx/quantize"
)

// TestSmoothRewrite: Activations names the four inputs of each layer's
// products (Q, K and V share one); a Smooth over them writes one Mul each,
// every product reads its activation's Mul, and the algebra holds: for
// each weight, (1 / s_j) · dequantized(W·s)[j][n] is W[j][n] to within half
// a quantization step scaled back.
func TestSmoothRewrite(t *testing.T) {
	m := tinyBERT(t)
	layers := 2
	cfg := quantize.DefaultConfig()
	cfg.WeightBits = 8
	acts, err := quantize.Activations(m, cfg)
	if err != nil || len(acts) != 4*layers {
		t.Fatalf("Activations = %v, %v; want %d (4 a layer)", acts, err, 4*layers)
	}
	float := map[string][]float32{} // weight initializer → values, before
	for _, init := range m.Graph.Initializers {
		if len(init.Dims) == 2 && init.Float32 != nil {
			float[init.Name] = init.Float32
		}
	}
	amax := map[string][]float32{}
	for _, a := range acts {
		v := make([]float32, a.K)
		for j := range v {
			v[j] = 1 + float32(j%5)
		}
		v[7] = 40 // an outlier channel
		amax[a.Name] = v
	}
	cfg.Smooth = &quantize.Smooth{Alpha: 0.5, AMax: amax, Source: "test"}
	rep, err := quantize.Rewrite(context.Background(), m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Smoothed != len(acts) || rep.Config.Smooth == nil {
		t.Fatalf("%d activations smoothed, want %d", rep.Smoothed, len(acts))
	}
	idx := m.Graph.Index()
	muls := 0
	for _, n := range m.Graph.Nodes {
		if strings.HasSuffix(n.Name, "_smooth_Mul") {
			muls++
		}
		if n.OpType != "DynamicQuantizeMatMul" {
			continue
		}
		p, ok := idx.Producer[n.Inputs[0]]
		if !ok || !strings.HasSuffix(m.Graph.Nodes[p].Name, "_smooth_Mul") {
			t.Fatalf("%s reads %q, not a smoothing Mul's output", n.Name, n.Inputs[0])
		}
		inv := idx.Constant(m.Graph.Nodes[p].Inputs[1]).Float32
		q, scale := idx.Constant(n.Inputs[1]), idx.Constant(n.Inputs[2]).Float32
		w := float[strings.TrimSuffix(n.Inputs[1], "_smoothed_quantized")]
		if w == nil {
			t.Fatalf("%s: weight %q is not a smoothed copy of a float32 weight", n.Name, n.Inputs[1])
		}
		k, nn := int(q.Dims[0]), int(q.Dims[1])
		for j := range k {
			for c := range nn {
				got := float64(inv[j]) * float64(int8(q.Raw[j*nn+c])) * float64(scale[c])
				if d := math.Abs(got - float64(w[j*nn+c])); d > 0.5*float64(scale[c]*inv[j])*1.0001 {
					t.Fatalf("%s [%d][%d]: 1/s · dequantized = %g, weight %g", n.Name, j, c, got, w[j*nn+c])
				}
			}
		}
		if inv[7] >= inv[6] { // the outlier channel is divided the most
			t.Errorf("%s: 1/s of the outlier channel %g, of its neighbour %g", n.Name, inv[7], inv[6])
		}
	}
	if muls != len(acts) {
		t.Errorf("%d smoothing Mul nodes, want %d", muls, len(acts))
	}

	bad := quantize.DefaultConfig()
	bad.Smooth = &quantize.Smooth{Alpha: 1.5}
	if _, err := quantize.Rewrite(context.Background(), tinyBERT(t), bad); !errors.Is(err, quantize.ErrBadConfig) {
		t.Errorf("alpha 1.5: %v, want ErrBadConfig", err)
	}
	bad.Smooth = &quantize.Smooth{Alpha: 0.5, AMax: map[string][]float32{acts[0].Name: {float32(math.NaN())}}}
	if _, err := quantize.Rewrite(context.Background(), tinyBERT(t), bad); !errors.Is(err, quantize.ErrBadConfig) {
		t.Errorf("NaN amax: %v, want ErrBadConfig", err)
	}
	// An AMax of the wrong length leaves that activation alone.
	short := quantize.DefaultConfig()
	short.Smooth = &quantize.Smooth{Alpha: 0.5, AMax: map[string][]float32{acts[0].Name: {1, 2, 3}}}
	if rep, err := quantize.Rewrite(context.Background(), tinyBERT(t), short); err != nil || rep.Smoothed != 0 {
		t.Errorf("AMax of 3 channels for 32: %d smoothed, %v", rep.Smoothed, err)
	}
}
