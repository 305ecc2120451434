package fuse

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Narrowed says what FirstToken changed. A plain value.
type Narrowed struct {
	// Nodes is the number of nodes that now compute the first position
	// of the sequence axis only, MatMuls how many of them are matrix
	// products (MatMul, FusedMatMul, DynamicQuantizeMatMul), and Slices
	// the Slice nodes added where a narrowed node reads a value other
	// nodes read whole.
	Nodes   int `json:"nodes"`
	MatMuls int `json:"matmuls"`
	Slices  int `json:"slices"`
	// Attention is set when a product of two activations (attention's
	// Q·Kᵀ and P·V) is narrowed too, not only products with weights: the
	// query row of the attention runs for the first token only.
	Attention bool `json:"attention,omitempty"`
}

// FirstToken rewrites m's graph in place so that every node whose
// results are read only at position 0 of one axis computes that position
// alone. In a cross-encoder the classification head reads the last
// layer's output at the first token ([CLS]) only (a Gather of index 0),
// so the last layer's query projection, its attention row, output
// projection, feed-forward block and normalisations need one position
// per sequence instead of all of them; only its key and value
// projections still see every token. Scores are unchanged but for float
// rounding (and, in int8 models, the activation scale of the narrowed
// products, taken over the rows they compute).
//
// The analysis walks the graph backwards from a Gather of constant index
// 0 along an axis, through operators that treat positions along that axis
// independently (element-wise arithmetic with broadcasting, MatMul's rows
// and batch axes, Softmax, reductions and layer normalisation over other
// axes, Transpose, Reshape to a shape that keeps the leading dimensions:
// a constant one, or one computed from the tensor's own Shape, which is
// replaced by its constant equivalent), and stops at any value that
// another node, or the graph's output, reads whole: there a Slice of
// position 0 is inserted (see the package documentation). A graph
// where nothing heavy (no matrix product) can be narrowed, or that has
// subgraphs, or an opset below 10, is left as it was with a zero
// Narrowed; an invalid graph (onnxpb.ErrInvalidGraph) is refused and left
// unmodified. The graph's inputs and outputs are unchanged.
func FirstToken(m *onnxpb.Model) (Narrowed, error) {
	if m == nil || m.Graph == nil {
		return Narrowed{}, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	g := m.Graph
	if err := g.Validate(); err != nil {
		return Narrowed{}, fmt.Errorf("fuse: input graph: %w", err)
	}
	if g.HasSubgraphs() || m.Opset < 10 { // Slice takes its bounds as inputs from opset 10
		return Narrowed{}, nil
	}
	n := newNarrower(m)
	n.analyse()
	rep := n.report()
	if rep.MatMuls == 0 {
		return Narrowed{}, nil
	}
	nodes, inits, vi := g.Nodes, g.Initializers, g.ValueInfo
	if rep.Slices = n.rewrite(); rep.Slices == 0 {
		// Every narrowed node reads narrowed values already: a graph
		// FirstToken rewrote before.
		g.Nodes, g.Initializers, g.ValueInfo = nodes, inits, vi
		return Narrowed{}, nil
	}
	if err := g.Validate(); err != nil {
		g.Nodes, g.Initializers, g.ValueInfo = nodes, inits, vi
		return Narrowed{}, fmt.Errorf("fuse: narrowed graph (a bug): %w", err)
	}
	return rep, nil
}

// narrower holds one FirstToken analysis.
type narrower struct {
	m    *onnxpb.Model
	g    *onnxpb.Graph
	idx  *onnxpb.Index
	rank map[string]int // values of known rank
	// length holds the element count of 1-D values of known length,
	// such as shapes computed for Reshape (Shape, Slice, Concat).
	length map[string]int
	// need says how a value is read: absent if by no one, all, or only
	// at position 0 of the axis it holds (≥ 0).
	need   map[string]int
	narrow map[int]bool  // nodes that compute position 0 only
	axes   map[int][]int // per narrowed node, its inputs' needs
	// shapes holds the constant target shapes that replace narrowed
	// Reshapes' computed ones, drop the shape computations nothing else
	// reads then (retarget).
	shapes map[int][]int64
	drop   map[int]bool
	consts map[string]*onnxpb.Tensor // constant's memo, nil for non-constants
}

// all marks a value read whole (need).
const all = -1

func newNarrower(m *onnxpb.Model) *narrower {
	return &narrower{m: m, g: m.Graph, idx: m.Graph.Index(), need: map[string]int{}, narrow: map[int]bool{}, axes: map[int][]int{},
		shapes: map[int][]int64{}, drop: map[int]bool{}, consts: map[string]*onnxpb.Tensor{}}
}

// read records that v is read as need says (all, or position 0 of an
// axis); two different needs make it all.
func (n *narrower) read(v string, need int) {
	if v == "" || n.constant(v) != nil {
		return
	}
	if old, ok := n.need[v]; ok && old != need {
		need = all
	}
	n.need[v] = need
}

// analyse decides, from the last node to the first (every reader of a
// value comes after its producer), which nodes can compute position 0
// only.
func (n *narrower) analyse() {
	n.inferRanks()
	for _, o := range n.g.Outputs {
		n.need[o.Name] = all
	}
	for i := len(n.g.Nodes) - 1; i >= 0; i-- {
		nd := &n.g.Nodes[i]
		if n.drop[i] {
			continue // a shape computation a narrowed Reshape no longer reads
		}
		if a, ok := n.outputAxis(nd); ok {
			if in, ok := n.inputNeeds(i, a); ok {
				n.narrow[i], n.axes[i] = true, in
				for j, v := range nd.Inputs {
					n.read(v, in[j])
				}
				continue
			}
		}
		if a, ok := n.firstOf(nd); ok {
			n.read(nd.Inputs[0], a)
			continue
		}
		for _, v := range nd.Inputs {
			n.read(v, all)
		}
	}
}

// outputAxis returns the axis along which every read output of nd is
// read at position 0 only; ok is false when an output is read whole or
// none is read.
func (n *narrower) outputAxis(nd *onnxpb.Node) (axis int, ok bool) {
	axis = all
	for _, o := range nd.Outputs {
		need, read := n.need[o]
		switch {
		case o == "" || !read:
		case need == all || (axis != all && need != axis):
			return 0, false
		default:
			axis = need
		}
	}
	return axis, axis != all
}

// firstOf returns the axis of a Gather that reads position 0 of its data
// along it (a constant index 0, a scalar or one element).
func (n *narrower) firstOf(nd *onnxpb.Node) (axis int, ok bool) {
	if !nd.Is("Gather") || len(nd.Inputs) != 2 {
		return 0, false
	}
	r, known := n.rank[nd.Inputs[0]]
	if idx, ok := n.int1(nd.Inputs[1]); !known || !ok || idx != 0 {
		return 0, false
	}
	a := attrInt(nd, "axis", 0)
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a >= int64(r) {
		return 0, false
	}
	return int(a), true
}

// elementwise are the operators whose output at a position depends on
// their inputs at that position only (with numpy broadcasting).
var elementwise = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true, "Erf": true, "Tanh": true, "Relu": true,
	"Sigmoid": true, "Sqrt": true, "Exp": true, "Neg": true, "Abs": true, "Cast": true, "Identity": true, "Where": true,
}

