//go:build linux && amd64

// ai.hybrank.QuantMatMul(a, b, b_scale, bias, a_mul) -> y (y0, y1, y2 with split)
//   a float32 [..., K]; b int8 [K, N]; b_scale float32 [N] (or one value);
//   bias float32 [N] and a_mul float32 [K] optional. b, b_scale, bias and
//   a_mul must be initializers: the kernel reads and packs them once, when
//   the session builds it. y float32 [..., N]. Per row m of a (a token):
//     x = a[m, :] · a_mul                       (element-wise; a_mul absent: 1)
//     lo = min(x, 0), hi = max(x, 0), s = (hi − lo) / 255 (1 if 0),
//     z = clamp(round(−lo / s), 0, 255)
//     q[k] = clamp(round(x[k] / s) + z, 0, 255)          (uint8)
//     y[m, n] = (Σ_k q[k]·b[k, n] − z·Σ_k b[k, n]) · (s·b_scale[n]) + bias[n]
//   (round: to nearest even; x / s computed as x · (1 / s)). That is
//   com.microsoft.DynamicQuantizeMatMul with one activation scale per row
//   instead of one per tensor: a token's codes no longer depend on the
//   largest value anywhere in the batch, nor on its batch mates. a_mul is
//   where a smoothing of the activations' channels (SmoothQuant; models/
//   quantize writes the matching weights) is folded in.
//   Attribute gelu = 1 applies GELU (erf form, x · (1 + erf(x / √2)) / 2) to
//   y in the epilogue: the export's Div, Erf, Add, Mul, Mul after a
//   feed-forward layer's first product, in the same pass.
//   Attribute a_bits = 16 quantizes each row to 16 bits instead (uint16, s =
//   (hi − lo) / 65535, z and q clamped to [0, 65535]) and computes the
//   product from the codes' two bytes, q = 256·q_hi + q_lo, z likewise:
//     y[m, n] = fma(256, I_hi, I_lo) · (s·b_scale[n]) + bias[n],
//     I_x = (float)(Σ_k q_x[k]·b[k, n] − z_x·Σ_k b[k, n])      (int32 sums)
//   two integer products where 8 bits take one (models/fuse writes 16 by
//   default: 8-bit codes cost a trained encoder's ranking most of its
//   int8 error).
//   Attribute split = [N0, N1, …] (at most three; each but the last a
//   multiple of 16, summing to N) hands y out as that many outputs, columns
//   N0, then N1…: one product, one quantization of a, for the Q, K and V
//   projections of one input (models/fuse groups them).
//   Attribute amx = 1 runs the integer products on AMX tiles (tdpbusd, u8 ×
//   s8 summed in int32), 32 rows × 32 columns a step (16 × 32 with a_bits
//   = 16), one block of 32 rows
//   per task on the session's intra-op threads, each block quantized into
//   a cache-resident buffer first; 0 (the default) plain loops: the
//   reference, which computes the same integers and the same float
//   epilogue, so the two paths agree to the bit (with gelu = 1, to the
//   AVX-512 erf polynomial's 1.5e-7: the reference calls erff).

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hybrank_internal.h"
#include "hybrank_ops.h"

#define QMM_MAX_OUT 3

typedef struct {
  long k, n, k64, n16; // K and N, padded to the tiles' 64 and 16
  int nout;            // outputs: columns off[o] … off[o + 1] − 1 go to output o
  long off[QMM_MAX_OUT + 1];
  int amx, gelu, wide; // wide: a_bits = 16
  int8_t *b;        // amx 0: b as given, [K, N]
  int8_t *packed;   // amx 1: per block of 16 columns, K64 / 64 tiles of 16 rows (4 k each) × 16 columns × 4 bytes
  int32_t *colsum;  // [N16] Σ_k b[k, n]
  float *scale;     // [N16] b_scale
  float *bias;      // [N16] (zeros when absent)
  float *mul;       // [K] or NULL
} qmm;

typedef struct {
  const qmm *w;
  const float *a;
  float *y[QMM_MAX_OUT];
  long m;
  int failed;
} qmm_job;

