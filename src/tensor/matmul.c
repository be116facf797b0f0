/*
 * tensor/matmul — the driver: weight preparation (validation + repacking into
 * the panel layout of matmul-kern.h), activation quantization, the plain-C
 * reference (the spec every SIMD kernel must equal bit for bit), run-time
 * kernel selection and the one-dispatch threaded matmul.
 *
 * The activation quantization rule (per block of 32 floats, the spec):
 *   amax = max |x|, taken on the bit patterns (NaN/inf sort above all finite)
 *   if amax is inf or NaN:          d = NaN, q = 0  (poisons every output it touches)
 *   else if amax / 127 < FLT_MIN (zero or subnormal):  d = 0, q = 0
 *   else q = nearest-even(x * (127 / amax))  (|q| <= 127 is guaranteed)
 *        d = amax / 127 rounded to F16 and back (round-to-nearest-even)
 * which is llama.cpp's CPU rule for its Q8_0 activations (its block keeps d
 * as F16; 127/amax, not 1/d, is the multiplier), so quantized matmuls track
 * llama.cpp's closely. The F16 scale overflows to inf past amax ~ 8.3e6
 * (outputs inf/NaN, as there) and loses bits below amax ~ 7.8e-3 (F16
 * subnormals), both as in llama.cpp.
 * Products of a quantized weight block and an activation block are exact
 * int32 sums; each block then adds acc = fmaf((float)isum, dw * d, acc) in
 * block order. Float weights add acc = fmaf(w, x, acc) in k order.
 * Q4_1, Q5_0 and Q5_1 weights (llama-quantize's fallbacks where rows are
 * not multiples of 256) take the same records: per block an exact int32
 * isum = sum u * a over the unsigned codes u (Q4_1 0..15, Q5_0/Q5_1 0..31,
 * llama.cpp's dequantize_row_q4_1/q5_0/q5_1 element order) and
 * sa = sum a = -c8 / 128, then
 *   Q5_0 (value d * (u - 16)):  acc = fmaf((float)(isum - 16 * sa), dw * da, acc)
 *   Q4_1/Q5_1 (value d * u + m): acc = fmaf((float)isum, dw * da, acc);
 *                                acc = fmaf((float)sa, m * da, acc)
 * block by block (|isum| <= 32 * 31 * 127, exact in float). llama.cpp's
 * q4_1/q5_1 dot takes q8_1 activations carrying s = d * sum a; this is the
 * same quantity from the records here. No SIMD family has kernels for
 * these three: their weights run this reference on the raw rows.
 *
 * K-quant weights (Q2_K..Q6_K) take the activations in a second form, built
 * once per sprig_act beside the 32-block one: records of 256 floats
 * quantized by the same rule (amax over the 256) but with llama.cpp's q8_K
 * scale, kept in F32: q = nearest-even(x * (127 / amax)), d = 1 / (127 / amax)
 * (one rounding more than amax / 127, as there), with bsum[j] = sum of
 * q[16j..16j+15]. Per super-block of weight row o and activation row r the
 * reference computes two exact int32 sums I and M (contract in matmul.h),
 * then acc = fmaf((float)I, d * da, acc) and, for types with mins,
 * acc = fmaf((float)(-M), dmin * da, acc), super-blocks in order. Bounds
 * (|a| <= 127, |bsum| <= 2032 per 16):
 *   Q2_K  |I| <= 16 * 15 * (16 * 3 * 127)     =   1.5e6   M <= 16 * 15 * 2032 = 4.9e5
 *   Q3_K  |I| <= 16 * 32 * (16 * 4 * 127)     =   4.2e6
 *   Q4_K  |I| <= 8 * 63 * (32 * 15 * 127)     =  30.7e6   M <= 8 * 63 * 4064  = 2.1e6
 *   Q5_K  |I| <= 8 * 63 * (32 * 31 * 127)     =  63.5e6   M as Q4_K
 *   Q6_K  |I| <= 16 * 128 * (16 * 32 * 127)   = 133.2e6
 * and for a kernel that splits Q6_K's I into sum sc*(u.a) - 32*sum sc*bsum:
 * 16 * 128 * (16 * 63 * 127) = 262e6; all far inside int32. The reference
 * unpacks a block to unsigned units u (llama.cpp's element order) and
 * per-16-element scales and mins (a 32-element sub-block's scale counts for
 * both halves), then sums per 16: integer sums regrouped are the same sums.
 *
 * Each sprig_weight remembers which kernel family packed it; a matmul runs
 * every weight with its own family, so sprig_kernels_force() only affects
 * weights initialised afterwards (re-initialise weights after forcing).
 */
#include "tensor/matmul.h"
#include "tensor/matmul-kern.h"

#include "base/mem.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { FAM_REF = SPRIG_KERNELS_REF, FAM_AVX2 = SPRIG_KERNELS_AVX2, FAM_AVX512 = SPRIG_KERNELS_AVX512, FAM_COUNT };

static const char *const fam_names[FAM_COUNT] = { "reference", "avx2", "avx512-vnni" };

/* Limits that keep every index product far from overflow. */
#define MM_MAX_DIM  ((int64_t)1 << 30)
#define MM_MAX_W    16

/* ---------------------------------------------------------------- family selection */

static const struct sprig_mm_family *family(int f)
{
    static const struct sprig_mm_family *const tab[FAM_COUNT] = {
        NULL, &sprig_mm_family_avx2, &sprig_mm_family_avx512,
    };
    return f > FAM_REF && f < FAM_COUNT ? tab[f] : NULL;
}

static bool fam_available(int f)
{
    const struct sprig_cpu_features *c = sprig_cpu_features();
    switch (f) {
    case FAM_REF: return true;
    case FAM_AVX2: return c->avx2 && c->fma && c->f16c;
    case FAM_AVX512:
        return c->avx2 && c->fma && c->f16c && c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq &&
               c->avx512vnni;
    default: return false;
    }
}

static int fam_detect(void)
{
    const int cap = sprig_kernels_cap();
    if (cap >= SPRIG_KERNELS_AVX512 && fam_available(FAM_AVX512)) return FAM_AVX512;
    if (cap >= SPRIG_KERNELS_AVX2 && fam_available(FAM_AVX2)) return FAM_AVX2;
    return FAM_REF;
}

static atomic_int g_fam = -1;
static pthread_once_t g_fam_once = PTHREAD_ONCE_INIT;

static void fam_init_once(void)
{
    int expect = -1;
    atomic_compare_exchange_strong(&g_fam, &expect, fam_detect());
}

static int fam_current(void)
{
    pthread_once(&g_fam_once, fam_init_once);
    return atomic_load(&g_fam);
}

const char *sprig_kernels_name(void) { return fam_names[fam_current()]; }

static char g_fam_list[2][64];
static pthread_once_t g_fam_list_once = PTHREAD_ONCE_INIT;

static void fam_list_once(void)
{
    for (int cpu = 0; cpu < 2; cpu++) {
        size_t k = 0;
        for (int f = 0; f < FAM_COUNT; f++) {
            if (f > FAM_REF && !family(f)) continue;   /* a SIMD family this build lacks */
            if (cpu && !fam_available(f)) continue;
            k += (size_t)snprintf(g_fam_list[cpu] + k, sizeof g_fam_list[cpu] - k, "%s%s", k ? " " : "", fam_names[f]);
        }
    }
}

const char *sprig_kernels_compiled(bool cpu)
{
    pthread_once(&g_fam_list_once, fam_list_once);
    return g_fam_list[cpu ? 1 : 0];
}

