// Package onnxpb writes ONNX models (ModelProto) without a protobuf code
// generator: messages are hand-encoded with protowire, using the field
// numbers of onnx/onnx.proto3 (ModelProto, GraphProto, NodeProto,
// TensorProto, ValueInfoProto, TypeProto, TensorShapeProto, AttributeProto,
// OperatorSetIdProto).
//
// Only what a feed-forward inference graph needs is supported: float32 and
// int64 initializers (stored as raw_data, little-endian), nodes with int,
// float, string, ints, floats and tensor attributes, and tensor-typed graph
// inputs and outputs whose dimensions are fixed or symbolic ("batch_size").
// Reading is limited to what preparing a fetched export needs, without the
// runtime: GraphIO lists a serialized model's graph inputs and outputs,
// and RenameValues renames values (e.g. an export's "output_0" to
// "last_hidden_state"), copying every other byte unchanged. The runtime
// (package onnx) remains the reader for everything else.
//
// # Concurrency and ownership
//
// A Graph or Model is not safe for concurrent use; build it in one goroutine.
// AddInitializer* retains the data slice it is given (no copy) until the model
// is written, so callers must not modify it in between.
//
// # Invariants
//
// Encode checks that the graph is well formed before writing anything: every
// node input names a graph input, an initializer or an earlier node's output
// (nodes are stored in the order added, which must be topological), every
// value is produced once, every graph output is produced, and every
// initializer's data length equals the product of its dims. Output bytes are
// a deterministic function of the calls made.
package onnxpb
