/*
 * gguf — see gguf.h. The validating reader and the writer.
 *
 * Reader: one pass over the mapping with a bounds-checked cursor. Every count
 * is compared with the bytes that remain before anything is allocated (a kv
 * needs at least 14 bytes, a tensor info 33, a string-array element 8), so a
 * hostile header cannot make us allocate more than the file could describe.
 * Keys and tensor names are copied into one arena after the pass; string
 * arrays get an offset index so element i is found in O(1). Numeric array
 * elements may sit at any byte offset in the mapping and are read with
 * memcpy. After the pass: general.alignment, the data section start, each
 * tensor's alignment and extent, and pairwise overlap (sorted sweep).
 *
 * Writer: keys and tensor descriptions are collected (values serialised at
 * once, tensor data copied or produced later by a fill callback), then the
 * file is streamed to "<path>.tmp" and renamed over <path>.
 */
#include "gguf/gguf.h"
#include "tensor/types.h"
#include "base/mmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- value types */

/* Bytes of one scalar of each value type (0: variable-size STR / ARR). */
static const size_t vtype_size[SPRIG_GGUF_VTYPE_COUNT] = {
    [SPRIG_GGUF_U8] = 1,  [SPRIG_GGUF_I8] = 1,  [SPRIG_GGUF_U16] = 2, [SPRIG_GGUF_I16] = 2,
    [SPRIG_GGUF_U32] = 4, [SPRIG_GGUF_I32] = 4, [SPRIG_GGUF_F32] = 4, [SPRIG_GGUF_BOOL] = 1,
    [SPRIG_GGUF_STR] = 0, [SPRIG_GGUF_ARR] = 0, [SPRIG_GGUF_U64] = 8, [SPRIG_GGUF_I64] = 8,
    [SPRIG_GGUF_F64] = 8,
};

static const char *const vtype_names[SPRIG_GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64",
};

/* 1 = signed integer, 2 = unsigned integer, 0 = other. */
static const uint8_t vtype_intkind[SPRIG_GGUF_VTYPE_COUNT] = {
    [SPRIG_GGUF_U8] = 2, [SPRIG_GGUF_I8] = 1, [SPRIG_GGUF_U16] = 2, [SPRIG_GGUF_I16] = 1,
    [SPRIG_GGUF_U32] = 2, [SPRIG_GGUF_I32] = 1, [SPRIG_GGUF_U64] = 2, [SPRIG_GGUF_I64] = 1,
};

const char *sprig_gguf_vtype_name(int vtype)
{
    if (vtype < 0 || vtype >= SPRIG_GGUF_VTYPE_COUNT) return "?";
    return vtype_names[vtype];
}

static bool vtype_is_scalar(int t) { return t >= 0 && t < SPRIG_GGUF_VTYPE_COUNT && vtype_size[t] != 0; }

