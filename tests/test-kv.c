/*
 * tests/test-kv.c — the KV cache contract (kv/kv.h) on the dense kind in
 * every mode (f32, f16, int8, turbo4, turbo4-asym, turbo3-asym; head sizes
 * 8, 16, 64) and on the paged kind (blocks of 4 slots from a shared pool) in
 * every mode, several layers, random rows, comparing whole records (codes
 * and every sidecar: scales, norms, rescales):
 *   write/view round trip; trim; gather_positions (identity is a no-op, a
 *   prefix equals trim, a scattered selection keeps exactly those rows);
 *   gather_within_tail equals gather_positions said in absolute terms, moves
 *   only tail bytes and keeps the buffer; every bad argument is refused with
 *   the argument named and the cache left as it was; a kind without gather
 *   refuses through the dispatcher. Paged pools: blocks taken on reserve and
 *   returned when emptied, sequences isolated, out-of-blocks refused for the
 *   asking sequence only, freed blocks reused.
 * Prefix sharing on a pool (every mode): published blocks are attached by
 * a sequence whose tokens start the same way (same records, no copy),
 * only whole blocks and only while the tokens agree; a write into a shared
 * block copies it first (the other holder's records unchanged) and a
 * keyed block held alone is unkeyed; blocks nobody holds stay cached and
 * are evicted least recently used first, never while held; claims make a
 * second sequence wait; the key map survives thousands of random
 * inserts and removals against a plain list.
 */
#include "test.h"
#include "base/rng.h"
#include "kv/kv.h"
#include "kv/prefix.h"
#include "tensor/types.h"

#include <stdlib.h>

enum { NL = 3, NKV = 2, HD = 16, DIM = NKV * HD, CTX = 64, MAXREC = 4 * HD };

static int g_hd = HD;            /* the head size the current mode runs with */
static sprig_kv_pool *g_pool;    /* non-NULL: caches are paged sequences on this pool */
enum { BLOCK = 4 };              /* slots per block in the paged runs: many page crossings */

static sprig_kv *make(int mode)
{
    sprig_error err;
    sprig_kv *kv;
    if (g_pool) {
        kv = sprig_kv_create_paged(g_pool, CTX, &err);
    } else {
        struct sprig_kv_params p = { .n_layer = NL, .n_ctx = CTX, .n_kv_head = NKV, .head_dim = g_hd, .mode = mode };
        kv = sprig_kv_create(&p, &err);
    }
    CHECKF(kv != NULL, "%s", err.msg);
    return kv;
}

/* Slots whose records exist: the whole buffer (dense) or the blocks held (paged). */
static int visible(const sprig_kv *kv)
{
    return !strcmp(sprig_kv_kind(kv), "paged") ? sprig_kv_paged_blocks(kv) * BLOCK : CTX;
}

/* Append n random rows to every layer. */
static void fill(sprig_kv *kv, int n, sprig_rng *r)
{
    const int dim = NKV * g_hd;
    float k[CTX * NKV * 64], v[CTX * NKV * 64];
    sprig_error err;
    CHECKF(sprig_kv_reserve(kv, n, &err) == SPRIG_OK, "%s", err.msg);
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < n * dim; i++) {
            k[i] = (float)sprig_rng_normal(r);
            v[i] = (float)sprig_rng_normal(r);
        }
        sprig_kv_write(kv, l, n, k, v);
    }
    sprig_kv_commit(kv, n);
}

/* Record bytes of slot j of every layer, keys then values, all kv heads:
 * [NL][2][NKV][MAXREC] (records are compared by their own size). */
struct snap { unsigned char b[CTX][NL][2][NKV][MAXREC * 4]; };

static void slot_bytes(const sprig_kv *kv, int j, unsigned char out[NL][2][NKV][MAXREC * 4])
{
    memset(out, 0, sizeof(unsigned char[NL][2][NKV][MAXREC * 4]));
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        for (int g = 0; g < NKV; g++) {
            memcpy(out[l][0][g], sprig_kvrows_at(&vw.k, j, g), (size_t)sprig_kvrows_record_bytes(vw.k.fmt, g_hd));
            memcpy(out[l][1][g], sprig_kvrows_at(&vw.v, j, g), (size_t)sprig_kvrows_record_bytes(vw.v.fmt, g_hd));
        }
    }
}

static struct snap *take(const sprig_kv *kv)
{
    struct snap *s = calloc(1, sizeof *s);
    for (int j = 0; j < visible(kv); j++) slot_bytes(kv, j, s->b[j]);
    return s;
}

/* Slot a of cache x equals slot b of snapshot s, in every layer, keys and
 * values, codes and sidecars. */
