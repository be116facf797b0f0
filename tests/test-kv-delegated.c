/*
 * tests/test-kv-delegated.c — the turbo4-delegated cache (kv/kv_delegated.c)
 * against a plain model: a query at position p must read slot s's value as
 * the 4-bit code of its rotated f16 row when s < B(p) = 128*floor(p/128) -
 * 128 (at least 0), and as that rotated f16 row otherwise; keys are f16.
 *   - random rounds (append a verify block, keep a random path or trim) to
 *     ~1,500 slots: the hot ring wraps (1,024 slots) and folds happen every
 *     128 positions; after every round the view for p = len equals the model,
 *     and so do the views of every position inside the next block;
 *   - gather_within_tail equals gather_positions in absolute terms, a prefix
 *     equals trim; an absolute selection crossing the hot/cold boundary
 *     rebuilds the cold records from the moved hot rows; one keeping a slot
 *     that would be read hot but only has its code left is refused, naming
 *     the slot;
 *   - sprig_kv_attend on a block whose rows straddle a fold boundary (two
 *     epochs in one forward) equals each row attended alone, bit for bit.
 */
#include "test.h"
#include "base/rng.h"
#include "kv/kv.h"

enum { NL = 2, NKV = 2, NH = 4, HD = 32, CTX = 1600, MAXB = 24 };

static float hist[CTX][NL][2][NKV * HD];   /* the logical rows: K, V */
static int hist_len;
static sprig_kv_codec g_kc, g_vc, g_hc;

static int boundary(int p)
{
    const int b = (p / 128) * 128 - 128;
    return b > 0 ? b : 0;
}

static sprig_kv *make(void)
{
    sprig_error err;
    struct sprig_kv_params p = { .n_layer = NL, .n_ctx = CTX, .n_kv_head = NKV, .head_dim = HD,
                                 .mode = SPRIG_KV_MODE_TURBO4_DELEGATED, .max_batch = MAXB, .n_head = NH };
    sprig_kv *kv = sprig_kv_create(&p, &err);
    CHECKF(kv != NULL, "%s", err.msg);
    hist_len = 0;
    return kv;
}

static void append(sprig_kv *kv, int n, sprig_rng *r)
{
    sprig_error err;
    const int len = sprig_kv_len(kv);
    CHECKF(sprig_kv_reserve(kv, n, &err) == SPRIG_OK, "%s", err.msg);
    static float k[MAXB][NKV * HD], v[MAXB][NKV * HD];
    for (int i = 0; i < n; i++)
        for (int l = 0; l < NL; l++)
            for (int t = 0; t < 2; t++)
                for (int e = 0; e < NKV * HD; e++) hist[len + i][l][t][e] = (float)sprig_rng_normal(r);
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

/* The model's records of slot s as read by a query at p: key f16, value hot
 * (f16 of the rotated row) or cold (T4 of that f16 row, already rotated). */
static void model_records(int l, int s, int g, int p, uint8_t *krec, uint8_t *vrec, bool *cold)
{
    sprig_kv_codec_encode(&g_kc, hist[s][l][0] + g * HD, krec);
    float x[HD];
    memcpy(x, hist[s][l][1] + g * HD, sizeof x);
    sprig_kv_codec_rotate(&g_vc, x, 1, false);
    uint8_t h[2 * HD];
    sprig_kv_codec_encode(&g_hc, x, h);
    *cold = s < boundary(p);
    if (!*cold) { memcpy(vrec, h, sizeof h); return; }
    sprig_kvrows hr = { .fmt = SPRIG_KVROWS_F16 };
    sprig_kvrows_decode_ref(&hr, h, HD, x);
    sprig_kv_encode_turbo_rotated(&g_vc, x, vrec);
}

/* The view a query at p sees equals the model on slots [0, upto). */
static bool view_ok(const sprig_kv *kv, int p, int upto)
{
    bool ok = true;
    for (int l = 0; l < NL; l++) {
        sprig_kv_view vw = kv->vt->view_at(kv, l, kv->vt->epoch(kv, p));
        vw.v.next = &vw.v_next;
        if (vw.v.split != boundary(p)) return false;
        for (int s = 0; s < upto; s++)
            for (int g = 0; g < NKV; g++) {
                uint8_t kr[2 * HD], vr[2 * HD];
                bool cold;
                model_records(l, s, g, p, kr, vr, &cold);
                ok &= !memcmp(sprig_kvrows_at(&vw.k, s, g), kr, sizeof kr);
                int j = s;
                const sprig_kvrows *seg = sprig_kvrows_seg(&vw.v, &j);
                ok &= (seg->fmt == SPRIG_KVROWS_T4) == cold;
                ok &= !memcmp(sprig_kvrows_at(seg, j, g), vr, (size_t)(cold ? g_vc.rec_bytes : g_hc.rec_bytes));
            }
    }
    return ok;
}

static void test_rounds(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 21);
    sprig_kv *kv = make();
    if (!kv) return;
    CHECK_STR(sprig_kv_kind(kv), "delegated");
    bool ok = true, inner = true, crossed = false;
    int rounds = 0;
    append(kv, MAXB, &r);
    while (sprig_kv_len(kv) < CTX - 2 * MAXB) {
        const int base = sprig_kv_len(kv), block = 1 + (int)(sprig_rng_u64(&r) % MAXB);
        append(kv, block, &r);
        if (boundary(base) != boundary(base + block - 1)) crossed = true;
        /* inside the block, every row's position reads the model's epoch */
        if (rounds % 4 == 0) inner &= view_ok(kv, base + block - 1, base + block) && view_ok(kv, base, base + block);
        int kept[MAXB], nk = 0;
        for (int i = 0; i < block; i++)
            if (i == 0 || sprig_rng_u64(&r) % 3) kept[nk++] = i;
        if (rounds % 6 == 5) {
            CHECK_EQ_INT(sprig_kv_trim(kv, block - 1, &err), SPRIG_OK);
            nk = 1;
        } else {
            CHECKF(sprig_kv_gather_within_tail(kv, block, kept, nk, &err) == SPRIG_OK, "%s", err.msg);
            for (int i = 0; i < nk; i++) memcpy(hist[base + i], hist[base + kept[i]], sizeof hist[0]);
        }
        hist_len = base + nk;
        /* right after the rollback (as the MTP drafter reads it) */
        if (rounds % 3 == 0) ok &= view_ok(kv, hist_len, hist_len);
        rounds++;
    }
    CHECK(ok);
    CHECK(inner);
    CHECK(crossed);
    fprintf(stderr, "  %d rounds to %d slots (hot ring of 1024 wrapped, cold body up to %d)\n", rounds, sprig_kv_len(kv),
            boundary(sprig_kv_len(kv)));
    sprig_kv_free(kv);
}

