package fuse

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Report says what SkipLayerNorm (and WriteFile, FirstToken too)
// changed. A plain value.
type Report struct {
	// SkipLayerNorm is the number of layer normalisations (nodes, or
	// spelled out) fused with their residual Add; BiasFolded how many of
	// those also took in the bias Add of the sublayer's output projection.
	SkipLayerNorm int `json:"skip_layer_norm"`
	BiasFolded    int `json:"bias_folded"`
	// FirstToken is what WriteFile's FirstToken narrowed.
	FirstToken Narrowed `json:"first_token"`
	// AttentionBF16 is how many self-attentions WriteFile's
	// AttentionBF16 fused (int8 graphs only).
	AttentionBF16 int `json:"attention_bf16,omitempty"`
	// QuantMatMul is how many DynamicQuantizeMatMuls WriteFile's
	// QuantMatMulAMX rewrote (per-token int8 on AMX tiles).
	QuantMatMul int `json:"quant_matmul,omitempty"`
}

// Changed reports whether the rewrite changed anything.
func (r Report) Changed() bool {
	return r.SkipLayerNorm > 0 || r.FirstToken.Nodes > 0 || r.AttentionBF16 > 0 || r.QuantMatMul > 0
}

// String is a short summary of what changed, e.g. "12 SkipLayerNorm (12
// with bias), first token: 22 nodes (6 MatMul)", "first token: 26 nodes
// (6 MatMul)" (ForCUDA), or "0 SkipLayerNorm (0 with bias)" when nothing
// did.
func (r Report) String() string {
	var parts []string
	if r.SkipLayerNorm > 0 || r.FirstToken.Nodes == 0 {
		parts = append(parts, fmt.Sprintf("%d SkipLayerNorm (%d with bias)", r.SkipLayerNorm, r.BiasFolded))
	}
	if r.FirstToken.Nodes > 0 {
		parts = append(parts, fmt.Sprintf("first token: %d nodes (%d MatMul)", r.FirstToken.Nodes, r.FirstToken.MatMuls))
	}
	if r.AttentionBF16 > 0 {
		parts = append(parts, fmt.Sprintf("%d attention bf16", r.AttentionBF16))
	}
	if r.QuantMatMul > 0 {
		parts = append(parts, fmt.Sprintf("%d per-token int8 MatMul", r.QuantMatMul))
	}
	return strings.Join(parts, ", ")
}