static bool row_eq(const sprig_kv *x, int a, const struct snap *s, int b)
{
    static unsigned char cur[NL][2][NKV][MAXREC * 4];
    slot_bytes(x, a, cur);
    return memcmp(cur, s->b[b], sizeof cur) == 0;
}

/* Caches x and y hold the same len and the same records in [0, len). */
static bool same(const sprig_kv *x, const sprig_kv *y)
{
    if (sprig_kv_len(x) != sprig_kv_len(y)) return false;
    struct snap *sy = take(y);
    bool ok = true;
    for (int i = 0; i < sprig_kv_len(x); i++) ok &= row_eq(x, i, sy, i);
    free(sy);
    return ok;
}

/* dst := the same rows src was filled with (encoding is deterministic). */
static void refill(sprig_kv *dst, int len, uint64_t seed)
{
    sprig_rng r;
    sprig_rng_seed(&r, seed);
    sprig_kv_clear(dst);
    fill(dst, len, &r);
}

static void test_create_validates(void)
{
    sprig_error err;
    struct sprig_kv_params good = { .n_layer = 2, .n_ctx = 8, .n_kv_head = 2, .head_dim = 16, .mode = SPRIG_KV_MODE_F16 };
    struct { struct sprig_kv_params p; const char *field; } bad[] = {
        { { 0, 8, 2, 16, 0, 0, 0, NULL, NULL }, "n_layer" },
        { { 2, 0, 2, 16, 0, 0, 0, NULL, NULL }, "n_ctx" },
        { { 2, 8, 0, 16, 0, 0, 0, NULL, NULL }, "n_kv_head" },
        { { 2, 8, 2, -1, 0, 0, 0, NULL, NULL }, "head_dim" },
        { { 2, 8, 2, 1024, 0, 0, 0, NULL, NULL }, "head_dim" },
        { { 2, 8, 2, 16, 999, 0, 0, NULL, NULL }, "mode" },
        { { 2, 8, 2, 16, -1, 0, 0, NULL, NULL }, "mode" },
        { { 2, 8, 2, 24, SPRIG_KV_MODE_TURBO4, 0, 0, NULL, NULL }, "power of two" },
        { { 2, 8, 2, 24, SPRIG_KV_MODE_TURBO4_ASYM, 0, 0, NULL, NULL }, "head size is 24" },
        { { 2, 8, 2, 4, SPRIG_KV_MODE_TURBO3_ASYM, 0, 0, NULL, NULL }, "turbo3-asym" },
        { { 2, 8, 2, 16, 0, 0, 0, (const int[]){ 2, 5000 }, NULL }, "layer_kv_head[1]" },
        { { 2, 8, 2, 16, 0, 0, 0, NULL, (const int[]){ 16, 0 } }, "layer_hd[1]" },
        { { 2, 8, 2, 16, 0, 0, 0, (const int[]){ 2, 1 }, NULL }, "per-layer (ring)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        sprig_kv *kv = sprig_kv_create(&bad[i].p, &err);
        CHECK(kv == NULL);
        CHECKF(strstr(err.msg, bad[i].field) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg, bad[i].field);
    }
    CHECK(sprig_kv_create_dense(NULL, &err) == NULL);
    sprig_kv *kv = sprig_kv_create(&good, &err);
    CHECK(kv != NULL);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
    CHECK_EQ_INT(sprig_kv_capacity(kv), 8);
    CHECK_STR(sprig_kv_kind(kv), "dense");
    sprig_kv_free(kv);
    sprig_kv_free(NULL);
    /* int8 takes any head size */
    struct sprig_kv_params odd = { .n_layer = 1, .n_ctx = 4, .n_kv_head = 3, .head_dim = 24, .mode = SPRIG_KV_MODE_INT8 };
    CHECK((kv = sprig_kv_create(&odd, &err)) != NULL);
    sprig_kv_free(kv);
    /* names */
    for (int m = 0; m < SPRIG_KV_MODE_COUNT; m++)
        if (sprig_kv_mode_from_name(sprig_kv_mode_name(m)) >= 0) CHECK_EQ_INT(sprig_kv_mode_from_name(sprig_kv_mode_name(m)), m);
    CHECK_EQ_INT(sprig_kv_mode_from_name("q8_0"), -1);
    CHECK_EQ_INT(sprig_kv_mode_from_name(NULL), -1);
    CHECK(strstr(sprig_kv_mode_list(), "turbo3-asym") != NULL);
}

static void test_write_view(int mode)
{
    sprig_kv *kv = make(mode);
    const int dim = NKV * g_hd;
    float k[2 * NKV * 64], v[2 * NKV * 64];
    for (int i = 0; i < 2 * dim; i++) { k[i] = 0.1f * (float)i - 1.0f; v[i] = 3.3f - 0.07f * (float)i; }
    sprig_error err;
    CHECK_EQ_INT(sprig_kv_reserve(kv, 2, &err), SPRIG_OK);
    for (int l = 0; l < NL; l++) sprig_kv_write(kv, l, 2, k, v);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);   /* pending until commit */
    sprig_kv_commit(kv, 2);
    CHECK_EQ_INT(sprig_kv_len(kv), 2);
    /* each record is what the mode's codec makes of its row */
    sprig_kv_codec kc, vc;
    CHECK_EQ_INT(sprig_kv_mode_codecs(mode, g_hd, &kc, &vc, &err), SPRIG_OK);
    bool ok = true;
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        CHECK_EQ_INT(vw.k.fmt, kc.fmt);
        CHECK_EQ_INT(vw.v.fmt, vc.fmt);
        for (int i = 0; i < 2; i++)
            for (int g = 0; g < NKV; g++) {
                uint8_t want[4 * 64 + 8];
                sprig_kv_codec_encode(&kc, k + ((size_t)i * NKV + g) * g_hd, want);
                ok &= memcmp(sprig_kvrows_at(&vw.k, i, g), want, (size_t)kc.rec_bytes) == 0;
                sprig_kv_codec_encode(&vc, v + ((size_t)i * NKV + g) * g_hd, want);
                ok &= memcmp(sprig_kvrows_at(&vw.v, i, g), want, (size_t)vc.rec_bytes) == 0;
            }
    }
    CHECK(ok);
    if (mode == SPRIG_KV_MODE_F32 || mode == SPRIG_KV_MODE_F16) {   /* plain modes read back the rows */
        sprig_kv_view vw = sprig_kv_view_layer(kv, 0);
        float row[64];
        sprig_kvrows_decode_ref(&vw.k, sprig_kvrows_at(&vw.k, 1, 1), g_hd, row);
        for (int d = 0; d < g_hd; d++) {
            const float x = k[dim + g_hd + d];
            ok &= row[d] == (mode == SPRIG_KV_MODE_F32 ? x : sprig_f16_to_f32(sprig_f32_to_f16(x)));
        }
        CHECK(ok);
    }
    sprig_kv_free(kv);
}

