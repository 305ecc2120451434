package onnxpb

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// dataLocationExternal is TensorProto.DataLocation EXTERNAL: the tensor's
// bytes live in another file.
const dataLocationExternal = 1

// ReadFile reads and decodes the ONNX model at path (see Unmarshal).
func ReadFile(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnxpb: read %s: %w", path, err)
	}
	m, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("onnxpb: read %s: %w", path, err)
	}
	return m, nil
}

// Unmarshal decodes an encoded ModelProto. Nodes, initializers, graph
// inputs, outputs and value_info hints become the typed fields of Model and
// Graph; every field the package does not model (doc strings of graphs and
// nodes, metadata, local functions, subgraph attributes, value types other
// than tensors) is kept as its original bytes and written back unchanged by
// WriteTo, so reading and writing a model loses nothing but the doc strings
// and metadata of individual tensors.
//
// float32 and int64 tensors are decoded into Tensor.Float32 and Tensor.Int64;
// other fixed-size element types into Tensor.Raw (little-endian, whichever
// of raw_data or the typed repeated field the file used). Raw, attribute and
// value-info bytes may alias b, which must not be modified afterwards.
//
// Errors wrap ErrMalformed for bytes that are not a ModelProto and
// ErrUnsupported for tensors stored outside the file (external data),
// segmented tensors, sparse initializers, and string or sub-byte
// initializers. A model without a graph or a default-domain operator set is
// ErrMalformed.
func Unmarshal(b []byte) (*Model, error) {
	m := &Model{}
	haveOpset := false
	err := eachField(b, func(f field) error {
		switch f.num {
		case fModelIRVersion:
			v, err := f.varint()
			m.IRVersion = int64(v)
			return err
		case fModelProducerName:
			return f.str(&m.ProducerName)
		case fModelProducerVersion:
			return f.str(&m.ProducerVersion)
		case fModelDocString:
			return f.str(&m.DocString)
		case fModelGraph:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			g, err := decodeGraph(f.b)
			if err != nil {
				return err
			}
			m.Graph = g
		case fModelOpsetImport:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			o, err := decodeOpset(f.b)
			if err != nil {
				return err
			}
			if IsDefaultDomain(o.Domain) {
				m.Opset, haveOpset = o.Version, true
			} else {
				m.ExtraOpsets = append(m.ExtraOpsets, o)
			}
		default:
			m.extra = append(m.extra, f.raw...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m.Graph == nil {
		return nil, fmt.Errorf("%w: no graph", ErrMalformed)
	}
	if !haveOpset {
		return nil, fmt.Errorf("%w: no operator set for the default domain", ErrMalformed)
	}
	return m, nil
}

func decodeOpset(b []byte) (OpsetID, error) {
	var o OpsetID
	err := eachField(b, func(f field) error {
		switch f.num {
		case fOpsetDomain:
			return f.str(&o.Domain)
		case fOpsetVersion:
			v, err := f.varint()
			o.Version = int64(v)
			return err
		}
		return nil
	})
	return o, err
}

func decodeGraph(b []byte) (*Graph, error) {
	g := &Graph{}
	err := eachField(b, func(f field) error {
		switch f.num {
		case fGraphName:
			return f.str(&g.Name)
		case fGraphSparseInit:
			return fmt.Errorf("%w: sparse initializers", ErrUnsupported)
		case fGraphNode, fGraphInitializer, fGraphInput, fGraphOutput, fGraphValueInfo:
		default:
			g.extra = append(g.extra, f.raw...)
			return nil
		}
		if f.typ != protowire.BytesType {
			return f.wrongType()
		}
		switch f.num {
		case fGraphNode:
			n, err := decodeNode(f.b)
			g.Nodes = append(g.Nodes, n)
			return err
		case fGraphInitializer:
			t, err := decodeTensor(f.b)
			g.Initializers = append(g.Initializers, t)
			return err
		}
		vi, err := decodeValueInfo(f.b)
		switch f.num {
		case fGraphInput:
			g.Inputs = append(g.Inputs, vi)
		case fGraphOutput:
			g.Outputs = append(g.Outputs, vi)
		default:
			g.ValueInfo = append(g.ValueInfo, vi)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	return g, nil
}

func decodeNode(b []byte) (Node, error) {
	var n Node
	err := eachField(b, func(f field) error {
		switch f.num {
		case fNodeInput, fNodeOutput:
			var s string
			if err := f.str(&s); err != nil {
				return err
			}
			if f.num == fNodeInput {
				n.Inputs = append(n.Inputs, s)
			} else {
				n.Outputs = append(n.Outputs, s)
			}
		case fNodeName:
			return f.str(&n.Name)
		case fNodeOpType:
			return f.str(&n.OpType)
		case fNodeDomain:
			return f.str(&n.Domain)
		case fNodeAttribute:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			a, err := decodeAttr(f.b)
			if err != nil {
				return err
			}
			n.Attrs = append(n.Attrs, a)
		default:
			n.extra = append(n.extra, f.raw...)
		}
		return nil
	})
	if err != nil {
		return Node{}, fmt.Errorf("node %q: %w", n.Name, err)
	}
	return n, nil
}

// decodeAttr reads the name and, for the scalar and list kinds, the value
// of an AttributeProto; the whole message is kept in raw. Files written
// before IR version 2 may omit the type field; the kind is then inferred
// from the value field present.
func decodeAttr(b []byte) (Attr, error) {
	a := Attr{raw: b}
	declared, inferred := 0, 0
	err := eachField(b, func(f field) error {
		switch f.num {
		case fAttrName:
			return f.str(&a.name)
		case fAttrType:
			v, err := f.varint()
			declared = int(v)
			return err
		case fAttrF:
			if f.typ != protowire.Fixed32Type {
				return f.wrongType()
			}
			a.f, inferred = math.Float32frombits(uint32(f.u)), attrFloat
		case fAttrI:
			v, err := f.varint()
			a.i, inferred = int64(v), attrInt
			return err
		case fAttrS:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			a.s, inferred = string(f.b), attrString
		case fAttrFloats:
			return f.appendFixed32s(func(v uint32) {
				a.floats, inferred = append(a.floats, math.Float32frombits(v)), attrFloats
			})
		case fAttrInts:
			return f.appendVarints(func(v uint64) { a.ints, inferred = append(a.ints, int64(v)), attrInts })
		case fAttrT:
			inferred = attrTensor
		case fAttrG:
			inferred = attrGraph
		case fAttrGraphs:
			inferred = attrGraphs
		}
		return nil
	})
	if err != nil {
		return Attr{}, fmt.Errorf("attribute %q: %w", a.name, err)
	}
	a.kind = declared
	if declared == 0 {
		a.kind = inferred
	}
	return a, nil
}

func decodeValueInfo(b []byte) (ValueInfo, error) {
	vi := ValueInfo{raw: b}
	err := eachField(b, func(f field) error {
		switch f.num {
		case fValueInfoName:
			return f.str(&vi.Name)
		case fValueInfoType:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			return eachField(f.b, func(f field) error {
				if f.num != fTypeTensorType {
					return nil // sequence, map, optional: kept raw only
				}
				if f.typ != protowire.BytesType {
					return f.wrongType()
				}
				return decodeTensorType(f.b, &vi)
			})
		}
		return nil
	})
	if err != nil {
		return ValueInfo{}, fmt.Errorf("value %q: %w", vi.Name, err)
	}
	return vi, nil
}

func decodeTensorType(b []byte, vi *ValueInfo) error {
	return eachField(b, func(f field) error {
		switch f.num {
		case fTensorElemType:
			v, err := f.varint()
			vi.Type = DataType(v)
			return err
		case fTensorShape:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			return eachField(f.b, func(f field) error {
				if f.num != fShapeDim {
					return nil
				}
				if f.typ != protowire.BytesType {
					return f.wrongType()
				}
				var d Dim
				err := eachField(f.b, func(f field) error {
					switch f.num {
					case fDimValue:
						v, err := f.varint()
						d.Value = int64(v)
						return err
					case fDimParam:
						return f.str(&d.Param)
					}
					return nil
				})
				vi.Dims = append(vi.Dims, d)
				return err
			})
		}
		return nil
	})
}

// decodeTensor decodes a TensorProto into the typed fields of Tensor.
func decodeTensor(b []byte) (Tensor, error) {
	var (
		t        Tensor
		dt       DataType
		raw      []byte
		haveRaw  bool
		floats   []float32
		int32s   []int32
		int64s   []int64
		doubles  []float64
		uint64s  []uint64
		external bool
	)
	err := eachField(b, func(f field) error {
		switch f.num {
		case fTensorDims:
			return f.appendVarints(func(v uint64) { t.Dims = append(t.Dims, int64(v)) })
		case fTensorDataType:
			v, err := f.varint()
			dt = DataType(v)
			return err
		case fTensorSegment:
			return fmt.Errorf("%w: segmented tensor data", ErrUnsupported)
		case fTensorFloatData:
			return f.appendFixed32s(func(v uint32) { floats = append(floats, math.Float32frombits(v)) })
		case fTensorInt32Data:
			return f.appendVarints(func(v uint64) { int32s = append(int32s, int32(v)) })
		case fTensorStringData:
			return fmt.Errorf("%w: string tensor", ErrUnsupported)
		case fTensorInt64Data:
			return f.appendVarints(func(v uint64) { int64s = append(int64s, int64(v)) })
		case fTensorName:
			return f.str(&t.Name)
		case fTensorRawData:
			if f.typ != protowire.BytesType {
				return f.wrongType()
			}
			raw, haveRaw = f.b, true
		case fTensorDoubleData:
			return f.appendFixed64s(func(v uint64) { doubles = append(doubles, math.Float64frombits(v)) })
		case fTensorUint64Data:
			return f.appendVarints(func(v uint64) { uint64s = append(uint64s, v) })
		case fTensorExternalData:
			external = true
		case fTensorDataLocation:
			v, err := f.varint()
			external = external || v == dataLocationExternal
			return err
		}
		return nil
	})
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if external {
		return Tensor{}, fmt.Errorf("%w: tensor %q keeps its data in an external file", ErrUnsupported, t.Name)
	}
	size := dt.ElemSize()
	if size == 0 {
		return Tensor{}, fmt.Errorf("%w: tensor %q has element type %d", ErrUnsupported, t.Name, dt)
	}
	switch {
	case haveRaw:
		if len(raw)%size != 0 {
			return Tensor{}, fmt.Errorf("%w: tensor %q: %d raw bytes for %d-byte elements", ErrMalformed, t.Name, len(raw), size)
		}
		switch dt {
		case Float32:
			t.Float32 = make([]float32, len(raw)/4)
			for i := range t.Float32 {
				t.Float32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case Int64:
			t.Int64 = make([]int64, len(raw)/8)
			for i := range t.Int64 {
				t.Int64[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			}
		default:
			t.Raw = raw
		}
	case dt == Float32:
		t.Float32 = floats
	case dt == Int64:
		t.Int64 = int64s
	case dt == Float64:
		for _, v := range doubles {
			t.Raw = binary.LittleEndian.AppendUint64(t.Raw, math.Float64bits(v))
		}
	case dt == Uint32 || dt == Uint64:
		for _, v := range uint64s {
			if dt == Uint32 {
				t.Raw = binary.LittleEndian.AppendUint32(t.Raw, uint32(v))
			} else {
				t.Raw = binary.LittleEndian.AppendUint64(t.Raw, v)
			}
		}
	default:
		// int32_data carries every remaining type, one element per
		// value: int32 itself, 8- and 16-bit integers, bool, and the
		// bit patterns of float16 and bfloat16.
		for _, v := range int32s {
			switch size {
			case 1:
				t.Raw = append(t.Raw, byte(v))
			case 2:
				t.Raw = binary.LittleEndian.AppendUint16(t.Raw, uint16(v))
			default:
				t.Raw = binary.LittleEndian.AppendUint32(t.Raw, uint32(v))
			}
		}
	}
	// An empty tensor is still a tensor of its type.
	switch {
	case dt == Float32 && t.Float32 == nil:
		t.Float32 = []float32{}
	case dt == Int64 && t.Int64 == nil:
		t.Int64 = []int64{}
	case dt != Float32 && dt != Int64:
		t.RawType = dt
		if t.Raw == nil {
			t.Raw = []byte{}
		}
	}
	if err := t.check(); err != nil {
		return Tensor{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return t, nil
}

// field is one decoded protobuf field.
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64 // varint, fixed32 or fixed64 value
	b   []byte // bytes value
	raw []byte // the whole field, tag included
}

// eachField calls fn for every field of the message b, in order.
func eachField(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		f := field{num: num, typ: typ}
		var m int
		switch typ {
		case protowire.VarintType:
			f.u, m = protowire.ConsumeVarint(b[n:])
		case protowire.Fixed32Type:
			var v uint32
			v, m = protowire.ConsumeFixed32(b[n:])
			f.u = uint64(v)
		case protowire.Fixed64Type:
			f.u, m = protowire.ConsumeFixed64(b[n:])
		case protowire.BytesType:
			f.b, m = protowire.ConsumeBytes(b[n:])
		default:
			m = protowire.ConsumeFieldValue(num, typ, b[n:])
		}
		if m < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(m))
		}
		f.raw = b[:n+m]
		if err := fn(f); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

func (f field) wrongType() error {
	return fmt.Errorf("%w: field %d has wire type %d", ErrMalformed, f.num, f.typ)
}

func (f field) varint() (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, f.wrongType()
	}
	return f.u, nil
}

func (f field) str(dst *string) error {
	if f.typ != protowire.BytesType {
		return f.wrongType()
	}
	*dst = string(f.b)
	return nil
}

// appendVarints handles a repeated varint field, packed or not.
func (f field) appendVarints(add func(uint64)) error {
	switch f.typ {
	case protowire.VarintType:
		add(f.u)
		return nil
	case protowire.BytesType:
		for b := f.b; len(b) > 0; {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: packed field %d: %v", ErrMalformed, f.num, protowire.ParseError(n))
			}
			add(v)
			b = b[n:]
		}
		return nil
	}
	return f.wrongType()
}

// appendFixed32s handles a repeated fixed32 field, packed or not.
func (f field) appendFixed32s(add func(uint32)) error {
	switch f.typ {
	case protowire.Fixed32Type:
		add(uint32(f.u))
		return nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return fmt.Errorf("%w: packed field %d has %d bytes", ErrMalformed, f.num, len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			add(binary.LittleEndian.Uint32(f.b[i:]))
		}
		return nil
	}
	return f.wrongType()
}

// appendFixed64s handles a repeated fixed64 field, packed or not.
func (f field) appendFixed64s(add func(uint64)) error {
	switch f.typ {
	case protowire.Fixed64Type:
		add(f.u)
		return nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return fmt.Errorf("%w: packed field %d has %d bytes", ErrMalformed, f.num, len(f.b))
		}
		for i := 0; i < len(f.b); i += 8 {
			add(binary.LittleEndian.Uint64(f.b[i:]))
		}
		return nil
	}
	return f.wrongType()
}