// elementwiseMS are ONNX Runtime's element-wise contrib operators (their
// biases broadcast along the last axis).
var elementwiseMS = map[string]bool{"Gelu": true, "FastGelu": true, "BiasGelu": true, "QuickGelu": true}

// matmuls are the matrix products narrowed along A's rows or the batch
// axes: MatMul's A and B, and the contrib operators' extra inputs
// (scales, zero points, bias) along the columns.
func isMatMul(nd *onnxpb.Node) bool {
	switch {
	case nd.Is("MatMul"):
		return true
	case nd.Domain == onnxpb.MSDomain && nd.OpType == "DynamicQuantizeMatMul":
		return true
	case nd.Domain == onnxpb.MSDomain && nd.OpType == "FusedMatMul":
		// transA moves A's rows; the batch transposes move the batch axes.
		return attrInt(nd, "transA", 0) == 0 && attrInt(nd, "transBatchA", 0) == 0 && attrInt(nd, "transBatchB", 0) == 0
	}
	return false
}

// inputNeeds returns, for a node whose outputs are read at position 0 of
// axis a only, how it reads each input to compute that position; ok is
// false when the node cannot be narrowed (an operator mixing positions
// along a, an unknown rank, a constant that varies along a).
func (n *narrower) inputNeeds(i, a int) ([]int, bool) {
	nd := &n.g.Nodes[i]
	r, ok := n.rank[result(nd, 0)]
	if !ok || a >= r {
		return nil, false
	}
	in := make([]int, len(nd.Inputs)) // set by each case
	// numpy: the operator broadcasts any operand along any axis (ONNX's
	// element-wise operators); the contrib operators accept only some
	// shapes, so every operand's rank must be known there.
	numpy := false
	// broadcast maps a onto input j as numpy broadcasting aligns it (from
	// the last axis); an input without that axis is read whole.
	broadcast := func(j int) bool {
		v := nd.Inputs[j]
		in[j] = all // "" and constants: nothing to slice
		if v == "" {
			return true
		}
		if c := n.constant(v); c != nil {
			aj := a - (r - len(c.Dims))
			return aj < 0 || c.Dims[aj] == 1 // else it varies along a
		}
		rj, known := n.rank[v]
		switch aj := a - (r - rj); {
		case !known && !numpy:
			return false
		case !known || aj < 0:
			// Read whole. Of unknown rank, it may vary along a: then
			// numpy broadcasting keeps every position in the result,
			// each computed as before, and position 0 is still right;
			// only the saving is lost.
			in[j] = all
		default:
			in[j] = aj
		}
		return true
	}
	each := func(from int) bool {
		for j := from; j < len(nd.Inputs); j++ {
			if !broadcast(j) {
				return false
			}
		}
		return true
	}
	switch {
	case elementwise[nd.OpType] && onnxpb.IsDefaultDomain(nd.Domain):
		numpy = true
		return in, each(0)
	case elementwiseMS[nd.OpType] && nd.Domain == onnxpb.MSDomain:
		return in, each(0)
	case nd.Domain == onnxpb.MSDomain && nd.OpType == "SkipLayerNormalization":
		// Over the last axis; input, skip, γ, β and bias broadcast.
		return in, a < r-1 && each(0)
	case nd.Is("LayerNormalization"):
		k := int(attrInt(nd, "axis", -1))
		if k < 0 {
			k += r
		}
		return in, a < k && each(0)
	case nd.Is("ReduceMean") || nd.Is("ReduceSum") || nd.Is("ReduceMax") || nd.Is("ReduceMin"):
		// Over other axes, dimensions kept (a spelled-out layer
		// normalisation's statistics); the axes an attribute or, from
		// opset 18 (13 for ReduceSum), the second input.
		axes, ok := attrInts(nd, "axes")
		if !ok {
			c := n.constant(arg(nd, 1))
			if c == nil || c.DataType() != onnxpb.Int64 || len(c.Int64) == 0 {
				return nil, false // none: every axis
			}
			axes = c.Int64
		}
		if attrInt(nd, "keepdims", 1) == 0 || len(axes) == 0 {
			return nil, false // empty axes: every axis, or none (noop_with_empty_axes)
		}
		for _, x := range axes {
			if x < 0 {
				x += int64(r)
			}
			if x == int64(a) {
				return nil, false
			}
		}
		in[0] = a
		for j := 1; j < len(in); j++ {
			in[j] = all // the axes
		}
		return in, true
	case nd.Is("Softmax") || nd.Is("LogSoftmax"):
		def := int64(-1)
		if n.m.Opset < 13 {
			def = 1 // and the input taken as 2-D from there: a before it still rows
		}
		k := int(attrInt(nd, "axis", def))
		if k < 0 {
			k += r
		}
		return in, a < k && each(0)
	case n.constant(arg(nd, 0)) != nil && (nd.Is("Transpose") || nd.Is("Reshape") || isMatMul(nd)):
		// Their first operand carries the positions along a, and a
		// constant is never sliced: the result would keep them all,
		// which only numpy-broadcasting readers would absorb.
		return nil, false
	case nd.Is("Transpose"):
		perm, ok := attrInts(nd, "perm")
		if !ok { // reversed
			in[0] = r - 1 - a
			return in, true
		}
		if len(perm) != r {
			return nil, false
		}
		in[0] = int(perm[a])
		return in, true
	case nd.Is("Reshape"):
		// A shape copying (0) the dimensions up to a keeps position p of
		// axis a at position p: a constant one, or one computed from the
		// data's own Shape (retarget).
		rd, known := n.rank[arg(nd, 0)]
		if !known || a >= rd || attrInt(nd, "allowzero", 0) != 0 {
			return nil, false
		}
		shape, chain, ok := n.retarget(i)
		if !ok || len(shape) <= a {
			return nil, false
		}
		for _, d := range shape[:a+1] {
			if d != 0 {
				return nil, false
			}
		}
		if chain != nil {
			n.shapes[i] = shape
			for _, c := range chain {
				n.drop[c] = true
			}
		}
		in[0], in[1] = a, all
		return in, true
	case isMatMul(nd):
		ra, okA := n.rank[arg(nd, 0)]
		rb, okB := n.rank[arg(nd, 1)]
		if c := n.constant(arg(nd, 1)); c != nil {
			rb, okB = len(c.Dims), true
		}
		if !okA || !okB || ra < 2 || rb < 2 || a >= r-1 {
			return nil, false // a 1-D operand, or the columns
		}
		if !each(2) { // scales, zero points, bias: along the columns
			return nil, false
		}
		if a == r-2 { // A's rows; B is read whole
			in[0], in[1] = ra-2, all
			return in, true
		}
		return in, broadcast(0) && broadcast(1) // a batch axis
	}
	return nil, false
}

