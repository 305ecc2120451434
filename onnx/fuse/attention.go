package fuse

import (
	"fmt"
	"slices"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"github.com/hybrank/hybrank/onnx/ops"
)

// intProducts are the operators of a graph whose weight products run in
// int8 (onnx/quantize's form, quantize_dynamic's, a QDQ export's fused).
var intProducts = []string{"DynamicQuantizeMatMul", "MatMulInteger", "MatMulIntegerToFloat", "QLinearMatMul", "QGemm", "QAttention"}

// AttentionBF16 rewrites m's graph in place: every self-attention of a
// BERT export after its Q, K and V projections —
//
//	Reshape(q, [·, ·, heads, d]) → Transpose(0,2,1,3) ─┐
//	Reshape(k, [·, ·, heads, d]) → Transpose(0,2,3,1) ─┴ MatMul → Div or Mul by a constant
//	  → Add(mask) → Softmax(last axis) → MatMul with Reshape(v) → Transpose(0,2,1,3)
//	  → Reshape([0, 0, heads·d])
//
// with every intermediate value read only along that chain — becomes one
// ai.hybrank.Attention(q, k, v, mask) node with bf16 = 1 (package onnx's
// operator, domain ops.Domain): both products in bfloat16 on AMX
// tiles, the softmax in float32, the scores of 16 queries at a time in
// cache instead of the batch × heads × seq² tensors the chain writes and
// reads four times (a single query row, as in a layer FirstToken
// narrowed, runs in float32). It returns how many it fused.
//
// Only graphs whose weight products already run in int8 are rewritten
// (DynamicQuantizeMatMul, MatMulInteger…): their activations carry 8-bit
// rounding, which bfloat16's 8-bit mantissa in attention adds little to; a
// float32 graph keeps its float32 attention (0, nil). Head sizes other
// than 32 and 64 are left as they are. The caller must load the result in
// a session that registers that domain (package onnx's CPU sessions do)
// on a CPU where onnx.AttentionBF16 holds. A graph with subgraphs is left as it
// was; an invalid graph is refused.
func AttentionBF16(m *onnxpb.Model) (int, error) { return attention(m, 1) }

// attention is AttentionBF16 writing the operator's bf16 attribute as
// given: 0 selects its float32 path (the tests' way to check the rewrite's
// wiring on any CPU).
func attention(m *onnxpb.Model, bf16 int64) (int, error) {
	return rewriteHybrank(m, func(f *fuser) int {
		g := f.g
		if !slices.ContainsFunc(g.Nodes, func(n onnxpb.Node) bool {
			return slices.Contains(intProducts, n.OpType) && (n.Domain == onnxpb.MSDomain || onnxpb.IsDefaultDomain(n.Domain))
		}) {
			return 0
		}
		fused := 0
		for i := range g.Nodes {
			if a, ok := f.attention(i); ok {
				f.replace[a.last] = onnxpb.Node{Name: g.Nodes[a.last].Name + "_hybrank_Attention", OpType: ops.Attention, Domain: ops.Domain,
					Inputs: []string{a.q, a.k, a.v, a.mask}, Outputs: []string{g.Nodes[a.last].Outputs[0]},
					Attrs: []onnxpb.Attr{onnxpb.AttrInt(ops.NumHeads, a.heads), onnxpb.AttrFloat(ops.Scale, a.scale), onnxpb.AttrInt(ops.BF16, bf16)}}
				for _, d := range a.drop {
					f.drop[d] = true
				}
				fused++
			}
		}
		return fused
	})
}

