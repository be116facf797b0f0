/*
 * tests/test-kv-ring.c — the sliding-window cache (kv/kv_ring.c) against a
 * plain model of the logical history: every layer's view must present the
 * records of the slots a query can still see, in logical order, from
 * `first` on, after any sequence of writes, trims and gathers.
 *   - ring mode: batches up to max_batch written past the wrap; the view
 *     (rotated) equals the history's last slots; before the wrap gathers
 *     work, after it can_gather says no naming the layer, gathers and
 *     tail_is_in_logical_order refuse; trims that need dropped slots are
 *     refused by name;
 *   - the speculative buffer: switched on after a wrap, then random rounds
 *     (append a block, keep a random path with gather_within_tail or trim)
 *     over 20x the window: the view always equals the model, in order,
 *     gathers are always allowed, the buffer never reallocates, and the
 *     front is compacted only every `slack` tokens or so;
 *   - attention through the view (rotated or buffered) equals attention
 *     over the same logical rows copied contiguous, bit for bit;
 *   - full layers beside sliding ones behave as the dense cache; bad
 *     arguments are refused by name.
 */
#include "test.h"
#include "base/rng.h"
#include "kv/kv.h"

enum { NL = 3, NKV = 2, HD = 16, CTX = 512, MAXB = 6 };
static const int windows[NL] = { 24, 0, 9 };   /* sliding, full, sliding */

/* The logical history: hist[j] = the f32 rows (K then V, all layers) of slot j. */
static float hist[CTX][NL][2][NKV * HD];
static int hist_len;

static void gen_rows(sprig_rng *r, int j)
{
    for (int l = 0; l < NL; l++)
        for (int t = 0; t < 2; t++)
            for (int i = 0; i < NKV * HD; i++) hist[j][l][t][i] = (float)sprig_rng_normal(r);
}

static void append(sprig_kv *kv, int n, sprig_rng *r)
{
    sprig_error err;
    const int len = sprig_kv_len(kv);
    CHECKF(sprig_kv_reserve(kv, n, &err) == SPRIG_OK, "%s", err.msg);
    float k[MAXB * 4][NKV * HD], v[MAXB * 4][NKV * HD];
    for (int i = 0; i < n; i++) gen_rows(r, len + i);
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < n; i++) {
            memcpy(k[i], hist[len + i][l][0], sizeof k[i]);
            memcpy(v[i], hist[len + i][l][1], sizeof v[i]);
        }
        sprig_kv_write(kv, l, n, &k[0][0], &v[0][0]);
    }
    sprig_kv_commit(kv, n);
    hist_len = len + n;
}

/* Every layer's view holds, from `first` on, the records of the history's
 * slots in logical order, and at least what a query at len can see. */
static bool view_ok(const sprig_kv *kv, int mode)
{
    sprig_kv_codec kc, vc;
    sprig_error err;
    sprig_kv_mode_codecs(mode, HD, &kc, &vc, &err);
    const int len = sprig_kv_len(kv);
    bool ok = len == hist_len;
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        const int need = windows[l] && len - windows[l] + 1 > 0 ? len - windows[l] + 1 : 0;
        if (vw.first > need || vw.first < 0) {
            fprintf(stderr, "  layer %d: first %d > needed %d (len %d)\n", l, vw.first, need, len);
            return false;
        }
        if (!windows[l] && vw.first != 0) return false;
        for (int j = vw.first; j < len; j++)
            for (int g = 0; g < NKV; g++) {
                uint8_t want[4 * HD + 8];
                sprig_kv_codec_encode(&kc, hist[j][l][0] + g * HD, want);
                ok &= !memcmp(sprig_kvrows_at(&vw.k, j - vw.first, g), want, (size_t)kc.rec_bytes);
                sprig_kv_codec_encode(&vc, hist[j][l][1] + g * HD, want);
                ok &= !memcmp(sprig_kvrows_at(&vw.v, j - vw.first, g), want, (size_t)vc.rec_bytes);
            }
    }
    return ok;
}

