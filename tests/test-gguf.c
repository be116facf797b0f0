/*
 * tests/test-gguf.c — the GGUF reader and writer.
 *
 * 1. Round trip: every KV value type (scalars and arrays, strings included)
 *    and F32/F16/Q8_0/Q4_0/BF16 tensors written, read back, compared; the
 *    streaming fill path; writer-side refusals.
 * 2. The real stories260K.gguf: header figures, metadata, tensor shapes.
 * 3. A bad-input corpus generated here into the temp folder: a small
 *    hand-built GGUF with recorded landmarks is cut inside every field and
 *    mutated (huge counts, bad types, dims, offsets, overlaps, duplicates,
 *    alignment), and stories260K.gguf is cut at every header offset. Each
 *    case must fail with the right status and a message that names the
 *    file, section and field; none may crash under `make asan`.
 * 4. Random byte flips of the small file: never a crash.
 */
#include "test.h"
#include "gguf/gguf.h"
#include "tensor/types.h"
#include "base/rng.h"

#include <unistd.h>

/* ---------------------------------------------------------------- byte builder */

typedef struct { uint8_t *p; size_t n, cap; } buf;

static void b_put(buf *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) nc *= 2;
        b->p = realloc(b->p, nc);
        if (!b->p) abort();
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void b_u8(buf *b, uint8_t v) { b_put(b, &v, 1); }
static void b_u32(buf *b, uint32_t v) { b_put(b, &v, 4); }
static void b_u64(buf *b, uint64_t v) { b_put(b, &v, 8); }
static void b_str(buf *b, const char *s) { b_u64(b, strlen(s)); b_put(b, s, strlen(s)); }
static void b_free(buf *b) { free(b->p); memset(b, 0, sizeof *b); }

/* A description of a small GGUF, serialised with landmarks so tests can cut
 * or patch any field. */
#define MAXKV 12
#define MAXT 6
struct dkv { const char *key; uint32_t type; buf val; };
struct dt { const char *name; uint32_t n_dims; int64_t ne[6]; uint32_t type; uint64_t offset; };
struct desc {
    uint32_t version;
    struct dkv kv[MAXKV];
    int nkv;
    struct dt t[MAXT];
    int nt;
    size_t align;        /* padding used when serialising */
    size_t data_bytes;
};
struct marks {
    size_t n_tensors, n_kv;
    size_t kv_key[MAXKV], kv_type[MAXKV], kv_val[MAXKV];
    size_t t_name[MAXT], t_ndims[MAXT], t_ne[MAXT], t_type[MAXT], t_off[MAXT];
    size_t pad, data, end;
};

static void d_kv(struct desc *d, const char *key, uint32_t type) { d->kv[d->nkv].key = key; d->kv[d->nkv].type = type; d->nkv++; }
static buf *d_val(struct desc *d) { return &d->kv[d->nkv - 1].val; }

static void d_free(struct desc *d)
{
    for (int i = 0; i < d->nkv; i++) b_free(&d->kv[i].val);
}

/* The base file: 6 keys (one of each family) and three tensors of different types. */
static void base_desc(struct desc *d)
{
    memset(d, 0, sizeof *d);
    d->version = 3;
    d->align = 32;
    d_kv(d, "general.architecture", SPRIG_GGUF_STR); b_str(d_val(d), "llama");
    d_kv(d, "general.alignment", SPRIG_GGUF_U32); b_u32(d_val(d), 32);
    d_kv(d, "test.flag", SPRIG_GGUF_BOOL); b_u8(d_val(d), 1);
    d_kv(d, "test.arr_i32", SPRIG_GGUF_ARR); b_u32(d_val(d), SPRIG_GGUF_I32); b_u64(d_val(d), 3);
    b_u32(d_val(d), 1); b_u32(d_val(d), 2); b_u32(d_val(d), 3);
    d_kv(d, "test.arr_str", SPRIG_GGUF_ARR); b_u32(d_val(d), SPRIG_GGUF_STR); b_u64(d_val(d), 2);
    b_str(d_val(d), "a"); b_str(d_val(d), "bc");
    d_kv(d, "test.f32", SPRIG_GGUF_F32); { float f = 1.5f; b_put(d_val(d), &f, 4); }
    d->t[0] = (struct dt){ "a", 2, { 8, 4 }, SPRIG_TYPE_F32, 0 };      /* 128 bytes */
    d->t[1] = (struct dt){ "b", 2, { 32, 2 }, SPRIG_TYPE_Q8_0, 128 };  /* 68 bytes */
    d->t[2] = (struct dt){ "c", 1, { 16 }, SPRIG_TYPE_F16, 224 };      /* 32 bytes */
    d->nt = 3;
    d->data_bytes = 256;
}

static void serialise(const struct desc *d, buf *b, struct marks *m)
{
    memset(m, 0, sizeof *m);
    b->n = 0;
    b_put(b, "GGUF", 4);
    b_u32(b, d->version);
    m->n_tensors = b->n;
    b_u64(b, (uint64_t)d->nt);
    m->n_kv = b->n;
    b_u64(b, (uint64_t)d->nkv);
    for (int i = 0; i < d->nkv; i++) {
        m->kv_key[i] = b->n;
        b_str(b, d->kv[i].key);
        m->kv_type[i] = b->n;
        b_u32(b, d->kv[i].type);
        m->kv_val[i] = b->n;
        b_put(b, d->kv[i].val.p, d->kv[i].val.n);
    }
    for (int i = 0; i < d->nt; i++) {
        m->t_name[i] = b->n;
        b_str(b, d->t[i].name);
        m->t_ndims[i] = b->n;
        b_u32(b, d->t[i].n_dims);
        m->t_ne[i] = b->n;
        for (uint32_t k = 0; k < d->t[i].n_dims && k < 6; k++) b_u64(b, (uint64_t)d->t[i].ne[k]);
        m->t_type[i] = b->n;
        b_u32(b, d->t[i].type);
        m->t_off[i] = b->n;
        b_u64(b, d->t[i].offset);
    }
    m->pad = b->n;
    while (b->n % d->align) b_u8(b, 0);
    m->data = b->n;
    for (size_t i = 0; i < d->data_bytes; i++) b_u8(b, (uint8_t)(i * 7 + 1));
    m->end = b->n;
}

/* ---------------------------------------------------------------- helpers */

static bool write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static bool contains(const char *hay, const char *needle) { return needle == NULL || strstr(hay, needle) != NULL; }

/* Parse bytes from an exact-size heap copy (so ASan sees any over-read) and
 * from a file in the temp folder; both must fail alike. */
static void expect_fail(const char *label, const uint8_t *p, size_t n, sprig_status code,
                        const char *sub1, const char *sub2)
{
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    sprig_error e = { 0 };
    char name[128];
    snprintf(name, sizeof name, "%s.gguf", label);
    sprig_gguf *g = sprig_gguf_open_memory(copy, n, name, &e);
    CHECKF(g == NULL, "%s: parsed but should fail", label);
    sprig_gguf_close(g);
    free(copy);
    CHECKF(e.code == code, "%s: status %s, want %s (%s)", label, sprig_status_str(e.code), sprig_status_str(code), e.msg);
    CHECKF(!strncmp(e.msg, name, strlen(name)), "%s: message does not start with the file name: %s", label, e.msg);
    CHECKF(contains(e.msg, sub1) && contains(e.msg, sub2), "%s: message lacks '%s' / '%s': %s", label,
           sub1 ? sub1 : "", sub2 ? sub2 : "", e.msg);
    if (n == 0) return;   /* mmap refuses empty files with its own message */
    const char *path = test_tmpfile(name);
    CHECK(write_file(path, p, n));
    sprig_error e2 = { 0 };
    g = sprig_gguf_open(path, &e2);
    CHECKF(g == NULL, "%s (file): parsed but should fail", label);
    sprig_gguf_close(g);
    CHECKF(e2.code == code && contains(e2.msg, sub1) && contains(e2.msg, sub2) && contains(e2.msg, path),
           "%s (file): %s", label, e2.msg);
    unlink(path);
}