// out_at is where column c of row m lands (output o's row m, column c −
// off[o]); *left is how many columns that output has from c on.
static inline float *out_at(const qmm_job *j, long m, long c, long *left) {
  const qmm *w = j->w;
  int o = 0;
  while (c >= w->off[o + 1]) o++;
  *left = w->off[o + 1] - c;
  return j->y[o] + m * (w->off[o + 1] - w->off[o]) + (c - w->off[o]);
}

// ---- quantization of one row -------------------------------------------------

// qrow_ref quantizes x = a · mul (mul may be NULL) into q[0..k) with codes
// 0 … top (255 or 65535), per the definition above; the reference.
static void qrow_ref(const float *a, const float *mul, long k, int32_t top, int32_t *q, float *s, int32_t *z) {
  float lo = 0, hi = 0;
  for (long i = 0; i < k; i++) {
    float x = mul ? a[i] * mul[i] : a[i];
    lo = fminf(lo, x), hi = fmaxf(hi, x);
  }
  float sc = (hi - lo) / (float)top;
  if (!(sc >= 1e-30f)) sc = 1; // 0, subnormal (1/sc would overflow) or NaN
  float inv = 1.0f / sc;
  int32_t zp = (int32_t)nearbyintf(-lo * inv);
  zp = zp < 0 ? 0 : zp > top ? top : zp;
  for (long i = 0; i < k; i++) {
    float x = mul ? a[i] * mul[i] : a[i];
    int32_t v = (int32_t)nearbyintf(x * inv) + zp;
    q[i] = v < 0 ? 0 : v > top ? top : v;
  }
  *s = sc, *z = zp;
}

#define TARGET_AMXI __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))

// qrow_avx is qrow_ref in AVX-512, to the bit, writing the codes as bytes:
// with lo NULL, 8-bit codes into q; else 16-bit codes' high bytes into q
// and low bytes into lo.
TARGET_AMXI static void qrow_avx(const float *a, const float *mul, long k, uint8_t *q, uint8_t *lo8, float *s, int32_t *z) {
  int32_t top = lo8 ? 65535 : 255;
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  for (long i = 0; i < k; i += 16) {
    __mmask16 live = i + 16 <= k ? 0xFFFF : (__mmask16)((1u << (k - i)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(live, a + i);
    if (mul) x = _mm512_mul_ps(x, _mm512_maskz_loadu_ps(live, mul + i));
    lo = _mm512_min_ps(lo, x), hi = _mm512_max_ps(hi, x); // the masked lanes are 0, inside [lo, hi]
  }
  float l = _mm512_reduce_min_ps(lo), h = _mm512_reduce_max_ps(hi);
  float sc = (h - l) / (float)top;
  if (!(sc >= 1e-30f)) sc = 1; // as qrow_ref
  float inv = 1.0f / sc;
  int32_t zp = (int32_t)nearbyintf(-l * inv);
  zp = zp < 0 ? 0 : zp > top ? top : zp;
  __m512 vinv = _mm512_set1_ps(inv);
  __m512i vz = _mm512_set1_epi32(zp), v0 = _mm512_setzero_si512(), vtop = _mm512_set1_epi32(top);
  for (long i = 0; i < k; i += 16) {
    __mmask16 live = i + 16 <= k ? 0xFFFF : (__mmask16)((1u << (k - i)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(live, a + i);
    if (mul) x = _mm512_mul_ps(x, _mm512_maskz_loadu_ps(live, mul + i));
    __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x, vinv)), vz);
    v = _mm512_min_epi32(_mm512_max_epi32(v, v0), vtop);
    if (lo8) {
      _mm512_mask_cvtepi32_storeu_epi8(lo8 + i, live, _mm512_and_si512(v, _mm512_set1_epi32(255)));
      v = _mm512_srli_epi32(v, 8);
    }
    _mm512_mask_cvtepi32_storeu_epi8(q + i, live, v);
  }
  *s = sc, *z = zp;
}

// ---- the products ----------------------------------------------------------------

// epilogue finishes one output from the integer sum(s): acc alone (8-bit
// codes, lo NULL) or acc the high bytes' and *lo the low bytes' (16-bit).
static float epilogue(int32_t acc, const int32_t *lo, int32_t z, int32_t colsum, float s, float scale, float bias, int gelu) {
  float v = lo ? fmaf(256.0f, (float)(acc - (z >> 8) * colsum), (float)(*lo - (z & 255) * colsum)) : (float)(acc - z * colsum);
  float y = fmaf(v, s * scale, bias);
  return gelu ? 0.5f * y * (1.0f + erff(y * 0.70710678118654752f)) : y;
}

// gelu512 is GELU in the erf form for 16 floats, erf by Abramowitz and
// Stegun 7.1.26 (absolute error ≤ 1.5e-7): erf|u| = 1 − t·p(t)·e^(−u²),
// t = 1 / (1 + 0.3275911·|u|).
HYBRANK_AVX512 static inline __m512 gelu512(__m512 y) {
  __m512 u = _mm512_mul_ps(y, _mm512_set1_ps(0.70710678118654752f));
  __m512 a = _mm512_abs_ps(u);
  __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  __m512 e = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(p, exp512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a))));
  e = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_abs_ps(e)), _mm512_and_si512(_mm512_castps_si512(u), _mm512_set1_epi32((int)0x80000000))));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), y), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static int qmm_ref(const qmm_job *j, long m0, long rows) {
  const qmm *w = j->w;
  int32_t *q = malloc((size_t)w->k * sizeof(int32_t));
  if (!q) return -1;
  for (long r = 0; r < rows; r++) {
    float s;
    int32_t z;
    qrow_ref(j->a + (m0 + r) * w->k, w->mul, w->k, w->wide ? 65535 : 255, q, &s, &z);
    for (long n = 0; n < w->n; n++) {
      int32_t acc = 0, lo = 0;
      for (long i = 0; i < w->k; i++) {
        int32_t b = w->b[i * w->n + n];
        if (w->wide)
          acc += (q[i] >> 8) * b, lo += (q[i] & 255) * b;
        else
          acc += q[i] * b;
      }
      long left;
      *out_at(j, m0 + r, n, &left) = epilogue(acc, w->wide ? &lo : NULL, z, w->colsum[n], s, w->scale[n], w->bias[n], w->gelu);
    }
  }
  free(q);
  return 0;
}