/* Load one little-endian scalar of type t at p (any alignment) as signed/unsigned/double. */
static uint64_t load_u(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int64_t load_s(const uint8_t *p, size_t n)
{
    uint64_t v = load_u(p, n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~(uint64_t)0 << (8 * n);   /* sign-extend */
    int64_t s;
    memcpy(&s, &v, 8);
    return s;
}

static double load_f(const uint8_t *p, int t)
{
    if (t == SPRIG_GGUF_F32) {
        uint32_t u = (uint32_t)load_u(p, 4);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint64_t u = load_u(p, 8);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ---------------------------------------------------------------- reader state */

struct gkv {
    const char *key;         /* NUL-terminated, in the arena */
    const uint8_t *key_raw;  /* in the mapping (until the arena exists) */
    uint32_t key_len;
    int type;
    int elem_type;           /* ARR only */
    uint64_t n;              /* ARR: element count; STR: byte length */
    const uint8_t *val;      /* scalar / string bytes / first array element */
    const uint8_t *raw;      /* the serialised value (after the type field) */
    size_t raw_len;
    uint64_t *str_off;       /* ARR of STR: offset in the mapping of element i's bytes */
};

struct sprig_gguf {
    char *path;
    sprig_map map;           /* owned mapping (sprig_gguf_open) */
    const uint8_t *base;
    size_t size;
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv;
    struct gkv *kv;          /* [n_kv] */
    int64_t n_tensors;
    sprig_gguf_tensor *t;    /* [n_tensors] */
    char *arena;             /* keys and names */
    int32_t *kv_hash;        /* [kv_hcap] kv index + 1, 0 = empty */
    int32_t *t_hash;         /* [t_hcap] */
    size_t kv_hcap, t_hcap;
};

typedef struct {
    const uint8_t *p;
    size_t size, off;
} cursor;

static size_t remaining(const cursor *c) { return c->size - c->off; }

static bool rd(cursor *c, void *out, size_t n)
{
    if (n > remaining(c)) return false;
    memcpy(out, c->p + c->off, n);
    c->off += n;
    return true;
}

static bool rd_u32(cursor *c, uint32_t *v)
{
    uint8_t b[4];
    if (!rd(c, b, 4)) return false;
    *v = (uint32_t)load_u(b, 4);
    return true;
}

static bool rd_u64(cursor *c, uint64_t *v)
{
    uint8_t b[8];
    if (!rd(c, b, 8)) return false;
    *v = load_u(b, 8);
    return true;
}

/* A printable copy of a key/name for messages: control bytes become '?',
 * at most 80 bytes shown. */
static const char *disp(const uint8_t *s, size_t n, char buf[96])
{
    size_t m = n > 80 ? 80 : n, k = 0;
    for (size_t i = 0; i < m; i++) buf[k++] = (s[i] < 0x20 || s[i] == 0x7f) ? '?' : (char)s[i];
    if (m < n) { memcpy(buf + k, "...", 3); k += 3; }
    buf[k] = 0;
    return buf;
}

static uint64_t hash_bytes(const void *s, size_t n)
{
    const uint8_t *p = s;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static size_t hash_cap(int64_t n)
{
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    return cap;
}

/* Insert index i (name s[n]) into table; returns the index of an existing
 * entry with the same name, or -1 when inserted. names(i) gives the name. */
typedef const char *(*name_of_fn)(const sprig_gguf *g, int64_t i, size_t *len);

static const char *kv_name_of(const sprig_gguf *g, int64_t i, size_t *len)
{
    *len = g->kv[i].key_len;
    return (const char *)g->kv[i].key_raw;
}

static const char *t_name_of(const sprig_gguf *g, int64_t i, size_t *len)
{
    *len = strlen(g->t[i].name);
    return g->t[i].name;
}

static int64_t hash_insert(const sprig_gguf *g, int32_t *tab, size_t cap, name_of_fn name_of,
                           int64_t i, const void *s, size_t n)
{
    size_t h = (size_t)hash_bytes(s, n) & (cap - 1);
    for (;;) {
        if (!tab[h]) {
            tab[h] = (int32_t)(i + 1);
            return -1;
        }
        size_t len;
        const char *o = name_of(g, tab[h] - 1, &len);
        if (len == n && !memcmp(o, s, n)) return tab[h] - 1;
        h = (h + 1) & (cap - 1);
    }
}

static int64_t hash_find(const sprig_gguf *g, const int32_t *tab, size_t cap, name_of_fn name_of, const char *s)
{
    if (!tab) return -1;
    size_t n = strlen(s);
    size_t h = (size_t)hash_bytes(s, n) & (cap - 1);
    while (tab[h]) {
        size_t len;
        const char *o = name_of(g, tab[h] - 1, &len);
        if (len == n && !memcmp(o, s, n)) return tab[h] - 1;
        h = (h + 1) & (cap - 1);
    }
    return -1;
}

void sprig_gguf_close(sprig_gguf *g)
{
    if (!g) return;
    if (g->kv)
        for (int64_t i = 0; i < g->n_kv; i++) free(g->kv[i].str_off);
    free(g->kv);
    free(g->t);
    free(g->arena);
    free(g->kv_hash);
    free(g->t_hash);
    sprig_unmap(&g->map);
    free(g->path);
    free(g);
}

/* ---------------------------------------------------------------- parsing */

#define FAIL(code, ...) do { sprig_err(err, code, __VA_ARGS__); return false; } while (0)

/* Read a key or tensor name: u64 length (1..MAX_NAME), bytes without NUL. */
static bool parse_name(cursor *c, const char *file, const char *section, int64_t idx,
                       const uint8_t **s, uint32_t *len, sprig_error *err)
{
    size_t at = c->off;
    uint64_t n;
    if (!rd_u64(c, &n))
        FAIL(SPRIG_E_FORMAT, "%s: %s %" PRId64 ": name length at offset %zu is past the end of the file (%zu bytes)",
             file, section, idx, at, c->size);
    if (n == 0) FAIL(SPRIG_E_FORMAT, "%s: %s %" PRId64 ": empty name", file, section, idx);
    if (n > SPRIG_GGUF_MAX_NAME)
        FAIL(SPRIG_E_FORMAT, "%s: %s %" PRId64 ": name length %" PRIu64 " exceeds the limit of %d bytes",
             file, section, idx, n, SPRIG_GGUF_MAX_NAME);
    if (n > remaining(c))
        FAIL(SPRIG_E_FORMAT, "%s: %s %" PRId64 ": name (%" PRIu64 " bytes at offset %zu) runs past the end of the file (%zu bytes)",
             file, section, idx, n, c->off, c->size);
    const uint8_t *p = c->p + c->off;
    if (memchr(p, 0, (size_t)n)) {
        char b[96];
        FAIL(SPRIG_E_FORMAT, "%s: %s %" PRId64 " '%s': name contains a NUL byte", file, section, idx, disp(p, (size_t)n, b));
    }
    c->off += (size_t)n;
    *s = p;
    *len = (uint32_t)n;
    return true;
}

/* The value of kv `idx` of type `kv->type`: scalars, strings, flat arrays. */
static bool parse_value(cursor *c, const char *file, int64_t idx, const char *key, struct gkv *kv, bool store,
                        sprig_error *err)
{
    size_t start = c->off;
    int t = kv->type;
    if (t < 0 || t >= SPRIG_GGUF_VTYPE_COUNT)
        FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': unknown value type %d", file, idx, key, t);
    if (vtype_is_scalar(t)) {
        size_t sz = vtype_size[t];
        if (sz > remaining(c))
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': %s value at offset %zu runs past the end of the file (%zu bytes)",
                 file, idx, key, vtype_names[t], c->off, c->size);
        kv->val = c->p + c->off;
        if (t == SPRIG_GGUF_BOOL && *kv->val > 1)
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': bool value %u is not 0 or 1", file, idx, key, *kv->val);
        c->off += sz;
    } else if (t == SPRIG_GGUF_STR) {
        uint64_t n;
        if (!rd_u64(c, &n))
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': string length at offset %zu is past the end of the file (%zu bytes)",
                 file, idx, key, start, c->size);
        if (n > remaining(c))
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': string length %" PRIu64 " exceeds the %zu bytes left in the file",
                 file, idx, key, n, remaining(c));
        kv->n = n;
        kv->val = c->p + c->off;
        c->off += (size_t)n;
    } else {   /* ARR */
        uint32_t et;
        uint64_t n;
        if (!rd_u32(c, &et))
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': array element type at offset %zu is past the end of the file (%zu bytes)",
                 file, idx, key, start, c->size);
        if (et == SPRIG_GGUF_ARR)
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': nested array (array of arrays) is not allowed", file, idx, key);
        if (et >= SPRIG_GGUF_VTYPE_COUNT)
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': unknown array element type %u", file, idx, key, et);
        if (!rd_u64(c, &n))
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': array length at offset %zu is past the end of the file (%zu bytes)",
                 file, idx, key, c->off, c->size);
        kv->elem_type = (int)et;
        kv->n = n;
        if (et == SPRIG_GGUF_STR) {
            /* each element needs at least its 8-byte length */
            if (n > remaining(c) / 8)
                FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': array of %" PRIu64 " strings cannot fit in the %zu bytes left in the file",
                     file, idx, key, n, remaining(c));
            if (store && !(kv->str_off = malloc((size_t)(n ? n : 1) * sizeof(uint64_t))))
                FAIL(SPRIG_E_NOMEM, "%s: kv %" PRId64 " '%s': out of memory for %" PRIu64 " strings", file, idx, key, n);
            kv->val = c->p + c->off;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t len;
                size_t at = c->off;
                if (!rd_u64(c, &len))
                    FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': element %" PRIu64 ": string length at offset %zu is past the end of the file (%zu bytes)",
                         file, idx, key, i, at, c->size);
                if (len > remaining(c))
                    FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': element %" PRIu64 ": string length %" PRIu64 " exceeds the %zu bytes left in the file",
                         file, idx, key, i, len, remaining(c));
                if (store) kv->str_off[i] = c->off;
                c->off += (size_t)len;
            }
        } else {
            size_t sz = vtype_size[et], bytes;
            if (n > SIZE_MAX || sprig_mul_ovf((size_t)n, sz, &bytes) || bytes > remaining(c))
                FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': array of %" PRIu64 " %s (%zu bytes each) runs past the end of the file (%zu bytes left)",
                     file, idx, key, n, vtype_names[et], sz, remaining(c));
            kv->val = c->p + c->off;
            if (et == SPRIG_GGUF_BOOL)
                for (size_t i = 0; i < bytes; i++)
                    if (kv->val[i] > 1)
                        FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': element %zu: bool value %u is not 0 or 1",
                             file, idx, key, i, kv->val[i]);
            c->off += bytes;
        }
    }
    kv->raw = c->p + start;
    kv->raw_len = c->off - start;
    return true;
}

