package onnxpb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
	"google.golang.org/protobuf/encoding/protowire"
)

// Errors returned by this package.
var (
	// ErrInvalidGraph reports a graph that is not well formed: a dangling
	// input, a value produced twice, a graph output nobody produces, or an
	// initializer whose data does not match its dims.
	ErrInvalidGraph = errors.New("onnxpb: invalid graph")
	// ErrMalformed reports bytes that are not a valid protobuf encoding of
	// an ONNX ModelProto (truncated, wrong wire types, bad lengths).
	ErrMalformed = errors.New("onnxpb: malformed model")
	// ErrUnsupported reports a valid model that uses a feature the reader
	// does not handle: external or segmented tensor data, sparse
	// initializers, string or sub-byte tensors.
	ErrUnsupported = errors.New("onnxpb: unsupported model feature")
)

// DataType is an ONNX TensorProto.DataType value.
type DataType int32

// Tensor element types (TensorProto.DataType in onnx.proto3).
const (
	Float32  DataType = 1
	Uint8    DataType = 2
	Int8     DataType = 3
	Uint16   DataType = 4
	Int16    DataType = 5
	Int32    DataType = 6
	Int64    DataType = 7
	Bool     DataType = 9
	Float16  DataType = 10
	Float64  DataType = 11
	Uint32   DataType = 12
	Uint64   DataType = 13
	BFloat16 DataType = 16
)

// ElemSize is the size in bytes of one element of t in raw_data, or 0 for
// types this package does not store (strings, complex, 8-bit floats, 4-bit
// integers).
func (t DataType) ElemSize() int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float32, Int32, Uint32:
		return 4
	case Int64, Float64, Uint64:
		return 8
	}
	return 0
}

// Default versions written by NewModel: IR version 8 (ONNX 1.10+) and opset 17,
// the first opset with a LayerNormalization operator.
const (
	DefaultIRVersion = 8
	DefaultOpset     = 17
)

// Field numbers from onnx/onnx.proto3.
const (
	// ModelProto
	fModelIRVersion       = 1
	fModelProducerName    = 2
	fModelProducerVersion = 3
	fModelDocString       = 6
	fModelGraph           = 7
	fModelOpsetImport     = 8
	// OperatorSetIdProto
	fOpsetDomain  = 1
	fOpsetVersion = 2
	// GraphProto
	fGraphNode        = 1
	fGraphName        = 2
	fGraphInitializer = 5
	fGraphInput       = 11
	fGraphOutput      = 12
	fGraphValueInfo   = 13
	fGraphSparseInit  = 15
	// NodeProto
	fNodeInput     = 1
	fNodeOutput    = 2
	fNodeName      = 3
	fNodeOpType    = 4
	fNodeAttribute = 5
	fNodeDomain    = 7
	// AttributeProto
	fAttrName   = 1
	fAttrF      = 2
	fAttrI      = 3
	fAttrS      = 4
	fAttrT      = 5
	fAttrFloats = 7
	fAttrInts   = 8
	fAttrType   = 20
	// TensorProto
	fTensorDims         = 1
	fTensorDataType     = 2
	fTensorSegment      = 3
	fTensorFloatData    = 4
	fTensorInt32Data    = 5
	fTensorStringData   = 6
	fTensorInt64Data    = 7
	fTensorName         = 8
	fTensorRawData      = 9
	fTensorDoubleData   = 10
	fTensorUint64Data   = 11
	fTensorExternalData = 13
	fTensorDataLocation = 14
	// ValueInfoProto
	fValueInfoName = 1
	fValueInfoType = 2
	// TypeProto / TypeProto.Tensor / TensorShapeProto(.Dimension)
	fTypeTensorType = 1
	fTensorElemType = 1
	fTensorShape    = 2
	fShapeDim       = 1
	fDimValue       = 1
	fDimParam       = 2
)