// qblock allocates a tile path's scratch (aligned): a zeroed block of 32 ×
// K64 code bytes (two with wide: the 16-bit codes' high bytes, then their
// low bytes) and extra bytes after it, and quantizes rows m0 … m0 + rows
// into it (scales and zero points into s and z). NULL when out of memory.
TARGET_AMXI static uint8_t *qblock(const qmm_job *j, long m0, long rows, int wide, size_t extra, float s[32], int32_t z[32]) {
  const qmm *w = j->w;
  size_t qbytes = (size_t)32 * w->k64, codes = qbytes * (wide ? 2 : 1);
  uint8_t *mem = aligned_alloc(64, codes + extra);
  if (!mem) return NULL;
  memset(mem, 0, codes);
  for (long r = 0; r < rows; r++)
    qrow_avx(j->a + (m0 + r) * w->k, w->mul, w->k, mem + r * w->k64, wide ? mem + qbytes + r * w->k64 : NULL, &s[r], &z[r]);
  return mem;
}

// emit16 finishes 16 results of row m from column n (a column block's
// first): v, the integer sums less the zero point's, times the row's scale
// s and the columns' b_scale, plus bias, GELU if asked; then writes them to
// their output, the columns past its width masked off.
TARGET_AMXI static inline void emit16(const qmm_job *j, long m, long n, __m512 v, float s) {
  const qmm *w = j->w;
  __m512 out = _mm512_fmadd_ps(v, _mm512_mul_ps(_mm512_set1_ps(s), _mm512_loadu_ps(w->scale + n)), _mm512_loadu_ps(w->bias + n));
  if (w->gelu) out = gelu512(out);
  long left;
  float *y = out_at(j, m, n, &left);
  _mm512_mask_storeu_ps(y, left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1), out);
}

