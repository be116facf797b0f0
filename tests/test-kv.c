/*
 * tests/test-kv.c — the KV cache contract (kv/kv.h) on the dense kind, f32
 * and f16, several layers, random rows:
 *   write/view round trip; trim; gather_positions (identity is a no-op, a
 *   prefix equals trim, a scattered selection keeps exactly those rows);
 *   gather_within_tail equals gather_positions said in absolute terms, moves
 *   only tail bytes and keeps the buffer; every bad argument is refused with
 *   the argument named and the cache left as it was; a kind without gather
 *   refuses through the dispatcher.
 */
#include "test.h"
#include "base/rng.h"
#include "kv/kv.h"
#include "tensor/types.h"

enum { NL = 3, DIM = 12, CTX = 64 };

static size_t elt_of(int type) { return type == SPRIG_TYPE_F32 ? 4 : 2; }

static sprig_kv *make(int type)
{
    sprig_error err;
    struct sprig_kv_params p = { .n_layer = NL, .n_ctx = CTX, .kv_dim = DIM, .type = type };
    sprig_kv *kv = sprig_kv_create_dense(&p, &err);
    CHECK(kv != NULL);
    return kv;
}

/* Append n random rows to every layer. */
static void fill(sprig_kv *kv, int n, sprig_rng *r)
{
    float k[CTX * DIM], v[CTX * DIM];
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < n * DIM; i++) {
            k[i] = (float)sprig_rng_normal(r);
            v[i] = (float)sprig_rng_normal(r);
        }
        sprig_kv_write(kv, l, n, k, v);
    }
    sprig_kv_commit(kv, n);
}

/* Byte snapshot of slots [0, CTX) of every layer: [NL][2][CTX*DIM*elt]. */
struct snap { unsigned char b[NL][2][CTX * DIM * 4]; };

static void take(const sprig_kv *kv, struct snap *s)
{
    size_t bytes = (size_t)CTX * DIM * elt_of(kv->p.type);
    memset(s, 0, sizeof *s);
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        memcpy(s->b[l][0], vw.k, bytes);
        memcpy(s->b[l][1], vw.v, bytes);
    }
}

/* Slot a of cache x equals slot b of snapshot s, in every layer, keys and values. */
static bool row_eq(const sprig_kv *x, int a, const struct snap *s, int b)
{
    size_t rb = (size_t)DIM * elt_of(x->p.type);
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(x, l);
        if (memcmp((const char *)vw.k + a * rb, s->b[l][0] + b * rb, rb)) return false;
        if (memcmp((const char *)vw.v + a * rb, s->b[l][1] + b * rb, rb)) return false;
    }
    return true;
}

/* Caches x and y hold the same len and the same bytes in [0, len). */
static bool same(const sprig_kv *x, const sprig_kv *y)
{
    if (sprig_kv_len(x) != sprig_kv_len(y)) return false;
    struct snap sy;
    take(y, &sy);
    for (int i = 0; i < sprig_kv_len(x); i++)
        if (!row_eq(x, i, &sy, i)) return false;
    return true;
}

static void copy_into(sprig_kv *dst, const sprig_kv *src)
{
    sprig_kv_clear(dst);
    int n = sprig_kv_len(src);
    float k[CTX * DIM], v[CTX * DIM];
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(src, l);
        for (int i = 0; i < n * DIM; i++) {
            if (src->p.type == SPRIG_TYPE_F32) {
                k[i] = ((const float *)vw.k)[i];
                v[i] = ((const float *)vw.v)[i];
            } else {
                k[i] = sprig_f16_to_f32(((const sprig_f16 *)vw.k)[i]);
                v[i] = sprig_f16_to_f32(((const sprig_f16 *)vw.v)[i]);
            }
        }
        sprig_kv_write(dst, l, n, k, v);
    }
    sprig_kv_commit(dst, n);
}