const struct sprig_mm_family *sprig_mm_family_current(void) { return family(fam_current()); }

const struct sprig_mm_family *sprig_mm_family_best(void)
{
    return family(fam_available(FAM_AVX512) ? FAM_AVX512 : fam_available(FAM_AVX2) ? FAM_AVX2 : FAM_REF);
}

bool sprig_kernels_force(const char *name)
{
    if (!name) return false;
    /* family ids are the kernel levels */
    const int f = !strcmp(name, "auto") ? fam_detect() : sprig_kernels_level(name);
    if (f < 0 || !fam_available(f)) return false;
    pthread_once(&g_fam_once, fam_init_once);
    atomic_store(&g_fam, f);
    return true;
}

/* ---------------------------------------------------------------- per-type facts */

/* K-quant facts: the raw block's f16 scales, the unit offset, the raw byte
 * arrays interleaved into the packed record, how the block unpacks (for the
 * reference) and how its scales are packed (layout in matmul-kern.h). */
struct kq {
    size_t rec;                 /* packed record bytes */
    int    nd;                  /* f16 scales per super-block: 1 (d) or 2 (d, dmin) */
    size_t d_off, dmin_off;     /* in the raw block */
    int    off;                 /* subtracted from every unit: I sums (u - off) * a */
    struct { uint16_t raw, len, dst; } arr[2];   /* len 0: unused */
    /* units u[256] and per-16 scales and mins */
    void (*unpack)(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
    /* column c's scales into a packed record */
    void (*pack_sc)(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);
};

static void unpack_q2k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
static void unpack_q3k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
static void unpack_q4k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
static void unpack_q5k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
static void unpack_q6k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16]);
static void pack_sc_q2k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);
static void pack_sc_q3k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);
static void pack_sc_q4k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);
static void pack_sc_q5k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);
static void pack_sc_q6k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c);

#define RAW(T, f) (uint16_t)offsetof(T, f), (uint16_t)sizeof(((T *)0)->f)
static const struct kq kq_q2k = { SPRIG_MM_Q2K_REC, 2, offsetof(sprig_kblk_q2_k, d), offsetof(sprig_kblk_q2_k, dmin), 0,
                                  { { RAW(sprig_kblk_q2_k, qs), 0 } }, unpack_q2k, pack_sc_q2k };
static const struct kq kq_q3k = { SPRIG_MM_Q3K_REC, 1, offsetof(sprig_kblk_q3_k, d), 0, 4,
                                  { { RAW(sprig_kblk_q3_k, qs), 0 }, { RAW(sprig_kblk_q3_k, hmask), SPRIG_MM_Q3K_HM } },
                                  unpack_q3k, pack_sc_q3k };
static const struct kq kq_q4k = { SPRIG_MM_Q4K_REC, 2, offsetof(sprig_kblk_q4_k, d), offsetof(sprig_kblk_q4_k, dmin), 0,
                                  { { RAW(sprig_kblk_q4_k, qs), 0 } }, unpack_q4k, pack_sc_q4k };
static const struct kq kq_q5k = { SPRIG_MM_Q5K_REC, 2, offsetof(sprig_kblk_q5_k, d), offsetof(sprig_kblk_q5_k, dmin), 0,
                                  { { RAW(sprig_kblk_q5_k, qs), 0 }, { RAW(sprig_kblk_q5_k, qh), SPRIG_MM_Q5K_QH } },
                                  unpack_q5k, pack_sc_q5k };
static const struct kq kq_q6k = { SPRIG_MM_Q6K_REC, 1, offsetof(sprig_kblk_q6_k, d), 0, 32,
                                  { { RAW(sprig_kblk_q6_k, ql), 0 }, { RAW(sprig_kblk_q6_k, qh), SPRIG_MM_Q6K_QH } },
                                  unpack_q6k, pack_sc_q6k };
#undef RAW

/* The form the activations take for a weight type. */
enum { ACT_FLOAT, ACT_Q32, ACT_Q256 };

struct mm_type {
    int    type;
    int    act;         /* ACT_*: float rows, 32-blocks, 256-element records */
    size_t k_bytes;     /* packed bytes per k per panel (float types) */
    size_t slot;        /* offsetof the family's kernel for this type */
    const struct kq *kq;/* K-quants */
    size_t rslot;       /* offsetof the raw-row kernel in sprig_mm_rows (NO_ROWS: none) */
};

#define SLOT(f) offsetof(struct sprig_mm_family, f)
#define RSLOT(f) offsetof(struct sprig_mm_rows, f)
#define NO_ROWS SIZE_MAX
static const struct mm_type mm_types[] = {
    { SPRIG_TYPE_F32,  ACT_FLOAT, 4 * SPRIG_MM_PANEL, SLOT(f32),  NULL,    NO_ROWS },
    { SPRIG_TYPE_F16,  ACT_FLOAT, 2 * SPRIG_MM_PANEL, SLOT(f16),  NULL,    NO_ROWS },
    { SPRIG_TYPE_BF16, ACT_FLOAT, 2 * SPRIG_MM_PANEL, SLOT(bf16), NULL,    NO_ROWS },
    { SPRIG_TYPE_Q8_0, ACT_Q32,   0,                  SLOT(q8_0), NULL,    RSLOT(q8_0) },
    { SPRIG_TYPE_Q4_0, ACT_Q32,   0,                  SLOT(q4_0), NULL,    NO_ROWS },
    { SPRIG_TYPE_Q4_1, ACT_Q32,   0,                  SLOT(q4_1), NULL,    NO_ROWS },
    { SPRIG_TYPE_Q5_0, ACT_Q32,   0,                  SLOT(q5_0), NULL,    NO_ROWS },
    { SPRIG_TYPE_Q5_1, ACT_Q32,   0,                  SLOT(q5_1), NULL,    NO_ROWS },
    { SPRIG_MM_Q2_K,   ACT_Q256,  0,                  SLOT(q2_k), &kq_q2k, NO_ROWS },
    { SPRIG_MM_Q3_K,   ACT_Q256,  0,                  SLOT(q3_k), &kq_q3k, NO_ROWS },
    { SPRIG_MM_Q4_K,   ACT_Q256,  0,                  SLOT(q4_k), &kq_q4k, RSLOT(q4_k) },
    { SPRIG_MM_Q5_K,   ACT_Q256,  0,                  SLOT(q5_k), &kq_q5k, RSLOT(q5_k) },
    { SPRIG_MM_Q6_K,   ACT_Q256,  0,                  SLOT(q6_k), &kq_q6k, RSLOT(q6_k) },
};
#undef SLOT
#undef RSLOT

static const struct mm_type *mm_type(int type)
{
    for (size_t i = 0; i < sizeof mm_types / sizeof mm_types[0]; i++)
        if (mm_types[i].type == type) return &mm_types[i];
    return NULL;
}

static size_t round64(size_t v) { return (v + 63) & ~(size_t)63; }

size_t sprig_mm_panel_bytes(int type, int64_t n_in)
{
    const struct mm_type *t = mm_type(type);
    if (!t || n_in <= 0 || n_in > MM_MAX_DIM) return 0;
    size_t k = (size_t)n_in, nb = k / SPRIG_QK;
    if (t->act == ACT_FLOAT) return round64(k * t->k_bytes);
    if (t->kq) {
        size_t ns = k / SPRIG_MM_QK_K;
        return ns * t->kq->rec + round64(ns * (size_t)t->kq->nd * SPRIG_MM_PANEL * 2);
    }
    if (type != SPRIG_TYPE_Q8_0 && type != SPRIG_TYPE_Q4_0) return 0;   /* no packed layout */
    size_t qs = type == SPRIG_TYPE_Q8_0 ? nb * 512 : nb * 256;
    return qs + round64(nb * SPRIG_MM_PANEL * 2);
}