static void test_trim_and_identity(int type)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 11 + (uint64_t)type);
    sprig_kv *kv = make(type);
    fill(kv, 20, &r);
    struct snap *s0 = take(kv), *s1;
    int ident[20];
    for (int i = 0; i < 20; i++) ident[i] = i;
    CHECK_EQ_INT(sprig_kv_gather_positions(kv, ident, 20, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    s1 = take(kv);
    CHECK(memcmp(s0, s1, sizeof *s0) == 0);
    free(s1);
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 7, ident, 7, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    s1 = take(kv);
    CHECK(memcmp(s0, s1, sizeof *s0) == 0);
    free(s1);

    CHECK_EQ_INT(sprig_kv_trim(kv, 0, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    CHECK_EQ_INT(sprig_kv_trim(kv, 5, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 15);
    bool ok = true;
    for (int i = 0; i < 15; i++) ok &= row_eq(kv, i, s0, i);
    CHECK(ok);
    /* re-append after trim writes at the new end */
    fill(kv, 3, &r);
    CHECK_EQ_INT(sprig_kv_len(kv), 18);
    ok = true;
    for (int i = 0; i < 15; i++) ok &= row_eq(kv, i, s0, i);
    CHECK(ok);
    CHECK_EQ_INT(sprig_kv_trim(kv, 18, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
    free(s0);
    sprig_kv_free(kv);
}

/* Random strictly increasing subset of [0, n) of size m, written to out. */
static void subset(sprig_rng *r, int n, int m, int *out)
{
    int k = 0;
    for (int i = 0; i < n && k < m; i++) {
        /* choose i with probability (m - k) / (n - i): uniform m-subsets */
        if (sprig_rng_uniform(r) * (n - i) < m - k) out[k++] = i;
    }
}

static void test_gather_equivalences(int type)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 1234 + (uint64_t)type);
    sprig_kv *a = make(type), *b = make(type), *c = make(type);
    int reps = test_quick() ? 40 : 200;
    for (int rep = 0; rep < reps; rep++) {
        const uint64_t seed = sprig_rng_u64(&r);
        int len = 1 + (int)(sprig_rng_u64(&r) % 40);
        refill(a, len, seed);
        struct snap *s0 = take(a);

        /* prefix selection equals trim */
        int m = (int)(sprig_rng_u64(&r) % (uint64_t)(len + 1));
        int sel[CTX];
        for (int i = 0; i < m; i++) sel[i] = i;
        refill(b, len, seed);
        CHECK_EQ_INT(sprig_kv_gather_positions(b, sel, m, &err), SPRIG_OK);
        refill(c, len, seed);
        CHECK_EQ_INT(sprig_kv_trim(c, len - m, &err), SPRIG_OK);
        CHECK(same(b, c));
        CHECK_EQ_INT(sprig_kv_len(b), m);

        /* scattered selection keeps exactly those slots (codes and sidecars), in order */
        m = (int)(sprig_rng_u64(&r) % (uint64_t)(len + 1));
        subset(&r, len, m, sel);
        refill(b, len, seed);
        CHECK_EQ_INT(sprig_kv_gather_positions(b, sel, m, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_len(b), m);
        bool ok = true;
        for (int i = 0; i < m; i++) ok &= row_eq(b, i, s0, sel[i]);
        CHECKF(ok, "rep %d len %d m %d", rep, len, m);

        /* gather_within_tail == gather_positions in absolute terms;
         * a prefix of the tail == trim */
        int tail = (int)(sprig_rng_u64(&r) % (uint64_t)(len + 1));
        int nk = (int)(sprig_rng_u64(&r) % (uint64_t)(tail + 1));
        int kept[CTX], abs_sel[CTX];
        subset(&r, tail, nk, kept);
        int base = len - tail;
        for (int i = 0; i < base; i++) abs_sel[i] = i;
        for (int i = 0; i < nk; i++) abs_sel[base + i] = base + kept[i];
        refill(b, len, seed);
        refill(c, len, seed);
        sprig_kv_view before = sprig_kv_view_layer(b, 0);
        struct snap *sb = take(b);
        CHECK_EQ_INT(sprig_kv_gather_within_tail(b, tail, kept, nk, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_gather_positions(c, abs_sel, base + nk, &err), SPRIG_OK);
        CHECK(same(b, c));
        CHECK_EQ_INT(sprig_kv_len(b), base + nk);
        /* only tail slots changed, and the buffers are the same allocation */
        sprig_kv_view after = sprig_kv_view_layer(b, 0);
        CHECK(before.k.base == after.k.base && before.v.base == after.v.base && before.k.pages == after.k.pages);
        struct snap *sa = take(b);
        ok = true;
        for (int j = 0; j < visible(b); j++)
            if (j < base || j >= len) ok &= memcmp(sa->b[j], sb->b[j], sizeof sa->b[j]) == 0;
        if (g_pool) CHECK_EQ_INT(sprig_kv_paged_blocks(b), (base + nk + BLOCK - 1) / BLOCK);   /* emptied blocks went back */
        CHECKF(ok, "gather_within_tail touched slots outside the tail (rep %d)", rep);
        free(sa);
        free(sb);

        for (int i = 0; i < nk; i++) kept[i] = i;
        refill(b, len, seed);
        refill(c, len, seed);
        CHECK_EQ_INT(sprig_kv_gather_within_tail(b, tail, kept, nk, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_trim(c, tail - nk, &err), SPRIG_OK);
        CHECK(same(b, c));
        free(s0);
    }
    sprig_kv_free(a);
    sprig_kv_free(b);
    sprig_kv_free(c);
}

/* A tree-shaped rollback: block of 6 appended after 10 history slots, path
 * [0, 2, 5] kept; rows land where a fresh cache of history + path would hold them. */
static void test_tree_rollback_shape(int type)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 77);
    sprig_kv *kv = make(type);
    fill(kv, 16, &r);
    struct snap *s0 = take(kv);
    const int path[3] = { 0, 2, 5 };
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 6, path, 3, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 13);
    bool ok = true;
    for (int i = 0; i < 10; i++) ok &= row_eq(kv, i, s0, i);
    for (int i = 0; i < 3; i++) ok &= row_eq(kv, 10 + i, s0, 10 + path[i]);
    CHECK(ok);
    free(s0);
    sprig_kv_free(kv);
}

static void test_bad_arguments(int type)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 5);
    sprig_kv *kv = make(type);
    fill(kv, 10, &r);
    struct snap *s0 = take(kv), *s1;
    struct { int which; int a; int sel[4]; int n; const char *name; } cases[] = {
        { 0, -1, {0}, 0, "n" },                       /* trim */
        { 0, 11, {0}, 0, "len" },
        { 1, 0, {0, 2, 2}, 3, "strictly increasing" }, /* gather_positions */
        { 1, 0, {3, 1}, 2, "strictly increasing" },
        { 1, 0, {0, 10}, 2, "slots[1]" },
        { 1, 0, {-1, 3}, 2, "slots[0]" },
        { 1, 0, {0}, 11, "n = 11" },
        { 1, 0, {0}, -2, "n = -2" },
        { 2, 11, {0}, 1, "tail_len" },                 /* gather_within_tail */
        { 2, -1, {0}, 0, "tail_len" },
        { 2, 3, {0, 1, 3}, 3, "kept[2]" },
        { 2, 3, {1, 1}, 2, "strictly increasing" },
        { 2, 3, {0, 1, 2, 3}, 4, "n_kept" },
        { 2, 3, {0}, -1, "n_kept" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sprig_status st;
        err.msg[0] = 0;
        if (cases[i].which == 0) st = sprig_kv_trim(kv, cases[i].a, &err);
        else if (cases[i].which == 1) st = sprig_kv_gather_positions(kv, cases[i].sel, cases[i].n, &err);
        else st = sprig_kv_gather_within_tail(kv, cases[i].a, cases[i].sel, cases[i].n, &err);
        CHECKF(st == SPRIG_E_INVALID_ARG, "case %zu: status %d", i, st);
        CHECKF(strstr(err.msg, cases[i].name) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].name);
        CHECK_EQ_INT(sprig_kv_len(kv), 10);
    }
    CHECK_EQ_INT(sprig_kv_gather_positions(kv, NULL, 2, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "slots") != NULL);
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 4, NULL, 2, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "kept") != NULL);
    /* refusals leave the cache untouched; NULL err is allowed */
    CHECK_EQ_INT(sprig_kv_trim(kv, 99, NULL), SPRIG_E_INVALID_ARG);
    s1 = take(kv);
    CHECK(memcmp(s0, s1, sizeof *s0) == 0);
    free(s0);
    free(s1);
    CHECK_EQ_INT(sprig_kv_len(kv), 10);
    sprig_kv_clear(kv);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
    CHECK_EQ_INT(sprig_kv_capacity(kv), CTX);
    CHECK_EQ_INT(sprig_kv_reserve(kv, CTX + 1, &err), SPRIG_E_CONTEXT_FULL);
    CHECK(strstr(err.msg, "capacity") != NULL);
    sprig_kv_free(kv);
}