// SkipLayerNorm rewrites m's graph in place: every LayerNormalization that
// normalises the sum of a residual stream and a sublayer's output becomes
// one com.microsoft SkipLayerNormalization (see the package documentation
// for the exact pattern). The graph's inputs and outputs are unchanged.
// A graph with nothing to fuse, or with subgraphs (If, Loop), is left as
// it was, with a zero Report; an invalid graph (onnxpb.ErrInvalidGraph) is
// refused and left unmodified.
func SkipLayerNorm(m *onnxpb.Model) (Report, error) {
	if m == nil || m.Graph == nil {
		return Report{}, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	g := m.Graph
	if err := g.Validate(); err != nil {
		return Report{}, fmt.Errorf("fuse: input graph: %w", err)
	}
	if g.HasSubgraphs() {
		// Their references to outer values are not in the index: nothing
		// is fused rather than something read dropped.
		return Report{}, nil
	}
	f := newFuser(g)
	var rep Report
	for i := range g.Nodes {
		if sk, ok := f.match(i); ok {
			f.apply(i, sk)
			rep.SkipLayerNorm++
			if sk.bias != "" {
				rep.BiasFolded++
			}
		}
	}
	if !rep.Changed() {
		return Report{}, nil
	}
	nodes, vi, inits, opsets := g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets
	f.commit() // new slices: the old ones restore the graph
	if !m.UsesOpset(onnxpb.MSDomain) {
		m.ExtraOpsets = append(slices.Clip(m.ExtraOpsets), onnxpb.OpsetID{Domain: onnxpb.MSDomain, Version: 1})
	}
	// Checking costs a pass over the names and catches a bug before a
	// session loads the graph.
	if err := g.Validate(); err != nil {
		g.Nodes, g.ValueInfo, g.Initializers, m.ExtraOpsets = nodes, vi, inits, opsets
		return Report{}, fmt.Errorf("fuse: rewritten graph (a bug): %w", err)
	}
	return rep, nil
}

// fuser holds the state of one SkipLayerNorm. The graph's node list is
// only replaced by commit.
type fuser struct {
	g       *onnxpb.Graph
	idx     *onnxpb.Index
	drop    map[int]bool // nodes fused away
	replace map[int]onnxpb.Node
	opset   int64 // the model's default-domain opset, where a match depends on it
}

func newFuser(g *onnxpb.Graph) *fuser {
	return &fuser{g: g, idx: g.Index(), drop: map[int]bool{}, replace: map[int]onnxpb.Node{}}
}

// skip is one match: a layer normalisation ending at node index i (a
// LayerNormalization, or the last node of the operators an older export
// spells it with) over the sum of stream, the normalised residual stream
// (the full shape: SkipLayerNormalization's input, whose shape the output
// takes), and sublayer, the other summand (before its bias when bias is
// set; the fused node's skip, which the runtime broadcasts from [1, S, H]
// or [S, H]). drop lists the residual Add, the bias Add and the rest of a
// spelled-out normalisation.
type skip struct {
	drop              []int
	stream, sublayer  string
	bias, gamma, beta string
	epsilon           float32
}

// norm is a layer normalisation over the last axis with float32
// statistics, as matched by layerNorm.
type norm struct {
	x, gamma, beta string
	epsilon        float32
	hidden         int64
	chain          []int // nodes other than the last one, to drop
	readers        []int // the nodes reading x
}

// vector returns the float32 initializer name as a vector of n values (any
// n when n is 0), unless a graph input of that name can override it.
func (f *fuser) vector(name string, n int64) (*onnxpb.Tensor, bool) {
	t := f.idx.Constant(name)
	if t == nil || t.DataType() != onnxpb.Float32 || len(t.Dims) != 1 || (n > 0 && t.Dims[0] != n) {
		return nil, false
	}
	return t, true
}

// scalar returns the value of a one-element float32 constant: an
// initializer no graph input overrides, or a Constant node's value
// (value_float or a tensor).
func (f *fuser) scalar(name string) (float32, bool) {
	if p, ok := f.idx.Producer[name]; ok {
		n := &f.g.Nodes[p]
		if n.Is("Constant") && len(n.Attrs) == 1 && n.Attrs[0].Name() == "value_float" {
			return n.Attrs[0].Float()
		}
	}
	t := constantOf(f.g, f.idx, name)
	if t == nil || t.DataType() != onnxpb.Float32 || t.NumElements() != 1 || len(t.Float32) != 1 {
		return 0, false
	}
	return t.Float32[0], true
}

// constantOf returns the initializer called name that no graph input
// overrides, or the tensor of the Constant node producing it (its one
// attribute, "value", decoded); else nil.
func constantOf(g *onnxpb.Graph, idx *onnxpb.Index, name string) *onnxpb.Tensor {
	if t := idx.Constant(name); t != nil {
		return t
	}
	p, ok := idx.Producer[name]
	if !ok {
		return nil
	}
	n := &g.Nodes[p]
	if !n.Is("Constant") || len(n.Attrs) != 1 || n.Attrs[0].Name() != "value" {
		return nil
	}
	t, ok := n.Attrs[0].Tensor()
	if !ok {
		return nil
	}
	return &t
}

// only reports whether value v is read by exactly the node at index i and
// is not a graph output.
func (f *fuser) only(v string, i int) bool {
	c := f.idx.Consumers[v]
	return len(c) == 1 && c[0] == i && !f.idx.Outputs[v]
}

// readBy reports whether value v is read by exactly the nodes at the
// given indices (each once) and is not a graph output.
func (f *fuser) readBy(v string, nodes ...int) bool {
	c := slices.Clone(f.idx.Consumers[v])
	slices.Sort(c)
	want := slices.Clone(nodes)
	slices.Sort(want)
	return slices.Equal(c, want) && !f.idx.Outputs[v]
}

// producer returns the index of the node writing v when it is a
// default-domain op with one output, or -1.
func (f *fuser) producer(v, op string) int {
	p, ok := f.idx.Producer[v]
	if !ok {
		return -1
	}
	n := &f.g.Nodes[p]
	if !n.Is(op) || len(n.Outputs) != 1 || len(n.Inputs) == 0 {
		return -1
	}
	return p
}

// pair returns the inputs of binary node i as (a, c) where c satisfies
// isC, trying both orders; ok is false if neither does.
func pair(n *onnxpb.Node, isC func(string) bool) (a, c string, ok bool) {
	if len(n.Inputs) != 2 {
		return "", "", false
	}
	for k := range 2 {
		if isC(n.Inputs[k]) {
			return n.Inputs[1-k], n.Inputs[k], true
		}
	}
	return "", "", false
}

// embedded says whether v is a token embedding of the full [batch,
// sequence, hidden] shape: 1 for a Gather (axis 0) of a 2-D float32 table
// stored in the model by indices that are a graph input (input_ids,
// token_type_ids), 2 for the Add of two such, 0 otherwise. The
// embeddings' normalisation over that sum and the position embeddings
// ([1, S, H], which the fused node's skip may broadcast, and whose indices
// are usually a stored range, so 0) fuses like a layer's; when both sides
// score alike (position_ids a graph input too, and no token types) the
// normalisation is left alone.
func (f *fuser) embedded(v string) int {
	p, ok := f.idx.Producer[v]
	if !ok {
		return 0
	}
	n := &f.g.Nodes[p]
	if n.Is("Add") && len(n.Inputs) == 2 && n.Inputs[0] != v && n.Inputs[1] != v {
		if f.isGathered(n.Inputs[0]) && f.isGathered(n.Inputs[1]) {
			return 2
		}
		return 0
	}
	if f.isGathered(v) {
		return 1
	}
	return 0
}

// isGathered is embedded's Gather.
func (f *fuser) isGathered(v string) bool {
	p := f.producer(v, "Gather")
	if p < 0 {
		return false
	}
	n := &f.g.Nodes[p]
	if ax, ok := n.Attr("axis"); ok {
		if a, _ := ax.Int(); a != 0 {
			return false
		}
	}
	t := f.idx.Constant(n.Inputs[0])
	return len(n.Inputs) == 2 && t != nil && t.DataType() == onnxpb.Float32 && len(t.Dims) == 2 && f.idx.Inputs[n.Inputs[1]]
}

// isNormalised reports whether v is the output of a layer normalisation
// (or of a SkipLayerNormalization this rewrite makes): a residual stream
// of the full [batch, seq, hidden] shape.
func (f *fuser) isNormalised(v string) bool {
	p, ok := f.idx.Producer[v]
	if !ok {
		return false
	}
	n := &f.g.Nodes[p]
	if len(n.Outputs) == 0 || n.Outputs[0] != v {
		return false // a normalisation's mean or deviation output
	}
	if n.OpType == "SkipLayerNormalization" && n.Domain == onnxpb.MSDomain {
		return true
	}
	_, ok = f.layerNorm(p)
	return ok
}

// layerNorm matches node i as the end of a layer normalisation over the
// last axis: a LayerNormalization node, or the operators exports of
// opsets before 17 spell it with:
//
//	m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2))
//	y = Div(d, Sqrt(Add(v, ε))) · γ + β
//
// (ReduceMean over axis −1 keeping it; the Sub may be written twice, once
// for Pow and once for Div; Mul and Add in either order), every
// intermediate value read only inside the pattern.
func (f *fuser) layerNorm(i int) (norm, bool) {
	n := &f.g.Nodes[i]
	if n.Is("LayerNormalization") {
		return f.layerNormNode(i)
	}
	if !n.Is("Add") || len(n.Outputs) != 1 {
		return norm{}, false
	}
	yv, beta, ok := pair(n, func(v string) bool { _, ok := f.vector(v, 0); return ok })
	if !ok {
		return norm{}, false
	}
	mul := f.producer(yv, "Mul")
	if mul < 0 || !f.only(yv, i) {
		return norm{}, false
	}
	nv, gamma, ok := pair(&f.g.Nodes[mul], func(v string) bool { _, ok := f.vector(v, 0); return ok })
	if !ok {
		return norm{}, false
	}
	// γ and β must be of the hidden size: a one-element γ would
	// broadcast here and not in SkipLayerNormalization. (Their length is
	// all the graph says of the hidden size without shape inference.)
	bt, _ := f.vector(beta, 0)
	gt, _ := f.vector(gamma, 0)
	if bt.Dims[0] != gt.Dims[0] || gt.Dims[0] < 2 {
		return norm{}, false
	}
	div := f.producer(nv, "Div")
	if div < 0 || !f.only(nv, mul) || len(f.g.Nodes[div].Inputs) != 2 {
		return norm{}, false
	}
	d1, sv := f.g.Nodes[div].Inputs[0], f.g.Nodes[div].Inputs[1]
	sqrt := f.producer(sv, "Sqrt")
	if sqrt < 0 || !f.only(sv, div) {
		return norm{}, false
	}
	ev := f.g.Nodes[sqrt].Inputs[0]
	addE := f.producer(ev, "Add")
	if addE < 0 || !f.only(ev, sqrt) {
		return norm{}, false
	}
	vv, epsName, ok := pair(&f.g.Nodes[addE], func(v string) bool { _, ok := f.scalar(v); return ok })
	if !ok {
		return norm{}, false
	}
	eps, _ := f.scalar(epsName)
	rm2 := f.producer(vv, "ReduceMean")
	if rm2 < 0 || !f.only(vv, addE) || !f.lastAxisMean(rm2) {
		return norm{}, false
	}
	pv := f.g.Nodes[rm2].Inputs[0]
	pow := f.producer(pv, "Pow")
	if pow < 0 || !f.only(pv, rm2) || len(f.g.Nodes[pow].Inputs) != 2 {
		return norm{}, false
	}
	if e, ok := f.scalar(f.g.Nodes[pow].Inputs[1]); !ok || e != 2 {
		return norm{}, false
	}
	d2 := f.g.Nodes[pow].Inputs[0]
	sub1, sub2 := f.producer(d1, "Sub"), f.producer(d2, "Sub")
	if sub1 < 0 || sub2 < 0 {
		return norm{}, false
	}
	subs := []int{sub1}
	if sub1 == sub2 {
		if !f.readBy(d1, pow, div) {
			return norm{}, false
		}
	} else {
		subs = append(subs, sub2)
		if !f.only(d1, div) || !f.only(d2, pow) || !slices.Equal(f.g.Nodes[sub1].Inputs, f.g.Nodes[sub2].Inputs) {
			return norm{}, false
		}
	}
	s1 := &f.g.Nodes[sub1]
	if len(s1.Inputs) != 2 {
		return norm{}, false
	}
	x, mv := s1.Inputs[0], s1.Inputs[1]
	rm1 := f.producer(mv, "ReduceMean")
	if rm1 < 0 || f.g.Nodes[rm1].Inputs[0] != x || !f.lastAxisMean(rm1) || !f.readBy(mv, subs...) {
		return norm{}, false
	}
	readers := append([]int{rm1}, subs...)
	chain := append(slices.Clone(readers), pow, rm2, addE, sqrt, div, mul)
	return norm{x: x, gamma: gamma, beta: beta, epsilon: eps, hidden: gt.Dims[0], chain: chain, readers: readers}, true
}

// lastAxisMean reports whether ReduceMean node i averages over the last
// axis only (axes −1 as an attribute or, from opset 18, a constant input)
// and keeps it.
func (f *fuser) lastAxisMean(i int) bool {
	n := &f.g.Nodes[i]
	if a, ok := n.Attr("keepdims"); ok {
		if v, ok := a.Int(); !ok || v != 1 {
			return false
		}
	}
	if a, ok := n.Attr("axes"); ok {
		v, ok := a.Ints()
		return ok && len(n.Inputs) == 1 && slices.Equal(v, []int64{-1})
	}
	if len(n.Inputs) != 2 {
		return false
	}
	t := f.idx.Constant(n.Inputs[1])
	return t != nil && t.DataType() == onnxpb.Int64 && slices.Equal(t.Int64, []int64{-1})
}

// layerNormNode matches LayerNormalization node i.
func (f *fuser) layerNormNode(i int) (norm, bool) {
	ln := &f.g.Nodes[i]
	if len(ln.Inputs) < 2 || len(ln.Inputs) > 3 || len(ln.Outputs) == 0 {
		return norm{}, false
	}
	// Only the normalised output: SkipLayerNormalization's mean and
	// inverse standard deviation outputs are not LayerNormalization's.
	for _, o := range ln.Outputs[1:] {
		if o != "" {
			return norm{}, false
		}
	}
	if a, ok := ln.Attr("axis"); ok {
		if v, ok := a.Int(); !ok || v != -1 {
			return norm{}, false
		}
	}
	if a, ok := ln.Attr("stash_type"); ok {
		if v, ok := a.Int(); !ok || v != 1 {
			return norm{}, false
		}
	}
	gamma, ok := f.vector(ln.Inputs[1], 0)
	if !ok || gamma.Dims[0] < 2 {
		return norm{}, false
	}
	// LayerNormalization's default epsilon; SkipLayerNormalization's
	// differs (1e-12), so the fused node always states it.
	nm := norm{x: ln.Inputs[0], gamma: ln.Inputs[1], epsilon: 1e-5, hidden: gamma.Dims[0], readers: []int{i}}
	if len(ln.Inputs) == 3 && ln.Inputs[2] != "" {
		if _, ok := f.vector(ln.Inputs[2], nm.hidden); !ok {
			return norm{}, false
		}
		nm.beta = ln.Inputs[2]
	}
	if a, ok := ln.Attr("epsilon"); ok {
		v, ok := a.Float()
		if !ok {
			return norm{}, false
		}
		nm.epsilon = v
	}
	return nm, true
}

// match decides whether node i ends a layer normalisation to fuse.
func (f *fuser) match(i int) (skip, bool) {
	nm, ok := f.layerNorm(i)
	if !ok {
		return skip{}, false
	}
	if len(f.g.Nodes[i].Outputs) == 0 {
		return skip{}, false
	}
	sk := skip{gamma: nm.gamma, beta: nm.beta, epsilon: nm.epsilon, drop: nm.chain}
	// The residual Add: two activations, one of them a normalised
	// residual stream (the full shape), read by the normalisation alone.
	// The stream is the fused node's input and the other summand its
	// skip: the output keeps the stream's shape even when the other
	// broadcasts (a [1, S, H] position table, say).
	x := nm.x
	p, ok := f.idx.Producer[x]
	if !ok || !f.readBy(x, nm.readers...) {
		return skip{}, false
	}
	add := &f.g.Nodes[p]
	if !add.Is("Add") || len(add.Inputs) != 2 || len(add.Outputs) != 1 || f.drop[p] || f.replace[p].OpType != "" {
		return skip{}, false
	}
	a, b := add.Inputs[0], add.Inputs[1]
	ix := f.idx
	if ix.Initializers[a] != nil || ix.Initializers[b] != nil || ix.Inputs[a] || ix.Inputs[b] || a == b {
		return skip{}, false
	}
	switch ea, eb := f.embedded(a), f.embedded(b); {
	case f.isNormalised(b):
		sk.sublayer, sk.stream = a, b
	case f.isNormalised(a):
		sk.sublayer, sk.stream = b, a
	case eb > ea: // the sum of two token embeddings over one, or one over none
		sk.sublayer, sk.stream = a, b
	case ea > eb:
		sk.sublayer, sk.stream = b, a
	default: // which side has the full shape is not known
		return skip{}, false
	}
	sk.drop = append(sk.drop, p)
	// The sublayer's bias: Add(bias, y) or Add(y, bias) feeding only the
	// residual Add becomes SkipLayerNormalization's bias input.
	// A node already replaced (the last Add of a spelled-out
	// normalisation fused before) is no bias Add.
	if q, ok := f.idx.Producer[sk.sublayer]; ok && f.only(sk.sublayer, p) && !f.drop[q] && f.replace[q].OpType == "" {
		ba := &f.g.Nodes[q]
		if ba.Is("Add") && len(ba.Inputs) == 2 && len(ba.Outputs) == 1 {
			for k, c := range ba.Inputs {
				y := ba.Inputs[1-k]
				if _, ok := f.vector(c, nm.hidden); ok && ix.Initializers[y] == nil && !ix.Inputs[y] && y != c {
					sk.drop, sk.bias, sk.sublayer = append(sk.drop, q), c, y
					break
				}
			}
		}
	}
	return sk, true
}

// apply records the fusion of match sk at node i (a LayerNormalization,
// or the last node of a spelled-out one).
func (f *fuser) apply(i int, sk skip) {
	in := []string{sk.stream, sk.sublayer, sk.gamma, sk.beta}
	if sk.bias != "" {
		in = append(in, sk.bias)
	}
	ln := &f.g.Nodes[i]
	f.replace[i] = onnxpb.Node{Name: ln.Name + "_SkipLayerNorm", OpType: "SkipLayerNormalization", Domain: onnxpb.MSDomain,
		Inputs: in, Outputs: []string{ln.Outputs[0]}, Attrs: []onnxpb.Attr{onnxpb.AttrFloat("epsilon", sk.epsilon)}}
	for _, d := range sk.drop {
		f.drop[d] = true
	}
	// A later normalisation whose residual is this one's output still
	// sees a normalised stream: the nodes are not removed from g.Nodes
	// until commit, and the index keeps pointing at them.
}

// commit installs the fused node list, without the Constant nodes and
// initializers only the fused nodes read (a spelled-out normalisation's
// exponent and epsilon, an attention's head shapes), and drops value_info
// hints for values that no longer exist.
func (f *fuser) commit() {
	g := f.g
	nodes := make([]onnxpb.Node, 0, len(g.Nodes)-len(f.drop))
	read, gone := map[string]bool{}, map[string]bool{} // gone: values no longer produced
	for i, n := range g.Nodes {
		switch {
		case f.drop[i]:
			for _, o := range n.Outputs {
				gone[o] = true
			}
			continue
		case f.replace[i].OpType != "":
			n = f.replace[i]
		}
		nodes = append(nodes, n)
		for _, in := range n.Inputs {
			read[in] = true
		}
	}
	for _, o := range g.Outputs {
		read[o.Name] = true
	}
	g.Nodes = slices.DeleteFunc(nodes, func(n onnxpb.Node) bool {
		if !n.Is("Constant") || len(n.Outputs) != 1 || read[n.Outputs[0]] || f.idx.Consumers[n.Outputs[0]] == nil {
			return false
		}
		gone[n.Outputs[0]] = true
		return true
	})
	// Likewise the initializers only fused nodes read (an attention's head
	// shapes and scale).
	dropUnreadInitializers(g, f.idx, read)
	vi := g.ValueInfo[:0:0]
	for _, v := range g.ValueInfo {
		if !gone[v.Name] {
			vi = append(vi, v)
		}
	}
	g.ValueInfo = vi
}

// dropUnreadInitializers removes from g the initializers that nodes read
// before a rewrite (idx, the graph's index from before it) and none reads
// now (read: the inputs of the rewritten graph's nodes), unless a graph
// input may override one or it is a graph output. A rewrite's copy of
// g.Initializers is made first: the old slice can restore the graph.
func dropUnreadInitializers(g *onnxpb.Graph, idx *onnxpb.Index, read map[string]bool) {
	g.Initializers = slices.DeleteFunc(slices.Clone(g.Initializers), func(t onnxpb.Tensor) bool {
		return !read[t.Name] && len(idx.Consumers[t.Name]) > 0 && !idx.Inputs[t.Name] && !idx.Outputs[t.Name]
	})
}

// Rewrites selects the rewrites WriteFile applies.
type Rewrites uint8

const (
	// RewriteSkipLayerNorm applies SkipLayerNorm.
	RewriteSkipLayerNorm Rewrites = 1 << iota
	// RewriteFirstToken applies FirstToken.
	RewriteFirstToken
	// RewriteAttentionBF16 applies AttentionBF16 (int8 graphs; for a
	// session on a CPU where onnx.AttentionBF16 holds).
	RewriteAttentionBF16
	// RewriteQuantMatMulAMX applies QuantMatMulAMX (int8 graphs; for a
	// session on a CPU where onnx.QuantMatMulAMX holds), 16-bit
	// activation codes.
	RewriteQuantMatMulAMX
	// QuantMatMulA8 makes RewriteQuantMatMulAMX write 8-bit activation
	// codes.
	QuantMatMulA8

	// ForCPU is what package models/ort applies for ONNX Runtime's CPU
	// provider: both.
	ForCPU = RewriteSkipLayerNorm | RewriteFirstToken
	// ForCUDA is what it applies for the CUDA provider: FirstToken, which
	// saves the same work on any provider (the fusion is for the CPU
	// kernels).
	ForCUDA = RewriteFirstToken
)

// WriteFile reads the ONNX model at src, applies the rewrites r selects
// (SkipLayerNorm, then FirstToken, AttentionBF16, QuantMatMulAMX) and writes the result to dst, unless none
// changes anything (a zero Report, dst untouched). Models this package cannot read (external data, among
// others: onnxpb.ErrUnsupported) are errors; callers load such files
// unchanged. It holds the decoded model in memory, about twice the file's
// size, and streams the output to dst.
func WriteFile(src, dst string, r Rewrites) (Report, error) {
	m, err := onnxpb.ReadFile(src)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	if r&RewriteSkipLayerNorm != 0 {
		if rep, err = SkipLayerNorm(m); err != nil {
			return Report{}, err
		}
	}
	if r&RewriteFirstToken != 0 {
		if rep.FirstToken, err = FirstToken(m); err != nil {
			return Report{}, err
		}
	}
	if r&RewriteAttentionBF16 != 0 {
		if rep.AttentionBF16, err = AttentionBF16(m); err != nil {
			return Report{}, err
		}
	}
	if r&RewriteQuantMatMulAMX != 0 { // after AttentionBF16, which looks for int8 products by their ONNX Runtime names
		bits := int64(16)
		if r&QuantMatMulA8 != 0 {
			bits = 8
		}
		if rep.QuantMatMul, err = QuantMatMulAMX(m, bits); err != nil {
			return Report{}, err
		}
	}
	if !rep.Changed() {
		return Report{}, nil
	}
	if err := m.WriteFile(dst); err != nil {
		return Report{}, err
	}
	return rep, nil
}