/* The family's kernel for `type` (NULL: none). */
static sprig_mm_kernel_fn fam_kernel(const struct sprig_mm_family *f, int type)
{
    const struct mm_type *t = mm_type(type);
    return t ? *(const sprig_mm_kernel_fn *)(const void *)((const char *)f + t->slot) : NULL;
}

/* The family's raw-row kernel for `type` (NULL: none). */
static sprig_mm_kernel_fn rows_kernel(const struct sprig_mm_family *f, int type)
{
    const struct mm_type *t = mm_type(type);
    if (!f || !f->rows || !t || t->rslot == NO_ROWS) return NULL;
    return *(const sprig_mm_kernel_fn *)(const void *)((const char *)f->rows + t->rslot);
}

/* ---------------------------------------------------------------- K-quant blocks */

static float f16_at(const uint8_t *p)
{
    sprig_f16 h;
    memcpy(&h, p, 2);
    return sprig_f16_to_f32(h);
}

/* A field of the raw block at blk (byte access: raw rows need not be aligned
 * for the block structs). */
#define FIELD(T, f) (blk + offsetof(T, f))

static void unpack_q2k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16])
{
    const uint8_t *qs = FIELD(sprig_kblk_q2_k, qs), *scales = FIELD(sprig_kblk_q2_k, scales);
    /* element 128h + 32j + l: bits 2j of qs[32h + l] */
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) u[128 * h + 32 * j + l] = (uint8_t)((qs[32 * h + l] >> (2 * j)) & 3);
    for (int i = 0; i < 16; i++) {
        sc[i] = scales[i] & 15;
        m[i] = scales[i] >> 4;
    }
}

/* Q3_K's 16 6-bit scales (biased by 32) from 12 bytes: low 4 bits in the
 * nibbles of bytes 0-7, high 2 bits in bytes 8-11. */
static void q3k_scales(const uint8_t s[12], int sc[16])
{
    for (int i = 0; i < 4; i++) {
        sc[i] = ((s[i] & 15) | (((s[8 + i] >> 0) & 3) << 4)) - 32;
        sc[4 + i] = ((s[4 + i] & 15) | (((s[8 + i] >> 2) & 3) << 4)) - 32;
        sc[8 + i] = ((s[i] >> 4) | (((s[8 + i] >> 4) & 3) << 4)) - 32;
        sc[12 + i] = ((s[4 + i] >> 4) | (((s[8 + i] >> 6) & 3) << 4)) - 32;
    }
}

static void unpack_q3k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16])
{
    const uint8_t *qs = FIELD(sprig_kblk_q3_k, qs), *hmask = FIELD(sprig_kblk_q3_k, hmask);
    /* element 128h + 32j + l: bits 2j of qs[32h + l], plus 4 * bit 4h + j of hmask[l] */
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                u[128 * h + 32 * j + l] = (uint8_t)(((qs[32 * h + l] >> (2 * j)) & 3) +
                                                    4 * ((hmask[l] >> (4 * h + j)) & 1));
    q3k_scales(FIELD(sprig_kblk_q3_k, scales), sc);
    for (int i = 0; i < 16; i++) m[i] = 0;
}

/* Q4_K/Q5_K's 8 6-bit scales and mins from 12 bytes. */
static void k4_scale_min(const uint8_t s[12], int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* elements 64g + l (low nibble of qs[32g + l]) and 64g + 32 + l (high),
 * plus 16 * bit 2g / 2g+1 of qh[l] when qh is given. */
static void unpack_k45(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint8_t u[256], int sc[16], int m[16])
{
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 32; l++) {
            int hb0 = qh ? (qh[l] >> (2 * g)) & 1 : 0, hb1 = qh ? (qh[l] >> (2 * g + 1)) & 1 : 0;
            u[64 * g + l] = (uint8_t)((qs[32 * g + l] & 15) + 16 * hb0);
            u[64 * g + 32 + l] = (uint8_t)((qs[32 * g + l] >> 4) + 16 * hb1);
        }
    for (int j = 0; j < 8; j++) {
        k4_scale_min(scales, j, &sc[2 * j], &m[2 * j]);
        sc[2 * j + 1] = sc[2 * j];
        m[2 * j + 1] = m[2 * j];
    }
}

static void unpack_q4k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16])
{
    unpack_k45(FIELD(sprig_kblk_q4_k, scales), FIELD(sprig_kblk_q4_k, qs), NULL, u, sc, m);
}

static void unpack_q5k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16])
{
    unpack_k45(FIELD(sprig_kblk_q5_k, scales), FIELD(sprig_kblk_q5_k, qs), FIELD(sprig_kblk_q5_k, qh), u, sc, m);
}

static void unpack_q6k(const uint8_t *blk, uint8_t u[256], int sc[16], int m[16])
{
    const uint8_t *ql = FIELD(sprig_kblk_q6_k, ql), *qh = FIELD(sprig_kblk_q6_k, qh);
    const int8_t *scales = (const int8_t *)FIELD(sprig_kblk_q6_k, scales);
    /* half h, l < 32: low 4 bits from ql[64h + l] / ql[64h + 32 + l] (low
     * nibble: elements +0 / +32, high: +64 / +96), 2 high bits from qh[32h + l] */
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const int a = ql[64 * h + l], c = ql[64 * h + 32 + l], q = qh[32 * h + l];
            u[128 * h + l] = (uint8_t)((a & 15) | ((q & 3) << 4));
            u[128 * h + 32 + l] = (uint8_t)((c & 15) | (((q >> 2) & 3) << 4));
            u[128 * h + 64 + l] = (uint8_t)((a >> 4) | (((q >> 4) & 3) << 4));
            u[128 * h + 96 + l] = (uint8_t)((c >> 4) | (((q >> 6) & 3) << 4));
        }
    for (int i = 0; i < 16; i++) {
        sc[i] = scales[i];
        m[i] = 0;
    }
}

static void pack_sc_q2k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c)
{
    const uint8_t *scales = FIELD(sprig_kblk_q2_k, scales);
    for (int p = 0; p < 8; p++)
        for (int e = 0; e < 2; e++) rec[SPRIG_MM_Q2K_SC + p * 32 + c * 2 + e] = scales[2 * p + e];
}

static void pack_sc_q3k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c)
{
    for (int j = 0; j < 16; j++) rec[SPRIG_MM_Q3K_SC + j * 16 + c] = (uint8_t)(int8_t)sc[j];
}

/* 8 scales (one per 32: the even entries of sc) and 4 min pairs */
static void pack_sc_k45(const int sc[16], const int m[16], uint8_t *rec, int c, int sc_off, int m_off)
{
    for (int j = 0; j < 8; j++) {
        rec[sc_off + j * 16 + c] = (uint8_t)sc[2 * j];
        rec[m_off + (j / 2) * 32 + c * 2 + (j & 1)] = (uint8_t)m[2 * j];
    }
}

static void pack_sc_q4k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c)
{
    pack_sc_k45(sc, m, rec, c, SPRIG_MM_Q4K_SC, SPRIG_MM_Q4K_M);
}