static sprig_kv *make(int mode)
{
    sprig_error err;
    struct sprig_kv_params p = { .n_layer = NL, .n_ctx = CTX, .n_kv_head = NKV, .head_dim = HD, .mode = mode };
    sprig_kv *kv = sprig_kv_create_ring(&p, windows, MAXB, &err);
    CHECKF(kv != NULL, "%s", err.msg);
    hist_len = 0;
    return kv;
}

/* Attention of a few queries through layer l's view equals attention over
 * the same logical rows copied to a contiguous f32 buffer, bit for bit. */
static bool attention_ok(sprig_pool *pool, const sprig_kv *kv, int l, int n)
{
    const int len = sprig_kv_len(kv);
    sprig_kv_view vw = sprig_kv_view_layer(kv, l);
    const int nk = len - vw.first, nh = 4;
    float q[4 * 4 * HD], o1[4 * 4 * HD], o2[4 * 4 * HD];
    for (int i = 0; i < n * nh * HD; i++) q[i] = (float)sin(0.37 * i + l);
    float *dk = malloc(sizeof(float) * (size_t)nk * NKV * HD), *dv = malloc(sizeof(float) * (size_t)nk * NKV * HD);
    for (int j = 0; j < nk; j++)
        for (int g = 0; g < NKV; g++) {
            sprig_kvrows_decode_ref(&vw.k, sprig_kvrows_at(&vw.k, j, g), HD, dk + ((size_t)j * NKV + g) * HD);
            sprig_kvrows_decode_ref(&vw.v, sprig_kvrows_at(&vw.v, j, g), HD, dv + ((size_t)j * NKV + g) * HD);
        }
    size_t sn = sprig_attn_scratch_floats(n, nh, nk, 2);
    float *scr = malloc(sizeof(float) * sn);
    sprig_attn_args a = { .q = q, .n = n, .n_head = nh, .n_kv_head = NKV, .hd = HD, .kr = &vw.k, .vr = &vw.v,
                          .n_keys = nk, .scale = 0.25f, .out = o1, .scratch = scr, .scratch_floats = sn };
    sprig_attention(pool, &a);
    sprig_attn_args b = { .q = q, .n = n, .n_head = nh, .n_kv_head = NKV, .hd = HD, .k = dk, .v = dv,
                          .kv_type = SPRIG_TYPE_F32, .kv_stride = NKV * HD, .n_keys = nk, .scale = 0.25f, .out = o2,
                          .scratch = scr, .scratch_floats = sn };
    sprig_attention(pool, &b);
    const bool ok = !memcmp(o1, o2, sizeof(float) * (size_t)n * nh * HD);
    free(dk);
    free(dv);
    free(scr);
    return ok;
}

static void test_ring_mode(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    sprig_pool *pool = sprig_pool_create(2, &err);
    sprig_kv *kv = make(SPRIG_KV_MODE_F16);
    CHECK_STR(sprig_kv_kind(kv), "ring");
    char reason[200];
    /* before the wrap: in order, gathers work */
    append(kv, 5, &r);
    append(kv, 4, &r);
    CHECK(view_ok(kv, SPRIG_KV_MODE_F16));
    CHECK(sprig_kv_can_gather(kv, reason, sizeof reason));
    CHECK(sprig_kv_tail_is_in_logical_order(kv));
    const int path[2] = { 0, 2 };
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 4, path, 2, &err), SPRIG_OK);
    memcpy(hist[6], hist[7], sizeof hist[6]);   /* the model: slots 5, 7 kept as 5, 6 */
    hist_len = 7;
    CHECK(view_ok(kv, SPRIG_KV_MODE_F16));
    /* past the wrap of layer 2 (window 9, 14 slots): the view rotates */
    bool ok = true, att = true;
    for (int step = 0; step < 60; step++) {
        append(kv, 1 + (int)(sprig_rng_u64(&r) % MAXB), &r);
        ok &= view_ok(kv, SPRIG_KV_MODE_F16);
        if (step % 7 == 0) att &= attention_ok(pool, kv, 2, 1 + step % 4) && attention_ok(pool, kv, 0, 3);
    }
    CHECK(ok);
    CHECK(att);
    CHECK(!sprig_kv_can_gather(kv, reason, sizeof reason));
    CHECKF(strstr(reason, "layer 0") && strstr(reason, "wrapped"), "%s", reason);
    CHECK(!sprig_kv_tail_is_in_logical_order(kv));
    const int keep1[1] = { 1 };
    CHECK_EQ_INT(sprig_kv_gather_within_tail(kv, 3, keep1, 1, &err), SPRIG_E_REFUSED);
    CHECK(strstr(err.msg, "wrapped") != NULL);
    /* a small trim is fine (the slack still holds what the window needs) */
    const int len = sprig_kv_len(kv);
    CHECK_EQ_INT(sprig_kv_trim(kv, 3, &err), SPRIG_OK);
    hist_len = len - 3;
    CHECK(view_ok(kv, SPRIG_KV_MODE_F16));
    /* a deep one is refused, naming the layer, and changes nothing */
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_kv_trim(kv, 40, &err), SPRIG_E_REFUSED);
    CHECKF(strstr(err.msg, "layer 0") && strstr(err.msg, "dropped"), "%s", err.msg);
    CHECK(view_ok(kv, SPRIG_KV_MODE_F16));
    /* a forward larger than the slack is refused */
    CHECK_EQ_INT(sprig_kv_reserve(kv, MAXB + 1, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "slack") != NULL);
    sprig_kv_free(kv);
    sprig_pool_free(pool);
}

