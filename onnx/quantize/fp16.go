package quantize

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/hybrank/hybrank/models/safetensors"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// fp16Ops are the operators a float16 rewrite may leave computing in
// float16: everything a bertgen graph (BERT cross-encoder or bi-encoder,
// generated or imported) contains, plus the shape and element-wise
// operators of the same family. CUDA kernels of ONNX Runtime exist for all
// of them in float16 (LayerNormalization and Softmax accumulate in float32
// inside the kernel). Anything else is refused rather than guessed at; so
// is a layer norm spelled out in ReduceMean, Pow and Sqrt, whose epsilon
// (1e-12) would flush to zero in float16.
var fp16Ops = []string{
	"Add", "Cast", "Concat", "Div", "Equal", "Erf", "Expand", "Gather", "Gemm", "Identity", "LayerNormalization",
	"MatMul", "Mul", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Squeeze", "Sub", "Tanh",
	"Transpose", "Unsqueeze", "Where",
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
		if !onnxpb.IsDefaultDomain(n.Domain) || !slices.Contains(fp16Ops, n.OpType) {
			return Report{}, fmt.Errorf("%w: fp16: node %q: operator %s is not converted (supported: %v)", onnxpb.ErrUnsupported, n.Name, n.OpType, fp16Ops)
		}
	}
	ix := g.Index()
	for _, t := range g.Initializers {
		if ix.Inputs[t.Name] {
			// Its default would turn float16 under a float32 input.
			return Report{}, fmt.Errorf("%w: fp16: initializer %q is also a graph input (its default value)", onnxpb.ErrUnsupported, t.Name)
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
	// rename renames a value wherever nodes read or write it (a graph
	// input has no producer, so only its readers change).
	rename := func(nodes []onnxpb.Node, from, to string) {
		for i := range nodes {
			for _, names := range [][]string{nodes[i].Inputs, nodes[i].Outputs} {
				for j, s := range names {
					if s == from {
						names[j] = to
					}
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
			rename(nodes, in.Name, half)
			pre = append(pre, cast(in.Name+"/CastToFloat16", in.Name, half, onnxpb.Float16))
		}
	}
	for _, out := range g.Outputs {
		if out.Type == onnxpb.Float32 {
			half := unique(out.Name + "/fp16")
			rename(nodes, out.Name, half)
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
// nearest, ties to even: safetensors.Float32ToF16), values beyond ±65504
// clamped to it (their count returned). NaN or ±Inf is ErrNonFinite.
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
		h := safetensors.Float32ToF16(v)
		b[2*i], b[2*i+1] = byte(h), byte(h>>8)
	}
	return b, clamped, nil
}