static sprig_gguf *expect_ok(const char *label, const uint8_t *p, size_t n)
{
    sprig_error e = { 0 };
    sprig_gguf *g = sprig_gguf_open_memory(p, n, label, &e);
    CHECKF(g != NULL, "%s: %s", label, e.msg);
    return g;
}

static void patch_u32(buf *b, size_t at, uint32_t v) { memcpy(b->p + at, &v, 4); }
static void patch_u64(buf *b, size_t at, uint64_t v) { memcpy(b->p + at, &v, 8); }

/* ---------------------------------------------------------------- round trip */

static void fill_rand(float *x, int64_t n, uint64_t seed)
{
    sprig_rng r;
    sprig_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(sprig_rng_uniform(&r) * 2 - 1);
}

struct tspec { const char *name; int type; int n_dims; int64_t ne[4]; };

static const struct tspec rt_tensors[] = {
    { "t.f32", SPRIG_TYPE_F32, 2, { 5, 3 } },
    { "t.f16", SPRIG_TYPE_F16, 2, { 8, 2 } },
    { "t.q8_0", SPRIG_TYPE_Q8_0, 2, { 64, 3 } },
    { "t.q4_0", SPRIG_TYPE_Q4_0, 3, { 32, 2, 2 } },
    { "t.bf16", SPRIG_TYPE_BF16, 4, { 4, 3, 2, 2 } },
    { "t.q4_k", SPRIG_TYPE_Q4_K, 2, { 512, 3 } },
    { "t.q6_k", SPRIG_TYPE_Q6_K, 2, { 256, 2 } },
    { "t.q5_0", SPRIG_TYPE_Q5_0, 2, { 96, 2 } },
};
#define N_RT (int)(sizeof rt_tensors / sizeof rt_tensors[0])

static size_t tensor_bytes(const struct tspec *t)
{
    size_t row;
    CHECK(sprig_row_bytes(t->type, t->ne[0], &row));
    int64_t rows = 1;
    for (int d = 1; d < t->n_dims; d++) rows *= t->ne[d];
    return row * (size_t)rows;
}