static bool parse_tensor_info(cursor *c, const char *file, int64_t idx, sprig_gguf_tensor *t,
                              const uint8_t **name, uint32_t *name_len, sprig_error *err)
{
    if (!parse_name(c, file, "tensor", idx, name, name_len, err)) return false;
    char nb[96];
    const char *nm = disp(*name, *name_len, nb);
    uint32_t nd;
    size_t at = c->off;
    if (!rd_u32(c, &nd))
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': n_dims at offset %zu is past the end of the file (%zu bytes)",
             file, idx, nm, at, c->size);
    if (nd < 1 || nd > SPRIG_GGUF_MAX_DIMS)
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': n_dims %u is outside 1..%d", file, idx, nm, nd, SPRIG_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < SPRIG_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        at = c->off;
        if (!rd_u64(c, &v))
            FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': ne[%u] at offset %zu is past the end of the file (%zu bytes)",
                 file, idx, nm, d, at, c->size);
        int64_t s;
        memcpy(&s, &v, 8);
        if (s < 1) FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': ne[%u] = %" PRId64 " is not positive", file, idx, nm, d, s);
        t->ne[d] = s;
    }
    uint32_t type;
    at = c->off;
    if (!rd_u32(c, &type))
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': type at offset %zu is past the end of the file (%zu bytes)",
             file, idx, nm, at, c->size);
    const struct sprig_type_traits *tr = sprig_type_traits(type > INT32_MAX ? -1 : (int)type);
    if (!tr) FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': type %u is not a known ggml type", file, idx, nm, type);
    t->type = (int)type;
    int64_t nel = 1;
    for (int d = 0; d < SPRIG_GGUF_MAX_DIMS; d++)
        if (__builtin_mul_overflow(nel, t->ne[d], &nel))
            FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': element count [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "] overflows",
                 file, idx, nm, t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    if (t->ne[0] % tr->blck)
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': ne[0] = %" PRId64 " is not a multiple of the %s block size %" PRId64,
             file, idx, nm, t->ne[0], tr->name, tr->blck);
    size_t row;
    int64_t rows = nel / t->ne[0];
    if (!sprig_row_bytes(t->type, t->ne[0], &row) || (uint64_t)rows > SIZE_MAX ||
        sprig_mul_ovf(row, (size_t)rows, &t->nbytes))
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': byte size of %" PRId64 " %s elements overflows",
             file, idx, nm, nel, tr->name);
    at = c->off;
    if (!rd_u64(c, &t->offset))
        FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': data offset at offset %zu is past the end of the file (%zu bytes)",
             file, idx, nm, at, c->size);
    return true;
}

static int cmp_by_offset(const void *a, const void *b, void *ctx)
{
    const sprig_gguf_tensor *t = ctx;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (t[i].offset != t[j].offset) return t[i].offset < t[j].offset ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Data section: aligned offsets, inside the file, no two tensors overlapping. */
static bool check_data(sprig_gguf *g, const char *file, sprig_error *err)
{
    size_t avail = g->size - g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        sprig_gguf_tensor *t = &g->t[i];
        if (t->offset % g->alignment)
            FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': data offset %" PRIu64 " is not a multiple of the alignment %zu",
                 file, i, t->name, t->offset, g->alignment);
        if (t->offset > avail || t->nbytes > avail - t->offset)
            FAIL(SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': data [offset %" PRIu64 ", %zu bytes) runs past the end of the file (data section is %zu bytes)",
                 file, i, t->name, t->offset, t->nbytes, avail);
        t->data = g->base + g->data_offset + t->offset;
    }
    if (g->n_tensors < 2) return true;
    int64_t *ord = malloc((size_t)g->n_tensors * sizeof *ord);
    if (!ord) FAIL(SPRIG_E_NOMEM, "%s: out of memory", file);
    for (int64_t i = 0; i < g->n_tensors; i++) ord[i] = i;
    qsort_r(ord, (size_t)g->n_tensors, sizeof *ord, cmp_by_offset, g->t);
    int64_t far = ord[0];   /* the tensor reaching furthest so far */
    for (int64_t k = 1; k < g->n_tensors; k++) {
        const sprig_gguf_tensor *a = &g->t[far], *b = &g->t[ord[k]];
        if (b->offset < a->offset + a->nbytes) {
            int64_t hi = ord[k] > far ? ord[k] : far, lo = ord[k] > far ? far : ord[k];
            const sprig_gguf_tensor *th = &g->t[hi], *tl = &g->t[lo];
            sprig_err(err, SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': data [offset %" PRIu64 ", %zu bytes) overlaps tensor %" PRId64 " '%s' [offset %" PRIu64 ", %zu bytes)",
                      file, hi, th->name, th->offset, th->nbytes, lo, tl->name, tl->offset, tl->nbytes);
            free(ord);
            return false;
        }
        if (b->offset + b->nbytes > a->offset + a->nbytes) far = ord[k];
    }
    free(ord);
    return true;
}

/* One walk over the kv and tensor-info sections. With store == false
 * nothing is allocated or kept (the validation pass); with store == true the
 * tables (sized by the first pass) are filled. */
static bool walk_header(sprig_gguf *g, cursor *c, bool store, const uint8_t **tname, uint32_t *tlen, size_t *names_bytes,
                        sprig_error *err)
{
    const char *file = g->path;
    struct gkv scratch_kv;
    sprig_gguf_tensor scratch_t;
    const uint8_t *scratch_name;
    uint32_t scratch_len;
    *names_bytes = 0;
    for (int64_t i = 0; i < g->n_kv; i++) {
        struct gkv *kv = store ? &g->kv[i] : &scratch_kv;
        memset(kv, 0, sizeof *kv);
        if (!parse_name(c, file, "kv", i, &kv->key_raw, &kv->key_len, err)) return false;
        char kb[96];
        const char *key = disp(kv->key_raw, kv->key_len, kb);
        if (store) {
            int64_t dup = hash_insert(g, g->kv_hash, g->kv_hcap, kv_name_of, i, kv->key_raw, kv->key_len);
            if (dup >= 0)
                return sprig_err(err, SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': duplicate key (also kv %" PRId64 ")", file, i, key, dup),
                       false;
        }
        uint32_t type;
        size_t at = c->off;
        if (!rd_u32(c, &type))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': value type at offset %zu is past the end of the file (%zu bytes)",
                             file, i, key, at, c->size), false;
        if (type >= SPRIG_GGUF_VTYPE_COUNT)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: kv %" PRId64 " '%s': unknown value type %u", file, i, key, type), false;
        kv->type = (int)type;
        if (!parse_value(c, file, i, key, kv, store, err)) return false;
        *names_bytes += kv->key_len + 1u;
    }
    for (int64_t i = 0; i < g->n_tensors; i++) {
        sprig_gguf_tensor *t = store ? &g->t[i] : &scratch_t;
        const uint8_t **nm = store ? &tname[i] : &scratch_name;
        uint32_t *nl = store ? &tlen[i] : &scratch_len;
        if (!parse_tensor_info(c, file, i, t, nm, nl, err)) return false;
        *names_bytes += *nl + 1u;
    }
    return true;
}