// AttributeProto.AttributeType values.
const (
	attrFloat  = 1
	attrInt    = 2
	attrString = 3
	attrTensor = 4
	attrGraph  = 5
	attrFloats = 6
	attrInts   = 7
	attrGraphs = 10
)

// Dim is one tensor dimension: a fixed size (Param == "") or a symbolic name
// such as "batch_size".
type Dim struct {
	Value int64
	Param string
}

// Fixed returns a fixed-size dimension.
func Fixed(n int64) Dim { return Dim{Value: n} }

// Symbolic returns a named, dynamic dimension.
func Symbolic(name string) Dim { return Dim{Param: name} }

// Tensor is a constant tensor: an initializer or a tensor attribute. Exactly
// one of Float32, Int64 and Raw holds the row-major data. Raw carries any
// other fixed-size element type (RawType says which) as little-endian
// bytes, as in TensorProto.raw_data: int8 weights, for example, or a bool
// or float16 initializer of a model that was read from a file.
type Tensor struct {
	Name    string
	Dims    []int64
	Float32 []float32
	Int64   []int64
	Raw     []byte
	RawType DataType
}

// DataType is the tensor's element type.
func (t *Tensor) DataType() DataType {
	switch {
	case t.Int64 != nil:
		return Int64
	case t.Raw != nil:
		return t.RawType
	}
	return Float32
}

