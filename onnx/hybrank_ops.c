//go:build linux && amd64

// hybrank's custom operators for ONNX Runtime's CPU provider (domain
// "ai.hybrank"), registered on a session's options by customop.go.
//
// ai.hybrank.Attention(q, k, v, mask) -> context
//   q [B, Sq, H], k and v [B, Sk, H] (float32, heads side by side in the
//   last axis, num_heads of H / num_heads each), mask: B x Sk additive
//   float32 values (any shape with that many elements, a BERT export's
//   [B, 1, 1, Sk]); context [B, Sq, H]:
//     context[b, i, head] = softmax_t(q[b, i, head] . k[b, t, head] * scale
//                                     + mask[b, t]) . v[b, t, head]
//   the export's Reshape, Transpose, MatMul, Div, Add, Softmax, MatMul,
//   Transpose, Reshape in one kernel, one (batch, head) per task on the
//   session's intra-op threads, the scores of 16 queries at a time in
//   cache. Attribute bf16 = 1 runs the two products in bfloat16 on AMX
//   tiles (float32 accumulation, float32 softmax): for int8 models, whose
//   other products are quantized already; 0 (the default) computes in
//   float32, plainly: the reference the tests hold the tile path to.
//   Head size a multiple of 32 up to 64 for bf16. One query row (a
//   narrowed last layer's [CLS]; a real sequence has at least two tokens,
//   so no batch of full sequences takes this path, and a sequence's result
//   does not depend on its batch's padding) skips the tiles for a float32
//   AVX-512 path: packing K and V into bfloat16 tiles costs more than one
//   row's products.

#include "hybrank_ops.h"

#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hybrank_internal.h"

const OrtApi *hybrank_ort;
int hybrank_amx_bf16, hybrank_amx_int8;
static OrtCustomOpDomain *domain;

// ---- the kernel ----------------------------------------------------------

typedef struct {
  const float *q, *k, *v, *mask;
  float *out;
  long batch, sq, sk, hidden, heads, dh;
  float scale;
  int bf16;
  int failed; // a task could not allocate its scratch memory
} attn_job;

// attn_f32 is the plain float32 path, and the reference.
static int attn_f32(attn_job *j, long b, long h) {
  long H = j->hidden, dh = j->dh;
  const float *q = j->q + b * j->sq * H + h * dh;
  const float *k = j->k + b * j->sk * H + h * dh;
  const float *v = j->v + b * j->sk * H + h * dh;
  const float *m = j->mask + b * j->sk;
  float *o = j->out + b * j->sq * H + h * dh;
  float *s = malloc((size_t)j->sk * sizeof(float));
  if (!s) return -1;
  for (long i = 0; i < j->sq; i++) {
    float mx = -INFINITY;
    for (long t = 0; t < j->sk; t++) {
      float acc = 0;
      for (long d = 0; d < dh; d++) acc += q[i * H + d] * k[t * H + d];
      s[t] = acc * j->scale + m[t];
      if (s[t] > mx) mx = s[t];
    }
    float sum = 0;
    for (long t = 0; t < j->sk; t++) {
      s[t] = expf(s[t] - mx);
      sum += s[t];
    }
    float inv = 1 / sum;
    for (long d = 0; d < dh; d++) o[i * H + d] = 0;
    for (long t = 0; t < j->sk; t++) {
      float p = s[t] * inv;
      for (long d = 0; d < dh; d++) o[i * H + d] += p * v[t * H + d];
    }
  }
  free(s);
  return 0;
}

#define TARGET_AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

// cvt16 rounds 16 floats to bfloat16 (nearest even).
TARGET_AMX static inline __m256i cvt16(const float *x) { return (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x)); }