// qmm_amx: rows m0 … m0 + rows (at most 32) quantized into q (32 × K64
// bytes, rows and columns past the data zero), then per pair of column
// blocks four accumulator tiles (0, 1: rows 0–15; 2, 3: rows 16–31), A in
// tiles 4 and 5, B in 6 and 7, stored to a 32 × 32 int32 block and scaled.
TARGET_AMXI static int qmm_amx(const qmm_job *j, long m0, long rows) {
  const qmm *w = j->w;
  long k64 = w->k64, kt = k64 / 64, nb16 = w->n16 / 16;
  float s[32];
  int32_t z[32];
  uint8_t *q = qblock(j, m0, rows, 0, 32 * 32 * 4, s, z);
  if (!q) return -1;
  int32_t *acc = (int32_t *)(q + 32 * k64);
  int lower = rows > 16; // rows 16–31 hold data

  hybrank_tilecfg saved;
  hybrank_tiles_begin(&saved);

  for (long nb = 0; nb < nb16; nb += 2) {
    int two = nb + 1 < nb16;
    const int8_t *b0 = w->packed + nb * kt * 1024, *b1 = b0 + kt * 1024;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long kb = 0; kb < kt; kb++) {
      _tile_loadd(4, q + kb * 64, k64);
      _tile_loadd(6, b0 + kb * 1024, 64);
      _tile_dpbusd(0, 4, 6);
      if (lower) {
        _tile_loadd(5, q + 16 * k64 + kb * 64, k64);
        _tile_dpbusd(2, 5, 6);
      }
      if (two) {
        _tile_loadd(7, b1 + kb * 1024, 64);
        _tile_dpbusd(1, 4, 7);
        if (lower) _tile_dpbusd(3, 5, 7);
      }
    }
    _tile_stored(0, acc, 128);
    _tile_stored(1, acc + 16, 128);
    _tile_stored(2, acc + 16 * 32, 128);
    _tile_stored(3, acc + 16 * 32 + 16, 128);
    for (long r = 0; r < rows; r++) {
      __m512i vz = _mm512_set1_epi32(z[r]);
      for (long c = 0; c < (two ? 2 : 1); c++) {
        long n = (nb + c) * 16;
        __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(acc + r * 32 + c * 16), _mm512_mullo_epi32(vz, _mm512_loadu_si512(w->colsum + n)));
        emit16(j, m0 + r, n, _mm512_cvtepi32_ps(v), s[r]);
      }
    }
  }
  hybrank_tiles_end(&saved);
  free(q);
  return 0;
}