static bool parse(sprig_gguf *g, sprig_error *err)
{
    const char *file = g->path;
    cursor c = { g->base, g->size, 0 };
    char magic[4];
    if (!rd(&c, magic, 4))
        FAIL(SPRIG_E_FORMAT, "%s: header: file is %zu bytes, too short for the GGUF magic", file, g->size);
    if (memcmp(magic, "GGUF", 4)) {
        char b[96];
        FAIL(SPRIG_E_FORMAT, "%s: header: bad magic '%s' (expected 'GGUF'): not a GGUF file", file, disp((const uint8_t *)magic, 4, b));
    }
    if (!rd_u32(&c, &g->version)) FAIL(SPRIG_E_FORMAT, "%s: header: truncated at the version field", file);
    if (g->version == 1)
        FAIL(SPRIG_E_UNSUPPORTED, "%s: header: version 1 (GGUF v1, 32-bit counts) is no longer supported; supported: 2, 3", file);
    if (g->version == 0x03000000u || g->version == 0x02000000u)
        FAIL(SPRIG_E_UNSUPPORTED, "%s: header: version %u looks like a big-endian GGUF; only little-endian files are supported",
             file, g->version);
    if (g->version < 2 || g->version > 3)
        FAIL(SPRIG_E_UNSUPPORTED, "%s: header: version %u is not supported (supported: 2, 3)", file, g->version);
    uint64_t nt, nk;
    if (!rd_u64(&c, &nt)) FAIL(SPRIG_E_FORMAT, "%s: header: truncated at n_tensors", file);
    if (!rd_u64(&c, &nk)) FAIL(SPRIG_E_FORMAT, "%s: header: truncated at n_kv", file);
    if (nt > SPRIG_GGUF_MAX_TENSORS)
        FAIL(SPRIG_E_FORMAT, "%s: header: n_tensors %" PRIu64 " exceeds the limit of %d", file, nt, SPRIG_GGUF_MAX_TENSORS);
    if (nk > SPRIG_GGUF_MAX_KV)
        FAIL(SPRIG_E_FORMAT, "%s: header: n_kv %" PRIu64 " exceeds the limit of %d", file, nk, SPRIG_GGUF_MAX_KV);
    g->n_kv = (int64_t)nk;
    g->n_tensors = (int64_t)nt;
    /* smallest kv: 8 len + 1 byte key + 4 type + 1 value; smallest tensor
     * info: 8 + 1 + 4 + 8 + 4 + 8. Counts beyond that are hopeless. */
    bool counts_fit = nk * 14 + nt * 33 <= remaining(&c);

    /* pass 1: validate every field, allocate nothing */
    cursor c1 = c;
    size_t names_bytes;
    if (!walk_header(g, &c1, false, NULL, NULL, &names_bytes, err)) {
        if (!counts_fit && err) {
            size_t m = strnlen(err->msg, sizeof err->msg);
            snprintf(err->msg + m, sizeof err->msg - m, " (the header's n_kv %" PRIu64 " and n_tensors %" PRIu64
                     " cannot fit in the %zu bytes after it)", nk, nt, remaining(&c));
        }
        return false;
    }
    if (!counts_fit)   /* cannot happen: pass 1 consumed at least the minimum per entry */
        FAIL(SPRIG_E_INTERNAL, "%s: header: n_kv %" PRIu64 " / n_tensors %" PRIu64 " inconsistent with the parsed size", file, nk, nt);

    /* pass 2: allocate tables sized by what pass 1 proved is there */
    g->kv = calloc(nk ? nk : 1, sizeof *g->kv);
    g->t = calloc(nt ? nt : 1, sizeof *g->t);
    g->kv_hcap = hash_cap(g->n_kv);
    g->t_hcap = hash_cap(g->n_tensors);
    g->kv_hash = calloc(g->kv_hcap, sizeof *g->kv_hash);
    g->t_hash = calloc(g->t_hcap, sizeof *g->t_hash);
    g->arena = malloc(names_bytes ? names_bytes : 1);
    const uint8_t **tname = calloc(nt ? nt : 1, sizeof *tname);
    uint32_t *tlen = calloc(nt ? nt : 1, sizeof *tlen);
    bool ok = g->kv && g->t && g->kv_hash && g->t_hash && g->arena && tname && tlen;
    if (!ok) sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory for the header tables", file);
    if (ok) ok = walk_header(g, &c, true, tname, tlen, &names_bytes, err);
    if (ok) {
        /* the arena: keys then names, NUL-terminated */
        char *a = g->arena;
        for (int64_t i = 0; i < g->n_kv; i++) {
            memcpy(a, g->kv[i].key_raw, g->kv[i].key_len);
            a[g->kv[i].key_len] = 0;
            g->kv[i].key = a;
            g->kv[i].key_raw = (const uint8_t *)a;
            a += g->kv[i].key_len + 1;
        }
        for (int64_t i = 0; i < g->n_tensors; i++) {
            memcpy(a, tname[i], tlen[i]);
            a[tlen[i]] = 0;
            g->t[i].name = a;
            a += tlen[i] + 1;
        }
        for (int64_t i = 0; i < g->n_tensors && ok; i++) {
            int64_t dup = hash_insert(g, g->t_hash, g->t_hcap, t_name_of, i, g->t[i].name, tlen[i]);
            if (dup >= 0) {
                ok = false;
                sprig_err(err, SPRIG_E_FORMAT, "%s: tensor %" PRId64 " '%s': duplicate tensor name (also tensor %" PRId64 ")",
                          file, i, g->t[i].name, dup);
            }
        }
    }
    free(tname);
    free(tlen);
    if (!ok) return false;

    g->alignment = SPRIG_GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = sprig_gguf_find_kv(g, "general.alignment");
    if (ai >= 0) {
        const struct gkv *kv = &g->kv[ai];
        if (kv->type != SPRIG_GGUF_U32)
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " 'general.alignment': type %s, expected u32", file, ai, sprig_gguf_vtype_name(kv->type));
        uint32_t a = (uint32_t)load_u(kv->val, 4);
        if (a == 0 || (a & (a - 1)) || a > SPRIG_GGUF_MAX_ALIGNMENT)
            FAIL(SPRIG_E_FORMAT, "%s: kv %" PRId64 " 'general.alignment': %u is not a power of two in 1..%u",
                 file, ai, a, SPRIG_GGUF_MAX_ALIGNMENT);
        g->alignment = a;
    }
    size_t end = c.off, pad = (g->alignment - end % g->alignment) % g->alignment;
    /* A file with no tensors has no data section, so nothing to pad to:
     * llama.cpp's vocabulary-only files end right after the metadata. */
    if (g->n_tensors == 0 && pad > g->size - end) pad = g->size - end;
    if (pad > g->size - end)
        FAIL(SPRIG_E_FORMAT, "%s: data section: padding from offset %zu to the alignment %zu runs past the end of the file (%zu bytes)",
             file, end, g->alignment, g->size);
    g->data_offset = end + pad;
    return check_data(g, file, err);
}

#undef FAIL

static sprig_gguf *open_common(sprig_gguf *g, sprig_error *err)
{
    if (!parse(g, err)) {
        sprig_gguf_close(g);
        return NULL;
    }
    return g;
}