// NumElements is the product of Dims (1 for a scalar).
func (t *Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

func (t *Tensor) check() error {
	set := 0
	for _, isSet := range []bool{t.Float32 != nil, t.Int64 != nil, t.Raw != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%w: tensor %q: exactly one of Float32, Int64 and Raw must be set", ErrInvalidGraph, t.Name)
	}
	n := int64(1)
	for _, d := range t.Dims {
		if d < 0 {
			return fmt.Errorf("%w: tensor %q: negative dim %d", ErrInvalidGraph, t.Name, d)
		}
		if d != 0 && n > math.MaxInt64/d {
			// The product would wrap (to 0, say) and match empty data.
			return fmt.Errorf("%w: tensor %q: dims %v hold more elements than an int64 counts", ErrInvalidGraph, t.Name, t.Dims)
		}
		n *= d
	}
	l := int64(len(t.Float32) + len(t.Int64))
	if t.Raw != nil {
		size := t.RawType.ElemSize()
		if size == 0 || t.RawType == Float32 || t.RawType == Int64 {
			return fmt.Errorf("%w: tensor %q: Raw data of type %d (use Float32 or Int64 for those; strings and sub-byte types are not supported)", ErrInvalidGraph, t.Name, t.RawType)
		}
		if len(t.Raw)%size != 0 {
			return fmt.Errorf("%w: tensor %q: %d raw bytes are not a whole number of %d-byte elements", ErrInvalidGraph, t.Name, len(t.Raw), size)
		}
		l = int64(len(t.Raw) / size)
	}
	if l != n {
		return fmt.Errorf("%w: tensor %q: dims %v need %d elements, have %d", ErrInvalidGraph, t.Name, t.Dims, n, l)
	}
	return nil
}

// Attr is one node attribute. Build it with AttrInt, AttrFloat, AttrString,
// AttrInts, AttrFloats or AttrTensor; read it with Name, Int and Float.
type Attr struct {
	name   string
	kind   int
	i      int64
	f      float32
	s      string
	ints   []int64
	floats []float32
	t      *Tensor
	// raw is the AttributeProto as read from a file; when set it is
	// written back unchanged (it may hold kinds this package does not
	// model, such as graphs).
	raw []byte
}

// Name is the attribute's name.
func (a Attr) Name() string { return a.name }

// Int returns the value of an INT attribute; ok is false for other kinds.
func (a Attr) Int() (v int64, ok bool) { return a.i, a.kind == attrInt }

// Float returns the value of a FLOAT attribute; ok is false for other kinds.
func (a Attr) Float() (v float32, ok bool) { return a.f, a.kind == attrFloat }

// Subgraph reports whether the attribute holds a graph or graphs (the
// branches of If, the body of Loop), which this package keeps as bytes.
func (a Attr) Subgraph() bool { return a.kind == attrGraph || a.kind == attrGraphs }

// HasSubgraphs reports whether a node of g holds a subgraph (If, Loop,
// Scan). A subgraph may read values of g by name, which the Index of g does
// not see: a rewrite that drops or renames values of g must refuse such a
// graph or leave it alone.
func (g *Graph) HasSubgraphs() bool {
	for _, n := range g.Nodes {
		for _, a := range n.Attrs {
			if a.Subgraph() {
				return true
			}
		}
	}
	return false
}

// Ints returns the value of an INTS attribute; ok is false for other kinds.
func (a Attr) Ints() (v []int64, ok bool) { return a.ints, a.kind == attrInts }

// Tensor returns the value of a TENSOR attribute (Constant's "value"),
// decoded as Unmarshal decodes initializers; ok is false for other kinds
// and for tensors this package cannot decode.
func (a Attr) Tensor() (t Tensor, ok bool) {
	if a.kind != attrTensor {
		return Tensor{}, false
	}
	if a.t != nil {
		return *a.t, true
	}
	found := false
	err := eachField(a.raw, func(f field) error {
		if f.num != fAttrT || f.typ != protowire.BytesType {
			return nil
		}
		var err error
		t, err = decodeTensor(f.b)
		found = err == nil
		return err
	})
	return t, err == nil && found
}

// AttrInt is an INT attribute.
func AttrInt(name string, v int64) Attr { return Attr{name: name, kind: attrInt, i: v} }

// AttrFloat is a FLOAT attribute.
func AttrFloat(name string, v float32) Attr { return Attr{name: name, kind: attrFloat, f: v} }

// AttrString is a STRING attribute.
func AttrString(name, v string) Attr { return Attr{name: name, kind: attrString, s: v} }

// AttrInts is an INTS attribute.
func AttrInts(name string, v ...int64) Attr { return Attr{name: name, kind: attrInts, ints: v} }

// AttrFloats is a FLOATS attribute.
func AttrFloats(name string, v ...float32) Attr {
	return Attr{name: name, kind: attrFloats, floats: v}
}

// AttrTensor is a TENSOR attribute (e.g. Constant's "value").
func AttrTensor(name string, t Tensor) Attr { return Attr{name: name, kind: attrTensor, t: &t} }

// Node is one operator application.
type Node struct {
	Name    string
	OpType  string
	Domain  string
	Inputs  []string // "" marks an omitted optional input
	Outputs []string
	Attrs   []Attr
	// extra holds the encoded NodeProto fields this package does not
	// model (doc_string, metadata_props) of a node read from a file,
	// written back unchanged.
	extra []byte
}

// Attr returns the node's attribute called name.
func (n *Node) Attr(name string) (Attr, bool) {
	for _, a := range n.Attrs {
		if a.name == name {
			return a, true
		}
	}
	return Attr{}, false
}

// ValueInfo is a typed graph input, output or intermediate value. A
// ValueInfo read from a file is written back byte for byte, whatever its
// fields say later: build a new one to change it. Its Type is 0 when the
// value is not a tensor (a sequence or a map).
type ValueInfo struct {
	Name string
	Type DataType
	Dims []Dim
	// raw is the ValueInfoProto as read from a file, written back
	// unchanged (it may carry doc strings, denotations or non-tensor
	// types).
	raw []byte
}

// Graph is an ONNX graph under construction. Not safe for concurrent use.
type Graph struct {
	Name         string
	Nodes        []Node
	Initializers []Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
	// ValueInfo holds optional type and shape hints for intermediate
	// values (GraphProto.value_info), as exporters write them. Validate
	// does not check them; a hint for a value no node produces is
	// harmless but untidy, so rewriters drop those.
	ValueInfo []ValueInfo
	// extra holds the encoded GraphProto fields this package does not
	// model (doc_string, quantization_annotation, metadata_props) of a
	// graph read from a file, written back unchanged.
	extra []byte
}

// NewGraph returns an empty graph.
func NewGraph(name string) *Graph { return &Graph{Name: name} }

// AddInput declares a graph input.
func (g *Graph) AddInput(name string, t DataType, dims ...Dim) {
	g.Inputs = append(g.Inputs, ValueInfo{Name: name, Type: t, Dims: dims})
}

// AddOutput declares a graph output.
func (g *Graph) AddOutput(name string, t DataType, dims ...Dim) {
	g.Outputs = append(g.Outputs, ValueInfo{Name: name, Type: t, Dims: dims})
}

// AddFloat32 adds a float32 initializer and returns its name. data is
// retained, not copied.
func (g *Graph) AddFloat32(name string, dims []int64, data []float32) string {
	if data == nil {
		data = []float32{}
	}
	g.Initializers = append(g.Initializers, Tensor{Name: name, Dims: dims, Float32: data})
	return name
}

// AddInt64 adds an int64 initializer and returns its name. data is retained,
// not copied.
func (g *Graph) AddInt64(name string, dims []int64, data []int64) string {
	if data == nil {
		data = []int64{}
	}
	g.Initializers = append(g.Initializers, Tensor{Name: name, Dims: dims, Int64: data})
	return name
}

// AddRaw adds an initializer of element type t from little-endian bytes
// (any fixed-size type but float32 and int64, which have AddFloat32 and
// AddInt64) and returns its name. data is retained, not copied.
func (g *Graph) AddRaw(name string, t DataType, dims []int64, data []byte) string {
	if data == nil {
		data = []byte{}
	}
	g.Initializers = append(g.Initializers, Tensor{Name: name, Dims: dims, Raw: data, RawType: t})
	return name
}

// AddNode appends a node with one output named after the node and returns
// that output's name, which keeps graph-building code short:
//
//	h := g.AddNode("layer0_q", "MatMul", []string{x, wq})
func (g *Graph) AddNode(name, op string, inputs []string, attrs ...Attr) string {
	g.Nodes = append(g.Nodes, Node{Name: name, OpType: op, Inputs: inputs, Outputs: []string{name}, Attrs: attrs})
	return name
}

// AddNodeOutputs appends a node with explicit output names.
func (g *Graph) AddNodeOutputs(name, op string, inputs, outputs []string, attrs ...Attr) {
	g.Nodes = append(g.Nodes, Node{Name: name, OpType: op, Inputs: inputs, Outputs: outputs, Attrs: attrs})
}

// Validate checks the invariants listed in the package documentation.
func (g *Graph) Validate() error {
	defined := make(map[string]bool, len(g.Inputs)+len(g.Initializers)+len(g.Nodes))
	define := func(name, what string) error {
		if name == "" {
			return fmt.Errorf("%w: %s with an empty name", ErrInvalidGraph, what)
		}
		if defined[name] {
			return fmt.Errorf("%w: value %q defined twice (%s)", ErrInvalidGraph, name, what)
		}
		defined[name] = true
		return nil
	}
	for _, in := range g.Inputs {
		if err := define(in.Name, "graph input"); err != nil {
			return err
		}
	}
	inputs := make(map[string]bool, len(g.Inputs))
	for _, in := range g.Inputs {
		inputs[in.Name] = true
	}
	for i := range g.Initializers {
		t := &g.Initializers[i]
		if err := t.check(); err != nil {
			return err
		}
		if inputs[t.Name] && t.Name != "" {
			continue // an input's default value (IR < 4 lists every initializer as an input)
		}
		if err := define(t.Name, "initializer"); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		if n.OpType == "" {
			return fmt.Errorf("%w: node %q has no op type", ErrInvalidGraph, n.Name)
		}
		for _, in := range n.Inputs {
			if in != "" && !defined[in] {
				return fmt.Errorf("%w: node %q (%s) reads %q, which is not defined before it", ErrInvalidGraph, n.Name, n.OpType, in)
			}
		}
		for _, a := range n.Attrs {
			if a.kind == attrTensor && a.t != nil { // nil: read from a file, kept raw
				if err := a.t.check(); err != nil {
					return err
				}
			}
		}
		for _, out := range n.Outputs {
			if out == "" {
				continue // an optional output left out (LayerNormalization's mean, say)
			}
			if err := define(out, "output of node "+n.Name); err != nil {
				return err
			}
		}
	}
	for _, out := range g.Outputs {
		if !defined[out.Name] {
			return fmt.Errorf("%w: graph output %q is never produced", ErrInvalidGraph, out.Name)
		}
	}
	return nil
}

// MSDomain is the operator-set domain of ONNX Runtime's contrib operators
// (DynamicQuantizeMatMul, SkipLayerNormalization, MultiHeadAttention);
// a model using them imports it, version 1.
const MSDomain = "com.microsoft"

// HybrankDomain is the operator-set domain of hybrank's own operators for
// ONNX Runtime's CPU provider, which package onnx registers on its CPU
// sessions (ai.hybrank.Attention; package models/fuse writes it).
const HybrankDomain = "ai.hybrank"

// Model is an ONNX model: a graph plus version metadata.
type Model struct {
	IRVersion int64
	// Opset is the version of the default ("ai.onnx") operator set.
	Opset int64
	// ExtraOpsets imports other operator-set domains, e.g.
	// {Domain: "com.microsoft", Version: 1} for ONNX Runtime's contrib
	// operators.
	ExtraOpsets     []OpsetID
	ProducerName    string
	ProducerVersion string
	DocString       string
	Graph           *Graph
	// extra holds the encoded ModelProto fields this package does not
	// model (domain, model_version, metadata_props, functions, …) of a
	// model read from a file, written back unchanged.
	extra []byte
}

// OpsetID is one OperatorSetIdProto: a domain and its version.
type OpsetID struct {
	Domain  string
	Version int64
}

// IsDefaultDomain reports whether domain names the default operator set
// ("" or its long name "ai.onnx").
func IsDefaultDomain(domain string) bool { return domain == "" || domain == "ai.onnx" }

// Is reports whether n applies the default operator set's op.
func (n *Node) Is(op string) bool { return n.OpType == op && IsDefaultDomain(n.Domain) }

// UsesOpset reports whether m imports domain (the default domain is "").
func (m *Model) UsesOpset(domain string) bool {
	if IsDefaultDomain(domain) {
		return true
	}
	for _, o := range m.ExtraOpsets {
		if o.Domain == domain {
			return true
		}
	}
	return false
}

// NewModel wraps g with the default IR version and opset.
func NewModel(g *Graph) *Model {
	return &Model{IRVersion: DefaultIRVersion, Opset: DefaultOpset, ProducerName: "hybrank", ProducerVersion: "1", Graph: g}
}

// Marshal returns the encoded ModelProto.
func (m *Model) Marshal() ([]byte, error) {
	var b sliceWriter
	if _, err := m.WriteTo(&b); err != nil {
		return nil, err
	}
	return b, nil
}

type sliceWriter []byte

func (s *sliceWriter) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }

