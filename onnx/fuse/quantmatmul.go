package fuse

import (
	"fmt"
	"math"
	"slices"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
)

// QuantMatMulAMX rewrites m's graph in place: every com.microsoft
// DynamicQuantizeMatMul(a, b, b_scale, b_zero_point, bias) whose b is a
// constant int8 [K, N], b_scale a constant float32 of N values (or one),
// b_zero_point absent or all zeros and bias absent or a constant float32
// [N] becomes one ai.hybrank.QuantMatMul(a, b, b_scale, bias) with amx = 1
// (package onnx's operator, domain ops.Domain): the same
// product with one activation scale per token instead of one per tensor,
// the integer products on AMX-INT8 tiles. Where a is Mul(x, c) with c a
// constant float32 [K] (onnx/quantize's smoothing) and every reader of
// a is rewritten, the Mul goes too: the operator takes x and c as a_mul.
// Where the product's output feeds only an export's GELU (y · 0.5 · (1 +
// erf(y / √2)): Div or Mul by the constant, Erf, Add 1, Mul by y, Mul by
// 0.5, in either operand order), the GELU goes into the operator as well
// (gelu = 1), computed in its epilogue. Every product gets a_bits = aBits:
// 16 (two integer products on the codes' two bytes; what a trained
// encoder's ranking needs, bench/results/rerank_int8_profile.md) or 8.
// Products that read the same activations with the same a_mul and no GELU
// (a layer's Q, K and V projections), up to three whose N are multiples of
// 16, become one operator over their weights side by side whose split
// attribute hands each its own output: the activations are quantized once
// instead of three times. It returns how many products it rewrote.
//
// The caller must load the result in a session that registers the domain
// (package onnx's CPU sessions do) on a CPU where onnx.QuantMatMulAMX
// holds. A graph with subgraphs is left as it was; an invalid graph is
// refused; an aBits other than 8 or 16 is an error.
func QuantMatMulAMX(m *onnxpb.Model, aBits int64) (int, error) { return quantMatMul(m, 1, aBits, true) }

// quantMatMul is QuantMatMulAMX writing the operator's amx attribute as
// given: 0 selects its reference path (the tests' way to check the
// rewrite's wiring on any CPU); group false leaves every product its own
// operator (the tests' reference for the grouping).
func quantMatMul(m *onnxpb.Model, amx, aBits int64, group bool) (int, error) {
	if aBits != 8 && aBits != 16 {
		return 0, fmt.Errorf("fuse: QuantMatMul activation bits %d (want 8 or 16)", aBits)
	}
	return rewriteHybrank(m, func(f *fuser) int { return f.quantMatMuls(amx, aBits, group) })
}