// constant returns the value of an initializer no graph input overrides
// or of a Constant node's tensor, else nil (constantOf, decoded once per
// value: the analysis asks for every input of every node).
func (n *narrower) constant(v string) *onnxpb.Tensor {
	if t, ok := n.consts[v]; ok {
		return t
	}
	t := constantOf(n.g, n.idx, v)
	n.consts[v] = t
	return t
}

// isInt reports whether v is the one-element int64 constant want.
func (n *narrower) isInt(v string, want int64) bool {
	k, ok := n.int1(v)
	return ok && k == want
}

// int1 returns the value of a one-element int64 constant (a scalar or
// [k]): Gather indices, Slice bounds and axes.
func (n *narrower) int1(v string) (int64, bool) {
	c := n.constant(v)
	if c == nil || c.DataType() != onnxpb.Int64 || len(c.Int64) != 1 {
		return 0, false
	}
	return c.Int64[0], true
}

// report counts the narrowed nodes.
func (n *narrower) report() Narrowed {
	var rep Narrowed
	for i := range n.narrow {
		rep.Nodes++
		if nd := &n.g.Nodes[i]; isMatMul(nd) {
			rep.MatMuls++
			rep.Attention = rep.Attention || n.constant(arg(nd, 1)) == nil
		}
	}
	return rep
}

