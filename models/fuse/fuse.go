package fuse

import (
	"fmt"

	"github.com/hybrank/hybrank/models/onnxpb"
)

// MSDomain is the operator-set domain of ONNX Runtime's contrib operators,
// where SkipLayerNormalization lives.
const MSDomain = "com.microsoft"

// Report says what SkipLayerNorm changed. A plain value.
type Report struct {
	// SkipLayerNorm is the number of LayerNormalization nodes fused with
	// their residual Add; BiasFolded how many of those also took in the
	// bias Add of the sublayer's output projection.
	SkipLayerNorm int `json:"skip_layer_norm"`
	BiasFolded    int `json:"bias_folded"`
}

// Changed reports whether the rewrite fused anything.
func (r Report) Changed() bool { return r.SkipLayerNorm > 0 }

// String is a short summary, e.g. "12 SkipLayerNorm (12 with bias)".
func (r Report) String() string {
	return fmt.Sprintf("%d SkipLayerNorm (%d with bias)", r.SkipLayerNorm, r.BiasFolded)
}

// SkipLayerNorm rewrites m's graph in place: every LayerNormalization that
// normalises the sum of a residual stream and a sublayer's output becomes
// one com.microsoft SkipLayerNormalization (see the package documentation
// for the exact pattern). The graph's inputs and outputs are unchanged.
// A graph with nothing to fuse is left as it was, with a zero Report; an
// invalid graph (onnxpb.ErrInvalidGraph) is refused and left unmodified.
func SkipLayerNorm(m *onnxpb.Model) (Report, error) {
	if m == nil || m.Graph == nil {
		return Report{}, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	g := m.Graph
	if err := g.Validate(); err != nil {
		return Report{}, fmt.Errorf("fuse: input graph: %w", err)
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
	f.commit()
	if !m.UsesOpset(MSDomain) {
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: MSDomain, Version: 1})
	}
	// Checking costs a pass over the names and catches a bug before a
	// session loads the graph.
	if err := g.Validate(); err != nil {
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
	gone    map[string]bool // values no longer produced
}

func newFuser(g *onnxpb.Graph) *fuser {
	return &fuser{g: g, idx: g.Index(), drop: map[int]bool{}, replace: map[int]onnxpb.Node{}, gone: map[string]bool{}}
}

// skip is one match: LayerNormalization ln (index) over Add add of input
// (the sublayer's output, before its bias when bias is set) and residual.
type skip struct {
	add, biasAdd       int // biasAdd is -1 without a folded bias
	input, residual    string
	bias, gamma, beta  string
	epsilon            float32
	lnName, lnOutput   string
	addOut, biasAddOut string
}

func isDefault(n *onnxpb.Node, op string) bool {
	return n.OpType == op && (n.Domain == "" || n.Domain == "ai.onnx")
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

// only reports whether value v is read by exactly the node at index i and
// is not a graph output.
func (f *fuser) only(v string, i int) bool {
	c := f.idx.Consumers[v]
	return len(c) == 1 && c[0] == i && !f.idx.Outputs[v]
}

// isNormalised reports whether v is the output of a LayerNormalization (or
// of a SkipLayerNormalization this rewrite makes): a residual stream of
// the full [batch, seq, hidden] shape.
func (f *fuser) isNormalised(v string) bool {
	p, ok := f.idx.Producer[v]
	if !ok {
		return false
	}
	n := &f.g.Nodes[p]
	return isDefault(n, "LayerNormalization") || n.OpType == "SkipLayerNormalization" && n.Domain == MSDomain
}

// match decides whether node i is a LayerNormalization to fuse.
func (f *fuser) match(i int) (skip, bool) {
	ln := &f.g.Nodes[i]
	if !isDefault(ln, "LayerNormalization") || len(ln.Inputs) < 2 || len(ln.Inputs) > 3 {
		return skip{}, false
	}
	// Only the normalised output: SkipLayerNormalization's mean and
	// inverse standard deviation outputs are not LayerNormalization's.
	for _, o := range ln.Outputs[1:] {
		if o != "" {
			return skip{}, false
		}
	}
	if a, ok := ln.Attr("axis"); ok {
		if v, ok := a.Int(); !ok || v != -1 {
			return skip{}, false
		}
	}
	if a, ok := ln.Attr("stash_type"); ok {
		if v, ok := a.Int(); !ok || v != 1 {
			return skip{}, false
		}
	}
	gamma, ok := f.vector(ln.Inputs[1], 0)
	if !ok {
		return skip{}, false
	}
	hidden := gamma.Dims[0]
	// LayerNormalization's default epsilon; SkipLayerNormalization's
	// differs (1e-12), so the fused node always states it.
	sk := skip{gamma: ln.Inputs[1], biasAdd: -1, lnName: ln.Name, lnOutput: ln.Outputs[0], epsilon: 1e-5}
	if len(ln.Inputs) == 3 && ln.Inputs[2] != "" {
		if _, ok := f.vector(ln.Inputs[2], hidden); !ok {
			return skip{}, false
		}
		sk.beta = ln.Inputs[2]
	}
	if a, ok := ln.Attr("epsilon"); ok {
		v, ok := a.Float()
		if !ok {
			return skip{}, false
		}
		sk.epsilon = v
	}
	// The residual Add: two activations, one of them a normalised
	// residual stream (so neither broadcasts: SkipLayerNormalization only
	// broadcasts its skip input), read by this node alone.
	x := ln.Inputs[0]
	p, ok := f.idx.Producer[x]
	if !ok || !f.only(x, i) {
		return skip{}, false
	}
	add := &f.g.Nodes[p]
	if !isDefault(add, "Add") || len(add.Inputs) != 2 || len(add.Outputs) != 1 || f.drop[p] {
		return skip{}, false
	}
	a, b := add.Inputs[0], add.Inputs[1]
	ix := f.idx
	if ix.Initializers[a] != nil || ix.Initializers[b] != nil || ix.Inputs[a] || ix.Inputs[b] || a == b {
		return skip{}, false
	}
	switch {
	case f.isNormalised(b):
		sk.input, sk.residual = a, b
	case f.isNormalised(a):
		sk.input, sk.residual = b, a
	default:
		return skip{}, false
	}
	sk.add, sk.addOut = p, x
	// The sublayer's bias: Add(bias, y) or Add(y, bias) feeding only the
	// residual Add becomes SkipLayerNormalization's bias input.
	if q, ok := f.idx.Producer[sk.input]; ok && f.only(sk.input, p) && !f.drop[q] {
		ba := &f.g.Nodes[q]
		if isDefault(ba, "Add") && len(ba.Inputs) == 2 && len(ba.Outputs) == 1 {
			for k, c := range ba.Inputs {
				y := ba.Inputs[1-k]
				if _, ok := f.vector(c, hidden); ok && ix.Initializers[y] == nil && !ix.Inputs[y] && y != c {
					sk.biasAdd, sk.biasAddOut, sk.bias, sk.input = q, sk.input, c, y
					break
				}
			}
		}
	}
	return sk, true
}

// apply records the fusion of match sk at LayerNormalization i.
func (f *fuser) apply(i int, sk skip) {
	in := []string{sk.input, sk.residual, sk.gamma, sk.beta}
	if sk.bias != "" {
		in = append(in, sk.bias)
	}
	f.replace[i] = onnxpb.Node{Name: sk.lnName + "_SkipLayerNorm", OpType: "SkipLayerNormalization", Domain: MSDomain,
		Inputs: in, Outputs: []string{sk.lnOutput}, Attrs: []onnxpb.Attr{onnxpb.AttrFloat("epsilon", sk.epsilon)}}
	f.drop[sk.add], f.gone[sk.addOut] = true, true
	if sk.biasAdd >= 0 {
		f.drop[sk.biasAdd], f.gone[sk.biasAddOut] = true, true
	}
	// A later LayerNormalization whose residual is this one's output
	// still sees a normalised stream: the node at i is not removed from
	// g.Nodes until commit, and producer keeps pointing at it.
}

// commit installs the fused node list and drops value_info hints for
// values that no longer exist.
func (f *fuser) commit() {
	g := f.g
	nodes := make([]onnxpb.Node, 0, len(g.Nodes)-len(f.drop))
	for i, n := range g.Nodes {
		switch {
		case f.drop[i]:
		case f.replace[i].OpType != "":
			nodes = append(nodes, f.replace[i])
		default:
			nodes = append(nodes, n)
		}
	}
	g.Nodes = nodes
	vi := g.ValueInfo[:0:0]
	for _, v := range g.ValueInfo {
		if !f.gone[v.Name] {
			vi = append(vi, v)
		}
	}
	g.ValueInfo = vi
}

// WriteFile reads the ONNX model at src, applies SkipLayerNorm and writes
// the result to dst, unless there is nothing to fuse (a zero Report, dst
// untouched). Models this package cannot read (external data, among
// others: onnxpb.ErrUnsupported) are errors; callers load such files
// unchanged. It holds the decoded model in memory, about twice the file's
// size, and streams the output to dst.
func WriteFile(src, dst string) (Report, error) {
	m, err := onnxpb.ReadFile(src)
	if err != nil {
		return Report{}, err
	}
	rep, err := SkipLayerNorm(m)
	if err != nil || !rep.Changed() {
		return Report{}, err
	}
	if err := m.WriteFile(dst); err != nil {
		return Report{}, err
	}
	return rep, nil
}