/* Several sequences on one pool: blocks are taken on reserve and returned
 * when emptied, a sequence's records never change through another's writes
 * or rollbacks, running out is a clear error for the asking sequence only,
 * and freed blocks are reused. */
static void test_paged_pool(int mode)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 99);
    struct sprig_kv_pool_params pp = { .n_layer = NL, .n_kv_head = NKV, .head_dim = g_hd, .mode = mode,
                                       .block_slots = BLOCK, .n_blocks = 10 };
    sprig_kv_pool *P = sprig_kv_pool_create(&pp, &err);
    CHECKF(P != NULL, "%s", err.msg);
    if (!P) return;
    sprig_kv *a = sprig_kv_create_paged(P, CTX, &err), *b = sprig_kv_create_paged(P, CTX, &err);
    CHECK(a && b);
    CHECK_STR(sprig_kv_kind(a), "paged");
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 10);
    fill(a, 9, &r);                                    /* 3 blocks */
    fill(b, 5, &r);                                    /* 2 blocks */
    fill(a, 6, &r);                                    /* 15 slots: 4 blocks */
    CHECK_EQ_INT(sprig_kv_paged_blocks(a), 4);
    CHECK_EQ_INT(sprig_kv_paged_blocks(b), 2);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 4);
    struct snap *sa = take(a);
    /* b's writes, gathers and trims leave a's records alone */
    fill(b, 10, &r);                                   /* 15 slots: 4 blocks, 2 free */
    const int kept[3] = { 0, 4, 7 };
    CHECK_EQ_INT(sprig_kv_gather_within_tail(b, 10, kept, 3, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_paged_blocks(b), 2);         /* 8 slots */
    bool ok = true;
    for (int j = 0; j < 15; j++) ok &= row_eq(a, j, sa, j);
    CHECK(ok);
    /* out of blocks: 4 free, b needs 5 more for 8 + 20 slots */
    struct snap *sb = take(b);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 4);
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_kv_reserve(b, 20, &err), SPRIG_E_CONTEXT_FULL);
    CHECKF(strstr(err.msg, "out of blocks") && strstr(err.msg, "4 free"), "%s", err.msg);
    CHECK_EQ_INT(sprig_kv_paged_blocks(b), 2);         /* nothing taken */
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 4);
    ok = true;
    for (int j = 0; j < 15; j++) ok &= row_eq(a, j, sa, j);
    for (int j = 0; j < 8; j++) ok &= row_eq(b, j, sb, j);
    CHECK(ok);
    /* a gives blocks back; b can grow into them (reused ids) */
    CHECK_EQ_INT(sprig_kv_trim(a, 11, &err), SPRIG_OK);        /* 4 slots: 1 block */
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 7);
    fill(b, 20, &r);
    CHECK_EQ_INT(sprig_kv_paged_blocks(b), 7);         /* 28 slots; a holds 1 */
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 2);
    ok = true;
    for (int j = 0; j < 4; j++) ok &= row_eq(a, j, sa, j);
    for (int j = 0; j < 8; j++) ok &= row_eq(b, j, sb, j);
    CHECK(ok);
    /* a sequence's own capacity still bounds it */
    sprig_kv_clear(b);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 9);
    CHECK_EQ_INT(sprig_kv_reserve(b, CTX + 1, &err), SPRIG_E_CONTEXT_FULL);
    fill(b, 3, &r);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 8);
    sprig_kv_free(a);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 9);
    sprig_kv_free(b);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 10);
    free(sa);
    free(sb);
    sprig_kv_pool_free(P);
    /* bad pool parameters, named */
    struct { struct sprig_kv_pool_params p; const char *field; } bad[] = {
        { { NL, NKV, g_hd, mode, 3, 10 }, "block_slots" },
        { { NL, NKV, g_hd, mode, 0, 10 }, "block_slots" },
        { { NL, NKV, g_hd, mode, 4, 0 }, "n_blocks" },
        { { 0, NKV, g_hd, mode, 4, 10 }, "n_layer" },
        { { NL, NKV, g_hd, 99, 4, 10 }, "mode" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(sprig_kv_pool_create(&bad[i].p, &err) == NULL);
        CHECKF(strstr(err.msg, bad[i].field) != NULL, "case %zu: '%s'", i, err.msg);
    }
    CHECK(sprig_kv_create_paged(NULL, 8, &err) == NULL);
}