static sprig_status fill_counter(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    int *calls = user;
    (*calls)++;
    for (size_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = (uint8_t)(i * 13 + 5);
    return SPRIG_OK;
}

static sprig_status fill_fails(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    return sprig_err(err, SPRIG_E_IO, "generator broke");
}

static void test_roundtrip(void)
{
    sprig_error e = { 0 };
    sprig_gguf_writer *w = sprig_gguf_writer_create(&e);
    CHECK(w != NULL);
    /* scalars of every type */
    uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000;
    uint64_t u64 = 0xfedcba9876543210ull; int64_t i64 = INT64_MIN + 5; double f64 = -1.0 / 3.0;
    CHECK(sprig_gguf_w_scalar(w, "s.u8", SPRIG_GGUF_U8, &u8, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.i8", SPRIG_GGUF_I8, &i8, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.u16", SPRIG_GGUF_U16, &u16, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.i16", SPRIG_GGUF_I16, &i16, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_u32(w, "s.u32", 4000000000u, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_i32(w, "s.i32", -7, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_f32(w, "s.f32", 0.25f, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_bool(w, "s.bool", true, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_str(w, "s.str", "h\xc3\xa9llo\0x", 8, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.u64", SPRIG_GGUF_U64, &u64, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.i64", SPRIG_GGUF_I64, &i64, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.f64", SPRIG_GGUF_F64, &f64, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_scalar(w, "s.bool0", SPRIG_GGUF_BOOL, &(uint8_t){ 0 }, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_str(w, "s.empty", "", 0, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_u32(w, "general.alignment", 64, &e) == SPRIG_OK);
    /* arrays of every scalar type */
    uint8_t a_u8[3] = { 1, 2, 255 }; int8_t a_i8[3] = { -1, 0, 1 };
    uint16_t a_u16[2] = { 1, 65535 }; int16_t a_i16[2] = { -32768, 32767 };
    uint32_t a_u32[2] = { 0, 4294967295u }; int32_t a_i32[4] = { -2, -1, 0, 2147483647 };
    float a_f32[3] = { 1.5f, -0.0f, 3e38f }; uint8_t a_bool[3] = { 1, 0, 1 };
    uint64_t a_u64[2] = { 1, UINT64_MAX }; int64_t a_i64[2] = { INT64_MIN, INT64_MAX }; double a_f64[2] = { 1e300, -2.5 };
    CHECK(sprig_gguf_w_arr(w, "a.u8", SPRIG_GGUF_U8, a_u8, 3, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.i8", SPRIG_GGUF_I8, a_i8, 3, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.u16", SPRIG_GGUF_U16, a_u16, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.i16", SPRIG_GGUF_I16, a_i16, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.u32", SPRIG_GGUF_U32, a_u32, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.i32", SPRIG_GGUF_I32, a_i32, 4, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.f32", SPRIG_GGUF_F32, a_f32, 3, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.bool", SPRIG_GGUF_BOOL, a_bool, 3, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.u64", SPRIG_GGUF_U64, a_u64, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.i64", SPRIG_GGUF_I64, a_i64, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.f64", SPRIG_GGUF_F64, a_f64, 2, &e) == SPRIG_OK);
    CHECK(sprig_gguf_w_arr(w, "a.empty", SPRIG_GGUF_I32, NULL, 0, &e) == SPRIG_OK);
    const char *strs[4] = { "x", "", "\xe2\x96\x81hello", "a\0b" };
    size_t lens[4] = { 1, 0, 8, 3 };
    CHECK(sprig_gguf_w_arr_str(w, "a.str", strs, lens, 4, &e) == SPRIG_OK);
    /* tensors */
    void *tdata[N_RT];
    for (int i = 0; i < N_RT; i++) {
        const struct tspec *t = &rt_tensors[i];
        int64_t nel = 1;
        for (int d = 0; d < t->n_dims; d++) nel *= t->ne[d];
        float *x = malloc((size_t)nel * sizeof *x);
        fill_rand(x, nel, 100 + (uint64_t)i);
        tdata[i] = malloc(tensor_bytes(t));
        sprig_type_traits(t->type)->from_f32(x, tdata[i], nel);
        free(x);
        CHECKF(sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, tdata[i], &e) == SPRIG_OK, "%s", e.msg);
    }
    int calls = 0;
    int64_t fne[2] = { 64, 5 };
    CHECK(sprig_gguf_w_tensor_fill(w, "t.filled", SPRIG_TYPE_Q8_0, 2, fne, fill_counter, &calls, &e) == SPRIG_OK);

    /* writer refusals */
    CHECK(sprig_gguf_w_u32(w, "s.u32", 1, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "duplicate key 's.u32'"));
    CHECK(sprig_gguf_w_tensor(w, "t.f32", SPRIG_TYPE_F32, 1, (int64_t[]){ 1 }, a_f32, &e) == SPRIG_E_INVALID_ARG &&
          contains(e.msg, "duplicate tensor name 't.f32'"));
    CHECK(sprig_gguf_w_tensor(w, "t.bad", SPRIG_TYPE_Q8_0, 1, (int64_t[]){ 33 }, tdata[2], &e) == SPRIG_E_INVALID_ARG &&
          contains(e.msg, "block size 32"));
    CHECK(sprig_gguf_w_tensor(w, "t.bad", 4, 1, (int64_t[]){ 32 }, tdata[2], &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "unknown type 4"));
    CHECK(sprig_gguf_w_tensor(w, "t.bad", SPRIG_TYPE_F32, 5, (int64_t[]){ 1, 1, 1, 1, 1 }, a_f32, &e) == SPRIG_E_INVALID_ARG);
    CHECK(sprig_gguf_w_tensor(w, "t.bad", SPRIG_TYPE_F32, 2, (int64_t[]){ 1, 0 }, a_f32, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "ne[1]"));
    CHECK(sprig_gguf_w_tensor(w, "t.bad", SPRIG_TYPE_F32, 2, (int64_t[]){ INT64_MAX, 4 }, a_f32, &e) == SPRIG_E_INVALID_ARG &&
          contains(e.msg, "overflows"));
    CHECK(sprig_gguf_w_tensor(w, "", SPRIG_TYPE_F32, 1, (int64_t[]){ 1 }, a_f32, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "empty"));
    char longname[300];
    memset(longname, 'n', 299);
    longname[299] = 0;
    CHECK(sprig_gguf_w_tensor(w, longname, SPRIG_TYPE_F32, 1, (int64_t[]){ 1 }, a_f32, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "limit"));
    CHECK(sprig_gguf_w_u32(w, longname, 1, &e) == SPRIG_E_INVALID_ARG);
    CHECK(sprig_gguf_w_scalar(w, "s.bad", SPRIG_GGUF_STR, "x", &e) == SPRIG_E_INVALID_ARG);
    CHECK(sprig_gguf_w_arr(w, "a.nested", SPRIG_GGUF_ARR, a_u8, 1, &e) == SPRIG_E_INVALID_ARG);
    CHECK(sprig_gguf_w_scalar(w, "s.bool2", SPRIG_GGUF_BOOL, &(uint8_t){ 2 }, &e) == SPRIG_E_INVALID_ARG);

    const char *path = test_tmpfile("roundtrip.gguf");
    CHECKF(sprig_gguf_writer_write(w, path, &e) == SPRIG_OK, "%s", e.msg);
    CHECK_EQ_INT(calls, 1);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(!test_file_exists(tmp));

    sprig_gguf *g = sprig_gguf_open(path, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (!g) goto out;
    CHECK_EQ_INT(sprig_gguf_version(g), 3);
    CHECK_EQ_INT(sprig_gguf_alignment(g), 64);
    CHECK_EQ_INT(sprig_gguf_data_offset(g) % 64, 0);
    CHECK_EQ_INT(sprig_gguf_n_kv(g), 28);
    CHECK_STR(sprig_gguf_kv_key(g, 0), "s.u8");
    CHECK_EQ_INT(sprig_gguf_kv_type(g, 0), SPRIG_GGUF_U8);
    CHECK_EQ_INT(sprig_gguf_kv_type(g, sprig_gguf_find_kv(g, "s.f64")), SPRIG_GGUF_F64);
    CHECK_EQ_INT(sprig_gguf_find_kv(g, "nope"), -1);
    /* typed getters */
    uint32_t vu = 0; int64_t vi = 0; float vf = 0; bool vb = false; const char *vs; size_t vl;
    CHECK(sprig_gguf_get_u32(g, "s.u8", &vu, true, &e) == SPRIG_OK && vu == 200);
    CHECK(sprig_gguf_get_u32(g, "s.u32", &vu, true, &e) == SPRIG_OK && vu == 4000000000u);
    CHECK(sprig_gguf_get_u32(g, "s.i32", &vu, true, &e) == SPRIG_E_FORMAT && contains(e.msg, "'s.i32'") && contains(e.msg, "-7"));
    CHECK(sprig_gguf_get_u32(g, "s.u64", &vu, true, &e) == SPRIG_E_FORMAT && contains(e.msg, "does not fit"));
    CHECK(sprig_gguf_get_i64(g, "s.i8", &vi, true, &e) == SPRIG_OK && vi == -100);
    CHECK(sprig_gguf_get_i64(g, "s.u16", &vi, true, &e) == SPRIG_OK && vi == 60000);
    CHECK(sprig_gguf_get_i64(g, "s.i16", &vi, true, &e) == SPRIG_OK && vi == -30000);
    CHECK(sprig_gguf_get_i64(g, "s.i64", &vi, true, &e) == SPRIG_OK && vi == INT64_MIN + 5);
    CHECK(sprig_gguf_get_i64(g, "s.u64", &vi, true, &e) == SPRIG_E_FORMAT);
    CHECK(sprig_gguf_get_i64(g, "s.f32", &vi, true, &e) == SPRIG_E_FORMAT && contains(e.msg, "type f32 cannot be read as i64"));
    CHECK(sprig_gguf_get_f32(g, "s.f32", &vf, true, &e) == SPRIG_OK && vf == 0.25f);
    CHECK(sprig_gguf_get_f32(g, "s.f64", &vf, true, &e) == SPRIG_OK && vf == (float)(-1.0 / 3.0));
    CHECK(sprig_gguf_get_f32(g, "s.u8", &vf, true, &e) == SPRIG_E_FORMAT);
    CHECK(sprig_gguf_get_bool(g, "s.bool", &vb, true, &e) == SPRIG_OK && vb);
    CHECK(sprig_gguf_get_bool(g, "s.bool0", &vb, true, &e) == SPRIG_OK && !vb);
    CHECK(sprig_gguf_get_str(g, "s.str", &vs, &vl, true, &e) == SPRIG_OK && vl == 8 && !memcmp(vs, "h\xc3\xa9llo\0x", 8));
    CHECK(sprig_gguf_get_str(g, "s.empty", &vs, &vl, true, &e) == SPRIG_OK && vl == 0);
    CHECK(sprig_gguf_get_str(g, "s.u8", &vs, &vl, true, &e) == SPRIG_E_FORMAT);
    vu = 77;
    CHECK(sprig_gguf_get_u32(g, "missing.key", &vu, false, &e) == SPRIG_OK && vu == 77);
    CHECK(sprig_gguf_get_u32(g, "missing.key", &vu, true, &e) == SPRIG_E_FORMAT && contains(e.msg, "required key 'missing.key' is missing"));
    /* arrays */
    int et; uint64_t n;
    CHECK(sprig_gguf_get_arr(g, "a.i32", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_I32 && n == 4);
    CHECK(sprig_gguf_get_arr(g, "s.u8", &et, &n, true, &e) == SPRIG_E_FORMAT);
    int64_t k;
    k = sprig_gguf_find_kv(g, "a.u8");
    CHECK(sprig_gguf_arr_int(g, k, 2) == 255 && sprig_gguf_arr_f32(g, k, 0) == 1.0f);
    k = sprig_gguf_find_kv(g, "a.i8");
    CHECK(sprig_gguf_arr_int(g, k, 0) == -1);
    k = sprig_gguf_find_kv(g, "a.u16");
    CHECK(sprig_gguf_arr_int(g, k, 1) == 65535);
    k = sprig_gguf_find_kv(g, "a.i16");
    CHECK(sprig_gguf_arr_int(g, k, 0) == -32768 && sprig_gguf_arr_int(g, k, 1) == 32767);
    k = sprig_gguf_find_kv(g, "a.u32");
    CHECK(sprig_gguf_arr_int(g, k, 1) == 4294967295ll);
    k = sprig_gguf_find_kv(g, "a.i32");
    CHECK(sprig_gguf_arr_int(g, k, 0) == -2 && sprig_gguf_arr_int(g, k, 3) == 2147483647);
    CHECK(sprig_gguf_arr_int(g, k, 4) == 0);   /* out of range: defined, zero */
    k = sprig_gguf_find_kv(g, "a.f32");
    CHECK(sprig_gguf_arr_f32(g, k, 0) == 1.5f && sprig_gguf_arr_f32(g, k, 2) == 3e38f);
    CHECK(signbit(sprig_gguf_arr_f32(g, k, 1)));
    k = sprig_gguf_find_kv(g, "a.bool");
    CHECK(sprig_gguf_arr_int(g, k, 0) == 1 && sprig_gguf_arr_int(g, k, 1) == 0);
    k = sprig_gguf_find_kv(g, "a.u64");
    CHECK(sprig_gguf_arr_int(g, k, 1) == INT64_MAX);   /* clamped */
    k = sprig_gguf_find_kv(g, "a.i64");
    CHECK(sprig_gguf_arr_int(g, k, 0) == INT64_MIN && sprig_gguf_arr_int(g, k, 1) == INT64_MAX);
    k = sprig_gguf_find_kv(g, "a.f64");
    CHECK(sprig_gguf_arr_f32(g, k, 1) == -2.5f);
    CHECK(sprig_gguf_get_arr(g, "a.empty", &et, &n, true, &e) == SPRIG_OK && n == 0);
    k = sprig_gguf_find_kv(g, "a.str");
    for (int i = 0; i < 4; i++) {
        size_t len;
        const char *s = sprig_gguf_arr_str(g, k, (uint64_t)i, &len);
        CHECK(s != NULL && len == lens[i] && !memcmp(s, strs[i], len));
    }
    CHECK(sprig_gguf_arr_str(g, k, 4, NULL) == NULL);
    CHECK(sprig_gguf_arr_str(g, sprig_gguf_find_kv(g, "a.i32"), 0, NULL) == NULL);
    /* formatting */
    char fb[512];
    sprig_gguf_kv_format(g, sprig_gguf_find_kv(g, "a.str"), fb, sizeof fb);
    CHECK_STR(fb, "[str x 4] \"x\", \"\", \"\xe2\x96\x81hello\", \"a\\x00b\"");
    sprig_gguf_kv_format(g, sprig_gguf_find_kv(g, "s.i64"), fb, sizeof fb);
    CHECK_STR(fb, "-9223372036854775803");
    sprig_gguf_kv_format(g, sprig_gguf_find_kv(g, "s.bool"), fb, sizeof fb);
    CHECK_STR(fb, "true");
    int need = sprig_gguf_kv_format(g, sprig_gguf_find_kv(g, "a.i32"), fb, 6);
    CHECK(need == (int)strlen("[i32 x 4] -2, -1, 0, 2147483647") && strlen(fb) == 5);
    /* tensors */
    CHECK_EQ_INT(sprig_gguf_n_tensors(g), N_RT + 1);
    for (int i = 0; i < N_RT; i++) {
        const struct tspec *t = &rt_tensors[i];
        const sprig_gguf_tensor *gt = sprig_gguf_tensor_at(g, i);
        CHECK(gt == sprig_gguf_find_tensor(g, t->name));
        CHECK_STR(gt->name, t->name);
        CHECK_EQ_INT(gt->type, t->type);
        CHECK_EQ_INT(gt->n_dims, t->n_dims);
        for (int d = 0; d < 4; d++) CHECK_EQ_INT(gt->ne[d], d < t->n_dims ? t->ne[d] : 1);
        CHECK_EQ_INT(gt->nbytes, tensor_bytes(t));
        CHECK_EQ_INT(gt->offset % 64, 0);
        CHECK(!memcmp(gt->data, tdata[i], gt->nbytes));
    }
    const sprig_gguf_tensor *ft = sprig_gguf_find_tensor(g, "t.filled");
    CHECK(ft && ft->nbytes == 5 * 2 * 34);
    if (ft) {
        bool same = true;
        for (size_t i = 0; i < ft->nbytes; i++) same &= ((const uint8_t *)ft->data)[i] == (uint8_t)(i * 13 + 5);
        CHECK(same);
    }
    CHECK(sprig_gguf_find_tensor(g, "t.none") == NULL);
    CHECK(sprig_gguf_tensor_at(g, 99) == NULL);

    /* copy every kv into a new writer: same bytes for the metadata */
    sprig_gguf_writer *w2 = sprig_gguf_writer_create(&e);
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) CHECK(sprig_gguf_w_copy_kv(w2, g, i, &e) == SPRIG_OK);
    const char *path2 = test_tmpfile("copy.gguf");
    CHECK(sprig_gguf_writer_write(w2, path2, &e) == SPRIG_OK);
    sprig_gguf *g2 = sprig_gguf_open(path2, &e);
    CHECK(g2 != NULL);
    if (g2) {
        CHECK_EQ_INT(sprig_gguf_n_kv(g2), sprig_gguf_n_kv(g));
        for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
            char a[512], b[512];
            sprig_gguf_kv_format(g, i, a, sizeof a);
            sprig_gguf_kv_format(g2, i, b, sizeof b);
            CHECK_STR(a, b);
        }
        sprig_gguf_close(g2);
    }
    sprig_gguf_writer_free(w2);
    sprig_gguf_close(g);
out:
    /* failures while writing leave nothing behind */
    CHECK(sprig_gguf_writer_write(w, "/nonexistent-dir/x.gguf", &e) == SPRIG_E_IO && contains(e.msg, "/nonexistent-dir/x.gguf"));
    sprig_gguf_writer *w3 = sprig_gguf_writer_create(&e);
    CHECK(sprig_gguf_w_tensor_fill(w3, "broken", SPRIG_TYPE_F32, 1, (int64_t[]){ 4 }, fill_fails, NULL, &e) == SPRIG_OK);
    const char *path3 = test_tmpfile("broken.gguf");
    CHECK(sprig_gguf_writer_write(w3, path3, &e) == SPRIG_E_IO && contains(e.msg, "broken.gguf") &&
          contains(e.msg, "'broken'") && contains(e.msg, "generator broke"));
    CHECK(!test_file_exists(path3));
    snprintf(tmp, sizeof tmp, "%s.tmp", path3);
    CHECK(!test_file_exists(tmp));
    sprig_gguf_writer_free(w3);
    /* alignment key checks in the writer */
    sprig_gguf_writer *w4 = sprig_gguf_writer_create(&e);
    CHECK(sprig_gguf_w_u32(w4, "general.alignment", 48, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "power of two"));
    CHECK(sprig_gguf_w_i32(w4, "general.alignment", 32, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "u32"));
    sprig_gguf_writer_free(w4);
    for (int i = 0; i < N_RT; i++) free(tdata[i]);
    sprig_gguf_writer_free(w);
}

/* A file with no tensors and no keys is valid. */
static void test_empty_file(void)
{
    sprig_error e = { 0 };
    sprig_gguf_writer *w = sprig_gguf_writer_create(&e);
    const char *path = test_tmpfile("empty.gguf");
    CHECK(sprig_gguf_writer_write(w, path, &e) == SPRIG_OK);
    sprig_gguf_writer_free(w);
    sprig_gguf *g = sprig_gguf_open(path, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (g) {
        CHECK_EQ_INT(sprig_gguf_n_kv(g), 0);
        CHECK_EQ_INT(sprig_gguf_n_tensors(g), 0);
        CHECK_EQ_INT(sprig_gguf_data_offset(g), 32);
        sprig_gguf_close(g);
    }
}

/* ---------------------------------------------------------------- stories260K */

static void test_stories260k(void)
{
    const char *path = test_shared("models/stories260K.gguf");
    if (!test_file_exists(path)) {
        fprintf(stderr, "  SKIP: %s not found\n", path);
        return;
    }
    sprig_error e = { 0 };
    sprig_gguf *g = sprig_gguf_open(path, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (!g) return;
    CHECK_EQ_INT(sprig_gguf_version(g), 3);
    CHECK_EQ_INT(sprig_gguf_alignment(g), 32);
    CHECK_EQ_INT(sprig_gguf_data_offset(g), 14176);
    CHECK_EQ_INT(sprig_gguf_file_size(g), 1185376);
    CHECK_EQ_INT(sprig_gguf_n_kv(g), 19);
    CHECK_EQ_INT(sprig_gguf_n_tensors(g), 48);
    const char *s;
    size_t len;
    CHECK(sprig_gguf_get_str(g, "general.architecture", &s, &len, true, &e) == SPRIG_OK && len == 5 && !memcmp(s, "llama", 5));
    CHECK(sprig_gguf_get_str(g, "tokenizer.ggml.model", &s, &len, true, &e) == SPRIG_OK && len == 5 && !memcmp(s, "llama", 5));
    uint32_t v = 0;
    CHECK(sprig_gguf_get_u32(g, "llama.block_count", &v, true, &e) == SPRIG_OK && v == 5);
    CHECK(sprig_gguf_get_u32(g, "llama.embedding_length", &v, true, &e) == SPRIG_OK && v == 64);
    CHECK(sprig_gguf_get_u32(g, "llama.feed_forward_length", &v, true, &e) == SPRIG_OK && v == 172);
    CHECK(sprig_gguf_get_u32(g, "llama.attention.head_count", &v, true, &e) == SPRIG_OK && v == 8);
    CHECK(sprig_gguf_get_u32(g, "llama.attention.head_count_kv", &v, true, &e) == SPRIG_OK && v == 4);
    CHECK(sprig_gguf_get_u32(g, "llama.context_length", &v, true, &e) == SPRIG_OK && v == 2048);
    CHECK(sprig_gguf_get_u32(g, "llama.rope.dimension_count", &v, true, &e) == SPRIG_OK && v == 8);
    CHECK(sprig_gguf_get_u32(g, "tokenizer.ggml.seperator_token_id", &v, true, &e) == SPRIG_OK && v == UINT32_MAX);
    float eps = 0;
    CHECK(sprig_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps, true, &e) == SPRIG_OK && eps == 1e-5f);
    CHECK(sprig_gguf_find_kv(g, "llama.rope.freq_base") < 0);
    int et;
    uint64_t n;
    CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_STR && n == 512);
    int64_t k = sprig_gguf_find_kv(g, "tokenizer.ggml.tokens");
    s = sprig_gguf_arr_str(g, k, 1, &len);
    CHECK(len == 3 && !memcmp(s, "<s>", 3));
    s = sprig_gguf_arr_str(g, k, 259, &len);
    CHECK(len == 4 && !memcmp(s, "\xe2\x96\x81t", 4));
    s = sprig_gguf_arr_str(g, k, 511, &len);
    CHECK(len == 3 && !memcmp(s, "\xe2\x80\x8a", 3));
    CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_F32 && n == 512);
    k = sprig_gguf_find_kv(g, "tokenizer.ggml.scores");
    CHECK(sprig_gguf_arr_f32(g, k, 511) == -252.0f);
    CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_I32 && n == 512);
    k = sprig_gguf_find_kv(g, "tokenizer.ggml.token_type");
    CHECK(sprig_gguf_arr_int(g, k, 0) == 2 && sprig_gguf_arr_int(g, k, 1) == 3 && sprig_gguf_arr_int(g, k, 3) == 6 &&
          sprig_gguf_arr_int(g, k, 300) == 1);

    const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, 0);
    CHECK_STR(t->name, "token_embd.weight");
    CHECK(t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 512 && t->type == SPRIG_TYPE_F32 && t->nbytes == 131072);
    CHECK(t->data == (const uint8_t *)sprig_gguf_tensor_at(g, 0)->data);
    t = sprig_gguf_find_tensor(g, "blk.0.attn_k.weight");
    CHECK(t && t->ne[0] == 64 && t->ne[1] == 32);
    t = sprig_gguf_find_tensor(g, "blk.4.ffn_down.weight");
    CHECK(t && t->ne[0] == 172 && t->ne[1] == 64);
    t = sprig_gguf_find_tensor(g, "output_norm.weight");
    CHECK(t && t->n_dims == 1 && t->ne[0] == 64);
    const sprig_gguf_tensor *te = sprig_gguf_find_tensor(g, "token_embd.weight"), *to = sprig_gguf_find_tensor(g, "output.weight");
    CHECK(te && to && !memcmp(te->data, to->data, te->nbytes));
    int64_t params = 0;
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *ti = sprig_gguf_tensor_at(g, i);
        params += ti->ne[0] * ti->ne[1] * ti->ne[2] * ti->ne[3];
    }
    CHECK_EQ_INT(params, 292800);
    sprig_gguf_close(g);
}