static void pack_sc_q5k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c)
{
    pack_sc_k45(sc, m, rec, c, SPRIG_MM_Q5K_SC, SPRIG_MM_Q5K_M);
}

static void pack_sc_q6k(const uint8_t *blk, const int sc[16], const int m[16], uint8_t *rec, int c)
{
    for (int j = 0; j < 16; j++) rec[SPRIG_MM_Q6K_SC + j * 16 + c] = (uint8_t)(int8_t)sc[j];
}

/* Column c of a panel from the raw K-quant row `src` (layout in matmul-kern.h). */
static void pack_kcol(const struct mm_type *t, const uint8_t *src, int64_t ns, size_t bsz, uint8_t *dst, int c)
{
    const struct kq *q = t->kq;
    uint8_t *ds = dst + (size_t)ns * q->rec;
    for (int64_t s = 0; s < ns; s++) {
        const uint8_t *blk = src + (size_t)s * bsz;
        uint8_t *rec = dst + (size_t)s * q->rec;
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < q->arr[a].len / 4; i++)
                memcpy(rec + q->arr[a].dst + i * 64 + c * 4, blk + q->arr[a].raw + 4 * i, 4);
        uint8_t u[256];
        int sc[16], m[16];
        q->unpack(blk, u, sc, m);
        q->pack_sc(blk, sc, m, rec, c);
        memcpy(ds + ((size_t)s * q->nd * SPRIG_MM_PANEL + c) * 2, blk + q->d_off, 2);
        if (q->nd == 2) memcpy(ds + ((size_t)s * 2 * SPRIG_MM_PANEL + SPRIG_MM_PANEL + c) * 2, blk + q->dmin_off, 2);
    }
}

/* ---------------------------------------------------------------- weights */

/* Packed copies of 1 MB and more live in their own mapping, advised to use
 * transparent huge pages: a decode step streams every weight once, and 2 MB
 * pages spare the TLB and let the hardware prefetcher run across 4 KB
 * boundaries. The rule depends on the size alone, so free() knows which. */
#define PACK_HUGE_MIN ((size_t)1 << 20)
#define PACK_HUGE_PAGE ((size_t)2 << 20)

static void *packed_alloc(size_t bytes)
{
    if (bytes < PACK_HUGE_MIN) return sprig_calloc_aligned(bytes, 1);
    size_t len = (bytes + PACK_HUGE_PAGE - 1) & ~(PACK_HUGE_PAGE - 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

static void packed_free(void *p, size_t bytes)
{
    if (!p) return;
    if (bytes < PACK_HUGE_MIN) sprig_free_aligned(p);
    else munmap(p, (bytes + PACK_HUGE_PAGE - 1) & ~(PACK_HUGE_PAGE - 1));
}

/* Repack raw GGUF rows into panels (layout in matmul-kern.h); dst is zeroed. */
void sprig_mm_pack(const sprig_weight *w, void *packed, bool q8_xor)
{
    const int64_t K = w->n_in, N = w->n_out, P = (N + SPRIG_MM_PANEL - 1) / SPRIG_MM_PANEL;
    const int64_t nb = K / SPRIG_QK;
    const struct mm_type *mt = mm_type(w->type);
    size_t ps = sprig_mm_panel_bytes(w->type, K);
    for (int64_t p = 0; p < P; p++) {
        uint8_t *dst = (uint8_t *)packed + (size_t)p * ps;
        for (int c = 0; c < SPRIG_MM_PANEL; c++) {
            int64_t o = p * SPRIG_MM_PANEL + c;
            if (o >= N) {
                if (w->type == SPRIG_TYPE_Q8_0 && q8_xor)   /* padding holds q = 0 */
                    for (int64_t b = 0; b < nb; b++)
                        for (int j = 0; j < 8; j++) memset(dst + b * 512 + j * 64 + c * 4, 0x80, 4);
                continue;
            }
            const uint8_t *src = (const uint8_t *)w->raw + (size_t)o * w->row_bytes;
            if (mt->kq) {
                pack_kcol(mt, src, K / SPRIG_MM_QK_K, sprig_type_traits(w->type)->type_size, dst, c);
                continue;
            }
            switch (w->type) {
            case SPRIG_TYPE_F32:
                for (int64_t k = 0; k < K; k++) memcpy(dst + (k * SPRIG_MM_PANEL + c) * 4, src + k * 4, 4);
                break;
            case SPRIG_TYPE_F16:
            case SPRIG_TYPE_BF16:
                for (int64_t k = 0; k < K; k++) memcpy(dst + (k * SPRIG_MM_PANEL + c) * 2, src + k * 2, 2);
                break;
            case SPRIG_TYPE_Q8_0: {
                uint8_t *ds = dst + nb * 512;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = src + b * sizeof(sprig_block_q8_0);
                    memcpy(ds + (b * SPRIG_MM_PANEL + c) * 2, blk, 2);
                    for (int j = 0; j < 8; j++)
                        for (int i = 0; i < 4; i++)
                            dst[b * 512 + j * 64 + c * 4 + i] = (uint8_t)(blk[2 + 4 * j + i] ^ (q8_xor ? 0x80 : 0));
                }
                break;
            }
            case SPRIG_TYPE_Q4_0: {
                uint8_t *ds = dst + nb * 256;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = src + b * sizeof(sprig_block_q4_0);
                    memcpy(ds + (b * SPRIG_MM_PANEL + c) * 2, blk, 2);
                    for (int t = 0; t < 4; t++) memcpy(dst + b * 256 + t * 64 + c * 4, blk + 2 + 4 * t, 4);
                }
                break;
            }
            default: break;
            }
        }
    }
}

/* Checks the shape and type and fills w for the reference (no packing). */
static sprig_status weight_check(sprig_weight *w, const char *name, int type, const void *raw,
                                              int64_t n_in, int64_t n_out, sprig_error *err)
{
    if (!name) name = "(unnamed)";
    if (!w) return sprig_err(err, SPRIG_E_INVALID_ARG, "weight '%s': NULL weight", name);
    memset(w, 0, sizeof *w);
    const struct mm_type *t = mm_type(type);
    if (!t)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "weight '%s': type %s (%d) has no matmul kernel "
                         "(supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k)", name, sprig_type_name(type), type);
    if (!raw) return sprig_err(err, SPRIG_E_INVALID_ARG, "weight '%s': no data", name);
    if (n_in <= 0 || n_out <= 0 || n_in > MM_MAX_DIM || n_out > MM_MAX_DIM)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "weight '%s': shape [%lld, %lld] out of range (1..%lld)", name,
                         (long long)n_in, (long long)n_out, (long long)MM_MAX_DIM);
    size_t rb;
    if (!sprig_row_bytes(type, n_in, &rb))
        return sprig_err(err, SPRIG_E_FORMAT, "weight '%s': n_in %lld is not a multiple of the %s block (%lld)",
                         name, (long long)n_in, sprig_type_name(type), (long long)sprig_type_traits(type)->blck);
    size_t total;
    if (sprig_mul_ovf(rb, (size_t)n_out, &total))
        return sprig_err(err, SPRIG_E_NOMEM, "weight '%s': size overflows", name);
    w->type = type;
    w->n_in = n_in;
    w->n_out = n_out;
    w->raw = raw;
    w->row_bytes = rb;
    w->kernel = FAM_REF;
    return SPRIG_OK;
}