// WriteFile writes the encoded model to path, creating parent directories.
// The file is written crash-safely (internal/atomicfile: temporary name,
// fsync, rename), so a reader never sees a partial model.
func (m *Model) WriteFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("onnxpb: write %s: %w", path, err)
	}
	_, err := atomicfile.Write(vfs.OS, dir, filepath.Base(path), func(w io.Writer) error {
		_, err := m.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("onnxpb: write %s: %w", path, err)
	}
	return nil
}

// WriteTo validates the graph and streams the encoded ModelProto to w.
// Initializers are encoded one at a time, so peak extra memory is about one
// tensor, not one model.
func (m *Model) WriteTo(w io.Writer) (int64, error) {
	if m.Graph == nil {
		return 0, fmt.Errorf("%w: model has no graph", ErrInvalidGraph)
	}
	g := m.Graph
	if err := g.Validate(); err != nil {
		return 0, err
	}
	// Everything but the initializers is small: encode it up front.
	var head []byte
	head = protowire.AppendTag(head, fModelIRVersion, protowire.VarintType)
	head = protowire.AppendVarint(head, uint64(m.IRVersion))
	head = appendString(head, fModelProducerName, m.ProducerName)
	head = appendString(head, fModelProducerVersion, m.ProducerVersion)
	head = appendString(head, fModelDocString, m.DocString)
	for _, o := range append([]OpsetID{{Version: m.Opset}}, m.ExtraOpsets...) {
		var opset []byte
		opset = appendString(opset, fOpsetDomain, o.Domain)
		opset = protowire.AppendTag(opset, fOpsetVersion, protowire.VarintType)
		opset = protowire.AppendVarint(opset, uint64(o.Version))
		head = appendMessage(head, fModelOpsetImport, opset)
	}

	var nodes []byte
	for i := range g.Nodes {
		nodes = appendMessage(nodes, fGraphNode, encodeNode(&g.Nodes[i]))
	}
	var tail []byte
	for _, vi := range g.Inputs {
		tail = appendMessage(tail, fGraphInput, encodeValueInfo(vi))
	}
	for _, vi := range g.Outputs {
		tail = appendMessage(tail, fGraphOutput, encodeValueInfo(vi))
	}
	for _, vi := range g.ValueInfo {
		tail = appendMessage(tail, fGraphValueInfo, encodeValueInfo(vi))
	}
	tail = append(tail, g.extra...)
	nameField := appendString(nil, fGraphName, g.Name)

	graphLen := len(nodes) + len(nameField) + len(tail)
	for i := range g.Initializers {
		n := tensorSize(&g.Initializers[i])
		graphLen += protowire.SizeTag(fGraphInitializer) + protowire.SizeBytes(n)
	}
	if total := len(head) + protowire.SizeTag(fModelGraph) + protowire.SizeBytes(graphLen) + len(m.extra); total > math.MaxInt32 {
		// Protobuf readers, ONNX Runtime's among them, refuse a message
		// of 2 GB or more: the weights would have to go to external data.
		return 0, fmt.Errorf("%w: the model encodes to %d bytes, over protobuf's 2 GB limit (external data is not written)", ErrUnsupported, total)
	}
	head = protowire.AppendTag(head, fModelGraph, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(graphLen))

	cw := &countWriter{w: w}
	cw.write(head)
	cw.write(nodes)
	cw.write(nameField)
	var buf []byte
	for i := range g.Initializers {
		size := tensorSize(&g.Initializers[i])
		buf = slices.Grow(buf[:0], size+16)
		buf = protowire.AppendTag(buf, fGraphInitializer, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(size))
		buf = appendTensor(buf, &g.Initializers[i])
		cw.write(buf)
	}
	cw.write(tail)
	cw.write(m.extra)
	if cw.err != nil {
		return cw.n, fmt.Errorf("onnxpb: write model: %w", cw.err)
	}
	return cw.n, nil
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func packedInt64Size(v []int64) int {
	n := 0
	for _, x := range v {
		n += protowire.SizeVarint(uint64(x))
	}
	return n
}

func appendPackedInt64(b []byte, num protowire.Number, v []int64) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(packedInt64Size(v)))
	for _, x := range v {
		b = protowire.AppendVarint(b, uint64(x))
	}
	return b
}