/* Cut stories260K.gguf at every offset in the header (a stride in quick
 * mode) and at a few offsets in the data: each prefix must be refused. */
static void test_stories_truncated(void)
{
    const char *path = test_shared("models/stories260K.gguf");
    if (!test_file_exists(path)) return;
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    uint8_t *all = malloc(1185376);
    size_t n = fread(all, 1, 1185376, f);
    fclose(f);
    CHECK_EQ_INT(n, 1185376);
    size_t stride = test_quick() ? 13 : 1;
    int bad = 0;
    for (size_t cut = 0; cut < 14176 + 64; cut += stride) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, all, cut);
        sprig_error e = { 0 };
        sprig_gguf *g = sprig_gguf_open_memory(p, cut, "cut.gguf", &e);
        bool ok = g == NULL && e.code == SPRIG_E_FORMAT && !strncmp(e.msg, "cut.gguf: ", 10) &&
                  (contains(e.msg, "end of the file") || contains(e.msg, "left in the file") ||
                   contains(e.msg, "truncated") || contains(e.msg, "too short"));
        if (!ok && bad++ < 5) CHECKF(ok, "cut at %zu: %s", cut, g ? "parsed" : e.msg);
        sprig_gguf_close(g);
        free(p);
    }
    CHECK_EQ_INT(bad, 0);
    /* specific fields */
    const size_t cuts[][2] = { { 2, 0 }, { 6, 0 }, { 20, 0 }, { 30, 0 }, { 5000, 0 }, { 14160, 0 }, { 14176, 0 }, { 14177, 0 },
                               { 14176 + 131328 + 100, 0 }, { 1185375, 0 } };
    const char *want[] = { "too short", "version", "n_kv", "kv 0", "kv 0 'tokenizer.ggml.tokens': element ", "padding",
                           "tensor 0 'token_embd.weight'", "tensor 0 'token_embd.weight'", "tensor 2 'output.weight'",
                           "tensor 47 'blk.4.ffn_norm.weight'" };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "stories-cut-%zu", cuts[i][0]);
        expect_fail(label, all, cuts[i][0], SPRIG_E_FORMAT, want[i], NULL);
    }
    /* the whole file parses from memory too */
    sprig_gguf *g = expect_ok("stories-mem", all, n);
    sprig_gguf_close(g);
    free(all);
}

