package fuse

// AttentionWith is AttentionBF16 writing bf16 = v: 0 runs the operator's
// float32 path, on any CPU with the custom operators.
var AttentionWith = attention

// QuantMatMulWith is QuantMatMulAMX writing amx = v (and a_bits): 0 runs the operator's
// reference path, on any CPU with the custom operators.
var QuantMatMulWith = quantMatMul
