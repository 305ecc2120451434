package fuse

import "github.com/hybrank/hybrank/onnx/onnxpb"

// AttentionWith is AttentionBF16 writing bf16 = v: 0 runs the operator's
// float32 path, on any CPU with the custom operators.
var AttentionWith = attention

// QuantMatMulWith is QuantMatMulAMX writing amx = v (and a_bits): 0 runs the operator's
// reference path, on any CPU with the custom operators.
func QuantMatMulWith(m *onnxpb.Model, amx, aBits int64) (int, error) {
	return quantMatMul(m, amx, aBits, true)
}

// QuantMatMulUngrouped is QuantMatMulWith leaving every product its own
// operator.
func QuantMatMulUngrouped(m *onnxpb.Model, amx, aBits int64) (int, error) {
	return quantMatMul(m, amx, aBits, false)
}