static void test_speculative_buffer(int mode)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 4 + (uint64_t)mode);
    sprig_pool *pool = sprig_pool_create(2, &err);
    sprig_kv *kv = make(mode);
    for (int i = 0; i < 10; i++) append(kv, MAXB, &r);   /* 60 slots: both rings wrapped */
    CHECK(!sprig_kv_tail_is_in_logical_order(kv));
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(kv, 16, &err), SPRIG_OK);
    CHECK(sprig_kv_tail_is_in_logical_order(kv));
    CHECK(view_ok(kv, mode));
    const sprig_kv_view v0 = sprig_kv_view_layer(kv, 0);
    CHECK(v0.k.ring_cap == 0);
    bool ok = true, att = true, gathers = true;
    int compactions = 0, rounds = 0, last_first = v0.first;
    while (sprig_kv_len(kv) < CTX - 2 * MAXB - 16) {
        char reason[160];
        gathers &= sprig_kv_can_gather(kv, reason, sizeof reason);
        const int block = 1 + (int)(sprig_rng_u64(&r) % (MAXB + 16));   /* verify blocks up to the buffer */
        const int base = sprig_kv_len(kv);
        append(kv, block, &r);
        /* keep a random path (a strictly increasing subset of the block) */
        int kept[MAXB + 16], nk = 0;
        for (int i = 0; i < block; i++)
            if (i == 0 || sprig_rng_u64(&r) % 3) kept[nk++] = i;
        if (rounds % 5 == 4) {
            CHECK_EQ_INT(sprig_kv_trim(kv, block - 1, &err), SPRIG_OK);
            nk = 1;
        } else {
            CHECKF(sprig_kv_gather_within_tail(kv, block, kept, nk, &err) == SPRIG_OK, "%s", err.msg);
            for (int i = 0; i < nk; i++) memcpy(hist[base + i], hist[base + kept[i]], sizeof hist[0]);
        }
        hist_len = base + nk;
        ok &= view_ok(kv, mode);
        const sprig_kv_view vw = sprig_kv_view_layer(kv, 0);
        ok &= vw.k.base == v0.k.base;          /* never reallocated */
        if (vw.first != last_first) compactions++;
        last_first = vw.first;
        if (rounds % 9 == 0) att &= attention_ok(pool, kv, 0, 4) && attention_ok(pool, kv, 2, 2);
        rounds++;
    }
    CHECK(ok);
    CHECK(att);
    CHECK(gathers);
    /* layer 0: window 24, buffer 24 - 1 + 6 + 16 = 45 slots; a compaction keeps the window and up to
     * max_batch (6) more (so a trim of 6 stays possible): one about every 10-16 slots */
    fprintf(stderr, "  %s: %d rounds to %d slots, layer 0 compacted %d times\n", sprig_kv_mode_name(mode), rounds,
            sprig_kv_len(kv), compactions);
    CHECK(compactions > 0 && compactions < sprig_kv_len(kv) / 8);
    /* a gather that needs a dropped slot is refused, naming it */
    const int len = sprig_kv_len(kv);
    int few[3] = { 0, len - 2, len - 1 };   /* keeps slot 0, long dropped by layer 0 */
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_kv_gather_positions(kv, few, 3, &err), SPRIG_E_REFUSED);
    CHECKF(strstr(err.msg, "dropped") && strstr(err.msg, "slot 0"), "%s", err.msg);
    CHECK(view_ok(kv, mode));
    /* the absolute form equals the tail form on what the window holds */
    int abs_sel[CTX], n_abs = 0;
    for (int i = 0; i < len - 4; i++) abs_sel[n_abs++] = i;
    abs_sel[n_abs++] = len - 3;
    abs_sel[n_abs++] = len - 1;
    CHECK_EQ_INT(sprig_kv_gather_positions(kv, abs_sel, n_abs, &err), SPRIG_OK);
    memcpy(hist[len - 4], hist[len - 3], sizeof hist[0]);
    memcpy(hist[len - 3], hist[len - 1], sizeof hist[0]);
    hist_len = n_abs;
    CHECK(view_ok(kv, mode));
    sprig_kv_free(kv);
    sprig_pool_free(pool);
}

