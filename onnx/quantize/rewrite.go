package quantize

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Report describes one rewrite. A plain value.
type Report struct {
	Config Config `json:"config"`
	// Nodes lists the quantized MatMul and Gemm nodes in graph order.
	Nodes []NodeReport `json:"nodes"`
	// Skipped lists the MatMul and Gemm nodes with a constant weight that
	// stay float32, and why. MatMuls of two activations (attention's Q·Kᵀ
	// and P·V) have no weight and are not listed.
	Skipped []Skip `json:"skipped,omitempty"`
	// WeightBytesFP32 is the size of the float32 weights replaced (each
	// distinct weight once); WeightBytesInt8 the int8 codes and float32
	// scales that replace them.
	WeightBytesFP32 int64 `json:"weight_bytes_fp32"`
	WeightBytesInt8 int64 `json:"weight_bytes_int8,omitempty"`
	// Converted is the number of float32 initializers a TypeFP16 rewrite
	// turned into float16 (WeightBytesFP16 bytes), Clamped the values
	// beyond ±65504 set to it.
	Converted       int   `json:"converted,omitempty"`
	WeightBytesFP16 int64 `json:"weight_bytes_fp16,omitempty"`
	Clamped         int   `json:"clamped,omitempty"`
	// Smoothed is the number of activations a Config.Smooth migration
	// divided by their channel factors (one Mul each).
	Smoothed int `json:"smoothed,omitempty"`
	// ModelBytesIn and ModelBytesOut are the ONNX file sizes before and
	// after; set by Dir only.
	ModelBytesIn  int64 `json:"model_bytes_in,omitempty"`
	ModelBytesOut int64 `json:"model_bytes_out,omitempty"`
}

// NodeReport describes one quantized node.
type NodeReport struct {
	Node   string `json:"node"`
	OpType string `json:"op_type"`
	Weight string `json:"weight"`
	K      int    `json:"k"`
	N      int    `json:"n"`
	// BiasFolded: the Add of a bias that followed the MatMul became the
	// fused operator's bias input (FormFused only).
	BiasFolded bool `json:"bias_folded,omitempty"`
	// Smoothed: the weight was quantized after a Config.Smooth migration
	// (rows multiplied by their channel factors; MaxAbsError and
	// MaxAbsWeight are of the migrated weight).
	Smoothed bool `json:"smoothed,omitempty"`
	// MaxAbsError is max |w − dequantized w|; MaxAbsWeight is max |w|.
	MaxAbsError  float32 `json:"max_abs_error"`
	MaxAbsWeight float32 `json:"max_abs_weight"`
}

// Skip is a node with a weight that stays float32.
type Skip struct {
	Node   string `json:"node"`
	Weight string `json:"weight"`
	Reason string `json:"reason"`
}

