package onnxpb_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// attrModel has every attribute kind, int8/float32/int64 initializers, an
// extra operator set and a value_info hint.
func attrModel() *onnxpb.Model {
	g := onnxpb.NewGraph("attrs")
	g.AddInput("x", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(3))
	c := g.AddNode("c", "Constant", nil, onnxpb.AttrTensor("value", onnxpb.Tensor{Dims: []int64{3}, Float32: []float32{10, 20, 30}}))
	sum := g.AddNode("sum", "Add", []string{"x", c})
	tr := g.AddNode("tr", "Transpose", []string{sum}, onnxpb.AttrInts("perm", 1, 0))
	lr := g.AddNode("lr", "LeakyRelu", []string{tr}, onnxpb.AttrFloat("alpha", 0.5), onnxpb.AttrString("note", "s"),
		onnxpb.AttrFloats("fs", 1, 2))
	g.AddFloat32("w", []int64{2, 2}, []float32{1, -2, 3.5, 0})
	g.AddRaw("q", onnxpb.Int8, []int64{3}, []byte{0x81, 0, 0x7f})
	g.AddInt64("shape", []int64{2}, []int64{-1, 3})
	g.AddNode("y", "Gather", []string{lr, "shape"}, onnxpb.AttrInt("axis", 1))
	g.AddOutput("y", onnxpb.Float32, onnxpb.Symbolic("n"), onnxpb.Fixed(2))
	g.ValueInfo = append(g.ValueInfo, onnxpb.ValueInfo{Name: "sum", Type: onnxpb.Float32, Dims: []onnxpb.Dim{onnxpb.Symbolic("n"), onnxpb.Fixed(3)}})
	m := onnxpb.NewModel(g)
	m.ExtraOpsets = []onnxpb.OpsetID{{Domain: "com.microsoft", Version: 1}}
	m.DocString = "doc"
	return m
}

// roundTrip marshals m, reads it back and requires the read model to
// marshal to the same bytes; it returns the read model.
func roundTrip(t *testing.T, m *onnxpb.Model) *onnxpb.Model {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpb.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Fatalf("read and written again: %d bytes, want the same %d bytes", len(again), len(b))
	}
	return r
}

// TestUnmarshalGenerated reads a generated BERT export (every operator and
// attribute bertgen writes) back byte for byte.
func TestUnmarshalGenerated(t *testing.T) {
	w, err := bertgen.GenerateWeights(bertgen.TinyBERTL2CrossEncoder())
	if err != nil {
		t.Fatal(err)
	}
	m, err := bertgen.BuildModel(w)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, m)
}

func TestUnmarshalRoundTrip(t *testing.T) {
	r := roundTrip(t, attrModel())
	if r.Opset != onnxpb.DefaultOpset || !r.UsesOpset("com.microsoft") || r.UsesOpset("ai.onnx.ml") || r.DocString != "doc" {
		t.Fatalf("model fields %+v", r)
	}
	g := r.Graph
	if len(g.Nodes) != 5 || g.Nodes[3].OpType != "LeakyRelu" || len(g.ValueInfo) != 1 || g.ValueInfo[0].Name != "sum" {
		t.Fatalf("graph %+v", g)
	}
	if a, ok := g.Nodes[3].Attr("alpha"); !ok || a.Name() != "alpha" {
		t.Fatal("alpha attribute missing")
	} else if v, ok := a.Float(); !ok || v != 0.5 {
		t.Fatalf("alpha = %v, %v", v, ok)
	}
	if a, _ := g.Nodes[4].Attr("axis"); func() bool { v, ok := a.Int(); return !ok || v != 1 }() {
		t.Fatal("axis attribute is not INT 1")
	}
	if _, ok := g.Nodes[4].Attr("nope"); ok {
		t.Fatal("found an attribute that does not exist")
	}
	w, q, s := g.Initializers[0], g.Initializers[1], g.Initializers[2]
	if w.DataType() != onnxpb.Float32 || w.Float32[1] != -2 || w.NumElements() != 4 {
		t.Fatalf("w = %+v", w)
	}
	if q.DataType() != onnxpb.Int8 || int8(q.Raw[0]) != -127 || s.Int64[0] != -1 {
		t.Fatalf("q = %+v, shape = %+v", q, s)
	}
	if in := g.Inputs[0]; in.Type != onnxpb.Float32 || in.Dims[0].Param != "n" || in.Dims[1].Value != 3 {
		t.Fatalf("input %+v", in)
	}
}

// Hand-encoded messages for the encodings the writer never produces.
func tag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

