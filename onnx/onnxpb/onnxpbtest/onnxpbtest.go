// Package onnxpbtest builds ONNX models for tests that the onnxpb builder
// cannot express (graph attributes).
package onnxpbtest

import (
	"testing"

	"github.com/hybrank/hybrank/onnx/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// WithIfNode returns m's bytes with one more node, If(cond) → o, whose
// then_branch is an empty graph: hand-encoded, since the builder has no
// graph attributes. The appended graph field merges into the model's.
func WithIfNode(t testing.TB, m *onnxpb.Model) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var attr []byte
	attr = protowire.AppendTag(attr, 1, protowire.BytesType)
	attr = protowire.AppendString(attr, "then_branch")
	attr = protowire.AppendTag(attr, 6, protowire.BytesType)
	attr = protowire.AppendBytes(attr, nil)
	attr = protowire.AppendTag(attr, 20, protowire.VarintType)
	attr = protowire.AppendVarint(attr, 5) // GRAPH
	var node []byte
	node = protowire.AppendTag(node, 1, protowire.BytesType)
	node = protowire.AppendString(node, "cond")
	node = protowire.AppendTag(node, 2, protowire.BytesType)
	node = protowire.AppendString(node, "o")
	node = protowire.AppendTag(node, 4, protowire.BytesType)
	node = protowire.AppendString(node, "If")
	node = protowire.AppendTag(node, 5, protowire.BytesType)
	node = protowire.AppendBytes(node, attr)
	// The model's graph with the node appended, as a second graph field
	// (a reader keeps the last).
	var graph []byte
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		rest = rest[n:]
		m := protowire.ConsumeFieldValue(num, typ, rest)
		if m < 0 {
			t.Fatal(protowire.ParseError(m))
		}
		if num == 7 {
			v, _ := protowire.ConsumeBytes(rest)
			graph = append([]byte(nil), v...)
		}
		rest = rest[m:]
	}
	graph = protowire.AppendTag(graph, 1, protowire.BytesType)
	graph = protowire.AppendBytes(graph, node)
	b = protowire.AppendTag(b, 7, protowire.BytesType)
	return protowire.AppendBytes(b, graph)
}
