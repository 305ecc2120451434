// Package ops is the contract of hybrank's own ONNX operators, domain
// Domain ("ai.hybrank"): each operator's name and attributes, with their
// types and whether a node may leave them out. Package onnx implements
// the operators in C (hybrank_ops.c, hybrank_qmatmul.c) and registers
// them on its CPU sessions; package onnx/fuse writes nodes that call
// them. Both follow this table: fuse builds its nodes' attributes from
// the names here, and TestCKernelsFollowTable reads the C sources and
// fails when an attribute the kernels read is missing from the table, has
// another type or optionality, or the table names one the kernels ignore,
// so the C cannot silently diverge.
//
// The package holds only constants and a table: no cgo, safe for
// concurrent use.
package ops
