// hybrank's custom operators for ONNX Runtime's CPU provider (domain
// "ai.hybrank"); see customop.go. Every function returns NULL on success
// or a static message.
#ifndef HYBRANK_OPS_H
#define HYBRANK_OPS_H

#include <stddef.h>

// hybrank_ops_init finds the OrtApi of the ONNX Runtime library at path,
// which the process has loaded already.
const char *hybrank_ops_init(const char *path);

// hybrank_ops_register adds the domain to an OrtSessionOptions.
const char *hybrank_ops_register(void *session_options);

// hybrank_ops_amx asks the kernel for the AMX tile state (Linux
// arch_prctl); only then may an op run its bfloat16 tiles.
const char *hybrank_ops_amx(void);

// hybrank_attention runs the Attention kernel outside a session, one
// (batch, head) after the other: for the tests that compare its two paths.
const char *hybrank_attention(const float *q, const float *k, const float *v, const float *mask, float *out,
                              long batch, long sq, long sk, long hidden, long heads, float scale, int bf16);

#endif