// Rewrite quantizes m's graph in place. With cfg.Type TypeFP16 it converts
// the whole graph to float16 instead (see the package documentation); the
// rest of this comment is int8's. Every MatMul whose B is a 2-D
// float32 initializer, and every Gemm (transA 0, alpha and beta 1, bias
// absent or 1-D) with such a B, gets int8 per-channel weights in cfg.Form,
// unless Config.Exclude names it. The graph's inputs and outputs are
// unchanged. float32 weights no other node reads are removed; value_info
// hints for values that no longer exist are dropped.
//
// Every error leaves m unmodified: an input graph that is not well formed
// (onnxpb.ErrInvalidGraph; models of IR version 3 that list initializers as
// graph inputs are refused so), a NaN or infinite weight (ErrNonFinite), a
// model with nothing to quantize (ErrNothingToQuantize), a cancelled ctx
// (checked between nodes).
func Rewrite(ctx context.Context, m *onnxpb.Model, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if m == nil || m.Graph == nil {
		return Report{}, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	if err := m.Graph.Validate(); err != nil {
		return Report{}, fmt.Errorf("quantize: input graph: %w", err)
	}
	if m.Graph.HasSubgraphs() {
		// A branch may read a weight or a biased MatMul's output by name:
		// the rewrite, which removes both, cannot see it.
		return Report{}, fmt.Errorf("%w: the graph has subgraphs (If, Loop), which the rewrite does not look into", onnxpb.ErrUnsupported)
	}
	if cfg.Type == TypeFP16 {
		return rewriteFP16(ctx, m, cfg)
	}
	if cfg.Form == FormStandard && m.Opset < 11 {
		return Report{}, fmt.Errorf("%w: opset %d has no DynamicQuantizeLinear (needs 11); use %s", onnxpb.ErrUnsupported, m.Opset, FormFused)
	}
	r := newRewriter(m.Graph, cfg)
	if err := r.run(ctx); err != nil {
		return Report{}, err
	}
	if len(r.rep.Nodes) == 0 {
		if int8Ops(m.Graph) {
			return Report{}, fmt.Errorf("%w: %w", ErrNothingToQuantize, ErrAlreadyInt8)
		}
		return Report{}, fmt.Errorf("%w (%d candidates skipped)", ErrNothingToQuantize, len(r.rep.Skipped))
	}
	r.commit()
	if cfg.Form == FormFused && !m.UsesOpset(onnxpb.MSDomain) {
		m.ExtraOpsets = append(m.ExtraOpsets, onnxpb.OpsetID{Domain: onnxpb.MSDomain, Version: 1})
	}
	// The rewrite keeps every invariant of a valid input; checking costs
	// a pass over the names and catches a bug before a file is written.
	if err := m.Graph.Validate(); err != nil {
		return Report{}, fmt.Errorf("quantize: rewritten graph (a bug): %w", err)
	}
	return r.rep, nil
}

// rewriter holds the state of one Rewrite. The graph is only modified by
// commit, after every weight has been quantized.
type rewriter struct {
	g       *onnxpb.Graph
	cfg     Config
	exclude []*regexp.Regexp
	rep     Report

	idx   *onnxpb.Index
	names map[string]bool // every value name in use

	weights  map[weightKey]qweight // quantized weights, shared by their nodes
	dql      map[string][3]string  // FormStandard: activation → quantized, scale, zero point
	folded   map[int]bool          // indices of bias Adds folded away
	gone     map[string]bool       // values no longer produced
	replaced map[string]bool       // float32 weights that were quantized
	smooth   map[string][]float32  // Config.Smooth: activation → s, per channel
	smoothed map[string]string     // activation → its Mul's output, once written
	nodes    []onnxpb.Node         // the new node list
	newInits []onnxpb.Tensor
}

type weightKey struct {
	name       string
	transposed bool
	smoothedBy string // the activation whose channel factors scaled its rows, or ""
}

type qweight struct {
	q, scale       string
	errAbs, maxAbs float32
}

func newRewriter(g *onnxpb.Graph, cfg Config) *rewriter {
	r := &rewriter{
		g: g, cfg: cfg, rep: Report{Config: cfg}, idx: g.Index(), names: map[string]bool{},
		weights: map[weightKey]qweight{}, dql: map[string][3]string{}, folded: map[int]bool{},
		gone: map[string]bool{}, replaced: map[string]bool{}, smooth: map[string][]float32{}, smoothed: map[string]string{},
	}
	r.exclude, _ = cfg.excludes() // valid: the callers ran cfg.Validate
	for name := range r.idx.Inputs {
		r.names[name] = true
	}
	for name := range r.idx.Initializers {
		r.names[name] = true
	}
	for name := range r.idx.Producer {
		r.names[name] = true
	}
	return r
}

// unique returns base, or base_1, base_2, … if taken, and reserves it.
func (r *rewriter) unique(base string) string {
	name := base
	for i := 1; r.names[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	r.names[name] = true
	return name
}

// constFloat returns the float32 initializer called name, unless a graph
// input of the same name can override it at run time.
func (r *rewriter) constFloat(name string) *onnxpb.Tensor {
	t := r.idx.Constant(name)
	if t == nil || t.DataType() != onnxpb.Float32 {
		return nil
	}
	return t
}

// candidate is a node to quantize, as found by match.
type candidate struct {
	a, weight, bias, out string
	k, n                 int
	transposed           bool
	addIdx               int // index of a bias Add to fold, or -1
}

func (r *rewriter) run(ctx context.Context) error {
	if r.cfg.Smooth != nil {
		r.smoothFactors()
	}
	for i := range r.g.Nodes {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.folded[i] {
			continue
		}
		n := &r.g.Nodes[i]
		c, skip := r.match(n)
		if skip != "" {
			r.rep.Skipped = append(r.rep.Skipped, Skip{Node: n.Name, Weight: n.Inputs[1], Reason: skip})
		}
		if c == nil {
			r.nodes = append(r.nodes, *n)
			continue
		}
		if err := r.quantize(n, c); err != nil {
			return err
		}
	}
	return nil
}

// match decides whether n is a MatMul or Gemm to quantize. It returns nil
// and no reason for nodes without a weight (not candidates at all), nil and
// a reason for weights that stay float32.
func (r *rewriter) match(n *onnxpb.Node) (*candidate, string) {
	if !onnxpb.IsDefaultDomain(n.Domain) || len(n.Outputs) != 1 {
		return nil, ""
	}
	switch {
	case n.OpType == "MatMul" && len(n.Inputs) == 2:
	case n.OpType == "Gemm" && (len(n.Inputs) == 2 || len(n.Inputs) == 3):
	default:
		return nil, ""
	}
	w := r.idx.Constant(n.Inputs[1])
	if w == nil {
		return nil, "" // B is an activation, or an input that may override it
	}
	if w.DataType() != onnxpb.Float32 || len(w.Dims) != 2 || w.Dims[0] == 0 || w.Dims[1] == 0 {
		return nil, fmt.Sprintf("weight is not a non-empty 2-D float32 tensor (type %d, dims %v)", w.DataType(), w.Dims)
	}
	for _, re := range r.exclude {
		if re.MatchString(n.Name) || re.MatchString(n.Inputs[1]) {
			return nil, fmt.Sprintf("excluded by pattern %q", re.String())
		}
	}
	c := &candidate{a: n.Inputs[0], weight: n.Inputs[1], out: n.Outputs[0], k: int(w.Dims[0]), n: int(w.Dims[1]), addIdx: -1}
	if n.OpType == "Gemm" {
		if reason := r.matchGemm(n, c); reason != "" {
			return nil, reason
		}
		return c, ""
	}
	if r.cfg.Form == FormFused {
		c.bias, c.addIdx = r.foldableBias(c.out, c.n)
		if c.addIdx >= 0 {
			c.out = r.g.Nodes[c.addIdx].Outputs[0]
		}
	}
	return c, ""
}

// matchGemm accepts Gemm(A, B, C) = A·op(B) + C with transA 0, alpha and
// beta 1 and C absent or a 1-D float32 initializer of N values: exactly a
// MatMul with a bias.
func (r *rewriter) matchGemm(n *onnxpb.Node, c *candidate) string {
	intAttr := func(name string, def int64) int64 {
		if a, ok := n.Attr(name); ok {
			if v, ok := a.Int(); ok {
				return v
			}
		}
		return def
	}
	floatAttr := func(name string) float32 {
		if a, ok := n.Attr(name); ok {
			if v, ok := a.Float(); ok {
				return v
			}
		}
		return 1
	}
	if intAttr("transA", 0) != 0 || floatAttr("alpha") != 1 || floatAttr("beta") != 1 {
		return "Gemm with transA, alpha or beta (only A·B + C is rewritten)"
	}
	if intAttr("transB", 0) != 0 {
		c.transposed, c.k, c.n = true, c.n, c.k
	}
	if len(n.Inputs) == 3 && n.Inputs[2] != "" {
		b := r.constFloat(n.Inputs[2])
		if b == nil || len(b.Dims) != 1 || b.Dims[0] != int64(c.n) {
			return fmt.Sprintf("Gemm bias %q is not a constant float32 vector of %d", n.Inputs[2], c.n)
		}
		c.bias = n.Inputs[2]
	}
	return ""
}

// foldableBias finds the Add that adds a constant float32 vector of n
// values to out, when out feeds nothing else: its index and the vector's
// name, or -1.
func (r *rewriter) foldableBias(out string, n int) (string, int) {
	cons := r.idx.Consumers[out]
	if len(cons) != 1 || r.idx.Outputs[out] {
		return "", -1
	}
	add := &r.g.Nodes[cons[0]]
	if !add.Is("Add") || len(add.Inputs) != 2 || len(add.Outputs) != 1 {
		return "", -1
	}
	other := add.Inputs[0]
	if other == out {
		other = add.Inputs[1]
	}
	if other == out {
		return "", -1
	}
	b := r.constFloat(other)
	if b == nil || len(b.Dims) != 1 || b.Dims[0] != int64(n) {
		return "", -1
	}
	return other, cons[0]
}

// candidates lists the nodes Rewrite would quantize, in graph order,
// without changing anything.
func (r *rewriter) candidates() []*candidate {
	var res []*candidate
	for i := range r.g.Nodes {
		if c, _ := r.match(&r.g.Nodes[i]); c != nil {
			res = append(res, c)
		}
	}
	return res
}

// smoothFactors computes Config.Smooth's s for every activation that
// quantized products read and AMax describes (the K of its every reader).
func (r *rewriter) smoothFactors() {
	byAct := map[string][]*candidate{}
	var order []string
	for _, c := range r.candidates() {
		if byAct[c.a] == nil {
			order = append(order, c.a)
		}
		byAct[c.a] = append(byAct[c.a], c)
	}
	alpha := r.cfg.Smooth.Alpha
	for _, a := range order {
		amax := r.cfg.Smooth.AMax[a]
		cs := byAct[a]
		if len(amax) == 0 || slices.ContainsFunc(cs, func(c *candidate) bool { return c.k != len(amax) }) {
			continue
		}
		wmax := make([]float64, len(amax))
		for _, c := range cs {
			w := r.idx.Initializers[c.weight].Float32
			for j := range c.k {
				for col := range c.n {
					v := w[j*c.n+col] // K×N as stored
					if c.transposed {
						v = w[col*c.k+j] // stored N×K
					}
					wmax[j] = max(wmax[j], math.Abs(float64(v)))
				}
			}
		}
		s := make([]float32, len(amax))
		for j := range s {
			s[j] = float32(math.Pow(max(float64(amax[j]), 1e-5), alpha) / math.Pow(max(wmax[j], 1e-5), 1-alpha))
		}
		r.smooth[a] = s
	}
}

// input returns the activation c's product reads: c.a, or with a
// Config.Smooth migration the output of the Mul by 1/s, which it writes
// before the first product that reads it.
func (r *rewriter) input(c *candidate) string {
	s := r.smooth[c.a]
	if s == nil {
		return c.a
	}
	if out, ok := r.smoothed[c.a]; ok {
		return out
	}
	inv := make([]float32, len(s))
	for j, v := range s {
		inv[j] = 1 / v
	}
	out, name := r.unique(c.a+"_smoothed"), r.unique(c.a+"_smooth_inverse")
	r.newInits = append(r.newInits, onnxpb.Tensor{Name: name, Dims: []int64{int64(len(inv))}, Float32: inv})
	r.nodes = append(r.nodes, onnxpb.Node{Name: c.a + "_smooth_Mul", OpType: "Mul", Inputs: []string{c.a, name}, Outputs: []string{out}})
	r.smoothed[c.a] = out
	r.rep.Smoothed++
	return out
}

// quantize replaces node n (matched as c) with its int8 form.
func (r *rewriter) quantize(n *onnxpb.Node, c *candidate) error {
	qw, err := r.weight(c)
	if err != nil {
		return fmt.Errorf("node %q: %w", n.Name, err)
	}
	r.rep.Nodes = append(r.rep.Nodes, NodeReport{
		Node: n.Name, OpType: n.OpType, Weight: c.weight, K: c.k, N: c.n, BiasFolded: c.addIdx >= 0,
		Smoothed: r.smooth[c.a] != nil, MaxAbsError: qw.errAbs, MaxAbsWeight: qw.maxAbs,
	})
	a := r.input(c)
	if c.addIdx >= 0 {
		r.folded[c.addIdx] = true
		r.gone[n.Outputs[0]] = true
	}
	if r.cfg.Form == FormFused {
		in := []string{a, qw.q, qw.scale}
		if c.bias != "" {
			in = append(in, "", c.bias) // no zero point: symmetric
		}
		r.nodes = append(r.nodes, onnxpb.Node{Name: n.Name, OpType: "DynamicQuantizeMatMul", Domain: onnxpb.MSDomain, Inputs: in, Outputs: []string{c.out}})
		return nil
	}
	// FormStandard, as quantize_dynamic writes it: one DynamicQuantizeLinear
	// per activation, shared by the MatMuls that read it (Q, K and V).
	aq, ok := r.dql[a]
	if !ok {
		aq = [3]string{r.unique(a + "_quantized"), r.unique(a + "_scale"), r.unique(a + "_zero_point")}
		r.dql[a] = aq
		r.nodes = append(r.nodes, onnxpb.Node{Name: a + "_DynamicQuantizeLinear", OpType: "DynamicQuantizeLinear",
			Inputs: []string{a}, Outputs: aq[:]})
	}
	mmi, scale, cast := r.unique(c.out+"_MatMulInteger"), r.unique(c.out+"_output_scale"), r.unique(c.out+"_cast")
	y := c.out
	if c.bias != "" {
		y = r.unique(c.out + "_without_bias")
	}
	r.nodes = append(r.nodes,
		onnxpb.Node{Name: n.Name + "_MatMulInteger", OpType: "MatMulInteger", Inputs: []string{aq[0], qw.q, aq[2]}, Outputs: []string{mmi}},
		onnxpb.Node{Name: n.Name + "_scales_Mul", OpType: "Mul", Inputs: []string{aq[1], qw.scale}, Outputs: []string{scale}},
		onnxpb.Node{Name: n.Name + "_Cast", OpType: "Cast", Inputs: []string{mmi}, Outputs: []string{cast},
			Attrs: []onnxpb.Attr{onnxpb.AttrInt("to", int64(onnxpb.Float32))}},
		onnxpb.Node{Name: n.Name + "_Mul", OpType: "Mul", Inputs: []string{cast, scale}, Outputs: []string{y}},
	)
	if c.bias != "" {
		r.nodes = append(r.nodes, onnxpb.Node{Name: n.Name + "_bias_Add", OpType: "Add", Inputs: []string{y, c.bias}, Outputs: []string{c.out}})
	}
	return nil
}

// weight quantizes c's weight once per (name, transposition).
func (r *rewriter) weight(c *candidate) (qweight, error) {
	s := r.smooth[c.a]
	key := weightKey{c.weight, c.transposed, ""}
	if s != nil {
		key.smoothedBy = c.a
	}
	if qw, ok := r.weights[key]; ok {
		return qw, nil
	}
	w := r.idx.Initializers[c.weight].Float32
	base := c.weight
	if c.transposed {
		w = transpose(w, c.n, c.k) // stored N×K, used as K×N
		base += "_transposed"
	}
	if s != nil { // row j times s_j (a copy: the initializer stays as it was)
		w = slices.Clone(w)
		for j := range c.k {
			for col := range c.n {
				w[j*c.n+col] *= s[j]
			}
		}
		base += "_smoothed"
	}
	m, err := QuantizeMatrix(w, c.k, c.n, r.cfg.WeightBits)
	if err != nil {
		return qweight{}, fmt.Errorf("weight %q: %w", c.weight, err)
	}
	qw := qweight{q: r.unique(base + "_quantized"), scale: r.unique(base + "_scale"), errAbs: m.MaxAbsError(w)}
	for _, v := range w {
		qw.maxAbs = max(qw.maxAbs, float32(math.Abs(float64(v))))
	}
	r.newInits = append(r.newInits,
		onnxpb.Tensor{Name: qw.q, Dims: []int64{int64(c.k), int64(c.n)}, Raw: m.Bytes(), RawType: onnxpb.Int8},
		onnxpb.Tensor{Name: qw.scale, Dims: []int64{int64(c.n)}, Float32: m.Scale})
	r.weights[key] = qw
	if !r.replaced[c.weight] { // a weight used both ways counts once
		r.replaced[c.weight] = true
		r.rep.WeightBytesFP32 += 4 * int64(len(w))
	}
	r.rep.WeightBytesInt8 += int64(len(m.Q)) + 4*int64(len(m.Scale))
	return qw, nil
}

// Activation is an input of quantized products: a value name and its
// channel count (the weights' K).
type Activation struct {
	Name string
	K    int
}

// Activations lists, in graph order and each once, the activations that
// Rewrite with cfg would quantize: the A inputs of the MatMul and Gemm
// nodes it rewrites. A Config.Smooth's AMax is measured on them.
func Activations(m *onnxpb.Model, cfg Config) ([]Activation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil || m.Graph == nil {
		return nil, fmt.Errorf("%w: model has no graph", onnxpb.ErrInvalidGraph)
	}
	r := newRewriter(m.Graph, cfg)
	var res []Activation
	for _, c := range r.candidates() {
		if !slices.ContainsFunc(res, func(a Activation) bool { return a.Name == c.a }) {
			res = append(res, Activation{c.a, c.k})
		}
	}
	return res, nil
}

// commit installs the new nodes and initializers in the graph.
func (r *rewriter) commit() {
	g := r.g
	g.Nodes = r.nodes
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, o := range g.Outputs {
		used[o.Name] = true
	}
	kept := g.Initializers[:0:0]
	for _, t := range g.Initializers {
		if r.replaced[t.Name] && !used[t.Name] {
			continue
		}
		kept = append(kept, t)
	}
	g.Initializers = append(kept, r.newInits...)
	vi := g.ValueInfo[:0:0]
	for _, v := range g.ValueInfo {
		if !r.gone[v.Name] {
			vi = append(vi, v)
		}
	}
	g.ValueInfo = vi
}

// int8Ops reports whether g computes products in integers already (the
// operators int8 exports and this package write).
func int8Ops(g *onnxpb.Graph) bool {
	for _, n := range g.Nodes {
		switch n.OpType {
		case "MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QLinearMatMul", "QGemm", "QAttention", "ConvInteger", "QLinearConv":
			return true
		}
	}
	return false
}