sprig_status sprig_weight_init(sprig_weight *w, const char *name, int type, const void *raw,
                               int64_t n_in, int64_t n_out, sprig_error *err)
{
    sprig_status st = weight_check(w, name, type, raw, n_in, n_out, err);
    if (st) return st;
    if (!name) name = "(unnamed)";
    int f = fam_current();
    if (f == FAM_REF || !fam_kernel(family(f), type)) return SPRIG_OK;   /* the reference on the raw rows */
    size_t panels = (size_t)((n_out + SPRIG_MM_PANEL - 1) / SPRIG_MM_PANEL);
    size_t ps = sprig_mm_panel_bytes(type, n_in), bytes;
    if (!ps || sprig_mul_ovf(ps, panels, &bytes))
        return sprig_err(err, SPRIG_E_NOMEM, "weight '%s': packed size overflows", name);
    w->packed = packed_alloc(bytes);
    if (!w->packed)
        return sprig_err(err, SPRIG_E_NOMEM, "weight '%s': out of memory for the packed copy (%zu bytes)", name, bytes);
    w->packed_bytes = bytes;
    w->kernel = f;
    sprig_mm_pack(w, w->packed, family(f)->q8_xor);
    return SPRIG_OK;
}

bool sprig_weight_maps(int type)
{
    const int f = fam_current();
    return f != FAM_REF && rows_kernel(family(f), type);
}

sprig_status sprig_weight_init_mapped(sprig_weight *w, const char *name, int type, const void *raw,
                                      int64_t n_in, int64_t n_out, sprig_error *err)
{
    const int f = fam_current();
    if (!sprig_weight_maps(type)) return sprig_weight_init(w, name, type, raw, n_in, n_out, err);
    /* the checks of sprig_weight_init, without the packing: run it on the reference family's terms */
    sprig_status st = weight_check(w, name, type, raw, n_in, n_out, err);
    if (st) return st;
    w->kernel = f;
    w->mapped = true;
    return SPRIG_OK;
}

void sprig_weight_free(sprig_weight *w)
{
    if (!w) return;
    packed_free(w->packed, w->packed_bytes);
    w->packed = NULL;
    w->packed_bytes = 0;
}

void sprig_weight_row_f32(const sprig_weight *w, int64_t o, float *out)
{
    SPRIG_ASSERT(w && out && o >= 0 && o < w->n_out);
    const struct sprig_type_traits *t = sprig_type_traits(w->type);
    SPRIG_ASSERT(t && t->to_f32);
    t->to_f32((const uint8_t *)w->raw + (size_t)o * w->row_bytes, out, w->n_in);
}

/* ---------------------------------------------------------------- activations */

/* max |x[j]| over n floats, on the bit patterns (inf and NaN above every finite value) */
static uint32_t amax_bits(const float *x, int n)
{
    uint32_t amax = 0;
    for (int j = 0; j < n; j++) {
        uint32_t u;
        memcpy(&u, &x[j], 4);
        u &= 0x7fffffffu;
        if (u > amax) amax = u;
    }
    return amax;
}

void sprig_mm_quant_block_ref(const float *x, sprig_mm_qblock *out)
{
    const uint32_t amax = amax_bits(x, SPRIG_QK);
    memset(out, 0, sizeof *out);
    if (amax >= 0x7f800000u) {          /* inf or NaN in the block */
        out->d = NAN;
        return;
    }
    float fa;
    memcpy(&fa, &amax, 4);
    if (!(fa / 127.0f >= FLT_MIN)) return;   /* zero or subnormal: d = 0, q = 0 */
    const float id = 127.0f / fa, da = sprig_f16_to_f32(sprig_f32_to_f16(fa / 127.0f));
    int32_t s = 0;
    for (int j = 0; j < SPRIG_QK; j++) {
        int v = (int)nearbyintf(x[j] * id);
        out->q[j] = (int8_t)v;
        s += v;
    }
    out->d = da;
    out->c8 = -128 * s;
    out->c4 = -8 * s;
}

static void quant_row_ref(const float *x, int64_t nb, int64_t stride, sprig_mm_qblock *out)
{
    for (int64_t b = 0; b < nb; b++) sprig_mm_quant_block_ref(x + b * SPRIG_QK, &out[b * stride]);
}

void sprig_mm_kquant_block_ref(const float *x, sprig_mm_kblock *out)
{
    const uint32_t amax = amax_bits(x, SPRIG_MM_QK_K);
    memset(out, 0, sizeof *out);
    if (amax >= 0x7f800000u) {          /* inf or NaN in the block */
        out->d = NAN;
        return;
    }
    float fa;
    memcpy(&fa, &amax, 4);
    if (!(fa / 127.0f >= FLT_MIN)) return;   /* zero or subnormal: d = 0, q = 0 */
    const float id = 127.0f / fa, da = 1.0f / id;   /* llama.cpp's q8_K: iscale 127/amax, d = 1/iscale */
    for (int j = 0; j < 16; j++) {
        int s = 0;
        for (int i = 0; i < 16; i++) {
            int v = (int)nearbyintf(x[16 * j + i] * id);
            out->q[16 * j + i] = (int8_t)v;
            s += v;
        }
        out->bsum[j] = (int16_t)s;
    }
    for (int j = 0; j < 8; j++) out->bsum32[j] = (int16_t)(out->bsum[2 * j] + out->bsum[2 * j + 1]);
    out->d = da;
}

static void kquant_row_ref(const float *x, int64_t ns, int64_t stride, sprig_mm_kblock *out)
{
    for (int64_t s = 0; s < ns; s++) sprig_mm_kquant_block_ref(x + s * SPRIG_MM_QK_K, &out[s * stride]);
}

/* The scratch: 64 (to align it), the 32-block records of n rows of k, padded
 * to 64, then the 256-element records (block counts rounded down, so the
 * size only grows with n and k). */
static bool act_layout(int64_t n, int64_t k, size_t *q32, size_t *total)
{
    *q32 = 0;
    *total = 64;
    if (n <= 0 || k <= 0) return true;
    if (n > MM_MAX_DIM || k > MM_MAX_DIM) return false;
    size_t r32, r256, b256;
    if (sprig_mul_ovf((size_t)n, (size_t)(k / SPRIG_QK), &r32) || sprig_mul_ovf(r32, sizeof(sprig_mm_qblock), q32) ||
        sprig_mul_ovf((size_t)n, (size_t)(k / SPRIG_MM_QK_K), &r256) ||
        sprig_mul_ovf(r256, sizeof(sprig_mm_kblock), &b256) || sprig_add_ovf(*q32, 63, total))
        return false;
    *q32 = *total & ~(size_t)63;
    return !sprig_add_ovf(*q32, b256, total) && !sprig_add_ovf(*total, 64, total);
}

static bool act_bytes(int64_t n, int64_t k, size_t *out)
{
    size_t q32;
    return act_layout(n, k, &q32, out);
}

size_t sprig_act_scratch_bytes(int max_n, int64_t max_k)
{
    size_t b;
    return act_bytes(max_n, max_k, &b) ? b : SIZE_MAX;
}

void sprig_act_init(sprig_act *a, const float *x, int n, int64_t k, void *scratch, size_t scratch_bytes)
{
    SPRIG_ASSERT(a);
    a->x = x;
    a->n = n;
    a->k = k;
    a->scratch = scratch;
    a->scratch_bytes = scratch_bytes;
    a->q8_ready = false;
    a->qk_ready = false;
}