func msg(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(tag(b, num, protowire.BytesType), m)
}

func str(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(tag(b, num, protowire.BytesType), s)
}

func varint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(b, num, protowire.VarintType), v)
}

// model wraps one initializer (TensorProto bytes) and extra graph fields
// into a ModelProto with a default-domain opset.
func model(tensor []byte, graphExtra ...byte) []byte {
	var g []byte
	if tensor != nil {
		g = msg(g, 5, tensor)
	}
	g = append(g, graphExtra...)
	var b []byte
	b = varint(b, 1, 8)
	b = msg(b, 8, varint(nil, 2, 17))
	return msg(b, 7, g)
}

func TestUnmarshalTypedFields(t *testing.T) {
	// float_data unpacked, dims unpacked.
	var ft []byte
	ft = varint(ft, 1, 2)
	ft = varint(ft, 2, uint64(onnxpb.Float32))
	ft = str(ft, 8, "f")
	for _, v := range []float32{1.5, -3} {
		ft = protowire.AppendFixed32(tag(ft, 4, protowire.Fixed32Type), math.Float32bits(v))
	}
	// int8 in int32_data (packed), the encoding older exporters use.
	var it []byte
	it = varint(it, 1, 3)
	it = varint(it, 2, uint64(onnxpb.Int8))
	it = str(it, 8, "i8")
	var packed []byte
	for _, v := range []int32{-128, 5, 127} {
		packed = protowire.AppendVarint(packed, uint64(int64(v)))
	}
	it = msg(it, 5, packed)
	// double_data packed.
	var dt []byte
	dt = varint(dt, 1, 1)
	dt = varint(dt, 2, uint64(onnxpb.Float64))
	dt = str(dt, 8, "d")
	dt = msg(dt, 10, binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.25)))
	// A graph doc string is kept verbatim.
	doc := str(nil, 10, "graph doc")
	b := model(ft, append(append(msg(nil, 5, it), msg(nil, 5, dt)...), doc...)...)
	m, err := onnxpb.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	in := m.Graph.Initializers
	if len(in) != 3 {
		t.Fatalf("%d initializers", len(in))
	}
	if in[0].Name != "f" || len(in[0].Float32) != 2 || in[0].Float32[1] != -3 {
		t.Fatalf("float_data tensor %+v", in[0])
	}
	if in[1].DataType() != onnxpb.Int8 || !bytes.Equal(in[1].Raw, []byte{0x80, 5, 0x7f}) {
		t.Fatalf("int32_data int8 tensor %+v", in[1])
	}
	if in[2].DataType() != onnxpb.Float64 || math.Float64frombits(binary.LittleEndian.Uint64(in[2].Raw)) != 2.25 {
		t.Fatalf("double_data tensor %+v", in[2])
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, doc) {
		t.Fatal("graph doc string was not written back")
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, err := attrModel().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	external := varint(varint(varint(str(nil, 8, "w"), 1, 1), 2, uint64(onnxpb.Float32)), 14, 1)
	str8 := varint(varint(str(nil, 8, "s"), 1, 1), 2, 8)
	short := msg(varint(varint(str(nil, 8, "w"), 1, 3), 2, uint64(onnxpb.Float32)), 9, make([]byte, 8))
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"truncated", good[:len(good)/2], onnxpb.ErrMalformed},
		{"garbage", []byte{0xff, 0xff, 0xff}, onnxpb.ErrMalformed},
		{"no graph", msg(varint(nil, 1, 8), 8, varint(nil, 2, 17)), onnxpb.ErrMalformed},
		{"no opset", msg(varint(nil, 1, 8), 7, nil), onnxpb.ErrMalformed},
		{"graph is a varint", varint(msg(nil, 8, varint(nil, 2, 17)), 7, 3), onnxpb.ErrMalformed},
		{"external data", model(external), onnxpb.ErrUnsupported},
		{"string tensor", model(str8), onnxpb.ErrUnsupported},
		{"raw data shorter than dims", model(short), onnxpb.ErrMalformed},
		{"sparse initializer", model(nil, msg(nil, 15, nil)...), onnxpb.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := onnxpb.Unmarshal(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("Unmarshal = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzUnmarshal: arbitrary bytes give a model or an error, never a panic,
// and a model that decodes writes without panicking.
func FuzzUnmarshal(f *testing.F) {
	good, err := attrModel().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:40])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnxpb.Unmarshal(b)
		if err != nil {
			return
		}
		_, _ = m.Marshal()
	})
}
