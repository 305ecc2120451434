// hybrank's custom operators for ONNX Runtime's CPU provider (domain
// "ai.hybrank"); see customop.go. Every function returns NULL on success
// or a static message.
#ifndef HYBRANK_OPS_H
#define HYBRANK_OPS_H

#include <stddef.h>
#include <stdint.h>

// hybrank_ops_init finds the OrtApi of the ONNX Runtime library at path,
// which the process has loaded already.
const char *hybrank_ops_init(const char *path);

// hybrank_ops_register adds the domain to an OrtSessionOptions.
const char *hybrank_ops_register(void *session_options);

// hybrank_ops_amx asks the kernel for the AMX tile state (Linux
// arch_prctl); only then may an op use tiles: bfloat16 ones if bf16 (the
// CPU has AMX-BF16 and AVX512-BF16), int8 ones if int8 (AMX-INT8 and
// AVX512-BW).
const char *hybrank_ops_amx(int bf16, int int8);

// hybrank_attention runs the Attention kernel outside a session, one
// (batch, head) after the other: for the tests that compare its two paths.
const char *hybrank_attention(const float *q, const float *k, const float *v, const float *mask, float *out,
                              long batch, long sq, long sk, long hidden, long heads, float scale, int bf16);

// hybrank_quant_matmul runs the QuantMatMul kernel outside a session on
// one thread: y[m, n] = Σ_k q(a[m, :]·a_mul)[k] · b[k, n] · b_scale[n] + bias[n]
// with a row's activations quantized per row (a_mul and bias may be NULL)
// to abits (8 or 16) bits, then GELU if gelu; amx selects the tile
// path; the weights are packed once and the product run reps times. For
// the tests and benchmarks.
const char *hybrank_quant_matmul(const float *a, const int8_t *b, const float *b_scale, const float *bias, const float *a_mul,
                                 float *y, long m, long k, long n, int amx, int gelu, int abits, long reps);

#endif