/* Right after a compaction (buffered, one-token forwards as a draft model
 * makes them), a trim of max_batch slots still finds every slot its window
 * needs — as in ring mode. */
static void test_trim_after_compaction(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 11);
    sprig_kv *kv = make(SPRIG_KV_MODE_F32);
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(kv, 16, &err), SPRIG_OK);
    int first = sprig_kv_view_layer(kv, 0).first, n = 0;
    while (sprig_kv_view_layer(kv, 0).first == first && n++ < 200) append(kv, 1, &r);
    CHECKF(sprig_kv_view_layer(kv, 0).first != first, "no compaction in %d one-slot forwards", n);
    CHECKF(sprig_kv_trim(kv, MAXB, &err) == SPRIG_OK, "%s", err.msg);
    hist_len -= MAXB;
    CHECK(view_ok(kv, SPRIG_KV_MODE_F32));
    sprig_kv_free(kv);
}

static void test_bad_arguments(void)
{
    sprig_error err;
    struct sprig_kv_params p = { .n_layer = NL, .n_ctx = CTX, .n_kv_head = NKV, .head_dim = HD, .mode = 0 };
    const int bad_w[NL] = { 4, -1, 0 };
    CHECK(sprig_kv_create_ring(&p, NULL, 4, &err) == NULL && strstr(err.msg, "windows"));
    CHECK(sprig_kv_create_ring(&p, bad_w, 4, &err) == NULL && strstr(err.msg, "windows[1]"));
    CHECK(sprig_kv_create_ring(&p, windows, 0, &err) == NULL && strstr(err.msg, "max_batch"));
    p.mode = 77;
    CHECK(sprig_kv_create_ring(&p, windows, 4, &err) == NULL && strstr(err.msg, "mode"));
    /* a dense cache has no speculative buffer */
    p.mode = 0;
    sprig_kv *d = sprig_kv_create(&p, &err);
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(d, 8, &err), SPRIG_E_INVALID_ARG);
    CHECK(sprig_kv_tail_is_in_logical_order(d));
    sprig_kv_free(d);
    sprig_kv *kv = sprig_kv_create_ring(&p, windows, 4, &err);
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(kv, -2, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(kv, 8, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_ring_set_buffer(kv, 0, &err), SPRIG_E_INVALID_ARG);
    sprig_kv_free(kv);
}

int main(void)
{
    RUN(test_ring_mode);
    test_speculative_buffer(SPRIG_KV_MODE_F16);
    test_speculative_buffer(SPRIG_KV_MODE_TURBO3_ASYM);
    test_speculative_buffer(SPRIG_KV_MODE_INT8);
    RUN(test_trim_after_compaction);
    RUN(test_bad_arguments);
    return test_summary("test-kv-ring");
}