/* ---------------------------------------------------------------- the corpus */

/* The base description must parse (so every failure below is the mutation's). */
static void test_base_is_valid(void)
{
    struct desc d;
    base_desc(&d);
    buf b = { 0 };
    struct marks m;
    serialise(&d, &b, &m);
    sprig_gguf *g = expect_ok("base", b.p, b.n);
    if (g) {
        CHECK_EQ_INT(sprig_gguf_n_tensors(g), 3);
        CHECK_EQ_INT(sprig_gguf_data_offset(g), m.data);
        CHECK_EQ_INT(sprig_gguf_tensor_at(g, 1)->nbytes, 68);
        size_t len;
        const char *s = sprig_gguf_arr_str(g, 4, 1, &len);
        CHECK(len == 2 && !memcmp(s, "bc", 2));
        sprig_gguf_close(g);
    }
    /* v2 has the same layout and is accepted */
    patch_u32(&b, 4, 2);
    g = expect_ok("base-v2", b.p, b.n);
    sprig_gguf_close(g);
    b_free(&b);
    d_free(&d);
}

/* Cut the base file inside every field. */
static void test_truncated_fields(void)
{
    struct desc d;
    base_desc(&d);
    buf b = { 0 };
    struct marks m;
    serialise(&d, &b, &m);
    char label[64], sub[96];
    for (int i = 0; i < d.nkv; i++) {
        snprintf(sub, sizeof sub, "kv %d", i);
        snprintf(label, sizeof label, "cut-kv%d-keylen", i);
        expect_fail(label, b.p, m.kv_key[i] + 3, SPRIG_E_FORMAT, sub, "name length");
        snprintf(label, sizeof label, "cut-kv%d-key", i);
        expect_fail(label, b.p, m.kv_key[i] + 9, SPRIG_E_FORMAT, sub, "runs past the end");
        snprintf(sub, sizeof sub, "kv %d '%s'", i, d.kv[i].key);
        snprintf(label, sizeof label, "cut-kv%d-type", i);
        expect_fail(label, b.p, m.kv_type[i] + 2, SPRIG_E_FORMAT, sub, "value type");
        snprintf(label, sizeof label, "cut-kv%d-value", i);
        expect_fail(label, b.p, m.kv_val[i], SPRIG_E_FORMAT, sub, "at offset");
        if (d.kv[i].type == SPRIG_GGUF_ARR) {
            snprintf(label, sizeof label, "cut-kv%d-arrlen", i);
            expect_fail(label, b.p, m.kv_val[i] + 6, SPRIG_E_FORMAT, sub, "array length");
            snprintf(label, sizeof label, "cut-kv%d-body", i);
            expect_fail(label, b.p, m.kv_val[i] + 14, SPRIG_E_FORMAT, sub, NULL);
            snprintf(label, sizeof label, "cut-kv%d-last", i);
            expect_fail(label, b.p, m.kv_key[i + 1] - 1, SPRIG_E_FORMAT, sub, NULL);
        }
    }
    const char *fields[] = { "n_dims", "ne[0]", "type", "data offset" };
    for (int i = 0; i < d.nt; i++) {
        snprintf(sub, sizeof sub, "tensor %d", i);
        snprintf(label, sizeof label, "cut-t%d-name", i);
        expect_fail(label, b.p, m.t_name[i] + 5, SPRIG_E_FORMAT, sub, "name length");
        size_t at[4] = { m.t_ndims[i] + 1, m.t_ne[i] + 4, m.t_type[i] + 3, m.t_off[i] + 7 };
        snprintf(sub, sizeof sub, "tensor %d '%s'", i, d.t[i].name);
        for (int f = 0; f < 4; f++) {
            snprintf(label, sizeof label, "cut-t%d-%d", i, f);
            expect_fail(label, b.p, at[f], SPRIG_E_FORMAT, sub, fields[f]);
        }
    }
    /* in the padding, in the data, one byte short */
    if (m.data > m.pad + 1) expect_fail("cut-padding", b.p, m.pad + 1, SPRIG_E_FORMAT, "padding", NULL);
    expect_fail("cut-data", b.p, m.data + 130, SPRIG_E_FORMAT, "tensor 1 'b'", "runs past the end");
    expect_fail("cut-last-byte", b.p, m.end - 1, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end");
    expect_fail("cut-header-version", b.p, 6, SPRIG_E_FORMAT, "version", NULL);
    expect_fail("cut-header-ntensors", b.p, 10, SPRIG_E_FORMAT, "n_tensors", NULL);
    expect_fail("cut-header-nkv", b.p, 20, SPRIG_E_FORMAT, "n_kv", NULL);
    expect_fail("cut-empty", b.p, 0, SPRIG_E_FORMAT, "too short", NULL);
    b_free(&b);
    d_free(&d);
}

/* Mutations of the serialised base file at its landmarks. */
enum patch_kind { P_U32, P_U64 };
struct byte_case {
    const char *label;
    int where;            /* see landmark() */
    int idx;
    size_t extra;
    enum patch_kind kind;
    uint64_t value;
    sprig_status code;
    const char *sub1, *sub2;
};

enum { L_MAGIC, L_VERSION, L_NT, L_NKV, L_KEY, L_TYPE, L_VAL, L_NAME, L_NDIMS, L_NE, L_TTYPE, L_TOFF };

static size_t landmark(const struct marks *m, int where, int idx)
{
    switch (where) {
    case L_MAGIC: return 0;
    case L_VERSION: return 4;
    case L_NT: return m->n_tensors;
    case L_NKV: return m->n_kv;
    case L_KEY: return m->kv_key[idx];
    case L_TYPE: return m->kv_type[idx];
    case L_VAL: return m->kv_val[idx];
    case L_NAME: return m->t_name[idx];
    case L_NDIMS: return m->t_ndims[idx];
    case L_NE: return m->t_ne[idx];
    case L_TTYPE: return m->t_type[idx];
    default: return m->t_off[idx];
    }
}

static const struct byte_case byte_cases[] = {
    { "bad-magic", L_MAGIC, 0, 0, P_U32, 0x58554747u /* GGUX */, SPRIG_E_FORMAT, "bad magic 'GGUX'", NULL },
    { "version-1", L_VERSION, 0, 0, P_U32, 1, SPRIG_E_UNSUPPORTED, "version 1", "no longer supported" },
    { "version-4", L_VERSION, 0, 0, P_U32, 4, SPRIG_E_UNSUPPORTED, "version 4", NULL },
    { "version-0", L_VERSION, 0, 0, P_U32, 0, SPRIG_E_UNSUPPORTED, "version 0", NULL },
    { "version-bigendian", L_VERSION, 0, 0, P_U32, 0x03000000u, SPRIG_E_UNSUPPORTED, "big-endian", NULL },
    { "n-tensors-2^63", L_NT, 0, 0, P_U64, 1ull << 63, SPRIG_E_FORMAT, "n_tensors 9223372036854775808", NULL },
    { "n-tensors-max", L_NT, 0, 0, P_U64, UINT64_MAX, SPRIG_E_FORMAT, "n_tensors", NULL },
    { "n-tensors-1000", L_NT, 0, 0, P_U64, 1000, SPRIG_E_FORMAT, "n_tensors 1000", "cannot fit" },
    { "n-tensors-4", L_NT, 0, 0, P_U64, 4, SPRIG_E_FORMAT, "tensor 3", NULL },
    { "n-kv-2^63", L_NKV, 0, 0, P_U64, 1ull << 63, SPRIG_E_FORMAT, "n_kv 9223372036854775808", NULL },
    { "n-kv-1000", L_NKV, 0, 0, P_U64, 1000, SPRIG_E_FORMAT, "n_kv 1000", "cannot fit" },
    { "n-kv-0", L_NKV, 0, 0, P_U64, 0, SPRIG_E_FORMAT, "tensor 0", NULL },   /* the keys are then read as tensor infos */
    { "key-len-2^63", L_KEY, 1, 0, P_U64, 1ull << 63, SPRIG_E_FORMAT, "kv 1", "name length 9223372036854775808" },
    { "key-len-0", L_KEY, 2, 0, P_U64, 0, SPRIG_E_FORMAT, "kv 2", "empty name" },
    { "key-len-300", L_KEY, 2, 0, P_U64, 300, SPRIG_E_FORMAT, "kv 2", "exceeds the limit of 256" },
    { "key-len-overreach", L_KEY, 5, 0, P_U64, 250, SPRIG_E_FORMAT, "kv 5 'test.f32", "name contains a NUL byte" },
    { "str-len-2^63", L_VAL, 0, 0, P_U64, 1ull << 63, SPRIG_E_FORMAT, "kv 0 'general.architecture'", "string length 9223372036854775808" },
    { "str-len-max", L_VAL, 0, 0, P_U64, UINT64_MAX, SPRIG_E_FORMAT, "kv 0 'general.architecture'", "string length" },
    { "type-unknown-13", L_TYPE, 2, 0, P_U32, 13, SPRIG_E_FORMAT, "kv 2 'test.flag'", "unknown value type 13" },
    { "type-unknown-max", L_TYPE, 2, 0, P_U32, UINT32_MAX, SPRIG_E_FORMAT, "kv 2 'test.flag'", "unknown value type 4294967295" },
    { "bool-2", L_VAL, 2, 0, P_U32, 2 | (0x4Du << 8), SPRIG_E_FORMAT, "kv 2 'test.flag'", "bool value 2" },
    { "arr-nested", L_VAL, 3, 0, P_U32, SPRIG_GGUF_ARR, SPRIG_E_FORMAT, "kv 3 'test.arr_i32'", "nested array" },
    { "arr-elem-13", L_VAL, 3, 0, P_U32, 13, SPRIG_E_FORMAT, "kv 3 'test.arr_i32'", "unknown array element type 13" },
    { "arr-n-2^63", L_VAL, 3, 4, P_U64, 1ull << 63, SPRIG_E_FORMAT, "kv 3 'test.arr_i32'", "array of 9223372036854775808 i32" },
    { "arr-n-2^62", L_VAL, 3, 4, P_U64, 1ull << 62, SPRIG_E_FORMAT, "kv 3 'test.arr_i32'", "runs past the end" },
    { "arr-n-4", L_VAL, 3, 4, P_U64, 4, SPRIG_E_FORMAT, "kv 4", NULL },
    { "arr-str-n-2^63", L_VAL, 4, 4, P_U64, 1ull << 63, SPRIG_E_FORMAT, "kv 4 'test.arr_str'", "cannot fit" },
    { "arr-str-n-1000", L_VAL, 4, 4, P_U64, 1000, SPRIG_E_FORMAT, "kv 4 'test.arr_str'", NULL },
    { "arr-str-elem-len", L_VAL, 4, 12 + 9, P_U64, 1ull << 63, SPRIG_E_FORMAT, "kv 4 'test.arr_str': element 1", "string length 9223372036854775808" },
    { "name-len-2^63", L_NAME, 1, 0, P_U64, 1ull << 63, SPRIG_E_FORMAT, "tensor 1", "name length" },
    { "name-len-0", L_NAME, 1, 0, P_U64, 0, SPRIG_E_FORMAT, "tensor 1", "empty name" },
    { "name-len-257", L_NAME, 1, 0, P_U64, 257, SPRIG_E_FORMAT, "tensor 1", "limit of 256" },
    { "n-dims-0", L_NDIMS, 0, 0, P_U32, 0, SPRIG_E_FORMAT, "tensor 0 'a'", "n_dims 0" },
    { "n-dims-5", L_NDIMS, 0, 0, P_U32, 5, SPRIG_E_FORMAT, "tensor 0 'a'", "n_dims 5" },
    { "n-dims-huge", L_NDIMS, 0, 0, P_U32, UINT32_MAX, SPRIG_E_FORMAT, "tensor 0 'a'", "n_dims 4294967295" },
    { "ne-0", L_NE, 0, 8, P_U64, 0, SPRIG_E_FORMAT, "tensor 0 'a'", "ne[1] = 0 is not positive" },
    { "ne-negative", L_NE, 0, 0, P_U64, (uint64_t)-1, SPRIG_E_FORMAT, "tensor 0 'a'", "ne[0] = -1" },
    { "ne-int64-min", L_NE, 1, 8, P_U64, 1ull << 63, SPRIG_E_FORMAT, "tensor 1 'b'", "ne[1] = -9223372036854775808" },
    { "ne-bytes-overflow", L_NE, 0, 8, P_U64, 1ull << 62, SPRIG_E_FORMAT, "tensor 0 'a'", "overflows" },
    { "ne-too-big-for-file", L_NE, 0, 8, P_U64, 1ull << 40, SPRIG_E_FORMAT, "tensor 0 'a'", "runs past the end" },
    { "ne0-not-block", L_NE, 1, 0, P_U64, 33, SPRIG_E_FORMAT, "tensor 1 'b'", "ne[0] = 33 is not a multiple of the q8_0 block size 32" },
    { "ne0-not-k-block", L_TTYPE, 1, 0, P_U32, SPRIG_TYPE_Q4_K, SPRIG_E_FORMAT, "tensor 1 'b'", "ne[0] = 32 is not a multiple of the q4_k block size 256" },
    { "type-removed-4", L_TTYPE, 0, 0, P_U32, 4, SPRIG_E_FORMAT, "tensor 0 'a'", "type 4 is not a known ggml type" },
    { "type-removed-5", L_TTYPE, 0, 0, P_U32, 5, SPRIG_E_FORMAT, "tensor 0 'a'", "type 5" },
    { "type-removed-31", L_TTYPE, 0, 0, P_U32, 31, SPRIG_E_FORMAT, "tensor 0 'a'", "type 31" },
    { "type-unknown-42", L_TTYPE, 2, 0, P_U32, 42, SPRIG_E_FORMAT, "tensor 2 'c'", "type 42" },
    { "type-unknown-max", L_TTYPE, 2, 0, P_U32, UINT32_MAX, SPRIG_E_FORMAT, "tensor 2 'c'", "type 4294967295" },
    { "offset-misaligned", L_TOFF, 1, 0, P_U64, 130, SPRIG_E_FORMAT, "tensor 1 'b'", "data offset 130 is not a multiple of the alignment 32" },
    { "offset-past-eof", L_TOFF, 2, 0, P_U64, 1ull << 40, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end" },
    { "offset-wraps", L_TOFF, 2, 0, P_U64, UINT64_MAX - 31, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end" },
    { "offset-at-eof", L_TOFF, 2, 0, P_U64, 256, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end" },
    { "overlap-next", L_TOFF, 2, 0, P_U64, 160, SPRIG_E_FORMAT, "tensor 2 'c': data [offset 160, 32 bytes) overlaps tensor 1 'b'", NULL },
    { "overlap-inside", L_TOFF, 1, 0, P_U64, 32, SPRIG_E_FORMAT, "tensor 1 'b': data [offset 32, 68 bytes) overlaps tensor 0 'a'", NULL },
    { "overlap-same", L_TOFF, 2, 0, P_U64, 0, SPRIG_E_FORMAT, "tensor 2 'c'", "overlaps tensor 0 'a'" },
};

static void test_byte_mutations(void)
{
    struct desc d;
    base_desc(&d);
    buf base = { 0 };
    struct marks m;
    serialise(&d, &base, &m);
    for (size_t i = 0; i < sizeof byte_cases / sizeof byte_cases[0]; i++) {
        const struct byte_case *c = &byte_cases[i];
        buf b = { 0 };
        b_put(&b, base.p, base.n);
        size_t at = landmark(&m, c->where, c->idx) + c->extra;
        if (c->kind == P_U32) patch_u32(&b, at, (uint32_t)c->value);
        else patch_u64(&b, at, c->value);
        expect_fail(c->label, b.p, b.n, c->code, c->sub1, c->sub2);
        b_free(&b);
    }
    b_free(&base);
    d_free(&d);
}

/* Mutations easier to say in the description. */
static void test_desc_mutations(void)
{
    struct desc d;
    buf b = { 0 };
    struct marks m;

    base_desc(&d);   /* duplicate key */
    d.kv[3].key = "general.architecture";
    serialise(&d, &b, &m);
    expect_fail("dup-key", b.p, b.n, SPRIG_E_FORMAT, "kv 3 'general.architecture': duplicate key (also kv 0)", NULL);
    d_free(&d);

    base_desc(&d);   /* a K-quant tensor whose data runs past the end: q6_k [256, 1] is 210 bytes at 224 of 256 */
    d.t[2] = (struct dt){ "c", 2, { 256, 1 }, SPRIG_TYPE_Q6_K, 224 };
    serialise(&d, &b, &m);
    expect_fail("q6_k-past-eof", b.p, b.n, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end");
    d_free(&d);
    base_desc(&d);   /* q4_k [256, 2]: 288 bytes from 224 overlap nothing but run past a 480-byte section */
    d.t[2] = (struct dt){ "c", 2, { 256, 2 }, SPRIG_TYPE_Q4_K, 224 };
    d.data_bytes = 480;
    serialise(&d, &b, &m);
    expect_fail("q4_k-past-eof", b.p, b.n, SPRIG_E_FORMAT, "tensor 2 'c'", "runs past the end");
    d_free(&d);
    base_desc(&d);   /* IQ and other known types the table has no conversions for still parse (refused by the model) */
    d.t[2] = (struct dt){ "c", 2, { 256, 1 }, 16 /* iq2_xxs: 66 bytes */, 224 };
    d.data_bytes = 320;
    serialise(&d, &b, &m);
    {
        uint8_t *copy = malloc(b.n);
        memcpy(copy, b.p, b.n);
        sprig_error e = { 0 };
        sprig_gguf *g = sprig_gguf_open_memory(copy, b.n, "iq.gguf", &e);
        CHECKF(g != NULL, "iq2_xxs tensor: %s", e.msg);
        if (g) CHECK(sprig_gguf_find_tensor(g, "c") && sprig_gguf_find_tensor(g, "c")->nbytes == 66);
        sprig_gguf_close(g);
        free(copy);
    }
    d_free(&d);

    base_desc(&d);   /* duplicate tensor name */
    d.t[2].name = "a";
    serialise(&d, &b, &m);
    expect_fail("dup-tensor", b.p, b.n, SPRIG_E_FORMAT, "tensor 2 'a': duplicate tensor name (also tensor 0)", NULL);
    d_free(&d);

    base_desc(&d);   /* NUL inside a key and inside a tensor name */
    d.kv[2].key = "test.flag";
    serialise(&d, &b, &m);
    b.p[m.kv_key[2] + 8 + 4] = 0;
    expect_fail("key-nul", b.p, b.n, SPRIG_E_FORMAT, "kv 2 'test?flag': name contains a NUL byte", NULL);
    d_free(&d);
    base_desc(&d);
    d.t[1].name = "bb";
    serialise(&d, &b, &m);
    b.p[m.t_name[1] + 8] = 0;
    expect_fail("name-nul", b.p, b.n, SPRIG_E_FORMAT, "tensor 1 '?b': name contains a NUL byte", NULL);
    d_free(&d);

    /* bad general.alignment: 0, 3, too big, wrong types */
    const uint32_t bad_align[] = { 0, 3, 48, 1u << 21, 0x80000000u };
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        base_desc(&d);
        patch_u32(&d.kv[1].val, 0, bad_align[i]);
        serialise(&d, &b, &m);
        char label[64], sub[96];
        snprintf(label, sizeof label, "alignment-%u", bad_align[i]);
        snprintf(sub, sizeof sub, "kv 1 'general.alignment': %u is not a power of two", bad_align[i]);
        expect_fail(label, b.p, b.n, SPRIG_E_FORMAT, sub, NULL);
        d_free(&d);
    }
    base_desc(&d);
    d.kv[1].type = SPRIG_GGUF_I32;
    serialise(&d, &b, &m);
    expect_fail("alignment-i32", b.p, b.n, SPRIG_E_FORMAT, "kv 1 'general.alignment': type i32, expected u32", NULL);
    d_free(&d);
    base_desc(&d);
    d.kv[1].type = SPRIG_GGUF_STR;
    b_free(&d.kv[1].val);
    b_str(&d.kv[1].val, "32");
    serialise(&d, &b, &m);
    expect_fail("alignment-str", b.p, b.n, SPRIG_E_FORMAT, "type str, expected u32", NULL);
    d_free(&d);

    /* alignment 64: the tensors at 0/128/224 are then misaligned (224) */
    base_desc(&d);
    patch_u32(&d.kv[1].val, 0, 64);
    d.align = 64;
    serialise(&d, &b, &m);
    expect_fail("alignment-64-misaligned", b.p, b.n, SPRIG_E_FORMAT, "tensor 2 'c'", "alignment 64");
    d.t[2].offset = 256;
    d.data_bytes = 288;
    serialise(&d, &b, &m);
    sprig_gguf *g = expect_ok("alignment-64", b.p, b.n);
    if (g) {
        CHECK_EQ_INT(sprig_gguf_alignment(g), 64);
        CHECK_EQ_INT(sprig_gguf_data_offset(g) % 64, 0);
        sprig_gguf_close(g);
    }
    d_free(&d);

    /* a data section that does not start where the padding says (alignment 1 vs 32) */
    base_desc(&d);
    d.align = 1;
    serialise(&d, &b, &m);
    if (m.pad % 32) {
        /* the reader pads to 32, so everything shifts and the last tensor runs out */
        sprig_error e = { 0 };
        sprig_gguf *g2 = sprig_gguf_open_memory(b.p, b.n, "shift.gguf", &e);
        CHECK(g2 == NULL && contains(e.msg, "tensor 2 'c'"));
        sprig_gguf_close(g2);
    }
    d_free(&d);

    /* a key that is long but within the limit, and UTF-8 in keys: fine */
    base_desc(&d);
    char key256[257];
    memset(key256, 'k', 256);
    key256[256] = 0;
    d.kv[5].key = key256;
    d.kv[2].key = "test.\xe2\x96\x81" "flag\xff";
    serialise(&d, &b, &m);
    g = expect_ok("long-key", b.p, b.n);
    if (g) {
        CHECK(sprig_gguf_find_kv(g, key256) == 5);
        sprig_gguf_close(g);
    }
    d_free(&d);
    b_free(&b);
}

/* Random byte flips: each mutant either parses or fails cleanly. */
static void test_random_flips(void)
{
    struct desc d;
    base_desc(&d);
    buf base = { 0 };
    struct marks m;
    serialise(&d, &base, &m);
    sprig_rng r;
    sprig_rng_seed(&r, 7);
    int iters = test_quick() ? 3000 : 20000, parsed = 0;
    uint8_t *p = malloc(base.n);
    for (int it = 0; it < iters; it++) {
        memcpy(p, base.p, base.n);
        int flips = 1 + (int)(sprig_rng_u64(&r) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(sprig_rng_u64(&r) % m.data);   /* header region */
            uint64_t v = sprig_rng_u64(&r);
            p[at] = (v & 3) == 0 ? 0xff : (v & 3) == 1 ? 0 : (uint8_t)(v >> 8);
        }
        size_t n = base.n - (size_t)(sprig_rng_u64(&r) % 3 == 0 ? sprig_rng_u64(&r) % base.n : 0);
        sprig_error e = { 0 };
        sprig_gguf *g = sprig_gguf_open_memory(p, n, "flip.gguf", &e);
        if (g) {
            parsed++;
            /* touch everything the accessors expose */
            char fb[256];
            for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) sprig_gguf_kv_format(g, i, fb, sizeof fb);
            for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
                const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
                volatile uint8_t x = ((const uint8_t *)t->data)[t->nbytes - 1];
                (void)x;
            }
            sprig_gguf_close(g);
        } else {
            CHECK(e.code != SPRIG_OK && !strncmp(e.msg, "flip.gguf: ", 11));
        }
    }
    free(p);
    fprintf(stderr, "  %d of %d mutants parsed\n", parsed, iters);
    b_free(&base);
    d_free(&d);
}

static void test_missing_file(void)
{
    sprig_error e = { 0 };
    sprig_gguf *g = sprig_gguf_open("/nonexistent/model.gguf", &e);
    CHECK(g == NULL && e.code == SPRIG_E_IO && contains(e.msg, "/nonexistent/model.gguf"));
    const char *path = test_tmpfile("zero.gguf");
    CHECK(write_file(path, "", 0));
    g = sprig_gguf_open(path, &e);
    CHECK(g == NULL && e.code == SPRIG_E_FORMAT && contains(e.msg, "zero.gguf"));
    g = sprig_gguf_open(test_tmpdir(), &e);
    CHECK(g == NULL && e.code == SPRIG_E_IO);
}

int main(void)
{
    RUN(test_roundtrip);
    RUN(test_empty_file);
    RUN(test_stories260k);
    RUN(test_stories_truncated);
    RUN(test_base_is_valid);
    RUN(test_truncated_fields);
    RUN(test_byte_mutations);
    RUN(test_desc_mutations);
    RUN(test_random_flips);
    RUN(test_missing_file);
    return test_summary("test-gguf");
}