// rewriteHybrank runs one rewrite into package onnx's operators: it checks
// m, gives match a fuser over its graph (nothing for a graph with
// subgraphs), and when match reports changes commits them, imports
// ops.Domain and checks the result (restoring m if that fails:
// a bug). It returns match's count.
func rewriteHybrank(m *onnxpb.Model, match func(f *fuser) int) (int, error) {
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
	f.opset = m.Opset
	// What a failed rewrite restores (a match may add initializers).
	nodes, vi, inits, opsets := g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets
	n := match(f)
	if n == 0 {
		g.Initializers = inits
		return 0, nil
	}
	f.commit()
	if !m.UsesOpset(ops.Domain) {
		m.ExtraOpsets = append(slices.Clip(m.ExtraOpsets), onnxpb.OpsetID{Domain: ops.Domain, Version: 1})
	}
	if err := g.Validate(); err != nil {
		g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets = nodes, vi, inits, opsets
		return 0, fmt.Errorf("fuse: rewritten graph (a bug): %w", err)
	}
	return n, nil
}

// attn is one matched attention: its inputs, the chain's nodes (last, the
// final Reshape, is replaced; drop the others) and the attributes.
type attn struct {
	q, k, v, mask string
	heads         int64
	scale         float32
	last          int
	drop          []int
}

// attention matches the chain of AttentionBF16 at the Softmax node i.
func (f *fuser) attention(i int) (attn, bool) {
	var a attn
	g := f.g
	sm := &g.Nodes[i]
	if !sm.Is("Softmax") || len(sm.Inputs) != 1 || len(sm.Outputs) != 1 {
		return a, false
	}
	if ax, ok := sm.Attr("axis"); ok {
		if v, _ := ax.Int(); v != -1 && v != 3 {
			return a, false
		}
	} else if f.opset < 13 { // the default axis was 1 before opset 13
		return a, false
	}
	add := f.producer(sm.Inputs[0], "Add")
	if add < 0 || !f.only(sm.Inputs[0], i) {
		return a, false
	}
	if len(g.Nodes[add].Inputs) != 2 {
		return a, false
	}
	// One side of the Add is the scaled scores, the other the mask; a
	// mask built by a Mul of its own (bertgen's) must not pass for the
	// scores, so each side is followed to its MatMul.
	mm := -1
	var scaled int
	for k := range 2 {
		if sc, m, scale, ok := f.scores(g.Nodes[add].Inputs[k], add); ok {
			scaled, mm, a.scale, a.mask = sc, m, scale, g.Nodes[add].Inputs[1-k]
			break
		}
	}
	if mm < 0 {
		return a, false
	}
	qt, kt := g.Nodes[mm].Inputs[0], g.Nodes[mm].Inputs[1]
	var qr, kr, vr, qtN, ktN, vtN int
	var heads, dh int64
	ok := true
	split := func(v string, reader int, perm []int64) (in string, tr, rs int) {
		tr = f.producer(v, "Transpose")
		if tr < 0 || !f.only(v, reader) || !f.perm(tr, perm) {
			ok = false
			return "", -1, -1
		}
		r := g.Nodes[tr].Inputs[0]
		rs = f.producer(r, "Reshape")
		if rs < 0 || !f.only(r, tr) {
			ok = false
			return "", -1, -1
		}
		h, d, good := f.headShape(g.Nodes[rs].Inputs)
		if !good || (heads != 0 && (h != heads || d != dh)) {
			ok = false
			return "", -1, -1
		}
		heads, dh = h, d
		return g.Nodes[rs].Inputs[0], tr, rs
	}
	a.q, qtN, qr = split(qt, mm, []int64{0, 2, 1, 3})
	a.k, ktN, kr = split(kt, mm, []int64{0, 2, 3, 1})
	if !ok {
		return a, false
	}
	// P·V, then the heads merged back.
	pv := f.consumer(sm.Outputs[0], "MatMul")
	if pv < 0 || len(g.Nodes[pv].Inputs) != 2 || g.Nodes[pv].Inputs[0] != sm.Outputs[0] {
		return a, false
	}
	a.v, vtN, vr = split(g.Nodes[pv].Inputs[1], pv, []int64{0, 2, 1, 3})
	if !ok {
		return a, false
	}
	ct := f.consumer(g.Nodes[pv].Outputs[0], "Transpose")
	if ct < 0 || !f.perm(ct, []int64{0, 2, 1, 3}) {
		return a, false
	}
	last := f.consumer(g.Nodes[ct].Outputs[0], "Reshape")
	if last < 0 || g.Nodes[last].Inputs[0] != g.Nodes[ct].Outputs[0] || !f.mergedShape(g.Nodes[last].Inputs, heads*dh) {
		return a, false
	}
	if dh != 32 && dh != 64 {
		return a, false // the tile kernel's head sizes
	}
	a.heads, a.last = heads, last
	a.drop = []int{qr, qtN, kr, ktN, mm, scaled, add, i, vr, vtN, pv, ct}
	return a, true
}