/* Prefix sharing: publish, share, copy on write, idle blocks, LRU eviction, claims. */
static void test_prefix_share(int mode)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 7);
    struct sprig_kv_pool_params pp = { .n_layer = NL, .n_kv_head = NKV, .head_dim = g_hd, .mode = mode,
                                       .block_slots = BLOCK, .n_blocks = 12 };
    sprig_kv_pool *P = sprig_kv_pool_create(&pp, &err);
    CHECKF(P != NULL, "%s", err.msg);
    if (!P) return;
    int32_t tok[CTX], other[CTX];
    for (int i = 0; i < CTX; i++) tok[i] = other[i] = 1000 + i;
    other[9] = 7;   /* agrees with tok in blocks 0 and 1 only */
    sprig_kv *a = sprig_kv_create_paged(P, CTX, &err), *b = sprig_kv_create_paged(P, CTX, &err);
    fill(a, 14, &r);                                   /* 3 full blocks + 2 slots */
    struct snap *sa = take(a);
    CHECK_EQ_INT(sprig_kv_paged_publish(a, tok, 14), 3);
    CHECK_EQ_INT(sprig_kv_paged_publish(a, tok, 14), 0);   /* keyed once */
    CHECK_EQ_INT(sprig_kv_paged_lookup(b, tok, 30), 12);
    CHECK_EQ_INT(sprig_kv_paged_lookup(b, other, 30), 8);
    CHECK_EQ_INT(sprig_kv_paged_lookup(b, tok, 11), 8);    /* whole blocks of the tokens asked */
    const int free0 = sprig_kv_pool_free_blocks(P);
    CHECK_EQ_INT(sprig_kv_paged_share(b, other, 30), 8);   /* two blocks attached, not copied */
    CHECK_EQ_INT(sprig_kv_len(b), 8);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), free0);
    bool ok = true;
    for (int j = 0; j < 8; j++) ok &= row_eq(b, j, sa, j);
    CHECK(ok);
    struct sprig_kv_pool_stats st;
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.shared_blocks, 2);
    CHECK_EQ_INT(st.cached_blocks, 3);
    CHECK_EQ_INT(st.hit_blocks, 2);
    /* b goes on from slot 8 with its own rows: a new block; a's rows stay */
    fill(b, 5, &r);
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.copied, 0);
    /* b trims back into shared block 1 and writes: copied first, a unchanged */
    CHECK_EQ_INT(sprig_kv_trim(b, 7, &err), SPRIG_OK);    /* len 6: inside block 1 */
    fill(b, 3, &r);
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.copied, 1);
    CHECK_EQ_INT(st.shared_blocks, 1);                  /* block 0 only */
    ok = true;
    for (int j = 0; j < 14; j++) ok &= row_eq(a, j, sa, j);
    for (int j = 0; j < 6; j++) ok &= row_eq(b, j, sa, j);   /* the copy kept b's first two rows of block 1 */
    CHECK(ok);
    CHECK_EQ_INT(sprig_kv_paged_lookup(b, tok, 30), 12);   /* a's blocks are still keyed */
    /* a trims into its own keyed block 2 (held alone) and writes: unkeyed, not copied */
    CHECK_EQ_INT(sprig_kv_trim(a, 5, &err), SPRIG_OK);    /* len 9 */
    fill(a, 2, &r);
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.copied, 1);
    CHECK_EQ_INT(sprig_kv_paged_lookup(b, tok, 30), 8);
    /* freed sequences leave keyed blocks cached (idle), shareable by a new one */
    sprig_kv_free(a);
    sprig_kv_free(b);
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.idle_blocks, 2);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 12);     /* idle blocks count as free */
    sprig_kv *c = sprig_kv_create_paged(P, CTX, &err);
    CHECK_EQ_INT(sprig_kv_paged_share(c, tok, 30), 8);
    ok = true;
    for (int j = 0; j < 8; j++) ok &= row_eq(c, j, sa, j);
    CHECK(ok);
    CHECK_EQ_INT(sprig_kv_paged_publish(c, tok, 8), 0);
    /* eviction: c holds the two cached blocks (never evicted); another sequence keys 2 more, frees them; a third
     * takes every free block: the idle ones go, the older first */
    sprig_kv *d = sprig_kv_create_paged(P, CTX, &err);
    int32_t t2[CTX];
    for (int i = 0; i < CTX; i++) t2[i] = 5000 + i;
    fill(d, 8, &r);
    CHECK_EQ_INT(sprig_kv_paged_publish(d, t2, 8), 2);
    sprig_kv_free(d);
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.idle_blocks, 2);
    const int64_t ev0 = st.evicted;
    sprig_kv *e = sprig_kv_create_paged(P, CTX, &err);
    fill(e, 9 * BLOCK, &r);                            /* 8 free + 1 idle */
    sprig_kv_pool_get_stats(P, &st);
    CHECK_EQ_INT(st.evicted - ev0, 1);
    CHECK_EQ_INT(sprig_kv_paged_lookup(e, t2, 30), 4);   /* released last-first: block 1 was the older idle one */
    fill(e, BLOCK, &r);
    CHECK_EQ_INT(sprig_kv_paged_lookup(e, t2, 30), 0);
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_kv_reserve(e, BLOCK, &err), SPRIG_E_CONTEXT_FULL);   /* c's blocks are held: not taken */
    ok = true;
    for (int j = 0; j < 8; j++) ok &= row_eq(c, j, sa, j);
    CHECK(ok);
    /* claims: c claims its next block; a second sequence with the same tokens must wait, then finds it cached */
    sprig_kv *f = sprig_kv_create_paged(P, CTX, &err);
    CHECK_EQ_INT(sprig_kv_paged_share(f, tok, 30), 8);
    CHECK_EQ_INT(sprig_kv_paged_claim(c, tok, 30), SPRIG_KV_CLAIM_GO);
    CHECK_EQ_INT(sprig_kv_paged_claim(f, tok, 30), SPRIG_KV_CLAIM_WAIT);
    sprig_kv_paged_unclaim(c);
    CHECK_EQ_INT(sprig_kv_paged_claim(f, tok, 30), SPRIG_KV_CLAIM_GO);
    sprig_kv_paged_unclaim(f);
    sprig_kv_free(e);
    sprig_kv_free(f);
    sprig_kv_free(c);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 12);
    free(sa);
    sprig_kv_pool_free(P);
}

