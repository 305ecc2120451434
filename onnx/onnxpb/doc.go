// Package onnxpb reads and writes ONNX models (ModelProto) without a
// protobuf code generator: messages are hand-encoded and decoded with
// protowire, using the field numbers of onnx/onnx.proto3 (ModelProto,
// GraphProto, NodeProto, TensorProto, ValueInfoProto, TypeProto,
// TensorShapeProto, AttributeProto, OperatorSetIdProto).
//
// Writing supports what a feed-forward inference graph needs: initializers
// of any fixed-size element type (float32 and int64 typed, the others as
// raw little-endian bytes; all stored as raw_data), nodes with int, float,
// string, ints, floats and tensor attributes, tensor-typed graph inputs,
// outputs and value_info hints whose dimensions are fixed or symbolic
// ("batch_size"), and extra operator-set imports such as com.microsoft.
//
// # Reading
//
// Unmarshal and ReadFile decode a model into the same types, so a program
// can read a model (a Hugging Face export, or one written here), rewrite
// its graph and write it back; onnx/quantize does exactly that. Fields
// the types do not model (doc strings, metadata, local functions, subgraph
// attributes, non-tensor value types) are kept as their encoded bytes and
// written back unchanged. Tensors whose data lives outside the file
// (external data), sparse initializers and string tensors are refused with
// ErrUnsupported; bytes that are not a ModelProto give ErrMalformed, never
// a panic.
//
// GraphIO and RenameValues work on the serialized bytes without decoding
// the graph: GraphIO lists a model's inputs and outputs, RenameValues
// renames values (e.g. an export's "output_0" to "last_hidden_state"),
// copying every other byte unchanged — cheap on large fetched exports.
//
// # Concurrency and ownership
//
// A Graph or Model is not safe for concurrent use; build it in one goroutine.
// AddInitializer* retains the data slice it is given (no copy) until the model
// is written, so callers must not modify it in between. A model read by
// Unmarshal may alias the input bytes (raw tensors, attributes, value
// infos), which must stay unmodified while the model is in use.
//
// # Invariants
//
// Encode checks that the graph is well formed before writing anything: every
// node input names a graph input, an initializer or an earlier node's output
// (nodes are stored in the order added, which must be topological), every
// value is produced once (an empty output name is an optional output left
// out; an initializer that is also a graph input is that input's default,
// as IR < 4 writes every weight), every graph output is produced, and
// every initializer's data length equals the product of its dims. Output bytes are
// a deterministic function of the calls made.
package onnxpb
