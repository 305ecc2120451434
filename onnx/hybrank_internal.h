// What hybrank's operator files share: the runtime's API, the callbacks
// every operator answers alike, the AMX tile configuration. Not part of the
// cgo interface (hybrank_ops.h is).
#ifndef HYBRANK_INTERNAL_H
#define HYBRANK_INTERNAL_H

#include <stdint.h>

#include "ortcapi/onnxruntime_c_api.h"

// hybrank_ort is the OrtApi of the runtime the process loaded (set once by
// hybrank_ops_init); the operator files call it api.
extern const OrtApi *hybrank_ort;
#define api hybrank_ort

// hybrank_amx_bf16 and hybrank_amx_int8: the kernel granted the tile state
// and the CPU has AMX-BF16 (with AVX512-BF16) / AMX-INT8 (with AVX512-BW).
extern int hybrank_amx_bf16, hybrank_amx_int8;

// hybrank_invalid is an ORT_INVALID_ARGUMENT status with a static message.
OrtStatus *hybrank_invalid(const char *msg);

// Callbacks every hybrank operator answers the same way.
const char *hybrank_cpu_provider(const OrtCustomOp *op);
size_t hybrank_one(const OrtCustomOp *op);
OrtCustomOpInputOutputCharacteristic hybrank_required(const OrtCustomOp *op, size_t i);
OrtMemType hybrank_default_mem(const OrtCustomOp *op, size_t i);
int hybrank_arity_one(const OrtCustomOp *op);
int hybrank_homogeneous(const OrtCustomOp *op);

// The tile configuration: palette 1, eight tiles of 16 rows × 64 bytes
// (16 floats or int32, 32 bfloat16 values, 64 bytes of int8).
typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} hybrank_tilecfg;

// The operators besides Attention (hybrank_ops.c registers them all).
extern OrtCustomOp hybrank_quant_matmul_op;

#endif
