// What hybrank's operator files share: the runtime's API, the callbacks
// every operator answers alike, the AMX tile configuration. Not part of the
// cgo interface (hybrank_ops.h is).
#ifndef HYBRANK_INTERNAL_H
#define HYBRANK_INTERNAL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

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

#define HYBRANK_AMX_TILE __attribute__((target("amx-tile")))

// hybrank_tiles_begin saves the thread's tile configuration into saved and
// loads hybrank's; hybrank_tiles_end gives the saved one back (or releases
// the tiles if there was none). The runtime's own AMX kernels (MLAS) load
// theirs once per thread and may count on it staying loaded.
HYBRANK_AMX_TILE static inline void hybrank_tiles_begin(hybrank_tilecfg *saved) {
  hybrank_tilecfg cfg;
  _tile_storeconfig(saved);
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

HYBRANK_AMX_TILE static inline void hybrank_tiles_end(const hybrank_tilecfg *saved) {
  if (saved->palette != 0)
    _tile_loadconfig(saved);
  else
    _tile_release();
}

#define HYBRANK_AVX512 __attribute__((target("avx512f")))

// exp512 is e^x for 16 floats: 2^n · e^g with n = round(x·log2 e), g =
// (x·log2 e − n)·ln 2, |g| ≤ 0.35, and e^g by its degree-5 Taylor
// polynomial (relative error < 3e-6, plus about |x|·2⁻²⁴ from rounding
// x·log2 e: far below the bfloat16 rounding of P, 2⁻⁹); x below −87 (a
// masked key) gives 0.
HYBRANK_AVX512 static inline __m512 exp512(__m512 x) {
  __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_mul_ps(_mm512_sub_ps(t, n), _mm512_set1_ps(0.693147180559945309f)); // f·ln 2
  __m512 p = _mm512_set1_ps(1.0f / 120);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
}

// The operators besides Attention (hybrank_ops.c registers them all).
extern OrtCustomOp hybrank_quant_matmul_op;

#endif
