package fuse

import (
	"fmt"
	"slices"

	"github.com/hybrank/hybrank/models/onnxpb"
)

// QuantMatMulAMX rewrites m's graph in place: every com.microsoft
// DynamicQuantizeMatMul(a, b, b_scale, b_zero_point, bias) whose b is a
// constant int8 [K, N], b_scale a constant float32 of N values (or one),
// b_zero_point absent or all zeros and bias absent or a constant float32
// [N] becomes one ai.hybrank.QuantMatMul(a, b, b_scale, bias) with amx = 1
// (package onnx's operator, domain onnxpb.HybrankDomain): the same
// product with one activation scale per token instead of one per tensor,
// the integer products on AMX-INT8 tiles. Where a is Mul(x, c) with c a
// constant float32 [K] (models/quantize's smoothing) and every reader of
// a is rewritten, the Mul goes too: the operator takes x and c as a_mul.
// It returns how many it rewrote.
//
// The caller must load the result in a session that registers the domain
// (package onnx's CPU sessions do) on a CPU where onnx.QuantMatMulAMX
// holds. A graph with subgraphs is left as it was; an invalid graph is
// refused.
func QuantMatMulAMX(m *onnxpb.Model) (int, error) { return quantMatMul(m, 1) }

// quantMatMul is QuantMatMulAMX writing the operator's amx attribute as
// given: 0 selects its reference path (the tests' way to check the
// rewrite's wiring on any CPU).
func quantMatMul(m *onnxpb.Model, amx int64) (int, error) {
	if m == nil || m.Graph == nil {
		return 0, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	g := m.Graph
	if err := g.Validate(); err != nil {
		return 0, fmt.Errorf("fuse: input graph: %w", err)
	}
	if g.HasSubgraphs() {
		return 0, nil
	}
	f := newFuser(g)
	type match struct {
		node       int
		b, s, bias string
		k          int64
	}
	var found []match
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
		found = append(found, match{node: i, b: in[1], s: in[2], bias: in[4], k: k})
		rewritten[i] = true
	}
	if len(found) == 0 {
		return 0, nil
	}
	for _, mt := range found {
		n := &g.Nodes[mt.node]
		a, aMul := n.Inputs[0], ""
		if p := f.producer(a, "Mul"); p >= 0 && !f.idx.Outputs[a] && !f.drop[p] && f.allRewritten(a, rewritten) {
			if x, c, ok := pair(&g.Nodes[p], func(v string) bool { _, ok := f.vector(v, mt.k); return ok }); ok {
				a, aMul = x, c
				f.drop[p] = true
			}
		} else if p >= 0 && f.drop[p] { // a Mul another match took already
			x, c, _ := pair(&g.Nodes[p], func(v string) bool { _, ok := f.vector(v, mt.k); return ok })
			a, aMul = x, c
		}
		f.replace[mt.node] = onnxpb.Node{Name: n.Name + "_hybrank_QuantMatMul", OpType: "QuantMatMul", Domain: onnxpb.HybrankDomain,
			Inputs: []string{a, mt.b, mt.s, mt.bias, aMul}, Outputs: []string{n.Outputs[0]}, Attrs: []onnxpb.Attr{onnxpb.AttrInt("amx", amx)}}
	}
	nodes, vi, inits, opsets := g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets
	f.commit()
	if !m.UsesOpset(onnxpb.HybrankDomain) {
		m.ExtraOpsets = append(slices.Clip(m.ExtraOpsets), onnxpb.OpsetID{Domain: onnxpb.HybrankDomain, Version: 1})
	}
	if err := g.Validate(); err != nil {
		g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets = nodes, vi, inits, opsets
		return 0, fmt.Errorf("fuse: rewritten graph (a bug): %w", err)
	}
	return len(found), nil
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