sprig_gguf *sprig_gguf_open_memory(const void *data, size_t size, const char *name, sprig_error *err)
{
    if (!name) name = "(memory)";
    if (!data && size) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "%s: NULL buffer", name);
        return NULL;
    }
    sprig_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(name))) {
        free(g);
        sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    g->base = data;
    g->size = size;
    return open_common(g, err);
}

sprig_gguf *sprig_gguf_open(const char *path, sprig_error *err)
{
    if (!path) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "gguf: NULL path");
        return NULL;
    }
    sprig_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (sprig_map_file(path, &g->map, err) != SPRIG_OK) {
        sprig_gguf_close(g);
        return NULL;
    }
    g->base = g->map.data;
    g->size = g->map.size;
    return open_common(g, err);
}

/* ---------------------------------------------------------------- accessors */

const char *sprig_gguf_path(const sprig_gguf *g) { return g->path; }
uint32_t sprig_gguf_version(const sprig_gguf *g) { return g->version; }
size_t sprig_gguf_alignment(const sprig_gguf *g) { return g->alignment; }
size_t sprig_gguf_data_offset(const sprig_gguf *g) { return g->data_offset; }
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

uint64_t sprig_gguf_fingerprint(const sprig_gguf *g)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, g->base, g->data_offset < g->size ? g->data_offset : g->size);
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const sprig_gguf_tensor *t = &g->t[i];
        const size_t n = t->nbytes < 4096 ? t->nbytes : 4096;
        h = fnv(h, t->data, n);
        h = fnv(h, (const uint8_t *)t->data + t->nbytes - n, n);
    }
    return h;
}

size_t sprig_gguf_file_size(const sprig_gguf *g) { return g->size; }
int64_t sprig_gguf_n_kv(const sprig_gguf *g) { return g->n_kv; }

const char *sprig_gguf_kv_key(const sprig_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kv[i].key : NULL;
}

int sprig_gguf_kv_type(const sprig_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kv[i].type : -1;
}

int64_t sprig_gguf_find_kv(const sprig_gguf *g, const char *key)
{
    return key ? hash_find(g, g->kv_hash, g->kv_hcap, kv_name_of, key) : -1;
}

int64_t sprig_gguf_n_tensors(const sprig_gguf *g) { return g->n_tensors; }

const sprig_gguf_tensor *sprig_gguf_tensor_at(const sprig_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->t[i] : NULL;
}

const sprig_gguf_tensor *sprig_gguf_find_tensor(const sprig_gguf *g, const char *name)
{
    int64_t i = name ? hash_find(g, g->t_hash, g->t_hcap, t_name_of, name) : -1;
    return i >= 0 ? &g->t[i] : NULL;
}

/* Look up `key`; NULL with *st set when absent (error only when required). */
static const struct gkv *lookup(const sprig_gguf *g, const char *key, bool required, sprig_status *st, sprig_error *err)
{
    int64_t i = sprig_gguf_find_kv(g, key);
    if (i < 0) {
        *st = required ? sprig_err(err, SPRIG_E_FORMAT, "%s: required key '%s' is missing", g->path, key) : SPRIG_OK;
        return NULL;
    }
    return &g->kv[i];
}

static sprig_status type_err(const sprig_gguf *g, const struct gkv *kv, const char *want, sprig_error *err)
{
    return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': type %s cannot be read as %s", g->path, kv->key,
                     sprig_gguf_vtype_name(kv->type), want);
}

/* Integer value of a scalar kv as (negative?, magnitude-or-value). */
static bool kv_int(const struct gkv *kv, int64_t *s, uint64_t *u, bool *is_neg)
{
    if (kv->type < 0 || kv->type >= SPRIG_GGUF_VTYPE_COUNT || !vtype_intkind[kv->type]) return false;
    size_t sz = vtype_size[kv->type];
    if (vtype_intkind[kv->type] == 1) {
        *s = load_s(kv->val, sz);
        *is_neg = *s < 0;
        *u = *is_neg ? 0 : (uint64_t)*s;
    } else {
        *u = load_u(kv->val, sz);
        *is_neg = false;
        *s = *u > INT64_MAX ? INT64_MAX : (int64_t)*u;
    }
    return true;
}

sprig_status sprig_gguf_get_u32(const sprig_gguf *g, const char *key, uint32_t *out, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    int64_t s;
    uint64_t u;
    bool neg;
    if (!kv_int(kv, &s, &u, &neg)) return type_err(g, kv, "u32", err);
    if (neg || u > UINT32_MAX)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': value %s%" PRIu64 " does not fit in u32", g->path, key,
                         neg ? "-" : "", neg ? (uint64_t)0 - (uint64_t)s : u);
    *out = (uint32_t)u;
    return SPRIG_OK;
}

sprig_status sprig_gguf_get_i64(const sprig_gguf *g, const char *key, int64_t *out, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    int64_t s;
    uint64_t u;
    bool neg;
    if (!kv_int(kv, &s, &u, &neg)) return type_err(g, kv, "i64", err);
    if (!neg && u > INT64_MAX)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': value %" PRIu64 " does not fit in i64", g->path, key, u);
    *out = s;
    return SPRIG_OK;
}

sprig_status sprig_gguf_get_f32(const sprig_gguf *g, const char *key, float *out, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    if (kv->type != SPRIG_GGUF_F32 && kv->type != SPRIG_GGUF_F64) return type_err(g, kv, "f32", err);
    *out = (float)load_f(kv->val, kv->type);
    return SPRIG_OK;
}

sprig_status sprig_gguf_get_bool(const sprig_gguf *g, const char *key, bool *out, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    if (kv->type != SPRIG_GGUF_BOOL) return type_err(g, kv, "bool", err);
    *out = kv->val[0] != 0;
    return SPRIG_OK;
}

sprig_status sprig_gguf_get_str(const sprig_gguf *g, const char *key, const char **s, size_t *len, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    if (kv->type != SPRIG_GGUF_STR) return type_err(g, kv, "str", err);
    *s = (const char *)kv->val;
    *len = (size_t)kv->n;
    return SPRIG_OK;
}

sprig_status sprig_gguf_get_arr(const sprig_gguf *g, const char *key, int *elem_type, uint64_t *n, bool required, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    const struct gkv *kv = lookup(g, key, required, &st, err);
    if (!kv) return st;
    if (kv->type != SPRIG_GGUF_ARR) return type_err(g, kv, "arr", err);
    *elem_type = kv->elem_type;
    *n = kv->n;
    return SPRIG_OK;
}

/* Array kv and element i, or NULL when out of range / not an array. */
static const struct gkv *arr_at(const sprig_gguf *g, int64_t k, uint64_t i)
{
    if (k < 0 || k >= g->n_kv) return NULL;
    const struct gkv *kv = &g->kv[k];
    if (kv->type != SPRIG_GGUF_ARR || i >= kv->n) return NULL;
    return kv;
}