static void test_create_validates(void)
{
    sprig_error err;
    struct sprig_kv_params good = { .n_layer = 2, .n_ctx = 8, .kv_dim = 4, .type = SPRIG_TYPE_F16 };
    struct { struct sprig_kv_params p; const char *field; } bad[] = {
        { { 0, 8, 4, SPRIG_TYPE_F32 }, "n_layer" },
        { { 2, 0, 4, SPRIG_TYPE_F32 }, "n_ctx" },
        { { 2, 8, -1, SPRIG_TYPE_F32 }, "kv_dim" },
        { { 2, 8, 4, SPRIG_TYPE_Q8_0 }, "type" },
        { { 2, 8, 4, 999 }, "type" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        sprig_kv *kv = sprig_kv_create_dense(&bad[i].p, &err);
        CHECK(kv == NULL);
        CHECKF(strstr(err.msg, bad[i].field) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg, bad[i].field);
    }
    CHECK(sprig_kv_create_dense(NULL, &err) == NULL);
    sprig_kv *kv = sprig_kv_create_dense(&good, &err);
    CHECK(kv != NULL);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
    CHECK_EQ_INT(sprig_kv_capacity(kv), 8);
    CHECK_STR(sprig_kv_kind(kv), "dense");
    sprig_kv_free(kv);
    sprig_kv_free(NULL);
}

static void test_write_view(int type)
{
    sprig_kv *kv = make(type);
    float k[2 * DIM], v[2 * DIM];
    for (int i = 0; i < 2 * DIM; i++) { k[i] = 0.1f * (float)i - 1.0f; v[i] = 3.3f - 0.7f * (float)i; }
    for (int l = 0; l < NL; l++) sprig_kv_write(kv, l, 2, k, v);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);   /* pending until commit */
    sprig_kv_commit(kv, 2);
    CHECK_EQ_INT(sprig_kv_len(kv), 2);
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        CHECK_EQ_INT(vw.type, type);
        CHECK_EQ_INT(vw.stride, DIM);
        bool ok = true;
        for (int i = 0; i < 2 * DIM; i++) {
            float gk, gv;
            if (type == SPRIG_TYPE_F32) { gk = ((const float *)vw.k)[i]; gv = ((const float *)vw.v)[i]; }
            else { gk = sprig_f16_to_f32(((const sprig_f16 *)vw.k)[i]); gv = sprig_f16_to_f32(((const sprig_f16 *)vw.v)[i]); }
            float wk = type == SPRIG_TYPE_F32 ? k[i] : sprig_f16_to_f32(sprig_f32_to_f16(k[i]));
            float wv = type == SPRIG_TYPE_F32 ? v[i] : sprig_f16_to_f32(sprig_f32_to_f16(v[i]));
            ok &= gk == wk && gv == wv;
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
    struct snap s0;
    take(kv, &s0);
    int ident[20];
    for (int i = 0; i < 20; i++) ident[i] = i;
    CHECK_EQ_INT(sprig_kv_gather_positions(kv, ident, 20, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    struct snap s1;
    take(kv, &s1);
    CHECK(memcmp(&s0, &s1, sizeof s0) == 0);
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 7, ident, 7, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    take(kv, &s1);
    CHECK(memcmp(&s0, &s1, sizeof s0) == 0);

    CHECK_EQ_INT(sprig_kv_trim(kv, 0, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 20);
    CHECK_EQ_INT(sprig_kv_trim(kv, 5, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 15);
    bool ok = true;
    for (int i = 0; i < 15; i++) ok &= row_eq(kv, i, &s0, i);
    CHECK(ok);
    /* re-append after trim writes at the new end */
    fill(kv, 3, &r);
    CHECK_EQ_INT(sprig_kv_len(kv), 18);
    ok = true;
    for (int i = 0; i < 15; i++) ok &= row_eq(kv, i, &s0, i);
    CHECK(ok);
    CHECK_EQ_INT(sprig_kv_trim(kv, 18, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
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
    int reps = test_quick() ? 60 : 400;
    for (int rep = 0; rep < reps; rep++) {
        sprig_kv_clear(a);
        int len = 1 + (int)(sprig_rng_u64(&r) % 40);
        fill(a, len, &r);
        struct snap s0;
        take(a, &s0);

        /* prefix selection equals trim */
        int m = (int)(sprig_rng_u64(&r) % (uint64_t)(len + 1));
        int sel[CTX];
        for (int i = 0; i < m; i++) sel[i] = i;
        copy_into(b, a);
        CHECK_EQ_INT(sprig_kv_gather_positions(b, sel, m, &err), SPRIG_OK);
        copy_into(c, a);
        CHECK_EQ_INT(sprig_kv_trim(c, len - m, &err), SPRIG_OK);
        CHECK(same(b, c));
        CHECK_EQ_INT(sprig_kv_len(b), m);

        /* scattered selection keeps exactly those rows, in order */
        m = (int)(sprig_rng_u64(&r) % (uint64_t)(len + 1));
        subset(&r, len, m, sel);
        copy_into(b, a);
        CHECK_EQ_INT(sprig_kv_gather_positions(b, sel, m, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_len(b), m);
        bool ok = true;
        for (int i = 0; i < m; i++) ok &= row_eq(b, i, &s0, sel[i]);
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
        copy_into(b, a);
        copy_into(c, a);
        sprig_kv_view before = sprig_kv_view_layer(b, 0);
        struct snap sb;
        take(b, &sb);
        CHECK_EQ_INT(sprig_kv_gather_within_tail(b, tail, kept, nk, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_gather_positions(c, abs_sel, base + nk, &err), SPRIG_OK);
        CHECK(same(b, c));
        CHECK_EQ_INT(sprig_kv_len(b), base + nk);
        /* only tail bytes moved, and the buffer is the same allocation */
        sprig_kv_view after = sprig_kv_view_layer(b, 0);
        CHECK(before.k == after.k && before.v == after.v);
        struct snap sa;
        take(b, &sa);
        size_t head = (size_t)base * DIM * elt_of(type);
        size_t all = (size_t)CTX * DIM * elt_of(type);
        size_t tail_end = (size_t)len * DIM * elt_of(type);
        ok = true;
        for (int l = 0; l < NL; l++)
            for (int kvv = 0; kvv < 2; kvv++) {
                ok &= memcmp(sa.b[l][kvv], sb.b[l][kvv], head) == 0;
                ok &= memcmp(sa.b[l][kvv] + tail_end, sb.b[l][kvv] + tail_end, all - tail_end) == 0;
            }
        CHECKF(ok, "gather_within_tail touched bytes outside the tail (rep %d)", rep);

        for (int i = 0; i < nk; i++) kept[i] = i;
        copy_into(b, a);
        copy_into(c, a);
        CHECK_EQ_INT(sprig_kv_gather_within_tail(b, tail, kept, nk, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_trim(c, tail - nk, &err), SPRIG_OK);
        CHECK(same(b, c));
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
    struct snap s0;
    take(kv, &s0);
    const int path[3] = { 0, 2, 5 };
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 6, path, 3, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(kv), 13);
    bool ok = true;
    for (int i = 0; i < 10; i++) ok &= row_eq(kv, i, &s0, i);
    for (int i = 0; i < 3; i++) ok &= row_eq(kv, 10 + i, &s0, 10 + path[i]);
    CHECK(ok);
    sprig_kv_free(kv);
}

static void test_bad_arguments(int type)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 5);
    sprig_kv *kv = make(type);
    fill(kv, 10, &r);
    struct snap s0, s1;
    take(kv, &s0);
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
    take(kv, &s1);
    CHECK(memcmp(&s0, &s1, sizeof s0) == 0);
    CHECK_EQ_INT(sprig_kv_len(kv), 10);
    sprig_kv_clear(kv);
    CHECK_EQ_INT(sprig_kv_len(kv), 0);
    CHECK_EQ_INT(sprig_kv_capacity(kv), CTX);
    sprig_kv_free(kv);
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
    sprig_kv kv = { .vt = &vt, .p = { 1, 16, 4, SPRIG_TYPE_F32 }, .len = 8 };
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
    static const int types[2] = { SPRIG_TYPE_F32, SPRIG_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        fprintf(stderr, "mode %s\n", sprig_type_name(types[t]));
        test_write_view(types[t]);
        test_trim_and_identity(types[t]);
        test_gather_equivalences(types[t]);
        test_tree_rollback_shape(types[t]);
        test_bad_arguments(types[t]);
    }
    return test_summary("test-kv");
}
