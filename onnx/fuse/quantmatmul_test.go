package fuse_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/bertgen/berttest"
	"github.com/hybrank/hybrank/onnx"
	"github.com/hybrank/hybrank/onnx/fuse"
	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// int8Model is a small int8 cross-encoder (quantize's default form) with a
// score spread the comparisons can see; floatModel its float32 source.
func int8Model(t *testing.T) (*onnxpb.Model, bertgen.Config) {
	m, cfg := floatModel(t)
	if _, err := quantize.Rewrite(context.Background(), m, quantize.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	return m, cfg
}

func floatModel(t *testing.T) (*onnxpb.Model, bertgen.Config) {
	t.Helper()
	cfg := attentionConfig(128, 4)
	m, err := bertgen.BuildModel(spreadWeights(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return m, cfg
}

// TestQuantMatMulGraph: every DynamicQuantizeMatMul of an int8 graph becomes
// an ai.hybrank.QuantMatMul reading the same weights, scales and bias (after
// SkipLayerNorm, FirstToken and the attention rewrite, as models/ort
// applies them), each layer's GELU folded into its first feed-forward
// product, each with the activation codes asked for (16 bits; 8 on a
// second graph; any other width refused); the products reading one input
// (Q, K and V; K and V in the narrowed last layer) become one with split
// outputs over their weights side by side; a float32 graph, and a product
// whose weights are a graph input, are left alone.
func TestQuantMatMulGraph(t *testing.T) {
	m, cfg := int8Model(t)
	before, byName := map[string][]string{}, map[string][]string{} // output, node name → DynamicQuantizeMatMul inputs
	for _, n := range m.Graph.Nodes {
		if n.OpType == "DynamicQuantizeMatMul" {
			before[n.Outputs[0]], byName[n.Name+"_hybrank_QuantMatMul"] = n.Inputs, n.Inputs
		}
	}
	raw, floats := map[string][]byte{}, map[string][]float32{}
	for _, t := range m.Graph.Initializers {
		raw[t.Name], floats[t.Name] = t.Raw, t.Float32
	}
	for _, f := range []func(*onnxpb.Model) (fuse.Report, error){fuse.SkipLayerNorm,
		func(m *onnxpb.Model) (fuse.Report, error) { _, err := fuse.FirstToken(m); return fuse.Report{}, err },
		func(m *onnxpb.Model) (fuse.Report, error) {
			_, err := fuse.AttentionWith(m, 0)
			return fuse.Report{}, err
		}} {
		if _, err := f(m); err != nil {
			t.Fatal(err)
		}
	}
	n, err := fuse.QuantMatMulAMX(m, 16)
	if err != nil || n != len(before) || n == 0 {
		t.Fatalf("QuantMatMulAMX = %d, %v; want all %d products", n, err, len(before))
	}
	if countOps(m, "DynamicQuantizeMatMul") != 0 || !m.UsesOpset(ops.Domain) {
		t.Fatalf("%d DynamicQuantizeMatMul left", countOps(m, "DynamicQuantizeMatMul"))
	}
	if countOps(m, "Erf") != 0 {
		t.Errorf("%d Erf nodes left: GELU not folded", countOps(m, "Erf"))
	}
	gelus, splits, outputs := 0, 0, 0
	idx := m.Graph.Index()
	for _, nd := range m.Graph.Nodes {
		if nd.OpType != "QuantMatMul" {
			continue
		}
		outputs += len(nd.Outputs)
		if g, _ := attr(t, nd, "gelu").Int(); g == 1 {
			gelus++
			if !strings.Contains(nd.Name, "intermediate") {
				t.Errorf("%s: GELU folded into a product that is not a first feed-forward layer", nd.Name)
			}
		}
		if b, _ := attr(t, nd, "a_bits").Int(); b != 16 {
			t.Errorf("%s: a_bits = %d", nd.Name, b)
		}
		if amx, _ := attr(t, nd, "amx").Int(); amx != 1 {
			t.Errorf("%s: amx = %d", nd.Name, amx)
		}
		if len(nd.Outputs) == 1 {
			old := append(slices.Clone(byName[nd.Name]), "", "", "", "", "")
			// a as it was, or FirstToken's narrowing of it in the last layer.
			if want := []string{old[1], old[2], old[4], ""}; nd.Inputs[0] != old[0] && nd.Inputs[0] != old[0]+"/first_token" || !slices.Equal(nd.Inputs[1:], want) {
				t.Errorf("%s: inputs %q, want %q", nd.Name, nd.Inputs, want)
			}
			continue
		}
		// Split: each output an original product of the same a, the
		// weights, scales and biases theirs side by side.
		splits++
		w, sc, bias := idx.Constant(nd.Inputs[1]), idx.Constant(nd.Inputs[2]).Float32, idx.Constant(nd.Inputs[3]).Float32
		total := w.Dims[1]
		var off int64
		for o, out := range nd.Outputs {
			old := before[out]
			if old == nil || old[0] != nd.Inputs[0] && old[0]+"/first_token" != nd.Inputs[0] {
				t.Fatalf("%s: output %s is no product of %s (%q)", nd.Name, out, nd.Inputs[0], old)
			}
			b := raw[old[1]]
			nn := int64(len(b)) / w.Dims[0]
			if sp, _ := attr(t, nd, "split").Ints(); sp[o] != nn {
				t.Errorf("%s: split %v, output %d has %d columns", nd.Name, sp, o, nn)
			}
			for i := range w.Dims[0] {
				if !slices.Equal(w.Raw[i*total+off:i*total+off+nn], b[i*nn:(i+1)*nn]) {
					t.Fatalf("%s: weight row %d of output %d differs", nd.Name, i, o)
				}
			}
			wantScale, wantBias := floats[old[2]], make([]float32, nn)
			if len(old) > 4 && old[4] != "" {
				wantBias = floats[old[4]]
			}
			if len(wantScale) == 1 {
				wantScale = slices.Repeat(wantScale, int(nn))
			}
			if !slices.Equal(sc[off:off+nn], wantScale) || !slices.Equal(bias[off:off+nn], wantBias) {
				t.Errorf("%s: output %d's scales or bias differ from its product's", nd.Name, o)
			}
			off += nn
		}
	}
	if outputs != n {
		t.Errorf("QuantMatMul outputs %d, want one a product (%d)", outputs, n)
	}
	if splits != cfg.Layers {
		t.Errorf("%d products with split outputs, want one a layer (%d)", splits, cfg.Layers)
	}
	if gelus != cfg.Layers {
		t.Errorf("GELU folded into %d products, want one a layer (%d)", gelus, cfg.Layers)
	}
	m8, _ := int8Model(t)
	if n, err := fuse.QuantMatMulAMX(m8, 8); err != nil || n != len(before) {
		t.Fatalf("8-bit codes: QuantMatMulAMX = %d, %v", n, err)
	}
	for _, nd := range m8.Graph.Nodes {
		if nd.OpType != "QuantMatMul" {
			continue
		}
		if b, _ := attr(t, nd, "a_bits").Int(); b != 8 {
			t.Errorf("%s: a_bits = %d, want 8", nd.Name, b)
		}
	}
	if _, err := fuse.QuantMatMulAMX(m8, 12); err == nil {
		t.Error("12-bit codes: no error")
	}
	if n, err := fuse.QuantMatMulAMX(berttest.Model(t, attentionConfig(128, 4)), 16); n != 0 || err != nil {
		t.Errorf("float32 graph: QuantMatMulAMX = %d, %v; want it left alone", n, err)
	}
	m, _ = int8Model(t)
	i := slices.IndexFunc(m.Graph.Nodes, func(n onnxpb.Node) bool { return n.OpType == "DynamicQuantizeMatMul" })
	w := m.Graph.Nodes[i].Inputs[1]
	m.Graph.Initializers = slices.DeleteFunc(m.Graph.Initializers, func(t onnxpb.Tensor) bool { return t.Name == w })
	m.Graph.AddInput(w, onnxpb.Int8, onnxpb.Fixed(128), onnxpb.Fixed(128))
	if n, err := fuse.QuantMatMulAMX(m, 16); n != len(before)-1 || err != nil {
		t.Errorf("one weight a graph input: QuantMatMulAMX = %d, %v; want %d", n, err, len(before)-1)
	}
}

// smoothed puts a Mul by a constant per-channel vector before every
// DynamicQuantizeMatMul of m (as a smoothing quantizer writes them); with
// visible, each Mul's output is also a graph output, which keeps the
// rewrite from folding it.
func smoothed(m *onnxpb.Model, visible bool) {
	g := m.Graph
	rng := rand.New(rand.NewPCG(5, 6))
	var nodes []onnxpb.Node
	for _, n := range g.Nodes {
		if n.OpType == "DynamicQuantizeMatMul" {
			k := int(g.Index().Constant(n.Inputs[1]).Dims[0])
			c := make([]float32, k)
			for i := range c {
				c[i] = float32(0.5 + rng.Float64())
			}
			out := n.Name + "/smoothed"
			nodes = append(nodes, onnxpb.Node{Name: n.Name + "/smooth", OpType: "Mul", Inputs: []string{n.Inputs[0], g.AddFloat32(n.Name+"/smooth_c", []int64{int64(k)}, c)}, Outputs: []string{out}})
			n.Inputs = slices.Clone(n.Inputs)
			n.Inputs[0] = out
			if visible {
				g.AddOutput(out, onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic("s"), onnxpb.Fixed(int64(k)))
			}
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
}

// TestQuantMatMulWiring checks what the rewrite passes the operator, on any
// CPU with the custom operators (amx = 0, the reference path): a smoothing
// Mul folded into a_mul gives the same logits, to the bit, as the Mul left
// in the graph; a sequence scores the same alone as inside a padded batch
// (one activation scale per token: what DynamicQuantizeMatMul cannot do);
// and the scores stay within a few per cent of the float32 model's with
// 16-bit codes and 8-bit ones (here the weights' rounding dominates both;
// onnx's TestQuantMatMulWide holds what 16 bits buy a product).
func TestQuantMatMulWiring(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if err := onnx.CustomOps(); err != nil {
		t.Skipf("custom operators unavailable: %v", err)
	}
	dir := t.TempDir()
	write := func(name string, m *onnxpb.Model) string {
		p := filepath.Join(dir, name)
		if err := m.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rewriteBits := func(m *onnxpb.Model, want int, bits int64) *onnxpb.Model {
		n, err := fuse.QuantMatMulWith(m, 0, bits)
		if err != nil || n != want {
			t.Fatalf("rewrote %d products (%v), want %d", n, err, want)
		}
		return m
	}
	rewrite := func(m *onnxpb.Model, want int) *onnxpb.Model { return rewriteBits(m, want, 16) }
	m, cfg := int8Model(t)
	products := countOps(m, "DynamicQuantizeMatMul")
	plain := write("plain.onnx", m)
	perToken := write("token.onnx", rewrite(m, products))

	folded, kept := func() *onnxpb.Model { m, _ := int8Model(t); smoothed(m, false); return m }(), func() *onnxpb.Model { m, _ := int8Model(t); smoothed(m, true); return m }()
	rewrite(folded, products)
	rewrite(kept, products)
	if countOps(folded, "Mul") != countOps(kept, "Mul")-products {
		t.Errorf("folded graph has %d Mul nodes, the kept one %d: want %d fewer", countOps(folded, "Mul"), countOps(kept, "Mul"), products)
	}
	for _, n := range folded.Graph.Nodes {
		if n.OpType == "QuantMatMul" && n.Inputs[4] == "" {
			t.Errorf("%s: no a_mul after folding", n.Name)
		}
	}
	batch := berttest.Padded(11, 60, []int{60, 41, 7}, 1, cfg.VocabSize)
	if a, b := berttest.Run(t, write("folded.onnx", folded), bertgen.Logits, "", batch), berttest.Run(t, write("kept.onnx", kept), bertgen.Logits, "", batch); !slices.Equal(a, b) {
		t.Errorf("a_mul folded: logits %v, with the Mul kept %v", a, b)
	}

	// Sequence 1 (41 tokens) alone, then in the padded batch.
	alone := berttest.Padded(11, 41, []int{41}, 1, cfg.VocabSize)
	copy(alone.IDs, batch.IDs[60:101])
	copy(alone.TypeIDs, batch.TypeIDs[60:101])
	for _, c := range []struct {
		path  string
		exact bool
	}{{plain, false}, {perToken, true}} {
		in, one := berttest.Run(t, c.path, bertgen.Logits, "", batch)[1], berttest.Run(t, c.path, bertgen.Logits, "", alone)[0]
		t.Logf("per token %v: alone %.6f, in the batch %.6f", c.exact, one, in)
		if c.exact && math.Abs(float64(one-in)) > 1e-4*max(1, math.Abs(float64(one))) {
			t.Errorf("per-token scales: sequence scores %.6f alone, %.6f in a padded batch", one, in)
		}
	}

	// Grouping Q, K and V into one product changes no bit: the same codes,
	// the same integer sums, the same epilogue.
	mu, _ := int8Model(t)
	if n, err := fuse.QuantMatMulUngrouped(mu, 0, 16); err != nil || n != products {
		t.Fatalf("ungrouped rewrite: %d, %v", n, err)
	}
	if a, b := berttest.Run(t, perToken, bertgen.Logits, "", batch), berttest.Run(t, write("ungrouped.onnx", mu), bertgen.Logits, "", batch); !slices.Equal(a, b) {
		t.Errorf("grouped logits %v, ungrouped %v", a, b)
	}
	if countOps(mu, "QuantMatMul") != products || countOps(m, "QuantMatMul") >= products {
		t.Errorf("%d products: %d operators ungrouped, %d grouped", products, countOps(mu, "QuantMatMul"), countOps(m, "QuantMatMul"))
	}

	float := berttest.Run(t, write("float.onnx", func() *onnxpb.Model { m, _ := floatModel(t); return m }()), bertgen.Logits, "", batch)
	m8, _ := int8Model(t)
	perToken8 := write("token8.onnx", rewriteBits(m8, products, 8))
	span, diff := spanDiff(float, berttest.Run(t, perToken, bertgen.Logits, "", batch))
	_, diff8 := spanDiff(float, berttest.Run(t, perToken8, bertgen.Logits, "", batch))
	t.Logf("float32 logits span %.4g, per-token int8 max |Δ| %.3g with 16-bit codes, %.3g with 8-bit", span, diff, diff8)
	for _, d := range []float64{diff, diff8} {
		if d > 0.05*span || math.IsNaN(d) || span < 0.1 {
			t.Errorf("per-token int8 moves a logit by %.3g, over 5 %% of the float32 span %.3g", d, span)
		}
	}
}

// TestQuantMatMulRuntime: with AMX-INT8, the tile path gives the reference
// path's logits, through WriteFile as models/ort calls it, to 1e-3 of
// their span: the GELU polynomial rounds differently from erff, and that
// can move a later per-token code by a step (TestQuantMatMulKernel holds
// the products to the bit).
func TestQuantMatMulRuntime(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	if !onnx.QuantMatMulAMX() {
		t.Skip("no AMX-INT8 on this CPU (or the kernel withholds the tile state): the rewrite is not applied here")
	}
	for _, bits := range []int64{16, 8} {
		m, cfg := int8Model(t)
		dir := t.TempDir()
		plain, amx, ref := filepath.Join(dir, "int8.onnx"), filepath.Join(dir, "amx.onnx"), filepath.Join(dir, "ref.onnx")
		if err := m.WriteFile(plain); err != nil {
			t.Fatal(err)
		}
		r := fuse.ForCPU | fuse.RewriteQuantMatMulAMX
		if bits == 8 {
			r |= fuse.QuantMatMulA8
		}
		rep, err := fuse.WriteFile(plain, amx, r)
		if err != nil || rep.QuantMatMul == 0 {
			t.Fatalf("report %+v, %v", rep, err)
		}
		if _, err := fuse.SkipLayerNorm(m); err != nil {
			t.Fatal(err)
		}
		if _, err := fuse.FirstToken(m); err != nil {
			t.Fatal(err)
		}
		if n, err := fuse.QuantMatMulWith(m, 0, bits); err != nil || n != rep.QuantMatMul {
			t.Fatalf("reference rewrite: %d, %v; want %d", n, err, rep.QuantMatMul)
		}
		if err := m.WriteFile(ref); err != nil {
			t.Fatal(err)
		}
		batch := berttest.Padded(3, 100, []int{100, 77, 40, 9}, 1, cfg.VocabSize)
		a, b := berttest.Run(t, amx, bertgen.Logits, "", batch), berttest.Run(t, ref, bertgen.Logits, "", batch)
		lo, hi := slices.Min(b), slices.Max(b)
		for i := range a {
			// The GELU polynomial's 1e-7 can move the next layer's per-token
			// code by one step, and a logit by about 1e-5 of their span.
			if math.Abs(float64(a[i]-b[i])) > 1e-3*float64(hi-lo) {
				t.Errorf("%d-bit codes: AMX logits %v, reference %v", bits, a, b)
				break
			}
		}
	}
}