/* The key map against a plain list: random keys in, random ones out, every lookup agreeing. */
static void test_prefix_map(void)
{
    enum { NB = 300 };
    sprig_kv_prefix px;
    CHECK_EQ_INT(sprig_kv_prefix_init(&px, NB, NULL), SPRIG_OK);
    sprig_kv_key keys[NB];
    bool in[NB] = { false };
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    int bad = 0;
    for (int it = 0; it < 20000; it++) {
        const int b = (int)(sprig_rng_u64(&r) % NB);
        if (in[b]) {
            sprig_kv_prefix_unkey(&px, b);
            in[b] = false;
        } else {
            int32_t t = (int32_t)(sprig_rng_u64(&r) % 64);   /* few distinct keys: collisions of the probe runs */
            keys[b] = sprig_kv_key_next(sprig_kv_key_start(), &t, 1);
            const bool dup = sprig_kv_prefix_find(&px, keys[b]) >= 0;
            in[b] = sprig_kv_prefix_insert(&px, b, keys[b]);
            bad += in[b] == dup;
        }
        const int q = (int)(sprig_rng_u64(&r) % NB);
        if (in[q]) bad += sprig_kv_prefix_find(&px, keys[q]) != q;
    }
    int n = 0;
    for (int b = 0; b < NB; b++) n += in[b];
    CHECK_EQ_INT(px.n_keyed, n);
    CHECK_EQ_INT(bad, 0);
    sprig_kv_prefix_free(&px);
}