// rewrite inserts a Slice of position 0 before each narrowed node's input
// that is not itself narrowed, drops the shape hints of narrowed values,
// and returns the number of Slices.
func (n *narrower) rewrite() int {
	g := n.g
	narrowed := map[string]bool{}
	for i := range n.narrow {
		for _, o := range g.Nodes[i].Outputs {
			narrowed[o] = true
		}
	}
	added := map[string]bool{} // the new values, node names and those of the graph
	for _, nd := range g.Nodes {
		added[nd.Name] = true
	}
	for _, v := range g.ValueInfo {
		added[v.Name] = true
	}
	taken := func(name string) bool {
		_, p := n.idx.Producer[name]
		return p || added[name] || n.idx.Initializers[name] != nil || n.idx.Inputs[name] || n.idx.Outputs[name]
	}
	unique := func(base string) string {
		name := base
		for i := 2; taken(name); i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		added[name] = true
		return name
	}
	consts := map[string]string{} // "starts", "ends", "axis 2" → initializer
	constant := func(key string, v int64) string {
		if name, ok := consts[key]; ok {
			return name
		}
		name := g.AddInt64(unique("first_token/"+key), []int64{1}, []int64{v})
		consts[key] = name
		return name
	}
	// The shape computations retargeted Reshapes no longer read, and the
	// Constant nodes only those read.
	gone := map[string]bool{} // outputs of dropped nodes
	for i := range n.drop {
		for _, o := range g.Nodes[i].Outputs {
			gone[o] = true
		}
	}
	dropped := func(i int) bool {
		if n.drop[i] {
			return true
		}
		nd := &g.Nodes[i]
		if !nd.Is("Constant") || len(nd.Outputs) != 1 || n.idx.Outputs[nd.Outputs[0]] || len(n.idx.Consumers[nd.Outputs[0]]) == 0 {
			return false
		}
		for _, r := range n.idx.Consumers[nd.Outputs[0]] {
			if !n.drop[r] {
				return false
			}
		}
		gone[nd.Outputs[0]] = true
		return true
	}
	sliced := map[[2]string]string{} // {value, axis} → its position 0
	nodes := make([]onnxpb.Node, 0, len(g.Nodes)+8)
	for i, nd := range g.Nodes {
		if dropped(i) {
			continue
		}
		if shape, ok := n.shapes[i]; ok {
			nd.Inputs = slices.Clone(nd.Inputs)
			nd.Inputs[1] = g.AddInt64(unique("first_token/shape"), []int64{int64(len(shape))}, shape)
		}
		if n.narrow[i] {
			nd.Inputs = slices.Clone(nd.Inputs)
			for j, v := range nd.Inputs {
				a := n.axes[i][j]
				if v == "" || a == all || narrowed[v] || n.constant(v) != nil || n.isFirst(v, a) {
					continue
				}
				key := [2]string{v, strconv.Itoa(a)}
				s, ok := sliced[key]
				if !ok {
					s = unique(v + "/first_token")
					nodes = append(nodes, onnxpb.Node{Name: s, OpType: "Slice",
						Inputs:  []string{v, constant("starts", 0), constant("ends", 1), constant("axis_"+key[1], int64(a))},
						Outputs: []string{s}})
					sliced[key] = s
				}
				nd.Inputs[j] = s
			}
		}
		nodes = append(nodes, nd)
	}
	g.Nodes = nodes
	if len(n.drop) > 0 { // initializers only the dropped nodes read (Gather indices, Unsqueeze axes)
		read := map[string]bool{}
		for _, nd := range nodes {
			for _, v := range nd.Inputs {
				read[v] = true
			}
		}
		dropUnreadInitializers(g, n.idx, read)
	}
	vi := g.ValueInfo[:0:0]
	for _, v := range g.ValueInfo {
		if !narrowed[v.Name] && !gone[v.Name] {
			vi = append(vi, v)
		}
	}
	g.ValueInfo = vi
	return len(sliced)
}