// scores matches v, read only by node reader, as MatMul(x, y) / c or
// MatMul(x, y) · c (either order) with c a scalar constant, and returns
// the Div or Mul node, the MatMul node and the scale (1/c for a Div).
func (f *fuser) scores(v string, reader int) (scaled, mm int, scale float32, ok bool) {
	g := f.g
	if !f.only(v, reader) {
		return -1, -1, 0, false
	}
	for _, op := range []string{"Div", "Mul"} {
		sc := f.producer(v, op)
		if sc < 0 || len(g.Nodes[sc].Inputs) != 2 {
			continue
		}
		in := g.Nodes[sc].Inputs
		for k := range 2 { // k: the MatMul's side; a Div's constant is its divisor
			c, isConst := f.scalar(in[1-k])
			if !isConst || c == 0 || (op == "Div" && k == 1) {
				continue
			}
			m := f.producer(in[k], "MatMul")
			if m < 0 || len(g.Nodes[m].Inputs) != 2 || !f.only(in[k], sc) {
				continue
			}
			if op == "Div" {
				c = 1 / c
			}
			return sc, m, c, true
		}
	}
	return -1, -1, 0, false
}

// consumer returns the one node reading v when it is a default-domain op
// with one output and v is not a graph output, or -1.
func (f *fuser) consumer(v, op string) int {
	c := f.idx.Consumers[v]
	if len(c) != 1 || f.idx.Outputs[v] {
		return -1
	}
	n := &f.g.Nodes[c[0]]
	if !n.Is(op) || len(n.Outputs) != 1 {
		return -1
	}
	return c[0]
}

// perm reports whether Transpose node i has the permutation want.
func (f *fuser) perm(i int, want []int64) bool {
	v, ok := attrInts(&f.g.Nodes[i], "perm")
	return ok && slices.Equal(v, want)
}

// headShape reads a Reshape's constant target [·, ·, heads, d] (the first
// two 0 or -1: batch and sequence kept or inferred).
func (f *fuser) headShape(in []string) (heads, d int64, ok bool) {
	if len(in) != 2 {
		return 0, 0, false
	}
	t := constantOf(f.g, f.idx, in[1])
	if t == nil || t.DataType() != onnxpb.Int64 || len(t.Int64) != 4 {
		return 0, 0, false
	}
	s := t.Int64
	if (s[0] != 0 && s[0] != -1) || s[1] != 0 && s[1] != -1 || s[0] == -1 && s[1] == -1 || s[2] <= 0 || s[3] <= 0 {
		return 0, 0, false
	}
	return s[2], s[3], true
}

// mergedShape reports whether a Reshape's constant target is [0, 0, h]
// (or [0, 0, -1]).
func (f *fuser) mergedShape(in []string, h int64) bool {
	if len(in) != 2 {
		return false
	}
	t := constantOf(f.g, f.idx, in[1])
	if t == nil || t.DataType() != onnxpb.Int64 || len(t.Int64) != 3 {
		return false
	}
	s := t.Int64
	return s[0] == 0 && s[1] == 0 && (s[2] == h || s[2] == -1)
}