const char *sprig_gguf_arr_str(const sprig_gguf *g, int64_t k, uint64_t i, size_t *len)
{
    const struct gkv *kv = arr_at(g, k, i);
    if (!kv || kv->elem_type != SPRIG_GGUF_STR) {
        if (len) *len = 0;
        return NULL;
    }
    const uint8_t *p = g->base + kv->str_off[i];
    if (len) *len = (size_t)load_u(p - 8, 8);
    return (const char *)p;
}

float sprig_gguf_arr_f32(const sprig_gguf *g, int64_t k, uint64_t i)
{
    const struct gkv *kv = arr_at(g, k, i);
    if (!kv || !vtype_is_scalar(kv->elem_type)) return 0.0f;
    int et = kv->elem_type;
    const uint8_t *p = kv->val + i * vtype_size[et];
    if (et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64) return (float)load_f(p, et);
    if (vtype_intkind[et] == 1) return (float)load_s(p, vtype_size[et]);
    return (float)load_u(p, vtype_size[et]);
}

int64_t sprig_gguf_arr_int(const sprig_gguf *g, int64_t k, uint64_t i)
{
    const struct gkv *kv = arr_at(g, k, i);
    if (!kv || !vtype_is_scalar(kv->elem_type)) return 0;
    int et = kv->elem_type;
    const uint8_t *p = kv->val + i * vtype_size[et];
    if (et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64) {
        double d = load_f(p, et);
        if (!(d >= -9.2e18 && d <= 9.2e18)) return 0;
        return (int64_t)d;
    }
    if (vtype_intkind[et] == 1) return load_s(p, vtype_size[et]);
    uint64_t u = load_u(p, vtype_size[et]);
    return u > INT64_MAX ? INT64_MAX : (int64_t)u;
}

/* ---------------------------------------------------------------- formatting */

typedef struct { char *buf; size_t cap, len; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->len < b->cap) {
        size_t room = b->cap - 1 - b->len, m = n < room ? n : room;
        memcpy(b->buf + b->len, s, m);
        b->buf[b->len + m] = 0;
    }
    b->len += n;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Quoted string, non-printable bytes as \xNN, at most `max` bytes shown. */
static void sb_str(sbuf *b, const uint8_t *s, size_t n, size_t max)
{
    sb_put(b, "\"", 1);
    size_t m = n < max ? n : max;
    for (size_t i = 0; i < m; i++) {
        uint8_t ch = s[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = { '\\', (char)ch };
            sb_put(b, e, 2);
        } else if (ch == '\n') {
            sb_put(b, "\\n", 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            sb_printf(b, "\\x%02x", ch);
        } else {
            sb_put(b, (const char *)&ch, 1);
        }
    }
    sb_put(b, "\"", 1);
    if (m < n) sb_printf(b, "...(%zu bytes)", n);
}

static void sb_scalar(sbuf *b, int t, const uint8_t *p)
{
    if (t == SPRIG_GGUF_BOOL) sb_printf(b, "%s", *p ? "true" : "false");
    else if (t == SPRIG_GGUF_F32) sb_printf(b, "%.9g", load_f(p, t));
    else if (t == SPRIG_GGUF_F64) sb_printf(b, "%.17g", load_f(p, t));
    else if (vtype_intkind[t] == 1) sb_printf(b, "%" PRId64, load_s(p, vtype_size[t]));
    else sb_printf(b, "%" PRIu64, load_u(p, vtype_size[t]));
}

int sprig_gguf_kv_format(const sprig_gguf *g, int64_t i, char *buf, size_t cap)
{
    sbuf b = { buf, cap, 0 };
    if (cap) buf[0] = 0;
    if (i < 0 || i >= g->n_kv) return 0;
    const struct gkv *kv = &g->kv[i];
    if (kv->type == SPRIG_GGUF_STR) {
        sb_str(&b, kv->val, (size_t)kv->n, 200);
    } else if (kv->type == SPRIG_GGUF_ARR) {
        enum { SHOW = 8 };
        sb_printf(&b, "[%s x %" PRIu64 "]", sprig_gguf_vtype_name(kv->elem_type), kv->n);
        for (uint64_t k = 0; k < kv->n && k < SHOW; k++) {
            sb_put(&b, k ? ", " : " ", k ? 2 : 1);
            if (kv->elem_type == SPRIG_GGUF_STR) {
                size_t len;
                const char *s = sprig_gguf_arr_str(g, i, k, &len);
                sb_str(&b, (const uint8_t *)s, len, 40);
            } else {
                sb_scalar(&b, kv->elem_type, kv->val + k * vtype_size[kv->elem_type]);
            }
        }
        if (kv->n > SHOW) sb_put(&b, ", ...", 5);
    } else {
        sb_scalar(&b, kv->type, kv->val);
    }
    return b.len > INT32_MAX ? INT32_MAX : (int)b.len;
}

/* ---------------------------------------------------------------- writer */

struct wkv {
    char *key;
    int type;
    uint8_t *payload;   /* serialised value */
    size_t len;
};

struct wtensor {
    char *name;
    int type, n_dims;
    int64_t ne[SPRIG_GGUF_MAX_DIMS];
    size_t nbytes;
    void *data;                 /* owned copy, or NULL when filled */
    sprig_gguf_fill_fn fill;
    void *user;
};

struct sprig_gguf_writer {
    struct wkv *kv;
    size_t n_kv, cap_kv;
    struct wtensor *t;
    size_t n_t, cap_t;
};

sprig_gguf_writer *sprig_gguf_writer_create(sprig_error *err)
{
    sprig_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory");
    return w;
}

void sprig_gguf_writer_free(sprig_gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].payload);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

static sprig_status check_name(const char *what, const char *name, sprig_error *err)
{
    if (!name) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: %s name is NULL", what);
    size_t n = strlen(name);
    if (n == 0) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: empty %s name", what);
    if (n > SPRIG_GGUF_MAX_NAME)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: %s name '%.64s...' is %zu bytes, over the limit of %d",
                         what, name, n, SPRIG_GGUF_MAX_NAME);
    return SPRIG_OK;
}