// isFirst reports whether v is a Slice of position 0 along axis a (one
// FirstToken inserted, or an export's own x[:, 0:1]).
func (n *narrower) isFirst(v string, a int) bool {
	p, ok := n.idx.Producer[v]
	if !ok {
		return false
	}
	nd := &n.g.Nodes[p]
	if !nd.Is("Slice") || len(nd.Inputs) < 4 || len(nd.Inputs) > 5 {
		return false
	}
	is := func(j int, want int64) bool { return n.isInt(nd.Inputs[j], want) }
	r, known := n.rank[nd.Inputs[0]]
	return is(1, 0) && is(2, 1) && known && (is(3, int64(a)) || is(3, int64(a-r))) &&
		(len(nd.Inputs) == 4 || nd.Inputs[4] == "" || is(4, 1))
}

// arg is nd's input j, or "" (no value) where it has fewer: Validate
// does not check operators' arities.
func arg(nd *onnxpb.Node, j int) string {
	if j < len(nd.Inputs) {
		return nd.Inputs[j]
	}
	return ""
}

// result is nd's output j, or "" where it has fewer.
func result(nd *onnxpb.Node, j int) string {
	if j < len(nd.Outputs) {
		return nd.Outputs[j]
	}
	return ""
}

func attrInt(nd *onnxpb.Node, name string, def int64) int64 {
	if a, ok := nd.Attr(name); ok {
		if v, ok := a.Int(); ok {
			return v
		}
	}
	return def
}