static sprig_mm_qblock *act_q_view(const sprig_act *a)
{
    size_t need, q32;
    SPRIG_ASSERT(act_layout(a->n, a->k, &q32, &need));
    SPRIG_ASSERT(a->scratch && need <= a->scratch_bytes);
    return (sprig_mm_qblock *)(((uintptr_t)a->scratch + 63) & ~(uintptr_t)63);
}

static sprig_mm_kblock *act_k_view(const sprig_act *a)
{
    size_t need, q32;
    SPRIG_ASSERT(act_layout(a->n, a->k, &q32, &need));
    SPRIG_ASSERT(a->scratch && need <= a->scratch_bytes);
    return (sprig_mm_kblock *)((((uintptr_t)a->scratch + 63) & ~(uintptr_t)63) + q32);
}

/* One of the two forms: 32-block records (v, fn) or 256-element ones (vk, fnk). */
struct quant_ctx {
    const sprig_act *a;
    sprig_mm_qblock *v;
    sprig_mm_quant_fn fn;
    sprig_mm_kblock *vk;
    sprig_mm_kquant_fn fnk;
};

static void quant_task(void *ctx, int ith, int nth)
{
    struct quant_ctx *c = ctx;
    long lo, hi;
    sprig_split(c->a->n, ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++) {
        if (c->fn) c->fn(c->a->x + r * c->a->k, c->a->k / SPRIG_QK, c->a->n, c->v + r);
        else c->fnk(c->a->x + r * c->a->k, c->a->k / SPRIG_MM_QK_K, c->a->n, c->vk + r);
    }
}

/* Builds the form `act` (ACT_Q32, ACT_Q256) of the activations once. */
static void act_quantize(sprig_pool *pool, sprig_act *a, int act)
{
    bool *ready = act == ACT_Q32 ? &a->q8_ready : &a->qk_ready;
    if (*ready) return;
    const struct sprig_mm_family *f = family(fam_current());
    struct quant_ctx c = { .a = a };
    if (act == ACT_Q32) {
        SPRIG_ASSERT(a->k % SPRIG_QK == 0);
        c.v = act_q_view(a);
        c.fn = f ? f->quant : quant_row_ref;
    } else {
        SPRIG_ASSERT(a->k % SPRIG_MM_QK_K == 0);
        c.vk = act_k_view(a);
        c.fnk = f && f->quant_k ? f->quant_k : kquant_row_ref;
    }
    /* Rows in parallel only when there is more than a dispatch's worth of
     * work (~1 us; 32K floats take ~4 us on one core). */
    int nth = (int64_t)a->n * a->k >= 32768 ? a->n : 1;
    sprig_pool_run(pool, quant_task, &c, nth);
    *ready = true;
}

/* ---------------------------------------------------------------- reference */

static int32_t isum_q8_0(const sprig_block_q8_0 *w, const int8_t *a)
{
    int32_t s = 0;
    for (int j = 0; j < SPRIG_QK; j++) s += (int32_t)w->qs[j] * a[j];
    return s;
}

static int32_t isum_q4_0(const sprig_block_q4_0 *w, const int8_t *a)
{
    int32_t s = 0;
    for (int j = 0; j < SPRIG_QK / 2; j++)
        s += ((w->qs[j] & 15) - 8) * a[j] + ((w->qs[j] >> 4) - 8) * a[j + 16];
    return s;
}

static float wf(int type, const void *row, int64_t k)
{
    const uint8_t *p = row;
    uint16_t h;
    switch (type) {
    case SPRIG_TYPE_F32: { float f; memcpy(&f, p + k * 4, 4); return f; }
    case SPRIG_TYPE_F16: memcpy(&h, p + k * 2, 2); return sprig_f16_to_f32(h);
    default:             memcpy(&h, p + k * 2, 2); return sprig_bf16_to_f32(h);
    }
}

/* The unsigned codes u[32] of a Q4_1/Q5_0/Q5_1 block in llama.cpp's element
 * order: low nibbles of qs are elements 0..15, high nibbles 16..31; bit j
 * of the little-endian qh word is element j's fifth bit (qh NULL: none). */
static void unpack_u32(const uint8_t *qs, const uint8_t *qh, uint8_t u[32])
{
    const uint32_t h = qh ? (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24 : 0;
    for (int j = 0; j < 16; j++) {
        u[j] = (uint8_t)((qs[j] & 15) | ((h >> j) & 1) << 4);
        u[j + 16] = (uint8_t)((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4);
    }
}

/* acc += block b of raw row `row` . quantized activation block a. */
static float ref_block(int type, const uint8_t *row, int64_t b, const sprig_mm_qblock *a, float acc)
{
    int32_t is;
    sprig_f16 wd;
    if (type == SPRIG_TYPE_Q8_0) {
        sprig_block_q8_0 blk;
        memcpy(&blk, row + b * sizeof blk, sizeof blk);
        is = isum_q8_0(&blk, a->q);
        wd = blk.d;
    } else if (type == SPRIG_TYPE_Q4_0) {
        sprig_block_q4_0 blk;
        memcpy(&blk, row + b * sizeof blk, sizeof blk);
        is = isum_q4_0(&blk, a->q);
        wd = blk.d;
    } else {
        /* Q4_1 / Q5_0 / Q5_1: isum = sum u * a over the unsigned codes, and
         * sum a = -c8 / 128 (the contract in matmul.h) */
        const int32_t sa = -a->c8 / 128;
        const size_t bsz = sprig_type_traits(type)->type_size;
        const uint8_t *blk = row + (size_t)b * bsz;
        uint8_t u[32];
        if (type == SPRIG_TYPE_Q4_1) unpack_u32(blk + offsetof(sprig_block_q4_1, qs), NULL, u);
        else if (type == SPRIG_TYPE_Q5_0) unpack_u32(blk + offsetof(sprig_block_q5_0, qs), blk + offsetof(sprig_block_q5_0, qh), u);
        else unpack_u32(blk + offsetof(sprig_block_q5_1, qs), blk + offsetof(sprig_block_q5_1, qh), u);
        int32_t s = 0;
        for (int j = 0; j < SPRIG_QK; j++) s += (int32_t)u[j] * a->q[j];
        const float dw = f16_at(blk);
        if (type == SPRIG_TYPE_Q5_0) return fmaf((float)(s - 16 * sa), dw * a->d, acc);
        acc = fmaf((float)s, dw * a->d, acc);
        return fmaf((float)sa, f16_at(blk + 2) * a->d, acc);   /* m follows d */
    }
    return fmaf((float)is, sprig_f16_to_f32(wd) * a->d, acc);
}

/* acc += K-quant super-block `blk` . activation record a (the contract in matmul.h). */
static float ref_ksuper(const struct kq *q, const uint8_t *blk, const sprig_mm_kblock *a, float acc)
{
    uint8_t u[256];
    int sc[16], m[16];
    q->unpack(blk, u, sc, m);
    int32_t I = 0, M = 0;
    for (int j = 0; j < 16; j++) {
        int32_t s = 0;
        for (int i = 0; i < 16; i++) s += (int32_t)u[16 * j + i] * a->q[16 * j + i];
        I += sc[j] * (s - q->off * a->bsum[j]);
        M += m[j] * a->bsum[j];
    }
    acc = fmaf((float)I, f16_at(blk + q->d_off) * a->d, acc);
    if (q->nd == 2) acc = fmaf((float)-M, f16_at(blk + q->dmin_off) * a->d, acc);
    return acc;
}

/* Columns [o0, o1) of y[n][n_out] from the raw rows; aq, ak: the quantized activations. */
static void ref_cols(const sprig_weight *w, int n, const float *x, const sprig_mm_qblock *aq,
                     const sprig_mm_kblock *ak, float *y, int64_t o0, int64_t o1)
{
    const int64_t K = w->n_in, nb = K / SPRIG_QK;
    const struct mm_type *t = mm_type(w->type);
    const bool quant = t->act == ACT_Q32;
    const size_t bsz = sprig_type_traits(w->type)->type_size;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)w->raw + (size_t)o * w->row_bytes;
        for (int r = 0; r < n; r++) {
            float acc = 0.0f;
            if (t->kq) {
                for (int64_t s = 0; s < K / SPRIG_MM_QK_K; s++) acc = ref_ksuper(t->kq, row + s * bsz, &ak[s * n + r], acc);
            } else if (quant) {
                for (int64_t b = 0; b < nb; b++)
                    acc = ref_block(w->type, row, b, &aq[b * n + r], acc);
            } else {
                const float *xr = x + (int64_t)r * K;
                for (int64_t k = 0; k < K; k++) acc = fmaf(wf(w->type, row, k), xr[k], acc);
            }
            y[(int64_t)r * w->n_out + o] = acc;
        }
    }
}