// attn_amx: per block of 16 queries, Q·Kᵀ for all keys into a float32 row
// block (tdpbf16ps, 16 × 16 scores a tile), softmax in float32 with the
// mask, P rounded to bfloat16, P·V into dh / 16 accumulator tiles.
TARGET_AMX static int attn_amx(attn_job *j, long b, long h) {
  long H = j->hidden, dh = j->dh, sq = j->sq, sk = j->sk;
  long sq16 = (sq + 15) / 16 * 16, sk32 = (sk + 31) / 32 * 32, ndb = dh / 32;
  const float *q = j->q + b * sq * H + h * dh;
  const float *k = j->k + b * sk * H + h * dh;
  const float *v = j->v + b * sk * H + h * dh;
  const float *m = j->mask + b * sk;
  float *o = j->out + b * sq * H + h * dh;

  size_t qn = sq16 * dh, kn = sk32 * dh, sn = 16 * sk32;
  // One allocation: Q rows, K and V in tile order (bfloat16), the score
  // block (float32), P (bfloat16), a 16 × dh result block (float32).
  size_t bytes = (qn + 2 * kn) * 2 + sn * 4 + sn * 2 + 16 * dh * 4;
  bytes = (bytes + 63) / 64 * 64;
  uint8_t *mem = aligned_alloc(64, bytes);
  if (!mem) return -1;
  uint16_t *qp = (uint16_t *)mem, *kp = qp + qn, *vp = kp + kn;
  float *s = (float *)(vp + kn);
  uint16_t *pp = (uint16_t *)(s + sn);
  float *c = (float *)(pp + sn);

  // Q: row-major bfloat16, rows past sq zero.
  memset(qp, 0, (qn + 2 * kn) * 2); // Q, K and V: the padding rows stay zero
  for (long i = 0; i < sq; i++)
    for (long d = 0; d < dh; d += 16) _mm256_storeu_si256((__m256i *)(qp + i * dh + d), cvt16(q + i * H + d));
  // K as the B operand of Q·Kᵀ: per block of 16 keys and 32 dimensions, 16
  // rows (dimension pairs) of 16 keys × 2: a key's row in bfloat16 is 16
  // pairs, one 32-bit word per tile row.
  for (long key = 0; key < sk; key++) {
    uint32_t pairs[32];
    for (long d = 0; d < dh; d += 16) _mm256_storeu_si256((__m256i *)(pairs + d / 2), cvt16(k + key * H + d));
    uint32_t *t = (uint32_t *)(kp + (key / 16) * ndb * 512);
    for (long db = 0; db < ndb; db++)
      for (long r = 0; r < 16; r++) t[db * 256 + r * 16 + key % 16] = pairs[db * 16 + r];
  }
  // V as the B operand of P·V: per block of 32 keys and 16 dimensions, 16
  // rows (key pairs) of 16 dimensions × 2: two keys' rows interleaved.
  long nnb = dh / 16;
  __m512i inter = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3,
                                   34, 2, 33, 1, 32, 0);
  for (long key = 0; key < sk; key += 2)
    for (long nb = 0; nb < nnb; nb++) {
      __m256i a = cvt16(v + key * H + nb * 16);
      __m256i b = key + 1 < sk ? cvt16(v + (key + 1) * H + nb * 16) : _mm256_setzero_si256();
      uint16_t *t = vp + ((key / 32) * nnb + nb) * 512 + (key % 32) / 2 * 32;
      _mm512_storeu_si512(t, _mm512_permutex2var_epi16(_mm512_castsi256_si512(a), inter, _mm512_castsi256_si512(b)));
    }

  hybrank_tilecfg saved;
  hybrank_tiles_begin(&saved);

  __m512 scale = _mm512_set1_ps(j->scale);
  for (long qb = 0; qb < sq16 / 16; qb++) {
    const uint16_t *qa = qp + qb * 16 * dh;
    // Scores: tile 0 accumulates, 1 and 2 hold this block's Q, 3 and 4 K.
    _tile_loadd(1, qa, dh * 2);
    if (ndb == 2) _tile_loadd(2, qa + 32, dh * 2);
    for (long kb = 0; kb < sk32 / 16; kb++) {
      _tile_zero(0);
      _tile_loadd(3, kp + (kb * ndb) * 512, 64);
      _tile_dpbf16ps(0, 1, 3);
      if (ndb == 2) {
        _tile_loadd(4, kp + (kb * ndb + 1) * 512, 64);
        _tile_dpbf16ps(0, 2, 4);
      }
      _tile_stored(0, s + kb * 16, sk32 * 4);
    }
    // Softmax per row over the sk keys, in two passes: scale, mask and
    // maximum; then e^(x − max) rounded to bfloat16 into P (padding keys
    // 0) and summed in float32. The division by the sum is left to the
    // 16 × dh result.
    float inv[16];
    for (long r = 0; r < 16; r++) {
      float *row = s + r * sk32;
      uint16_t *prow = pp + r * sk32;
      __m512 mx = _mm512_set1_ps(-INFINITY);
      long t = 0;
      for (; t + 16 <= sk; t += 16) {
        __m512 x = _mm512_fmadd_ps(_mm512_loadu_ps(row + t), scale, _mm512_loadu_ps(m + t));
        _mm512_storeu_ps(row + t, x);
        mx = _mm512_max_ps(mx, x);
      }
      __mmask16 tail = (__mmask16)((1u << (sk - t)) - 1);
      if (t < sk) {
        __m512 x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, row + t), scale, _mm512_maskz_loadu_ps(tail, m + t));
        _mm512_mask_storeu_ps(row + t, tail, x);
        mx = _mm512_mask_max_ps(mx, tail, mx, x);
      }
      __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
      __m512 sum = _mm512_setzero_ps();
      for (t = 0; t < sk32; t += 16) {
        __mmask16 live = t + 16 <= sk ? 0xFFFF : t < sk ? tail : 0;
        __m512 e = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, row + t), vmax)));
        sum = _mm512_add_ps(sum, e);
        _mm256_storeu_si256((__m256i *)(prow + t), (__m256i)_mm512_cvtneps_pbh(e));
      }
      inv[r] = 1.0f / _mm512_reduce_add_ps(sum);
    }
    // P·V: tiles 0–3 accumulate (dh / 16 of them), 4 holds P, 5 holds V.
    _tile_zero(0);
    _tile_zero(1);
    if (nnb == 4) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (long kb = 0; kb < sk32 / 32; kb++) {
      _tile_loadd(4, pp + kb * 32, sk32 * 2);
      const uint16_t *vb = vp + kb * nnb * 512;
      _tile_loadd(5, vb, 64);
      _tile_dpbf16ps(0, 4, 5);
      _tile_loadd(5, vb + 512, 64);
      _tile_dpbf16ps(1, 4, 5);
      if (nnb == 4) {
        _tile_loadd(5, vb + 1024, 64);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(5, vb + 1536, 64);
        _tile_dpbf16ps(3, 4, 5);
      }
    }
    _tile_stored(0, c, dh * 4);
    _tile_stored(1, c + 16, dh * 4);
    if (nnb == 4) {
      _tile_stored(2, c + 32, dh * 4);
      _tile_stored(3, c + 48, dh * 4);
    }
    for (long r = 0; r < 16 && qb * 16 + r < sq; r++) {
      __m512 ir = _mm512_set1_ps(inv[r]);
      for (long d = 0; d < dh; d += 16) _mm512_storeu_ps(o + (qb * 16 + r) * H + d, _mm512_mul_ps(_mm512_loadu_ps(c + r * dh + d), ir));
    }
  }
  hybrank_tiles_end(&saved);
  free(mem);
  return 0;
}