func attrInts(nd *onnxpb.Node, name string) ([]int64, bool) {
	if a, ok := nd.Attr(name); ok {
		return a.Ints()
	}
	return nil, false
}

// inferRanks sets the rank of every value whose rank follows from the
// graph's declared input ranks and constants through the operators of
// BERT-family graphs; other values stay unknown (and their readers are
// not narrowed through them).
func (n *narrower) inferRanks() {
	g := n.g
	n.rank = make(map[string]int, len(g.Nodes)+len(g.Initializers)+len(g.Inputs))
	n.length = map[string]int{}
	for _, v := range g.Inputs {
		if len(v.Dims) > 0 { // no dims: a scalar or an unknown shape
			n.rank[v.Name] = len(v.Dims)
		}
	}
	for i := range g.Initializers {
		if !n.idx.Inputs[g.Initializers[i].Name] {
			n.rank[g.Initializers[i].Name] = len(g.Initializers[i].Dims)
		}
	}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if l, ok := n.outputLength(nd); ok && result(nd, 0) != "" {
			n.length[result(nd, 0)] = l
		}
		if r, ok := n.outputRank(nd); ok {
			for _, o := range nd.Outputs {
				if o != "" {
					n.rank[o] = r
				}
			}
			if nd.Is("DynamicQuantizeLinear") && len(nd.Outputs) == 3 {
				n.rank[nd.Outputs[1]], n.rank[nd.Outputs[2]] = 0, 0 // scale, zero point
			}
		}
	}
}

// outputRank is the rank of nd's (first) output, where it is known.
func (n *narrower) outputRank(nd *onnxpb.Node) (int, bool) {
	in := func(j int) (int, bool) {
		if j >= len(nd.Inputs) || nd.Inputs[j] == "" {
			return 0, false
		}
		r, ok := n.rank[nd.Inputs[j]]
		return r, ok
	}
	// axesOf is the axes attribute, or (opset 13 and up) input j.
	axesOf := func(j int) ([]int64, bool) {
		if v, ok := attrInts(nd, "axes"); ok {
			return v, true
		}
		if j < len(nd.Inputs) {
			if c := n.constant(nd.Inputs[j]); c != nil && c.DataType() == onnxpb.Int64 {
				return c.Int64, true
			}
		}
		return nil, false
	}
	switch {
	case elementwise[nd.OpType] && onnxpb.IsDefaultDomain(nd.Domain),
		elementwiseMS[nd.OpType] && nd.Domain == onnxpb.MSDomain:
		r := 0
		for j := range nd.Inputs {
			rj, ok := in(j)
			if !ok {
				return 0, false
			}
			r = max(r, rj)
		}
		return r, len(nd.Inputs) > 0
	case isMatMul(nd):
		ra, okA := in(0)
		rb, okB := in(1)
		if !okA || !okB || ra < 2 || rb < 2 {
			return 0, false
		}
		return max(ra, rb), true
	case nd.Is("Constant"):
		if c := n.constant(result(nd, 0)); c != nil {
			return len(c.Dims), true
		}
		return 0, false
	case nd.Is("Shape"):
		return 1, true
	case nd.Is("Gather"):
		rd, ok1 := in(0)
		ri, ok2 := in(1)
		return rd - 1 + ri, ok1 && ok2
	case nd.Is("Reshape"), nd.Is("Expand"):
		r, ok := n.lengthOf(arg(nd, 1))
		if ri, known := in(0); nd.Is("Expand") { // broadcast with the input's rank
			return max(r, ri), ok && known
		}
		return r, ok
	case nd.Is("Unsqueeze"):
		r, ok := in(0)
		axes, okAxes := axesOf(1)
		return r + len(axes), ok && okAxes
	case nd.Is("Squeeze"):
		r, ok := in(0)
		axes, okAxes := axesOf(1)
		return r - len(axes), ok && okAxes && len(axes) > 0
	case nd.Is("ReduceMean"), nd.Is("ReduceSum"), nd.Is("ReduceMax"), nd.Is("ReduceMin"):
		r, ok := in(0)
		if attrInt(nd, "keepdims", 1) == 0 {
			return 0, false
		}
		return r, ok
	case nd.Is("Transpose"), nd.Is("Softmax"), nd.Is("LogSoftmax"), nd.Is("LayerNormalization"), nd.Is("Slice"),
		nd.Is("Concat"), nd.Is("DynamicQuantizeLinear"), nd.Is("Tile"),
		nd.Domain == onnxpb.MSDomain && nd.OpType == "SkipLayerNormalization":
		// The first output; the normalisations' statistics keep the rank.
		return in(0)
	}
	return 0, false
}