void sprig_matmul_ref(const sprig_weight *w, const float *x, int n, float *y)
{
    SPRIG_ASSERT(w && x && y && n >= 0);
    const int64_t K = w->n_in, N = w->n_out;
    const struct mm_type *t = mm_type(w->type);
    if (t->act == ACT_FLOAT) {
        ref_cols(w, n, x, NULL, NULL, y, 0, N);
        return;
    }
    if (t->kq) {
        /* One record at a time (no allocation); y rows are the accumulators. */
        const size_t bsz = sprig_type_traits(w->type)->type_size;
        for (int r = 0; r < n; r++) {
            float *yr = y + (int64_t)r * N;
            for (int64_t o = 0; o < N; o++) yr[o] = 0.0f;
            for (int64_t s = 0; s < K / SPRIG_MM_QK_K; s++) {
                sprig_mm_kblock kb;
                sprig_mm_kquant_block_ref(x + (int64_t)r * K + s * SPRIG_MM_QK_K, &kb);
                for (int64_t o = 0; o < N; o++)
                    yr[o] = ref_ksuper(t->kq, (const uint8_t *)w->raw + (size_t)o * w->row_bytes + s * bsz, &kb, yr[o]);
            }
        }
        return;
    }
    /* Quantize one block at a time (no allocation); y rows are the accumulators. */
    const int64_t nb = K / SPRIG_QK;
    for (int r = 0; r < n; r++) {
        float *yr = y + (int64_t)r * N;
        for (int64_t o = 0; o < N; o++) yr[o] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            sprig_mm_qblock qb;
            sprig_mm_quant_block_ref(x + (int64_t)r * K + b * SPRIG_QK, &qb);
            for (int64_t o = 0; o < N; o++)
                yr[o] = ref_block(w->type, (const uint8_t *)w->raw + (size_t)o * w->row_bytes, b, &qb, yr[o]);
        }
    }
}

/* ---------------------------------------------------------------- the threaded matmul */

/* Work split: each thread owns an equal contiguous share of the panels and
 * takes MM_STEP panels at a time from its front (fewer near the end: a
 * quarter of what is left); a thread that runs out steals the back half of
 * the largest share with at least 2 grains left. Shares, takes and steals are
 * whole grains (the panels one kernel tile covers) where the panel count
 * allows, so tiles stay whole. */
#define MM_MAX_TH 64
#define MM_STEP   4

/* A thread's remaining panels [front, back) in one word, so the owner
 * (taking from the front) and a thief (from the back) agree by CAS. */
struct mm_own { _Alignas(64) _Atomic uint64_t fb; };

static inline uint64_t fb_pack(int64_t f, int64_t b) { return (uint64_t)f << 32 | (uint64_t)b; }
static inline int64_t fb_front(uint64_t v) { return (int64_t)(v >> 32); }
static inline int64_t fb_back(uint64_t v) { return (int64_t)(v & 0xffffffffu); }

/* The weights the caller multiplies next: each thread prefetches the head of
 * its share of them when it has no more work in the current matmul. */
struct mm_next {
    int m, nth;
    const sprig_weight *const *w;
    int64_t start[MM_MAX_W + 1];
};

/* Bytes of its share of the next weights a thread prefetches when it is done
 * (L2 holds 1 MB; measured: +1.5% of the paired read in decode at 60 GB/s). */
#define MM_PF_NEXT ((size_t)65536)

struct mm_ctx {
    const struct mm_next *next;
    const sprig_act *a;
    int m;
    const sprig_weight *const *w;
    float *const *y;
    const sprig_mm_qblock *aq;
    const sprig_mm_kblock *ak;
    int64_t start[MM_MAX_W + 1];   /* first panel of weight i in the concatenation */
    int64_t grain;                 /* panels of one tile */
    bool pf_far;                   /* the prefetch scheme, read once per dispatch */
    struct mm_own own[MM_MAX_TH];  /* [nth] what each thread has left */
};

/* Panels [lo, hi) of the concatenation of all weights. */
static void mm_range(const struct mm_ctx *c, int64_t lo, int64_t hi)
{
    for (int i = 0; i < c->m && lo < hi; i++) {
        int64_t s = c->start[i], e = c->start[i + 1];
        int64_t p0 = (lo > s ? lo : s) - s, p1 = (hi < e ? hi : e) - s;   /* local to weight i */
        if (p0 >= p1) continue;
        const sprig_weight *w = c->w[i];
        const struct sprig_mm_family *f = family(w->kernel);
        if (w->mapped) {
            sprig_mm_job job = {
                .type = w->type, .n_in = w->n_in, .n_out = w->n_out, .packed = w->raw, .pstride = w->row_bytes,
                .n = c->a->n, .x = c->a->x, .aq = c->aq, .ak = c->ak, .y = c->y[i], .p0 = p0, .p1 = p1,
                .pf_far = c->pf_far,
            };
            rows_kernel(f, w->type)(&job);
            continue;
        }
        if (!f || !w->packed) {
            int64_t o1 = p1 * SPRIG_MM_PANEL;
            ref_cols(w, c->a->n, c->a->x, c->aq, c->ak, c->y[i], p0 * SPRIG_MM_PANEL, o1 < w->n_out ? o1 : w->n_out);
            continue;
        }
        sprig_mm_job job = {
            .type = w->type, .n_in = w->n_in, .n_out = w->n_out, .packed = w->packed,
            .pstride = sprig_mm_panel_bytes(w->type, w->n_in), .n = c->a->n, .x = c->a->x,
            .aq = c->aq, .ak = c->ak, .y = c->y[i], .p0 = p0, .p1 = p1,
            .pf_far = c->pf_far,
        };
        fam_kernel(f, w->type)(&job);
    }
}

/* Take up to `want` panels (a multiple of grain) from the front of *o; false
 * when it is empty. */
static bool own_take(struct mm_own *o, int64_t want, int64_t grain, int64_t *lo, int64_t *hi)
{
    uint64_t v = atomic_load_explicit(&o->fb, memory_order_relaxed);
    for (;;) {
        int64_t f = fb_front(v), b = fb_back(v);
        if (f >= b) return false;
        /* near the end fewer, so a thief can take the rest */
        int64_t take = (b - f) / 4 / grain * grain;
        take = take < grain ? grain : take > want ? want : take;
        int64_t e = f + take < b ? f + take : b;
        if (atomic_compare_exchange_weak_explicit(&o->fb, &v, fb_pack(e, b), memory_order_relaxed, memory_order_relaxed)) {
            *lo = f;
            *hi = e;
            return true;
        }
    }
}