/* Take ownership of payload[len] as the value of a new key. */
static sprig_status add_kv(sprig_gguf_writer *w, const char *key, int type, uint8_t *payload, size_t len, bool check,
                           sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    if (check && (st = check_name("key", key, err)) != SPRIG_OK) goto fail;
    if (!key) { st = sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key is NULL"); goto fail; }
    if (check)
        for (size_t i = 0; i < w->n_kv; i++)
            if (!strcmp(w->kv[i].key, key)) {
                st = sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: duplicate key '%s'", key);
                goto fail;
            }
    if (w->n_kv == w->cap_kv) {
        size_t nc = w->cap_kv ? w->cap_kv * 2 : 32;
        struct wkv *nk = realloc(w->kv, nc * sizeof *nk);
        if (!nk) { st = sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory"); goto fail; }
        w->kv = nk;
        w->cap_kv = nc;
    }
    char *k = strdup(key);
    if (!k) { st = sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory"); goto fail; }
    w->kv[w->n_kv++] = (struct wkv){ k, type, payload, len };
    return SPRIG_OK;
fail:
    free(payload);
    return st;
}

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static sprig_status w_bytes(sprig_gguf_writer *w, const char *key, int type, const void *v, size_t n, sprig_error *err)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory for key '%s'", key ? key : "(null)");
    if (n) memcpy(p, v, n);
    return add_kv(w, key, type, p, n, true, err);
}

sprig_status sprig_gguf_w_scalar(sprig_gguf_writer *w, const char *key, int vtype, const void *value, sprig_error *err)
{
    if (!vtype_is_scalar(vtype))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': %s is not a scalar type", key ? key : "(null)",
                         sprig_gguf_vtype_name(vtype));
    if (vtype == SPRIG_GGUF_BOOL && *(const uint8_t *)value > 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': bool value must be 0 or 1", key ? key : "(null)");
    if (key && !strcmp(key, "general.alignment")) {
        if (vtype != SPRIG_GGUF_U32)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key 'general.alignment' must be u32, not %s",
                             sprig_gguf_vtype_name(vtype));
        uint32_t a;
        memcpy(&a, value, 4);
        if (a == 0 || (a & (a - 1)) || a > SPRIG_GGUF_MAX_ALIGNMENT)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: general.alignment %u is not a power of two in 1..%u",
                             a, SPRIG_GGUF_MAX_ALIGNMENT);
    }
    uint8_t b[8];
    size_t n = vtype_size[vtype];
    uint64_t v = 0;
    memcpy(&v, value, n);       /* host is little endian (x86-64) */
    put_le(b, v, n);
    return w_bytes(w, key, vtype, b, n, err);
}

sprig_status sprig_gguf_w_u32(sprig_gguf_writer *w, const char *key, uint32_t v, sprig_error *err)
{
    return sprig_gguf_w_scalar(w, key, SPRIG_GGUF_U32, &v, err);
}

sprig_status sprig_gguf_w_i32(sprig_gguf_writer *w, const char *key, int32_t v, sprig_error *err)
{
    return sprig_gguf_w_scalar(w, key, SPRIG_GGUF_I32, &v, err);
}

sprig_status sprig_gguf_w_f32(sprig_gguf_writer *w, const char *key, float v, sprig_error *err)
{
    return sprig_gguf_w_scalar(w, key, SPRIG_GGUF_F32, &v, err);
}

sprig_status sprig_gguf_w_bool(sprig_gguf_writer *w, const char *key, bool v, sprig_error *err)
{
    uint8_t b = v ? 1 : 0;
    return sprig_gguf_w_scalar(w, key, SPRIG_GGUF_BOOL, &b, err);
}

sprig_status sprig_gguf_w_str(sprig_gguf_writer *w, const char *key, const char *s, size_t len, sprig_error *err)
{
    size_t n;
    if (!s && len) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': NULL string", key ? key : "(null)");
    if (sprig_add_ovf(len, 8, &n)) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: key '%s': string too long", key ? key : "(null)");
    uint8_t *p = malloc(n);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory for key '%s'", key ? key : "(null)");
    put_le(p, len, 8);
    if (len) memcpy(p + 8, s, len);
    return add_kv(w, key, SPRIG_GGUF_STR, p, n, true, err);
}

sprig_status sprig_gguf_w_arr_str(sprig_gguf_writer *w, const char *key, const char *const *s, const size_t *lens, uint64_t n,
                                  sprig_error *err)
{
    const char *k = key ? key : "(null)";
    size_t total = 12;
    if (n > SIZE_MAX / 8) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: key '%s': too many strings", k);
    for (uint64_t i = 0; i < n; i++) {
        if (!s[i] && lens[i]) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': element %" PRIu64 " is NULL", k, i);
        if (sprig_add_ovf(total, 8, &total) || sprig_add_ovf(total, lens[i], &total))
            return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: key '%s': strings too long", k);
    }
    uint8_t *p = malloc(total);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory for key '%s'", k);
    put_le(p, SPRIG_GGUF_STR, 4);
    put_le(p + 4, n, 8);
    size_t o = 12;
    for (uint64_t i = 0; i < n; i++) {
        put_le(p + o, lens[i], 8);
        o += 8;
        if (lens[i]) memcpy(p + o, s[i], lens[i]);
        o += lens[i];
    }
    return add_kv(w, key, SPRIG_GGUF_ARR, p, total, true, err);
}

sprig_status sprig_gguf_w_arr(sprig_gguf_writer *w, const char *key, int elem_type, const void *data, uint64_t n, sprig_error *err)
{
    const char *k = key ? key : "(null)";
    if (!vtype_is_scalar(elem_type))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': array element type %s is not a scalar type (use w_arr_str for strings)",
                         k, sprig_gguf_vtype_name(elem_type));
    size_t bytes, total;
    if (n > SIZE_MAX || sprig_mul_ovf((size_t)n, vtype_size[elem_type], &bytes) || sprig_add_ovf(bytes, 12, &total))
        return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: key '%s': array too large", k);
    if (!data && n) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': NULL array data", k);
    if (elem_type == SPRIG_GGUF_BOOL)
        for (size_t i = 0; i < bytes; i++)
            if (((const uint8_t *)data)[i] > 1)
                return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: key '%s': element %zu: bool value must be 0 or 1", k, i);
    uint8_t *p = malloc(total);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory for key '%s'", k);
    put_le(p, (uint64_t)elem_type, 4);
    put_le(p + 4, n, 8);
    if (bytes) memcpy(p + 12, data, bytes);
    return add_kv(w, key, SPRIG_GGUF_ARR, p, total, true, err);
}

sprig_status sprig_gguf_w_copy_kv(sprig_gguf_writer *w, const sprig_gguf *g, int64_t i, sprig_error *err)
{
    if (i < 0 || i >= g->n_kv)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: kv index %" PRId64 " out of range for %s", i, g->path);
    const struct gkv *kv = &g->kv[i];
    return w_bytes(w, kv->key, kv->type, kv->raw, kv->raw_len, err);
}

sprig_status sprig_gguf_w_raw_kv(sprig_gguf_writer *w, const char *key, int vtype, const void *payload, size_t payload_len,
                                 sprig_error *err)
{
    uint8_t *p = malloc(payload_len ? payload_len : 1);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory");
    if (payload_len) memcpy(p, payload, payload_len);
    return add_kv(w, key, vtype, p, payload_len, false, err);
}