// lengthOf returns the length of a 1-D constant or of a value
// outputLength worked out.
func (n *narrower) lengthOf(v string) (int, bool) {
	if c := n.constant(v); c != nil {
		return int(c.NumElements()), len(c.Dims) == 1
	}
	l, ok := n.length[v]
	return l, ok
}

// outputLength is the number of elements of nd's output where it is a
// 1-D value whose length is known: a shape being computed (torch.onnx
// writes x.view(x.size()[:-1] + (h, d)) as Shape, Slice or Gather,
// Unsqueeze, Concat).
func (n *narrower) outputLength(nd *onnxpb.Node) (int, bool) {
	length := n.lengthOf
	switch {
	case nd.Is("Shape"):
		r, ok := n.rank[arg(nd, 0)]
		_, start := nd.Attr("start")
		_, end := nd.Attr("end")
		return r, ok && !start && !end
	case nd.Is("Cast"), nd.Is("Identity"):
		return length(arg(nd, 0))
	case nd.Is("Unsqueeze"): // a scalar made 1-D
		r, ok := n.rank[arg(nd, 0)]
		return 1, ok && r == 0
	case nd.Is("Concat"):
		sum := 0
		for _, v := range nd.Inputs {
			l, ok := length(v)
			if !ok {
				return 0, false
			}
			sum += l
		}
		return sum, true
	case nd.Is("Gather"):
		l, ok := length(arg(nd, 1))
		_, src := length(arg(nd, 0))
		return l, ok && src
	case nd.Is("Slice"):
		l, ok := length(arg(nd, 0))
		if !ok || len(nd.Inputs) < 3 || len(nd.Inputs) > 4 && nd.Inputs[4] != "" {
			return 0, false // steps other than 1 not worked out
		}
		bound := func(j int) (int, bool) {
			v, ok := n.int1(nd.Inputs[j])
			if !ok {
				return 0, false
			}
			if v < 0 {
				v += int64(l)
			}
			return int(min(max(v, 0), int64(l))), true
		}
		lo, ok1 := bound(1)
		hi, ok2 := bound(2)
		return max(hi-lo, 0), ok1 && ok2
	}
	return 0, false
}