/* A cache kind without gather: the dispatcher refuses with a reason. */
static void nogather_destroy(sprig_kv *kv) { (void)kv; }
static void nogather_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    (void)kv; (void)layer; (void)n; (void)k; (void)v;
}
static sprig_kv_view nogather_view(const sprig_kv *kv, int layer) { (void)kv; (void)layer; return (sprig_kv_view){ 0 }; }

static void test_refusing_kind(void)
{
    static const struct sprig_kv_vt vt = {
        .kind = "paged-test", .destroy = nogather_destroy, .write = nogather_write, .view = nogather_view,
    };
    sprig_kv kv = { .vt = &vt, .p = { 1, 16, 1, 4, SPRIG_KV_MODE_F32, 0, 0 }, .len = 8 };
    char reason[128];
    CHECK(!sprig_kv_can_gather(&kv, reason, sizeof reason));
    CHECK(strstr(reason, "paged-test") != NULL);
    sprig_error err;
    int sel[2] = { 0, 3 };
    CHECK_EQ_INT(sprig_kv_gather_positions(&kv, sel, 2, &err), SPRIG_E_REFUSED);
    CHECK(strstr(err.msg, "paged-test") != NULL);
    CHECK_EQ_INT(sprig_kv_gather_within_tail(&kv, 4, sel, 2, &err), SPRIG_E_REFUSED);
    CHECK_EQ_INT(kv.len, 8);
    CHECK_EQ_INT(sprig_kv_trim(&kv, 3, &err), SPRIG_OK);   /* trim needs no gather */
    CHECK_EQ_INT(kv.len, 5);
}