static sprig_status add_tensor(sprig_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                               const void *data, sprig_gguf_fill_fn fill, void *user, sprig_error *err)
{
    sprig_status st = check_name("tensor", name, err);
    if (st != SPRIG_OK) return st;
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: duplicate tensor name '%s'", name);
    const struct sprig_type_traits *tr = sprig_type_traits(type);
    if (!tr) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': unknown type %d", name, type);
    if (n_dims < 1 || n_dims > SPRIG_GGUF_MAX_DIMS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': n_dims %d is outside 1..%d", name, n_dims, SPRIG_GGUF_MAX_DIMS);
    struct wtensor t = { .type = type, .n_dims = n_dims, .fill = fill, .user = user };
    uint64_t rows = 1;
    for (int d = 0; d < SPRIG_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': ne[%d] = %" PRId64 " is not positive", name, d, t.ne[d]);
        if (d > 0 && __builtin_mul_overflow(rows, (uint64_t)t.ne[d], &rows))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': size overflows", name);
    }
    size_t row;
    if (t.ne[0] % tr->blck)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': ne[0] = %" PRId64 " is not a multiple of the %s block size %" PRId64,
                         name, t.ne[0], tr->name, tr->blck);
    if (!sprig_row_bytes(type, t.ne[0], &row) || rows > SIZE_MAX || sprig_mul_ovf(row, (size_t)rows, &t.nbytes) || t.nbytes > (size_t)INT64_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': size overflows", name);
    if (!fill) {
        if (!data) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': NULL data", name);
        t.data = malloc(t.nbytes);
        if (!t.data) return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: tensor '%s': out of memory for %zu bytes", name, t.nbytes);
        memcpy(t.data, data, t.nbytes);
    }
    if (w->n_t == w->cap_t) {
        size_t nc = w->cap_t ? w->cap_t * 2 : 64;
        struct wtensor *nt = realloc(w->t, nc * sizeof *nt);
        if (!nt) { free(t.data); return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory"); }
        w->t = nt;
        w->cap_t = nc;
    }
    if (!(t.name = strdup(name))) { free(t.data); return sprig_err(err, SPRIG_E_NOMEM, "gguf writer: out of memory"); }
    w->t[w->n_t++] = t;
    return SPRIG_OK;
}

sprig_status sprig_gguf_w_tensor(sprig_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                                 const void *data, sprig_error *err)
{
    return add_tensor(w, name, type, n_dims, ne, data, NULL, NULL, err);
}

sprig_status sprig_gguf_w_tensor_fill(sprig_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                                      sprig_gguf_fill_fn fill, void *user, sprig_error *err)
{
    if (!fill) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: tensor '%s': NULL fill function", name ? name : "(null)");
    return add_tensor(w, name, type, n_dims, ne, NULL, fill, user, err);
}

/* Alignment of the file being written: a valid u32 general.alignment, else 32. */
static size_t writer_alignment(const sprig_gguf_writer *w)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, "general.alignment") && w->kv[i].type == SPRIG_GGUF_U32 && w->kv[i].len == 4) {
            uint32_t a = (uint32_t)load_u(w->kv[i].payload, 4);
            if (a && !(a & (a - 1)) && a <= SPRIG_GGUF_MAX_ALIGNMENT) return a;
        }
    return SPRIG_GGUF_DEFAULT_ALIGNMENT;
}

typedef struct { FILE *f; bool ok; int err_no; uint64_t pos; } wfile;

static void wput(wfile *f, const void *p, size_t n)
{
    if (!f->ok || !n) return;
    if (fwrite(p, 1, n, f->f) != n) {
        f->ok = false;
        f->err_no = errno;
    }
    f->pos += n;
}

static void wput_le(wfile *f, uint64_t v, size_t n)
{
    uint8_t b[8];
    put_le(b, v, n);
    wput(f, b, n);
}

static void wpad(wfile *f, size_t align)
{
    static const uint8_t zeros[256];
    size_t pad = (size_t)((align - f->pos % align) % align);
    while (pad) {
        size_t m = pad < sizeof zeros ? pad : sizeof zeros;
        wput(f, zeros, m);
        pad -= m;
    }
}

sprig_status sprig_gguf_writer_write(sprig_gguf_writer *w, const char *path, sprig_error *err)
{
    if (!path || !*path) return sprig_err(err, SPRIG_E_INVALID_ARG, "gguf writer: empty output path");
    size_t align = writer_alignment(w);
    /* tensor offsets and the largest filled tensor */
    uint64_t *off = malloc((w->n_t ? w->n_t : 1) * sizeof *off);
    if (!off) return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    uint64_t o = 0;
    size_t max_fill = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        off[i] = o;
        uint64_t end = o + w->t[i].nbytes;
        if (end < o || end + align < end) { free(off); return sprig_err(err, SPRIG_E_NOMEM, "%s: tensor data size overflows", path); }
        o = (end + align - 1) / align * align;
        if (w->t[i].fill && w->t[i].nbytes > max_fill) max_fill = w->t[i].nbytes;
    }
    void *fillbuf = NULL;
    if (max_fill && !(fillbuf = malloc(max_fill))) {
        free(off);
        return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory for a %zu-byte tensor buffer", path, max_fill);
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) { free(off); free(fillbuf); return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    sprig_status st = SPRIG_OK;
    wfile f = { fopen(tmp, "wb"), true, 0, 0 };
    if (!f.f) {
        st = sprig_err(err, SPRIG_E_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto done;
    }
    setvbuf(f.f, NULL, _IOFBF, 1 << 20);
    wput(&f, "GGUF", 4);
    wput_le(&f, 3, 4);
    wput_le(&f, w->n_t, 8);
    wput_le(&f, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        size_t kl = strlen(w->kv[i].key);
        wput_le(&f, kl, 8);
        wput(&f, w->kv[i].key, kl);
        wput_le(&f, (uint32_t)w->kv[i].type, 4);
        wput(&f, w->kv[i].payload, w->kv[i].len);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        size_t nl = strlen(t->name);
        wput_le(&f, nl, 8);
        wput(&f, t->name, nl);
        wput_le(&f, (uint32_t)t->n_dims, 4);
        for (int d = 0; d < t->n_dims; d++) wput_le(&f, (uint64_t)t->ne[d], 8);
        wput_le(&f, (uint32_t)t->type, 4);
        wput_le(&f, off[i], 8);
    }
    wpad(&f, align);
    uint64_t data_start = f.pos;
    for (size_t i = 0; i < w->n_t && f.ok; i++) {
        const struct wtensor *t = &w->t[i];
        SPRIG_ASSERT(f.pos == data_start + off[i]);
        const void *src = t->data;
        if (t->fill) {
            st = t->fill(t->user, fillbuf, t->nbytes, err);
            if (st != SPRIG_OK) {
                sprig_err_prefix(err, "%s: tensor '%s'", path, t->name);
                goto done;
            }
            src = fillbuf;
        }
        wput(&f, src, t->nbytes);
        wpad(&f, align);
    }
    if (f.ok && fflush(f.f) != 0) { f.ok = false; f.err_no = errno; }
    if (!f.ok) {
        st = sprig_err(err, SPRIG_E_IO, "%s: write failed: %s", path, strerror(f.err_no));
        goto done;
    }
done:
    if (f.f && fclose(f.f) != 0 && st == SPRIG_OK) st = sprig_err(err, SPRIG_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (st == SPRIG_OK && rename(tmp, path) != 0)
        st = sprig_err(err, SPRIG_E_IO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
    if (st != SPRIG_OK && f.f) unlink(tmp);
    free(tmp);
    free(off);
    free(fillbuf);
    return st;
}