// attn_rows is the path for one query row (a narrowed last layer's [CLS];
// it loops over sq rows all the same): float32 in AVX-512, q·k per key and P·V as one FMA per key
// and 16 dimensions, with none of the tile path's packing of K and V into
// bfloat16, which for one row costs more than the products (a head size
// that is a multiple of 16).
HYBRANK_AVX512 static int attn_rows(attn_job *j, long b, long h) {
  long H = j->hidden, dh = j->dh, sk = j->sk;
  const float *k = j->k + b * sk * H + h * dh;
  const float *v = j->v + b * sk * H + h * dh;
  const float *m = j->mask + b * sk;
  float *s = aligned_alloc(64, (size_t)(sk + 15) / 16 * 64);
  if (!s) return -1;
  for (long i = 0; i < j->sq; i++) {
    const float *q = j->q + (b * j->sq + i) * H + h * dh;
    float *o = j->out + (b * j->sq + i) * H + h * dh;
    float mx = -INFINITY;
    for (long t = 0; t < sk; t++) {
      __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(q), _mm512_loadu_ps(k + t * H));
      for (long d = 16; d < dh; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + t * H + d), acc);
      s[t] = _mm512_reduce_add_ps(acc) * j->scale + m[t];
      mx = s[t] > mx ? s[t] : mx;
    }
    __m512 vmax = _mm512_set1_ps(mx), sum = _mm512_setzero_ps();
    for (long t = 0; t < sk; t += 16) {
      __mmask16 live = t + 16 <= sk ? 0xFFFF : (__mmask16)((1u << (sk - t)) - 1);
      __m512 e = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, s + t), vmax)));
      _mm512_mask_storeu_ps(s + t, live, e);
      sum = _mm512_add_ps(sum, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (long d = 0; d < dh; d += 16) {
      __m512 acc = _mm512_setzero_ps();
      for (long t = 0; t < sk; t++) acc = _mm512_fmadd_ps(_mm512_set1_ps(s[t]), _mm512_loadu_ps(v + t * H + d), acc);
      _mm512_storeu_ps(o + d, _mm512_mul_ps(acc, inv));
    }
  }
  free(s);
  return 0;
}