// tensorSize is the encoded length of appendTensor(nil, t).
func tensorSize(t *Tensor) int {
	n := 0
	if len(t.Dims) > 0 {
		n += protowire.SizeTag(fTensorDims) + protowire.SizeBytes(packedInt64Size(t.Dims))
	}
	n += protowire.SizeTag(fTensorDataType) + protowire.SizeVarint(uint64(t.DataType()))
	if t.Name != "" {
		n += protowire.SizeTag(fTensorName) + protowire.SizeBytes(len(t.Name))
	}
	raw := 4*len(t.Float32) + 8*len(t.Int64) + len(t.Raw)
	n += protowire.SizeTag(fTensorRawData) + protowire.SizeBytes(raw)
	return n
}

// appendTensor encodes a TensorProto with its data in raw_data
// (little-endian, as the spec requires).
func appendTensor(b []byte, t *Tensor) []byte {
	b = appendPackedInt64(b, fTensorDims, t.Dims)
	b = protowire.AppendTag(b, fTensorDataType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(t.DataType()))
	b = appendString(b, fTensorName, t.Name)
	b = protowire.AppendTag(b, fTensorRawData, protowire.BytesType)
	if t.Raw != nil {
		return protowire.AppendBytes(b, t.Raw)
	}
	if t.Int64 != nil {
		b = protowire.AppendVarint(b, uint64(8*len(t.Int64)))
		for _, x := range t.Int64 {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
		return b
	}
	b = protowire.AppendVarint(b, uint64(4*len(t.Float32)))
	for _, x := range t.Float32 {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func encodeAttr(a *Attr) []byte {
	if a.raw != nil {
		return a.raw
	}
	var b []byte
	b = appendString(b, fAttrName, a.name)
	switch a.kind {
	case attrFloat:
		b = protowire.AppendTag(b, fAttrF, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case attrInt:
		b = protowire.AppendTag(b, fAttrI, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.i))
	case attrString:
		b = protowire.AppendTag(b, fAttrS, protowire.BytesType)
		b = protowire.AppendString(b, a.s)
	case attrTensor:
		b = appendMessage(b, fAttrT, appendTensor(nil, a.t))
	case attrFloats:
		b = protowire.AppendTag(b, fAttrFloats, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(4*len(a.floats)))
		for _, f := range a.floats {
			b = protowire.AppendFixed32(b, math.Float32bits(f))
		}
	case attrInts:
		b = appendPackedInt64(b, fAttrInts, a.ints)
	}
	b = protowire.AppendTag(b, fAttrType, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(a.kind))
	return b
}

func encodeNode(n *Node) []byte {
	var b []byte
	for _, in := range n.Inputs {
		// Empty names mark omitted optional inputs and must be kept.
		b = protowire.AppendTag(b, fNodeInput, protowire.BytesType)
		b = protowire.AppendString(b, in)
	}
	for _, out := range n.Outputs {
		b = protowire.AppendTag(b, fNodeOutput, protowire.BytesType)
		b = protowire.AppendString(b, out)
	}
	b = appendString(b, fNodeName, n.Name)
	b = appendString(b, fNodeOpType, n.OpType)
	for i := range n.Attrs {
		b = appendMessage(b, fNodeAttribute, encodeAttr(&n.Attrs[i]))
	}
	b = appendString(b, fNodeDomain, n.Domain)
	return append(b, n.extra...)
}

func encodeValueInfo(vi ValueInfo) []byte {
	if vi.raw != nil {
		return vi.raw
	}
	var shape []byte
	for _, d := range vi.Dims {
		var dim []byte
		if d.Param != "" {
			dim = appendString(dim, fDimParam, d.Param)
		} else {
			dim = protowire.AppendTag(dim, fDimValue, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(d.Value))
		}
		shape = appendMessage(shape, fShapeDim, dim)
	}
	var tt []byte
	tt = protowire.AppendTag(tt, fTensorElemType, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(vi.Type))
	tt = appendMessage(tt, fTensorShape, shape)
	typ := appendMessage(nil, fTypeTensorType, tt)
	var b []byte
	b = appendString(b, fValueInfoName, vi.Name)
	b = appendMessage(b, fValueInfoType, typ)
	return b
}