static void test_gather_forms(void)
{
    sprig_error err;
    for (int rep = 0; rep < 6; rep++) {
        sprig_rng r;
        sprig_rng_seed(&r, 50 + (uint64_t)rep);
        sprig_kv *a = make(), *b = make();
        int len = 0;
        for (int i = 0; i < 12 + rep * 4; i++) append(a, MAXB, &r);
        len = sprig_kv_len(a);
        sprig_rng_seed(&r, 50 + (uint64_t)rep);
        for (int i = 0; i < 12 + rep * 4; i++) append(b, MAXB, &r);
        /* a verify tail (it never reaches the cold records: they end >= 128 slots back) */
        const int tail = MAXB;
        int kept[MAXB], nk = 0, abs_sel[CTX];
        for (int i = 0; i < tail; i++)
            if (i % 3 != 1) kept[nk++] = i;
        const int base = len - tail;
        for (int i = 0; i < base; i++) abs_sel[i] = i;
        for (int i = 0; i < nk; i++) abs_sel[base + i] = base + kept[i];
        CHECK_EQ_INT(sprig_kv_gather_within_tail(a, tail, kept, nk, &err), SPRIG_OK);
        CHECKF(sprig_kv_gather_positions(b, abs_sel, base + nk, &err) == SPRIG_OK, "%s", err.msg);
        for (int i = 0; i < nk; i++) memcpy(hist[base + i], hist[base + kept[i]], sizeof hist[0]);
        hist_len = base + nk;
        CHECK(view_ok(a, hist_len, hist_len));
        CHECK(view_ok(b, hist_len, hist_len));
        sprig_kv_free(a);
        sprig_kv_free(b);
    }
    /* an absolute selection crossing the hot/cold boundary: dropping slots
     * 250 and 300 of 400 (cold records end at 256) moves hot rows under the
     * boundary; the cold records from there are rebuilt */
    {
        sprig_rng rr;
        sprig_rng_seed(&rr, 77);
        sprig_kv *c = make();
        for (int i = 0; i < 20; i++) append(c, 20, &rr);   /* 400 slots */
        int sel[CTX], ns = 0;
        for (int i = 0; i < 400; i++)
            if (i != 250 && i != 300) sel[ns++] = i;
        CHECK_EQ_INT(sprig_kv_gather_positions(c, sel, ns, &err), SPRIG_OK);
        for (int i = 0; i < ns; i++) memcpy(hist[i], hist[sel[i]], sizeof hist[0]);
        hist_len = ns;
        CHECK(view_ok(c, ns, ns));
        CHECK(view_ok(c, ns + 30, ns));   /* and what a later query reads (more cold slots) after a forward */
        sprig_kv_free(c);
    }
    /* a prefix equals trim */
    sprig_rng r;
    sprig_rng_seed(&r, 9);
    sprig_kv *a = make();
    for (int i = 0; i < 20; i++) append(a, MAXB, &r);
    int sel[CTX];
    for (int i = 0; i < 300; i++) sel[i] = i;
    CHECK_EQ_INT(sprig_kv_gather_positions(a, sel, 300, &err), SPRIG_OK);
    hist_len = 300;
    CHECK(view_ok(a, 300, 300));
    /* an old slot kept where it would be read hot: its f16 row left the ring */
    for (int i = 0; i < 40; i++) append(a, MAXB, &r);   /* 1260 slots: the ring holds 236.. */
    const int len = sprig_kv_len(a);
    int few[3] = { 10, len - 2, len - 1 };
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_kv_gather_positions(a, few, 3, &err), SPRIG_E_REFUSED);
    CHECKF(strstr(err.msg, "slot 10") && strstr(err.msg, "4-bit"), "%s", err.msg);
    CHECK_EQ_INT(sprig_kv_len(a), len);
    CHECK(view_ok(a, len, len));
    sprig_kv_free(a);
}