static void attn_task(void *p, size_t idx) {
  attn_job *j = p;
  long b = (long)idx / j->heads, h = (long)idx % j->heads;
  int rc = !j->bf16 ? attn_f32(j, b, h) : j->sq == 1 ? attn_rows(j, b, h) : attn_amx(j, b, h);
  if (rc != 0) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

static const char *attn_check(attn_job *j) {
  if (j->heads <= 0 || j->hidden % j->heads != 0) return "hybrank Attention: hidden size not a multiple of num_heads";
  j->dh = j->hidden / j->heads;
  if (j->bf16 && !hybrank_amx_bf16) return "hybrank Attention: bf16 = 1 needs AMX-BF16, which this CPU or kernel does not offer";
  if (j->bf16 && j->dh != 32 && j->dh != 64) return "hybrank Attention: bf16 = 1 needs a head size of 32 or 64";
  if (j->sq < 1 || j->sk < 1) return "hybrank Attention: empty sequence";
  return NULL;
}

const char *hybrank_attention(const float *q, const float *k, const float *v, const float *mask, float *out,
                              long batch, long sq, long sk, long hidden, long heads, float scale, int bf16) {
  attn_job j = {q, k, v, mask, out, batch, sq, sk, hidden, heads, 0, scale, bf16, 0};
  const char *err = attn_check(&j);
  if (err) return err;
  for (long i = 0; i < batch * heads; i++) attn_task(&j, (size_t)i);
  return j.failed ? "hybrank Attention: out of memory" : NULL;
}

// ---- the operator ---------------------------------------------------------

typedef struct {
  int64_t heads, bf16;
  float scale;
} attn_kernel;

OrtStatus *hybrank_invalid(const char *msg) { return api->CreateStatus(ORT_INVALID_ARGUMENT, msg); }

static OrtStatus *attn_create(const OrtCustomOp *op, const OrtApi *a, const OrtKernelInfo *info, void **kernel) {
  (void)op;
  (void)a;
  attn_kernel *kn = calloc(1, sizeof *kn);
  if (!kn) return api->CreateStatus(ORT_FAIL, "hybrank Attention: out of memory");
  OrtStatus *st = api->KernelInfoGetAttribute_int64(info, "num_heads", &kn->heads);
  if (st) {
    free(kn);
    return st;
  }
  if ((st = api->KernelInfoGetAttribute_float(info, "scale", &kn->scale))) {
    free(kn);
    return st;
  }
  if ((st = api->KernelInfoGetAttribute_int64(info, "bf16", &kn->bf16))) {
    // Optional. The runtime reports a missing attribute and one of another
    // type alike (ORT_FAIL); either way the float32 path, which is always
    // right, runs.
    api->ReleaseStatus(st);
    kn->bf16 = 0;
  }
  *kernel = kn;
  return NULL;
}

// dims3 reads a 3-D float tensor's shape.
static OrtStatus *dims3(const OrtValue *val, int64_t d[3], const char *what) {
  OrtTensorTypeAndShapeInfo *info;
  OrtStatus *st = api->GetTensorTypeAndShape(val, &info);
  if (st) return st;
  size_t n = 0;
  ONNXTensorElementDataType t;
  if (!(st = api->GetDimensionsCount(info, &n)) && !(st = api->GetTensorElementType(info, &t))) {
    if (n != 3 || t != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      st = hybrank_invalid(what);
    } else {
      st = api->GetDimensions(info, d, 3);
    }
  }
  api->ReleaseTensorTypeAndShapeInfo(info);
  return st;
}

static OrtStatus *attn_compute(void *kernel, OrtKernelContext *ctx) {
  attn_kernel *kn = kernel;
  const OrtValue *in[4];
  OrtStatus *st;
  for (size_t i = 0; i < 4; i++)
    if ((st = api->KernelContext_GetInput(ctx, i, &in[i]))) return st;
  int64_t qd[3], kd[3], vd[3];
  if ((st = dims3(in[0], qd, "hybrank Attention: q must be float32 [batch, sequence, hidden]"))) return st;
  if ((st = dims3(in[1], kd, "hybrank Attention: k must be float32 [batch, sequence, hidden]"))) return st;
  if ((st = dims3(in[2], vd, "hybrank Attention: v must be float32 [batch, sequence, hidden]"))) return st;
  if (kd[0] != qd[0] || vd[0] != qd[0] || kd[2] != qd[2] || vd[2] != qd[2] || vd[1] != kd[1])
    return hybrank_invalid("hybrank Attention: q, k and v disagree on batch, hidden size or key count");
  // The mask: float32 [B, 1, …, 1, Sk] (a BERT export's [B, 1, 1, Sk]);
  // one that broadcasts otherwise is refused, not read wrong.
  OrtTensorTypeAndShapeInfo *mi;
  if ((st = api->GetTensorTypeAndShape(in[3], &mi))) return st;
  size_t mr = 0;
  int64_t md[8];
  ONNXTensorElementDataType mt;
  if (!(st = api->GetDimensionsCount(mi, &mr)) && !(st = api->GetTensorElementType(mi, &mt)) && mr >= 2 && mr <= 8)
    st = api->GetDimensions(mi, md, mr);
  api->ReleaseTensorTypeAndShapeInfo(mi);
  if (st) return st;
  int mask_ok = mt == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && mr >= 2 && mr <= 8 && md[0] == kd[0] && md[mr - 1] == kd[1];
  for (size_t i = 1; mask_ok && i + 1 < mr; i++) mask_ok = md[i] == 1;
  if (!mask_ok) return hybrank_invalid("hybrank Attention: mask must be float32 [batch, 1, ..., 1, keys]");
  OrtValue *outv;
  if ((st = api->KernelContext_GetOutput(ctx, 0, qd, 3, &outv))) return st;
  attn_job j = {0};
  if ((st = api->GetTensorMutableData((OrtValue *)in[0], (void **)&j.q))) return st;
  if ((st = api->GetTensorMutableData((OrtValue *)in[1], (void **)&j.k))) return st;
  if ((st = api->GetTensorMutableData((OrtValue *)in[2], (void **)&j.v))) return st;
  if ((st = api->GetTensorMutableData((OrtValue *)in[3], (void **)&j.mask))) return st;
  if ((st = api->GetTensorMutableData(outv, (void **)&j.out))) return st;
  j.batch = qd[0], j.sq = qd[1], j.sk = kd[1], j.hidden = qd[2];
  j.heads = kn->heads, j.scale = kn->scale, j.bf16 = kn->bf16 != 0;
  if (j.batch == 0 || j.sq == 0) return NULL; // nothing to compute: the output is empty
  const char *err = attn_check(&j);
  if (err) return hybrank_invalid(err);
  if ((st = api->KernelContext_ParallelFor(ctx, attn_task, (size_t)(j.batch * j.heads), 0, &j))) return st;
  return j.failed ? api->CreateStatus(ORT_FAIL, "hybrank Attention: out of memory") : NULL;
}

static void attn_destroy(void *kernel) { free(kernel); }
static const char *attn_name(const OrtCustomOp *op) {
  (void)op;
  return "Attention";
}
const char *hybrank_cpu_provider(const OrtCustomOp *op) {
  (void)op;
  return "CPUExecutionProvider";
}
static ONNXTensorElementDataType float_type(const OrtCustomOp *op, size_t i) {
  (void)op;
  (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static size_t four(const OrtCustomOp *op) {
  (void)op;
  return 4;
}
size_t hybrank_one(const OrtCustomOp *op) {
  (void)op;
  return 1;
}
OrtCustomOpInputOutputCharacteristic hybrank_required(const OrtCustomOp *op, size_t i) {
  (void)op;
  (void)i;
  return INPUT_OUTPUT_REQUIRED;
}
OrtMemType hybrank_default_mem(const OrtCustomOp *op, size_t i) {
  (void)op;
  (void)i;
  return OrtMemTypeDefault;
}
int hybrank_arity_one(const OrtCustomOp *op) {
  (void)op;
  return 1;
}
int hybrank_homogeneous(const OrtCustomOp *op) {
  (void)op;
  return 1;
}

// version 16: the fields through KernelComputeV2; the runtime reads no
// further.
static OrtCustomOp attention_op = {
    .version = 16,
    .GetName = attn_name,
    .GetExecutionProviderType = hybrank_cpu_provider,
    .GetInputType = float_type,
    .GetInputTypeCount = four,
    .GetOutputType = float_type,
    .GetOutputTypeCount = hybrank_one,
    .KernelDestroy = attn_destroy,
    .GetInputCharacteristic = hybrank_required,
    .GetOutputCharacteristic = hybrank_required,
    .GetInputMemoryType = hybrank_default_mem,
    .GetVariadicInputMinArity = hybrank_arity_one,
    .GetVariadicInputHomogeneity = hybrank_homogeneous,
    .GetVariadicOutputMinArity = hybrank_arity_one,
    .GetVariadicOutputHomogeneity = hybrank_homogeneous,
    .CreateKernelV2 = attn_create,
    .KernelComputeV2 = attn_compute,
};

// ---- registration ------------------------------------------------------------

static const char *message(OrtStatus *st) {
  static char buf[512];
  strncpy(buf, api->GetErrorMessage(st), sizeof buf - 1);
  api->ReleaseStatus(st);
  return buf;
}

const char *hybrank_ops_init(const char *path) {
  if (api) return NULL;
  // Only the copy the process runs: a second one's OrtApi would register a
  // domain it built on session options the first one built.
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return "the ONNX Runtime library at this path is not the one the process loaded";
  const OrtApiBase *(*base)(void) = (const OrtApiBase *(*)(void))dlsym(lib, "OrtGetApiBase");
  if (!base) return "the library has no OrtGetApiBase";
  const OrtApi *a = base()->GetApi(ORT_API_VERSION);
  if (!a) return "the library does not offer C API version 24";
  OrtCustomOpDomain *d;
  OrtStatus *st = a->CreateCustomOpDomain("ai.hybrank", &d);
  if (st) {
    a->ReleaseStatus(st);
    return "CreateCustomOpDomain failed";
  }
  OrtCustomOp *ops[] = {&attention_op, &hybrank_quant_matmul_op};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if ((st = a->CustomOpDomain_Add(d, ops[i]))) {
      a->ReleaseStatus(st);
      a->ReleaseCustomOpDomain(d);
      return "CustomOpDomain_Add failed";
    }
  api = a, domain = d; // kept for the process's life: sessions refer to it
  return NULL;
}

const char *hybrank_ops_register(void *opts) {
  if (!api) return "custom operators not initialised";
  OrtStatus *st = api->AddCustomOpDomain((OrtSessionOptions *)opts, domain);
  return st ? message(st) : NULL;
}

const char *hybrank_ops_amx(int bf16, int int8) {
  // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (Linux 5.16+).
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return "the kernel refused the AMX tile state";
  hybrank_amx_bf16 = bf16, hybrank_amx_int8 = int8;
  return NULL;
}