// qmm_amx_wide is qmm_amx for 16-bit codes: rows quantized into their
// high bytes (hi) and low bytes (lo), then per pair of column blocks and
// per 16 rows four accumulator tiles (0, 1: the high bytes' products with
// the two blocks; 2, 3: the low bytes'), A in tiles 4 (high) and 5 (low), B
// in 6 and 7: two products where qmm_amx does one, four tile loads to
// four products.
TARGET_AMXI static int qmm_amx_wide(const qmm_job *j, long m0, long rows) {
  const qmm *w = j->w;
  long k64 = w->k64, kt = k64 / 64, nb16 = w->n16 / 16;
  float s[32];
  int32_t z[32];
  uint8_t *mem = qblock(j, m0, rows, 1, 2 * 16 * 32 * 4, s, z);
  if (!mem) return -1;
  uint8_t *hi = mem, *lo = mem + 32 * k64;
  int32_t *acc = (int32_t *)(mem + 2 * 32 * k64), *accl = acc + 16 * 32; // [16 rows][32 columns] each

  hybrank_tilecfg saved;
  hybrank_tiles_begin(&saved);

  for (long nb = 0; nb < nb16; nb += 2) {
    int two = nb + 1 < nb16;
    const int8_t *b0 = w->packed + nb * kt * 1024, *b1 = b0 + kt * 1024;
    for (long r0 = 0; r0 < rows; r0 += 16) {
      const uint8_t *h = hi + r0 * k64, *l = lo + r0 * k64;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (long kb = 0; kb < kt; kb++) {
        _tile_loadd(4, h + kb * 64, k64);
        _tile_loadd(5, l + kb * 64, k64);
        _tile_loadd(6, b0 + kb * 1024, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(2, 5, 6);
        if (two) {
          _tile_loadd(7, b1 + kb * 1024, 64);
          _tile_dpbusd(1, 4, 7);
          _tile_dpbusd(3, 5, 7);
        }
      }
      _tile_stored(0, acc, 128);
      _tile_stored(1, acc + 16, 128);
      _tile_stored(2, accl, 128);
      _tile_stored(3, accl + 16, 128);
      for (long c = 0; c < (two ? 2 : 1); c++) {
        long n = (nb + c) * 16;
        __m512i cs = _mm512_loadu_si512(w->colsum + n);
        for (long r = r0; r < rows && r < r0 + 16; r++) {
          long i = (r - r0) * 32 + c * 16;
          __m512i vh = _mm512_sub_epi32(_mm512_loadu_si512(acc + i), _mm512_mullo_epi32(_mm512_set1_epi32(z[r] >> 8), cs));
          __m512i vl = _mm512_sub_epi32(_mm512_loadu_si512(accl + i), _mm512_mullo_epi32(_mm512_set1_epi32(z[r] & 255), cs));
          emit16(j, m0 + r, n, _mm512_fmadd_ps(_mm512_set1_ps(256.0f), _mm512_cvtepi32_ps(vh), _mm512_cvtepi32_ps(vl)), s[r]);
        }
      }
    }
  }
  hybrank_tiles_end(&saved);
  free(mem);
  return 0;
}

static void qmm_task(void *p, size_t idx) {
  qmm_job *j = p;
  long m0 = (long)idx * 32, rows = j->m - m0 < 32 ? j->m - m0 : 32;
  int rc = !j->w->amx ? qmm_ref(j, m0, rows) : j->w->wide ? qmm_amx_wide(j, m0, rows) : qmm_amx(j, m0, rows);
  if (rc != 0) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

// ---- weights -----------------------------------------------------------------------

static void qmm_free(qmm *w) {
  if (!w) return;
  free(w->b);
  free(w->packed);
  free(w->colsum);
  free(w->scale);
  free(w->bias);
  free(w->mul);
  free(w);
}

// qmm_new copies and (amx) packs the operands; scale has n or 1 values,
// bias n or none, mul k or none; abits is 8 or 16; split has nsplit output
// widths (0: one output of n).
static const char *qmm_new(const int8_t *b, const float *scale, long nscale, const float *bias, const float *mul, long k, long n,
                           int amx, int gelu, int abits, const int64_t *split, size_t nsplit, qmm **out) {
  if (k < 1 || n < 1) return "hybrank QuantMatMul: b must be int8 [K, N] with K, N > 0";
  if (k > 65536) return "hybrank QuantMatMul: K above 65536 (the int32 sums could overflow)";
  if (nscale != n && nscale != 1) return "hybrank QuantMatMul: b_scale must have N values or one";
  if (abits != 8 && abits != 16) return "hybrank QuantMatMul: a_bits must be 8 or 16";
  if (nsplit > QMM_MAX_OUT) return "hybrank QuantMatMul: split has more than three outputs";
  long off[QMM_MAX_OUT + 1] = {0, n};
  for (size_t o = 0; o < nsplit; o++) {
    if (split[o] < 1 || split[o] > n || (o + 1 < nsplit && split[o] % 16 != 0))
      return "hybrank QuantMatMul: split widths must be positive, each but the last a multiple of 16";
    off[o + 1] = off[o] + (long)split[o];
  }
  if (nsplit > 0 && off[nsplit] != n) return "hybrank QuantMatMul: split widths must sum to N";
  if (amx && !hybrank_amx_int8) return "hybrank QuantMatMul: amx = 1 needs AMX-INT8, which this CPU or kernel does not offer";
  qmm *w = calloc(1, sizeof *w);
  if (!w) return "hybrank QuantMatMul: out of memory";
  w->k = k, w->n = n, w->amx = amx, w->gelu = gelu, w->wide = abits == 16;
  w->nout = nsplit > 0 ? (int)nsplit : 1;
  memcpy(w->off, off, sizeof off);
  w->k64 = (k + 63) / 64 * 64, w->n16 = (n + 15) / 16 * 16;
  w->colsum = calloc((size_t)w->n16, sizeof(int32_t));
  w->scale = calloc((size_t)w->n16, sizeof(float));
  w->bias = calloc((size_t)w->n16, sizeof(float));
  if (mul) w->mul = malloc((size_t)k * sizeof(float));
  if (amx)
    w->packed = aligned_alloc(64, (size_t)w->n16 * w->k64);
  else
    w->b = malloc((size_t)k * n);
  if (!w->colsum || !w->scale || !w->bias || (mul && !w->mul) || (amx ? !w->packed : !w->b)) {
    qmm_free(w);
    return "hybrank QuantMatMul: out of memory";
  }
  if (mul) memcpy(w->mul, mul, (size_t)k * sizeof(float));
  for (long c = 0; c < n; c++) {
    w->scale[c] = scale[nscale == 1 ? 0 : c];
    w->bias[c] = bias ? bias[c] : 0;
    int32_t sum = 0;
    for (long i = 0; i < k; i++) sum += b[i * n + c];
    w->colsum[c] = sum;
  }
  if (!amx) {
    memcpy(w->b, b, (size_t)k * n);
  } else {
    // Tile (column block cb, k block kb): row r holds k = kb·64 + 4r … +3
    // of the block's 16 columns, 4 bytes a column.
    long kt = w->k64 / 64;
    memset(w->packed, 0, (size_t)w->n16 * w->k64);
    for (long i = 0; i < k; i++)
      for (long c = 0; c < n; c++) {
        long cb = c / 16, kb = i / 64, r = (i % 64) / 4;
        w->packed[(cb * kt + kb) * 1024 + r * 64 + (c % 16) * 4 + i % 4] = b[i * n + c];
      }
  }
  *out = w;
  return NULL;
}

const char *hybrank_quant_matmul(const float *a, const int8_t *b, const float *b_scale, const float *bias, const float *a_mul,
                                 float *y, long m, long k, long n, int amx, int gelu, int abits, long reps) {
  qmm *w;
  const char *err = qmm_new(b, b_scale, n, bias, a_mul, k, n, amx, gelu, abits, NULL, 0, &w);
  if (err) return err;
  qmm_job j = {w, a, {y}, m, 0};
  for (long rep = 0; rep < reps; rep++)
    for (long t = 0; t < (m + 31) / 32; t++) qmm_task(&j, (size_t)t);
  qmm_free(w);
  return j.failed ? "hybrank QuantMatMul: out of memory" : NULL;
}

// ---- the operator ----------------------------------------------------------------

// constant reads input i of the node being built, an initializer: *val
// NULL when the node leaves that (optional) input out.
static OrtStatus *constant(const OrtKernelInfo *info, size_t i, const OrtValue **val, const char *what) {
  *val = NULL;
  size_t count = 0;
  OrtStatus *st = api->KernelInfo_GetInputCount(info, &count);
  if (st || i >= count) return st;
  size_t size = 0; // with no buffer: the name's length with its terminator
  if ((st = api->KernelInfo_GetInputName(info, i, NULL, &size))) return st;
  if (size <= 1) return NULL; // "": the input is left out
  int is_const = 0;
  if ((st = api->KernelInfoGetConstantInput_tensor(info, i, &is_const, val))) return st;
  if (!is_const) return hybrank_invalid(what);
  return NULL;
}

// shape reads a tensor's element type and dimensions (at most 8).
static OrtStatus *shape(const OrtValue *val, ONNXTensorElementDataType *t, int64_t d[8], size_t *rank) {
  OrtTensorTypeAndShapeInfo *info;
  OrtStatus *st = api->GetTensorTypeAndShape(val, &info);
  if (st) return st;
  if (!(st = api->GetTensorElementType(info, t)) && !(st = api->GetDimensionsCount(info, rank))) {
    if (*rank > 8)
      st = hybrank_invalid("hybrank QuantMatMul: rank above 8");
    else
      st = api->GetDimensions(info, d, *rank);
  }
  api->ReleaseTensorTypeAndShapeInfo(info);
  return st;
}

static int64_t elements(const int64_t *d, size_t rank) {
  int64_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= d[i];
  return n;
}

static OrtStatus *qmm_create(const OrtCustomOp *op, const OrtApi *a, const OrtKernelInfo *info, void **kernel) {
  (void)op;
  (void)a;
  int64_t amx = 0, gelu = 0, abits = 8;
  OrtStatus *st = api->KernelInfoGetAttribute_int64(info, "amx", &amx);
  if (st) api->ReleaseStatus(st), amx = 0; // optional: the reference path
  if ((st = api->KernelInfoGetAttribute_int64(info, "gelu", &gelu))) api->ReleaseStatus(st), gelu = 0; // optional: none
  if ((st = api->KernelInfoGetAttribute_int64(info, "a_bits", &abits))) api->ReleaseStatus(st), abits = 8; // optional: 8
  int64_t split[QMM_MAX_OUT];
  size_t nsplit = 0; // optional: one output
  if ((st = api->KernelInfoGetAttributeArray_int64(info, "split", NULL, &nsplit))) api->ReleaseStatus(st), nsplit = 0;
  if (nsplit > QMM_MAX_OUT) return hybrank_invalid("hybrank QuantMatMul: split has more than three outputs");
  if (nsplit > 0 && (st = api->KernelInfoGetAttributeArray_int64(info, "split", split, &nsplit))) return st;
  size_t nout = 0;
  if ((st = api->KernelInfo_GetOutputCount(info, &nout))) return st;
  if (nout != (nsplit > 0 ? nsplit : 1)) return hybrank_invalid("hybrank QuantMatMul: the node's outputs do not match its split");
  const OrtValue *v[5] = {0};
  static const char *notconst[5] = {0, "hybrank QuantMatMul: b must be an initializer", "hybrank QuantMatMul: b_scale must be an initializer",
                                    "hybrank QuantMatMul: bias must be an initializer", "hybrank QuantMatMul: a_mul must be an initializer"};
  for (size_t i = 1; i < 5; i++)
    if ((st = constant(info, i, &v[i], notconst[i]))) return st;
  if (!v[1] || !v[2]) return hybrank_invalid("hybrank QuantMatMul: b and b_scale are required");
  ONNXTensorElementDataType t[5];
  int64_t d[5][8];
  size_t rank[5] = {0};
  for (size_t i = 1; i < 5; i++)
    if (v[i] && (st = shape(v[i], &t[i], d[i], &rank[i]))) return st;
  if (t[1] != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 || rank[1] != 2) return hybrank_invalid("hybrank QuantMatMul: b must be int8 [K, N]");
  long k = (long)d[1][0], n = (long)d[1][1];
  int64_t ns = elements(d[2], rank[2]);
  if (t[2] != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || (ns != n && ns != 1))
    return hybrank_invalid("hybrank QuantMatMul: b_scale must be float32 with N values or one");
  if (v[3] && (t[3] != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || elements(d[3], rank[3]) != n))
    return hybrank_invalid("hybrank QuantMatMul: bias must be float32 with N values");
  if (v[4] && (t[4] != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || elements(d[4], rank[4]) != k))
    return hybrank_invalid("hybrank QuantMatMul: a_mul must be float32 with K values");
  void *p[5] = {0};
  for (size_t i = 1; i < 5; i++)
    if (v[i] && (st = api->GetTensorMutableData((OrtValue *)v[i], &p[i]))) return st;
  qmm *w;
  if (abits != 8 && abits != 16) return hybrank_invalid("hybrank QuantMatMul: a_bits must be 8 or 16");
  const char *err = qmm_new(p[1], p[2], (long)ns, p[3], p[4], k, n, amx != 0, gelu != 0, (int)abits, split, nsplit, &w);
  if (err) return hybrank_invalid(err);
  *kernel = w;
  return NULL;
}

static OrtStatus *qmm_compute(void *kernel, OrtKernelContext *ctx) {
  qmm *w = kernel;
  const OrtValue *in;
  OrtStatus *st = api->KernelContext_GetInput(ctx, 0, &in);
  if (st) return st;
  ONNXTensorElementDataType t;
  int64_t d[8];
  size_t rank = 0;
  if ((st = shape(in, &t, d, &rank))) return st;
  if (t != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || rank < 1 || d[rank - 1] != w->k)
    return hybrank_invalid("hybrank QuantMatMul: a must be float32 [..., K]");
  qmm_job j = {w, NULL, {NULL}, (long)elements(d, rank - 1), 0};
  size_t nout = 0;
  if ((st = api->KernelContext_GetOutputCount(ctx, &nout))) return st;
  if (nout != (size_t)w->nout) return hybrank_invalid("hybrank QuantMatMul: the node's outputs do not match its split");
  for (int o = 0; o < w->nout; o++) {
    d[rank - 1] = w->off[o + 1] - w->off[o];
    OrtValue *outv;
    if ((st = api->KernelContext_GetOutput(ctx, (size_t)o, d, rank, &outv))) return st;
    if (!outv) return hybrank_invalid("hybrank QuantMatMul: every output of a split must be connected");
    if (j.m > 0 && (st = api->GetTensorMutableData(outv, (void **)&j.y[o]))) return st;
  }
  if (j.m == 0) return NULL;
  if ((st = api->GetTensorMutableData((OrtValue *)in, (void **)&j.a))) return st;
  if ((st = api->KernelContext_ParallelFor(ctx, qmm_task, (size_t)((j.m + 31) / 32), 0, &j))) return st;
  return j.failed ? api->CreateStatus(ORT_FAIL, "hybrank QuantMatMul: out of memory") : NULL;
}

static void qmm_destroy(void *kernel) { qmm_free(kernel); }
static const char *qmm_name(const OrtCustomOp *op) {
  (void)op;
  return "QuantMatMul";
}
static ONNXTensorElementDataType qmm_type(const OrtCustomOp *op, size_t i) {
  (void)op;
  return i == 1 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static ONNXTensorElementDataType qmm_out_type(const OrtCustomOp *op, size_t i) {
  (void)op;
  (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static size_t five(const OrtCustomOp *op) {
  (void)op;
  return 5;
}
static OrtCustomOpInputOutputCharacteristic qmm_input(const OrtCustomOp *op, size_t i) {
  (void)op;
  return i < 3 ? INPUT_OUTPUT_REQUIRED : INPUT_OUTPUT_OPTIONAL;
}
static size_t qmm_outputs(const OrtCustomOp *op) {
  (void)op;
  return QMM_MAX_OUT;
}
static OrtCustomOpInputOutputCharacteristic qmm_output(const OrtCustomOp *op, size_t i) {
  (void)op;
  return i == 0 ? INPUT_OUTPUT_REQUIRED : INPUT_OUTPUT_OPTIONAL;
}

OrtCustomOp hybrank_quant_matmul_op = {
    .version = 16,
    .GetName = qmm_name,
    .GetExecutionProviderType = hybrank_cpu_provider,
    .GetInputType = qmm_type,
    .GetInputTypeCount = five,
    .GetOutputType = qmm_out_type,
    .GetOutputTypeCount = qmm_outputs,
    .KernelDestroy = qmm_destroy,
    .GetInputCharacteristic = qmm_input,
    .GetOutputCharacteristic = qmm_output,
    .GetInputMemoryType = hybrank_default_mem,
    .GetVariadicInputMinArity = hybrank_arity_one,
    .GetVariadicInputHomogeneity = hybrank_homogeneous,
    .GetVariadicOutputMinArity = hybrank_arity_one,
    .GetVariadicOutputHomogeneity = hybrank_homogeneous,
    .CreateKernelV2 = qmm_create,
    .KernelComputeV2 = qmm_compute,
};
