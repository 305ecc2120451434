package quantize

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/hybrank/hybrank/models/onnxpb"
)

// fp16Ops are the operators a float16 rewrite may leave computing in
// float16: everything a bertgen graph (BERT cross-encoder or bi-encoder,
// generated or imported) contains, plus the shape and element-wise
// operators of the same family. CUDA kernels of ONNX Runtime exist for all
// of them in float16 (LayerNormalization and Softmax accumulate in float32
// inside the kernel). Anything else is refused rather than guessed at.
var fp16Ops = []string{
	"Add", "Cast", "Concat", "Div", "Equal", "Erf", "Expand", "Gather", "Gemm", "Identity", "LayerNormalization",
	"MatMul", "Mul", "Pow", "ReduceMean", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Sqrt",
	"Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Where",
}

// fp16Max is the largest finite float16.
const fp16Max = 65504

// rewriteFP16 turns m's graph into a float16 graph with float32 inputs and
// outputs: every float32 initializer becomes float16 (values beyond ±65504
// clamped there: a BERT export's attention-mask constant is float32's
// lowest, and −65504 masks as well in float16, as Hugging Face does), every
// Cast to float32 casts to float16, a Cast to float16 follows each float32
// graph input and a Cast to float32 precedes each float32 graph output, so
// callers see the same interface. float32 value_info hints are dropped.
// Errors leave m unmodified.
func rewriteFP16(ctx context.Context, m *onnxpb.Model, cfg Config) (Report, error) {
	g := m.Graph
	for _, n := range g.Nodes {
		if n.Domain != "" && n.Domain != "ai.onnx" || !slices.Contains(fp16Ops, n.OpType) {
			return Report{}, fmt.Errorf("%w: fp16: node %q: operator %s is not converted (supported: %v)", onnxpb.ErrUnsupported, n.Name, n.OpType, fp16Ops)
		}
	}
	rep := Report{Config: cfg}
	inits := make([]onnxpb.Tensor, len(g.Initializers))
	for i, t := range g.Initializers {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		inits[i] = t
		if t.DataType() != onnxpb.Float32 {
			continue
		}
		raw, clamped, err := float16Bytes(t.Float32)
		if err != nil {
			return Report{}, fmt.Errorf("%w: initializer %q", err, t.Name)
		}
		inits[i] = onnxpb.Tensor{Name: t.Name, Dims: t.Dims, Raw: raw, RawType: onnxpb.Float16}
		rep.Converted++
		rep.WeightBytesFP32 += int64(4 * len(t.Float32))
		rep.WeightBytesFP16 += int64(len(raw))
		rep.Clamped += clamped
	}
	if rep.Converted == 0 {
		return Report{}, fmt.Errorf("%w: no float32 initializer", ErrNothingToQuantize)
	}

	// From here on nothing fails: build the new node list, then commit.
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, s := range slices.Concat(n.Inputs, n.Outputs) {
			used[s] = true
		}
	}
	for _, t := range g.Initializers {
		used[t.Name] = true
	}
	unique := func(base string) string {
		name := base
		for k := 2; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		return name
	}
	rename := func(nodes []onnxpb.Node, from, to string, inputs, outputs bool) {
		for i := range nodes {
			for j, s := range nodes[i].Inputs {
				if inputs && s == from {
					nodes[i].Inputs[j] = to
				}
			}
			for j, s := range nodes[i].Outputs {
				if outputs && s == from {
					nodes[i].Outputs[j] = to
				}
			}
		}
	}
	nodes := make([]onnxpb.Node, 0, len(g.Nodes)+len(g.Inputs)+len(g.Outputs))
	for _, n := range g.Nodes {
		n.Inputs, n.Outputs = slices.Clone(n.Inputs), slices.Clone(n.Outputs)
		if n.OpType == "Cast" {
			n.Attrs = slices.Clone(n.Attrs)
			for i, a := range n.Attrs {
				if to, ok := a.Int(); ok && a.Name() == "to" && to == int64(onnxpb.Float32) {
					n.Attrs[i] = onnxpb.AttrInt("to", int64(onnxpb.Float16))
				}
			}
		}
		nodes = append(nodes, n)
	}
	cast := func(name, in, out string, to onnxpb.DataType) onnxpb.Node {
		return onnxpb.Node{Name: unique(name), OpType: "Cast", Inputs: []string{in}, Outputs: []string{out}, Attrs: []onnxpb.Attr{onnxpb.AttrInt("to", int64(to))}}
	}
	var pre []onnxpb.Node
	for _, in := range g.Inputs {
		if in.Type == onnxpb.Float32 {
			half := unique(in.Name + "/fp16")
			rename(nodes, in.Name, half, true, false)
			pre = append(pre, cast(in.Name+"/CastToFloat16", in.Name, half, onnxpb.Float16))
		}
	}
	for _, out := range g.Outputs {
		if out.Type == onnxpb.Float32 {
			half := unique(out.Name + "/fp16")
			rename(nodes, out.Name, half, true, true)
			nodes = append(nodes, cast(out.Name+"/CastToFloat32", half, out.Name, onnxpb.Float32))
		}
	}
	nodes = append(pre, nodes...)
	var hints []onnxpb.ValueInfo
	for _, v := range g.ValueInfo {
		if v.Type != onnxpb.Float32 {
			hints = append(hints, v)
		}
	}
	old := *g
	g.Nodes, g.Initializers, g.ValueInfo = nodes, inits, hints
	if err := g.Validate(); err != nil {
		*g = old
		return Report{}, fmt.Errorf("quantize: fp16 graph (a bug): %w", err)
	}
	return rep, nil
}

// float16Bytes encodes x as little-endian IEEE 754 half floats (rounded to
// nearest, ties to even), values beyond ±65504 clamped to it (their count
// returned). NaN or ±Inf is ErrNonFinite.
func float16Bytes(x []float32) ([]byte, int, error) {
	b := make([]byte, 2*len(x))
	clamped := 0
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, 0, fmt.Errorf("%w: %v at %d", ErrNonFinite, v, i)
		}
		if v > fp16Max || v < -fp16Max {
			v = float32(math.Copysign(fp16Max, float64(v)))
			clamped++
		}
		h := Float16(v)
		b[2*i], b[2*i+1] = byte(h), byte(h>>8)
	}
	return b, clamped, nil
}

// Float16 returns the IEEE 754 half-precision bits nearest to f (ties to
// even): ±Inf beyond the float16 range, ±0 below its smallest subnormal,
// NaN kept NaN.
func Float16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if e == 0xff { // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := e - 127 + 15
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0: // subnormal half, or zero
		if exp < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - exp)
		h := m >> shift
		rem, mid := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > mid || rem == mid && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is still the right value (or Inf)
	}
	return sign | uint16(h)
}

// Float16To32 returns the value of the half-precision bits h.
func Float16To32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		v := float32(mant) / (1 << 24) // subnormal: mant × 2^-24
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