// quantMatMuls is QuantMatMulAMX's match over f's graph.
func (f *fuser) quantMatMuls(amx, aBits int64, group bool) int {
	g := f.g
	var found []qmmMatch
	rewritten := map[int]bool{}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.OpType != "DynamicQuantizeMatMul" || n.Domain != onnxpb.MSDomain || len(n.Inputs) < 3 || len(n.Inputs) > 5 || len(n.Outputs) != 1 {
			continue
		}
		in := append(slices.Clone(n.Inputs), "", "")[:5]
		b := f.idx.Constant(in[1])
		if b == nil || b.DataType() != onnxpb.Int8 || len(b.Dims) != 2 || b.Dims[0] < 1 || b.Dims[1] < 1 {
			continue
		}
		k, nn := b.Dims[0], b.Dims[1]
		if s := f.idx.Constant(in[2]); s == nil || s.DataType() != onnxpb.Float32 || (s.NumElements() != nn && s.NumElements() != 1) {
			continue
		}
		if in[3] != "" && !f.zeros(in[3]) {
			continue
		}
		if in[4] != "" {
			if _, ok := f.vector(in[4], nn); !ok {
				continue
			}
		}
		found = append(found, qmmMatch{node: i, b: in[1], s: in[2], bias: in[4], k: k, n: nn})
		rewritten[i] = true
	}
	if len(found) == 0 {
		return 0
	}
	folded := map[int][2]string{} // smoothing Mul node → its x and c
	for j, mt := range found {
		n := &g.Nodes[mt.node]
		a, aMul := n.Inputs[0], ""
		if p := f.producer(a, "Mul"); p >= 0 {
			if xc, ok := folded[p]; ok { // a Mul another match took already
				a, aMul = xc[0], xc[1]
			} else if !f.idx.Outputs[a] && !f.drop[p] && f.allRewritten(a, rewritten) {
				if x, c, ok := pair(&g.Nodes[p], func(v string) bool { _, ok := f.vector(v, mt.k); return ok }); ok {
					a, aMul = x, c
					f.drop[p], folded[p] = true, [2]string{x, c}
				}
			}
		}
		out, gelu := n.Outputs[0], int64(0)
		if chain, last, ok := f.gelu(out); ok {
			out, gelu = g.Nodes[last].Outputs[0], 1
			found[j].gelu = true
			for _, d := range chain {
				f.drop[d] = true
			}
		}
		f.replace[mt.node] = onnxpb.Node{Name: n.Name + "_hybrank_QuantMatMul", OpType: ops.QuantMatMul, Domain: ops.Domain,
			Inputs: []string{a, mt.b, mt.s, mt.bias, aMul}, Outputs: []string{out},
			Attrs: []onnxpb.Attr{onnxpb.AttrInt(ops.AMX, amx), onnxpb.AttrInt(ops.GELU, gelu), onnxpb.AttrInt(ops.ABits, aBits)}}
	}
	// Group the products by what they read; a group of two or three
	// becomes one operator with split outputs.
	var order [][2]string
	groups := map[[2]string][]qmmMatch{}
	for _, mt := range found {
		r := f.replace[mt.node]
		if !group || mt.n%16 != 0 || mt.gelu {
			continue
		}
		key := [2]string{r.Inputs[0], r.Inputs[4]}
		if groups[key] == nil {
			order = append(order, key)
		}
		groups[key] = append(groups[key], mt)
	}
	for _, key := range order {
		for ms := groups[key]; len(ms) >= 2; ms = ms[min(len(ms), 3):] {
			f.splitProducts(ms[:min(len(ms), 3)])
		}
	}
	return len(found)
}

// gelu matches the erf GELU an export writes after y: Div(y, √2) or
// Mul(y, 1/√2), Erf, Add(·, 1), Mul(y, ·), Mul(·, 0.5), operands of the
// Add and the Muls in either order, every value read only along the chain
// (y by the Div and the first Mul). It returns the chain's nodes and the
// last one.
func (f *fuser) gelu(y string) (chain []int, last int, ok bool) {
	g := f.g
	c := f.idx.Consumers[y]
	if len(c) != 2 || f.idx.Outputs[y] {
		return nil, -1, false
	}
	near := func(v string, want float64) bool {
		x, ok := f.scalar(v)
		return ok && math.Abs(float64(x)-want) <= 1e-4*want
	}
	var scale, mul1 int = -1, -1
	for _, i := range c {
		n := &g.Nodes[i]
		switch {
		case n.Is("Div") && len(n.Inputs) == 2 && n.Inputs[0] == y && near(n.Inputs[1], math.Sqrt2):
			scale = i
		case n.Is("Mul") && len(n.Inputs) == 2 && (n.Inputs[0] == y && near(n.Inputs[1], 1/math.Sqrt2) || n.Inputs[1] == y && near(n.Inputs[0], 1/math.Sqrt2)):
			scale = i
		case n.Is("Mul") && len(n.Inputs) == 2:
			mul1 = i
		}
	}
	if scale < 0 || mul1 < 0 || len(g.Nodes[scale].Outputs) != 1 {
		return nil, -1, false
	}
	erf := f.consumer(g.Nodes[scale].Outputs[0], "Erf")
	if erf < 0 {
		return nil, -1, false
	}
	add := f.consumer(g.Nodes[erf].Outputs[0], "Add")
	if add < 0 {
		return nil, -1, false
	}
	if _, _, ok := pair(&g.Nodes[add], func(v string) bool { return near(v, 1) }); !ok {
		return nil, -1, false
	}
	m1 := &g.Nodes[mul1]
	if len(m1.Outputs) != 1 || !(m1.Inputs[0] == y && m1.Inputs[1] == g.Nodes[add].Outputs[0] || m1.Inputs[1] == y && m1.Inputs[0] == g.Nodes[add].Outputs[0]) ||
		!f.only(g.Nodes[add].Outputs[0], mul1) {
		return nil, -1, false
	}
	mul2 := f.consumer(m1.Outputs[0], "Mul")
	if mul2 < 0 {
		return nil, -1, false
	}
	if _, _, ok := pair(&g.Nodes[mul2], func(v string) bool { return near(v, 0.5) }); !ok {
		return nil, -1, false
	}
	return []int{scale, erf, add, mul1, mul2}, mul2, true
}