/* Steal the back half (whole grains) of the fullest other range of at least
 * 2 grains; the thief owns it afterwards. */
static bool own_steal(struct mm_ctx *c, int ith, int nth)
{
    const int64_t g = c->grain;
    for (;;) {
        int best = -1;
        int64_t most = 2 * g - 1;
        for (int t = 0; t < nth; t++) {
            uint64_t v = atomic_load_explicit(&c->own[t].fb, memory_order_relaxed);
            if (t != ith && fb_back(v) - fb_front(v) > most) { most = fb_back(v) - fb_front(v); best = t; }
        }
        if (best < 0) return false;
        uint64_t v = atomic_load_explicit(&c->own[best].fb, memory_order_relaxed);
        int64_t f = fb_front(v), b = fb_back(v);
        if (b - f < 2 * g) continue;
        int64_t mid = f + ((b - f) / 2 + g - 1) / g * g;   /* the owner keeps whole grains */
        if (atomic_compare_exchange_strong_explicit(&c->own[best].fb, &v, fb_pack(f, mid), memory_order_relaxed,
                                                    memory_order_relaxed)) {
            atomic_store_explicit(&c->own[ith].fb, fb_pack(mid, b), memory_order_relaxed);
            return true;
        }
    }
}

/* Prefetch (into L2) the first bytes of share ith of the next weights. */
static void next_prefetch(const struct mm_next *x, int ith)
{
    long lo, hi;
    sprig_split((long)x->start[x->m], ith, x->nth, &lo, &hi);
    size_t left = MM_PF_NEXT;
    for (int i = 0; i < x->m && left && lo < hi; i++) {
        int64_t s = x->start[i], e = x->start[i + 1];
        if (lo >= e) continue;
        const sprig_weight *w = x->w[i];
        if (!w->packed) return;
        size_t ps = sprig_mm_panel_bytes(w->type, w->n_in);
        const char *p = (const char *)w->packed + (size_t)(lo - s) * ps;
        size_t len = (size_t)((hi < e ? hi : e) - lo) * ps;
        if (len > left) len = left;
        for (size_t l = 0; l < len; l += 64) __builtin_prefetch(p + l, 0, 2);
        left -= len;
        lo = e;
    }
}

static void mm_task(void *ctx, int ith, int nth)
{
    struct mm_ctx *c = ctx;
    int64_t lo, hi;
    do {
        while (own_take(&c->own[ith], MM_STEP > c->grain ? MM_STEP : c->grain, c->grain, &lo, &hi)) mm_range(c, lo, hi);
    } while (own_steal(c, ith, nth));
    if (c->next && ith < c->next->nth) next_prefetch(c->next, ith);
}

/* Threads for a matmul of `macs` multiply-adds over `panels` panels: one per
 * >= 64K multiply-adds, at most one per panel. */
static int mm_threads(sprig_pool *pool, int64_t macs, int64_t panels)
{
    int64_t nth = macs / 65536 + 1;
    if (nth > panels) nth = panels;
    if (nth > sprig_pool_size(pool)) nth = sprig_pool_size(pool);
    if (nth > MM_MAX_TH) nth = MM_MAX_TH;
    return (int)nth;
}

void sprig_matmul_rows(sprig_pool *pool, const float *x, int n, int64_t k, void *scratch, size_t scratch_bytes, int m,
                       const sprig_weight *const *w, float *const *y)
{
    sprig_act a;
    sprig_act_init(&a, x, n, k, scratch, scratch_bytes);
    sprig_matmul(pool, &a, m, w, y);
}

void sprig_matmul(sprig_pool *pool, sprig_act *a, int m, const sprig_weight *const *w, float *const *y)
{
    sprig_matmul_then(pool, a, m, w, y, 0, NULL);
}

void sprig_matmul_then(sprig_pool *pool, sprig_act *a, int m, const sprig_weight *const *w, float *const *y,
                       int m_next, const sprig_weight *const *next)
{
    SPRIG_ASSERT(a && w && y && m >= 1 && m <= MM_MAX_W);
    SPRIG_ASSERT(m_next >= 0 && m_next <= MM_MAX_W && (m_next == 0 || next));
    if (a->n <= 0) return;
    SPRIG_ASSERT(a->x);
    struct mm_next nx = { .m = m_next, .w = next };
    if (m_next) {
        int64_t macs = 0;
        for (int i = 0; i < m_next; i++) {
            SPRIG_ASSERT(next[i]);
            nx.start[i + 1] = nx.start[i] + (next[i]->n_out + SPRIG_MM_PANEL - 1) / SPRIG_MM_PANEL;
            macs += next[i]->n_out * next[i]->n_in;
        }
        nx.nth = mm_threads(pool, macs * a->n, nx.start[m_next]);
    }
    struct mm_ctx c = { .next = m_next ? &nx : NULL, .a = a, .m = m, .w = w, .y = y, .grain = 1,
                        .pf_far = sprig_prefetch_scheme() == SPRIG_PF_FAR };
    bool quant = false, kquant = false;
    int64_t macs = 0;
    const char *x0 = (const char *)a->x, *x1 = x0 + (size_t)a->n * (size_t)a->k * sizeof(float);
    for (int i = 0; i < m; i++) {
        SPRIG_ASSERT(w[i] && y[i] && w[i]->n_in == a->k && w[i]->raw);
        /* y is also scratch for partial sums: it must not overlap the input */
        const char *y0 = (const char *)y[i], *y1 = y0 + (size_t)a->n * (size_t)w[i]->n_out * sizeof(float);
        SPRIG_ASSERT(y1 <= x0 || y0 >= x1);
        const struct mm_type *t = mm_type(w[i]->type);
        SPRIG_ASSERT(t);
        quant |= t->act == ACT_Q32;
        kquant |= t->act == ACT_Q256;
        c.start[i + 1] = c.start[i] + (w[i]->n_out + SPRIG_MM_PANEL - 1) / SPRIG_MM_PANEL;
        const struct sprig_mm_family *f = family(w[i]->kernel);
        int g = f && w[i]->packed && f->tile_panels ? f->tile_panels(w[i]->type, a->n) : 1;
        if (g > c.grain) c.grain = g;
        macs += w[i]->n_out * a->k;
    }
    if (quant) {
        act_quantize(pool, a, ACT_Q32);
        c.aq = act_q_view(a);
    }
    if (kquant) {
        act_quantize(pool, a, ACT_Q256);
        c.ak = act_k_view(a);
    }
    macs *= a->n;
    int nth = mm_threads(pool, macs, c.start[m]);
    /* shares of whole grains (the last one takes the rest) */
    const int64_t grains = (c.start[m] + c.grain - 1) / c.grain;
    for (int t = 0; t < nth; t++) {
        long lo, hi;
        sprig_split((long)grains, t, nth, &lo, &hi);
        int64_t l = lo * c.grain, h = hi * c.grain;
        atomic_init(&c.own[t].fb, fb_pack(l < c.start[m] ? l : c.start[m], h < c.start[m] ? h : c.start[m]));
    }
    sprig_pool_run(pool, mm_task, &c, nth);
}