/* A forward block straddling a fold boundary: each row equals itself alone. */
static void test_attend_two_epochs(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 5);
    sprig_pool *pool = sprig_pool_create(2, &err);
    sprig_kv *kv = make();
    for (int i = 0; i < 10; i++) append(kv, MAXB, &r);   /* 240 */
    append(kv, 10, &r);                                  /* 250 */
    const int base = 250, n = 12;                        /* positions 250..261: B = 0 then 128 */
    append(kv, n, &r);
    CHECK_EQ_INT(sprig_kv_trim(kv, n, &err), SPRIG_OK);  /* committed rows; re-reserve for the block */
    hist_len = base;
    CHECK_EQ_INT(sprig_kv_reserve(kv, n, &err), SPRIG_OK);
    /* write the block's rows again (pending) */
    static float k[MAXB][NKV * HD], v[MAXB][NKV * HD];
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < n; i++) {
            memcpy(k[i], hist[base + i][l][0], sizeof k[i]);
            memcpy(v[i], hist[base + i][l][1], sizeof v[i]);
        }
        sprig_kv_write(kv, l, n, &k[0][0], &v[0][0]);
    }
    const int W = NH * HD;
    float q[MAXB * NH * HD], q1[NH * HD], out[MAXB * NH * HD], one[NH * HD];
    for (int i = 0; i < n * W; i++) q[i] = (float)sprig_rng_normal(&r);
    int32_t pos[MAXB];
    for (int i = 0; i < n; i++) pos[i] = base + i;
    const size_t sn = sprig_attn_scratch_floats(n, NH, base + n, 2);
    float *scr = malloc(sizeof(float) * sn);
    float qc[MAXB * NH * HD];
    memcpy(qc, q, sizeof(float) * (size_t)n * W);
    sprig_attn_args a = { .n = n, .n_head = NH, .n_kv_head = NKV, .hd = HD, .n_keys = base + n, .scale = 0.2f,
                          .out = out, .scratch = scr, .scratch_floats = sn };
    sprig_kv_attend(pool, kv, 1, qc, pos, &a);
    bool ok = true;
    int epochs = 0;
    for (int i = 0; i < n; i++) {
        /* row i alone: its keys [0, base + i] (a causal prefix), its position */
        memcpy(q1, q + (size_t)i * W, sizeof q1);
        sprig_attn_args b = { .n = 1, .n_head = NH, .n_kv_head = NKV, .hd = HD, .n_keys = base + i + 1, .scale = 0.2f,
                              .out = one, .scratch = scr, .scratch_floats = sn };
        sprig_kv_attend(pool, kv, 1, q1, &pos[i], &b);
        ok &= !memcmp(one, out + (size_t)i * W, sizeof one);
        if (i && boundary(pos[i]) != boundary(pos[i - 1])) epochs++;
    }
    CHECK(ok);
    CHECK_EQ_INT(epochs, 1);   /* the block did straddle */
    free(scr);
    sprig_kv_free(kv);
    sprig_pool_free(pool);
}

int main(void)
{
    sprig_error err;
    CHECK(sprig_kv_mode_codecs(SPRIG_KV_MODE_TURBO4_DELEGATED, HD, &g_kc, &g_vc, &err) == SPRIG_OK);
    CHECK(sprig_kv_codec_init(&g_hc, SPRIG_KVROWS_F16, HD, 0, &err) == SPRIG_OK);
    RUN(test_rounds);
    RUN(test_gather_forms);
    RUN(test_attend_two_epochs);
    return test_summary("test-kv-delegated");
}