// retarget returns the target shape of the Reshape at node i as constants,
// with 0 (copy the data's dimension) where the graph computes the data's
// own dimension at the same position: torch.onnx writes x.view(x.size()[:-1]
// + (h, d)) as Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(
// Shape(x), 1)), h, d), which is [0, 0, h, d] for any x, narrowed or not.
// chain is nil for a constant shape, else the nodes computing it, which
// the rewrite drops (their Shape would read the data whole). A computed
// shape is only worked out when nothing but this Reshape reads the chain:
// else ok is false.
func (n *narrower) retarget(i int) (shape []int64, chain []int, ok bool) {
	nd := &n.g.Nodes[i]
	data, target := arg(nd, 0), arg(nd, 1)
	if len(nd.Inputs) != 2 {
		return nil, nil, false
	}
	if c := n.constant(target); c != nil {
		return c.Int64, nil, c.DataType() == onnxpb.Int64 && len(c.Dims) == 1
	}
	p, found := n.idx.Producer[target]
	if !found || !n.g.Nodes[p].Is("Concat") || attrInt(&n.g.Nodes[p], "axis", 0) != 0 {
		return nil, nil, false
	}
	chain = []int{p}
	for _, part := range n.g.Nodes[p].Inputs {
		if c := n.constant(part); c != nil && c.DataType() == onnxpb.Int64 && len(c.Dims) == 1 {
			shape = append(shape, c.Int64...)
			continue
		}
		dims, nodes, ok := n.dimsOf(part, data)
		if !ok {
			return nil, nil, false
		}
		for _, k := range dims {
			if k != len(shape) {
				return nil, nil, false // another position's dimension: not a copy
			}
			shape = append(shape, 0)
		}
		chain = append(chain, nodes...)
	}
	// Only this Reshape reads the chain (and Constant nodes its Gathers
	// and Slices read, left alone).
	in := map[int]bool{i: true}
	for _, c := range chain {
		in[c] = true
	}
	for _, c := range chain {
		for _, o := range n.g.Nodes[c].Outputs {
			if n.idx.Outputs[o] {
				return nil, nil, false
			}
			for _, r := range n.idx.Consumers[o] {
				if !in[r] {
					return nil, nil, false
				}
			}
		}
	}
	return shape, chain, true
}

// dimsOf returns which dimensions of data the 1-D value v lists, in
// order, when v is taken from Shape(data): Gather(Shape(data), k) made
// 1-D by Unsqueeze, Gather with a one-element index, or Slice of
// Shape(data) with constant bounds; and the nodes computing it.
func (n *narrower) dimsOf(v, data string) (dims []int, nodes []int, ok bool) {
	p, found := n.idx.Producer[v]
	if !found {
		return nil, nil, false
	}
	nd := &n.g.Nodes[p]
	shapeOf := func(s string) (int, bool) { // Shape(data)'s node
		q, found := n.idx.Producer[s]
		sn := &n.g.Nodes[q]
		_, start := sn.Attr("start")
		_, end := sn.Attr("end")
		return q, found && sn.Is("Shape") && arg(sn, 0) == data && !start && !end
	}
	rank, known := n.rank[data]
	norm := func(k int64) int { // clamped to [-1, rank] in int64 first (INT64_MAX ends)
		if k < 0 {
			k += int64(rank)
		}
		return int(min(max(k, -1), int64(rank)))
	}
	switch {
	case nd.Is("Unsqueeze"):
		g, found := n.idx.Producer[arg(nd, 0)]
		if r, known := n.rank[arg(nd, 0)]; !found || !n.g.Nodes[g].Is("Gather") || !known || r != 0 {
			return nil, nil, false
		}
		dims, nodes, ok := n.dimsOf(arg(nd, 0), data)
		return dims, append(nodes, p), ok
	case nd.Is("Gather"):
		q, ok1 := shapeOf(arg(nd, 0))
		k, ok2 := n.int1(arg(nd, 1))
		if !ok1 || !ok2 || !known || attrInt(nd, "axis", 0) != 0 || k < -int64(rank) || k >= int64(rank) {
			return nil, nil, false
		}
		return []int{norm(k)}, []int{q, p}, true
	case nd.Is("Slice"):
		q, ok1 := shapeOf(arg(nd, 0))
		lo, ok2 := n.int1(arg(nd, 1))
		hi, ok3 := n.int1(arg(nd, 2))
		if !ok1 || !ok2 || !ok3 || !known || len(nd.Inputs) > 3 && !n.isInt(arg(nd, 3), 0) || len(nd.Inputs) > 4 && arg(nd, 4) != "" {
			return nil, nil, false
		}
		l, h := min(max(norm(lo), 0), rank), min(max(norm(hi), 0), rank)
		for k := l; k < h; k++ {
			dims = append(dims, k)
		}
		return dims, []int{q, p}, true
	}
	return nil, nil, false
}