int main(void)
{
    RUN(test_create_validates);
    RUN(test_refusing_kind);
    RUN(test_prefix_map);
    /* every mode at head size 16; the 3-bit packing also at 8 (one group of
     * three bytes per record) and 64 */
    static const struct { int mode, hd; } runs[] = {
        { SPRIG_KV_MODE_F32, 16 }, { SPRIG_KV_MODE_F16, 16 }, { SPRIG_KV_MODE_INT8, 16 }, { SPRIG_KV_MODE_INT8, 8 },
        { SPRIG_KV_MODE_TURBO4, 16 }, { SPRIG_KV_MODE_TURBO4_ASYM, 16 }, { SPRIG_KV_MODE_TURBO3_ASYM, 16 },
        { SPRIG_KV_MODE_TURBO3_ASYM, 8 }, { SPRIG_KV_MODE_TURBO3_ASYM, 64 }, { SPRIG_KV_MODE_TURBO4, 64 },
    };
    for (int paged = 0; paged < 2; paged++)
        for (size_t t = 0; t < sizeof runs / sizeof runs[0]; t++) {
            g_hd = runs[t].hd;
            sprig_error err;
            if (paged) {
                /* one pool for the (up to three) caches a test holds at once */
                struct sprig_kv_pool_params pp = { .n_layer = NL, .n_kv_head = NKV, .head_dim = g_hd, .mode = runs[t].mode,
                                                   .block_slots = BLOCK, .n_blocks = 3 * CTX / BLOCK };
                g_pool = sprig_kv_pool_create(&pp, &err);
                CHECKF(g_pool != NULL, "%s", err.msg);
            }
            fprintf(stderr, "%s, mode %s, head size %d\n", paged ? "paged" : "dense", sprig_kv_mode_name(runs[t].mode), g_hd);
            test_write_view(runs[t].mode);
            test_trim_and_identity(runs[t].mode);
            test_gather_equivalences(runs[t].mode);
            test_tree_rollback_shape(runs[t].mode);
            test_bad_arguments(runs[t].mode);
            if (paged) {
                CHECK_EQ_INT(sprig_kv_pool_free_blocks(g_pool), 3 * CTX / BLOCK);   /* every block came back */
                sprig_kv_pool_free(g_pool);
                g_pool = NULL;
                test_paged_pool(runs[t].mode);
                test_prefix_share(runs[t].mode);
            }
        }
    return test_summary("test-kv");
}