// allRewritten reports whether every reader of v is a node in rewritten.
func (f *fuser) allRewritten(v string, rewritten map[int]bool) bool {
	c := f.idx.Consumers[v]
	return len(c) > 0 && !slices.ContainsFunc(c, func(i int) bool { return !rewritten[i] })
}

// zeros reports whether name is a constant whose every value is zero (an
// int8 or uint8 zero point).
func (f *fuser) zeros(name string) bool {
	t := f.idx.Constant(name)
	if t == nil {
		return false
	}
	switch t.DataType() {
	case onnxpb.Int8, onnxpb.Uint8:
		return !slices.ContainsFunc(t.Raw, func(b byte) bool { return b != 0 })
	}
	return false
}

// qmmMatch is one DynamicQuantizeMatMul QuantMatMulAMX rewrites: its node,
// its weights, scale and bias, K and N, and whether a GELU was folded in.
type qmmMatch struct {
	node       int
	b, s, bias string
	k, n       int64
	gelu       bool
}

// splitProducts turns the rewritten products ms (their f.replace nodes,
// reading the same a and a_mul, no GELU, each N a multiple of 16) into one
// QuantMatMul over their weights side by side ([K, ΣN], int8, row by
// row), scales and biases (zeros where a product has none), with split =
// their N and their outputs in order, in place of the first; the others
// are dropped.
func (f *fuser) splitProducts(ms []qmmMatch) {
	k := ms[0].k
	var total int64
	for _, mt := range ms {
		if mt.k != k {
			return
		}
		total += mt.n
	}
	w := make([]byte, k*total)
	scale, bias := make([]float32, 0, total), make([]float32, 0, total)
	split, outs := make([]int64, len(ms)), make([]string, len(ms))
	off := int64(0)
	for j, mt := range ms {
		b := f.idx.Constant(mt.b)
		for i := range k {
			copy(w[i*total+off:i*total+off+mt.n], b.Raw[i*mt.n:(i+1)*mt.n])
		}
		off += mt.n
		if s := f.idx.Constant(mt.s).Float32; len(s) == 1 {
			for range mt.n {
				scale = append(scale, s[0])
			}
		} else {
			scale = append(scale, s...)
		}
		if t, ok := f.vector(mt.bias, mt.n); ok && mt.bias != "" {
			bias = append(bias, t.Float32...)
		} else {
			bias = append(bias, make([]float32, mt.n)...)
		}
		split[j], outs[j] = mt.n, f.replace[mt.node].Outputs[0]
	}
	first := f.replace[ms[0].node]
	name := outs[0] + "_hybrank_split" // value names are unique; node names need not be
	node := onnxpb.Node{Name: name, OpType: ops.QuantMatMul, Domain: ops.Domain,
		Inputs: []string{first.Inputs[0], f.g.AddRaw(name+"/b", onnxpb.Int8, []int64{k, total}, w),
			f.g.AddFloat32(name+"/b_scale", []int64{total}, scale), f.g.AddFloat32(name+"/bias", []int64{total}, bias), first.Inputs[4]},
		Outputs: outs, Attrs: append(slices.Clone(first.Attrs), onnxpb.AttrInts(ops.Split, split...))}
	f.replace[ms[0].node] = node
	for _, mt := range ms[1:] {
		f.drop[mt.node] = true
	}
}
