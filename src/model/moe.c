/*
 * model/moe — see moe.h.
 */
#include "model/moe.h"
#include "model/arch.h"
#include "base/log.h"
#include "base/mem.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

sprig_status sprig_moe_read_hparams(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp, sprig_error *err)
{
    const char *path = sprig_gguf_path(g);
    char key[128];
    sprig_status st;
    snprintf(key, sizeof key, "%s.expert_count", a->name);
    const int64_t kv = sprig_gguf_find_kv(g, key);
    if (!a->moe) {   /* a dense row: experts are refused by name, never run wrongly */
        int64_t ne = 0;
        const bool arr = kv >= 0 && sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR;
        if (kv >= 0 && !arr && (st = sprig_gguf_get_i64(g, key, &ne, false, err))) return st;
        if (arr || ne != 0)
            return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' is set: sprig does not run mixture-of-experts layers "
                             "(ffn_gate_inp, *_exps) for architecture '%s'", path, key, a->name);
        return SPRIG_OK;
    }
    int64_t E = 0, K = 0, F = 0;
    if (a->moe_optional && kv < 0) return SPRIG_OK;   /* gemma4 without experts: a dense file */
    if ((st = sprig_gguf_get_i64(g, key, &E, true, err))) return st;
    if (E < 1 || E > 512)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [1, 512]", path, key, (long long)E);
    snprintf(key, sizeof key, "%s.expert_used_count", a->name);
    if ((st = sprig_gguf_get_i64(g, key, &K, true, err))) return st;
    if (K < 1 || K > E)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [1, %s.expert_count = %lld]", path, key,
                         (long long)K, a->name, (long long)E);
    snprintf(key, sizeof key, "%s.expert_feed_forward_length", a->name);
    F = hp->n_ff / K;   /* llama.cpp's default */
    if ((st = sprig_gguf_get_i64(g, key, &F, false, err))) return st;
    if (F < 1 || F > (1 << 20))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [1, %d]", path, key, (long long)F, 1 << 20);
    /* what this piece does not run: each key with the values it may hold (lo..hi, or exactly one of two) */
    static const struct { const char *sfx; double a, b; bool range; const char *what; } refused[] = {
        { "expert_gating_func", 0, 1, true, "a router other than softmax (expert_gating_func 1)" },
        { "expert_group_count", 0, 1, true, "grouped expert selection" },
        { "expert_shared_count", 0, 0, true, "shared experts (or more than one for this architecture)" },
        { "expert_weights_norm", 1, 1, true, "unnormalised expert weights (llama.cpp renormalises them for this architecture)" },
        { "expert_weights_scale", 0, 1, false, "scaled expert weights" },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->name, refused[i].sfx);
        if (sprig_gguf_find_kv(g, key) < 0) continue;
        double v = NAN;
        int64_t iv = 0;
        float fv = 0;
        bool bv = false;
        if (sprig_gguf_get_bool(g, key, &bv, false, NULL) == SPRIG_OK) v = bv;
        else if (sprig_gguf_get_i64(g, key, &iv, false, NULL) == SPRIG_OK) v = (double)iv;
        else if (sprig_gguf_get_f32(g, key, &fv, false, NULL) == SPRIG_OK) v = fv;
        const double hi = i == 2 && a->moe_shared ? 1 : refused[i].b;   /* a row with a shared expert: one of it */
        const bool fine = refused[i].range ? v >= refused[i].a && v <= hi : v == refused[i].a || v == refused[i].b;
        if (!fine)
            return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' = %g: sprig does not run %s", path, key, v, refused[i].what);
    }
    hp->n_expert = (int)E;
    hp->n_expert_used = (int)K;
    hp->n_ff_exp = (int)F;
    if (a->moe_shared) {   /* the shared expert's width (llama.cpp's default: feed_forward_length) */
        int64_t S = hp->n_ff;
        snprintf(key, sizeof key, "%s.expert_shared_feed_forward_length", a->name);
        if ((st = sprig_gguf_get_i64(g, key, &S, false, err))) return st;
        if (S < 1 || S > (1 << 20))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [1, %d]", path, key, (long long)S, 1 << 20);
        hp->n_ff_shexp = (int)S;
    }
    return SPRIG_OK;
}

sprig_status sprig_moe_scratch_alloc(struct sprig_moe_scratch *s, const struct sprig_hparams *hp, int B, sprig_error *err)
{
    memset(s, 0, sizeof *s);
    const size_t E = (size_t)hp->n_expert, K = (size_t)hp->n_expert_used, D = (size_t)hp->dim, b = (size_t)B;
    s->logits = sprig_calloc_aligned(b * E, sizeof(float));
    s->sel = sprig_calloc_aligned(b * K, sizeof(int32_t));
    s->w = sprig_calloc_aligned(b * K, sizeof(float));
    s->count = sprig_calloc_aligned(E + 1, sizeof(int32_t));
    s->order = sprig_calloc_aligned(b * K, sizeof(int32_t));
    s->xg = sprig_calloc_aligned(b * D, sizeof(float));
    s->xn2 = sprig_calloc_aligned(b * D, sizeof(float));
    s->rin = sprig_calloc_aligned(b * D, sizeof(float));
    s->mo = sprig_calloc_aligned(b * D, sizeof(float));
    s->ones = sprig_calloc_aligned(D, sizeof(float));
    s->y = sprig_calloc_aligned(b * D, sizeof(float));
    s->slot = sprig_calloc_aligned(b * K * D, sizeof(float));
    s->route = sprig_calloc_aligned(b * SPRIG_MOE_ROUTE_LAYERS * K, sizeof(int16_t));
    if (!s->logits || !s->sel || !s->w || !s->count || !s->order || !s->xg || !s->y || !s->slot || !s->xn2 || !s->rin || !s->mo ||
        !s->ones || !s->route) {
        sprig_moe_scratch_free(s);
        return sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the expert scratch (%d rows x %zu experts)", B, K);
    }
    for (size_t d = 0; d < D; d++) s->ones[d] = 1.0f;
    return SPRIG_OK;
}

void sprig_moe_scratch_free(struct sprig_moe_scratch *s)
{
    sprig_free_aligned(s->logits);
    sprig_free_aligned(s->sel);
    sprig_free_aligned(s->w);
    sprig_free_aligned(s->count);
    sprig_free_aligned(s->order);
    sprig_free_aligned(s->xg);
    sprig_free_aligned(s->y);
    sprig_free_aligned(s->slot);
    sprig_free_aligned(s->xn2);
    sprig_free_aligned(s->rin);
    sprig_free_aligned(s->mo);
    sprig_free_aligned(s->ones);
    sprig_free_aligned(s->route);
    memset(s, 0, sizeof *s);
}

/* One row's routing: p = softmax(l) as ggml_soft_max computes it, the K
 * largest (largest first; equal values: the lower expert id), their
 * weights renormalised as ggml_sum_rows / ggml_clamp / ggml_div do. */
static float route(float *l, int E, int K, int32_t *sel, float *w)
{
    float mx = -INFINITY;
    for (int e = 0; e < E; e++) if (l[e] > mx) mx = l[e];
    double sum = 0;
    for (int e = 0; e < E; e++) {
        l[e] = expf(l[e] - mx);
        sum += (double)l[e];
    }
    const float inv = (float)(1.0 / sum);
    for (int e = 0; e < E; e++) l[e] *= inv;
    for (int k = 0; k < K; k++) {   /* K passes of a selection: K is small (8) */
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int j = 0; j < k && !taken; j++) taken = sel[j] == e;
            if (!taken && (best < 0 || l[e] > l[best])) best = e;
        }
        sel[k] = best;
        w[k] = l[best];
    }
    float next = 0;   /* the best expert not chosen: the routing's margin is p_K - p_(K+1) */
    for (int e = 0; e < E && K < E; e++) {
        bool taken = false;
        for (int j = 0; j < K && !taken; j++) taken = sel[j] == e;
        if (!taken && l[e] > next) next = l[e];
    }
    const float margin = K < E ? w[K - 1] - next : 1.0f;
    double ws = 0;
    for (int k = 0; k < K; k++) ws += (double)w[k];
    float s = (float)ws;
    if (s < 6.103515625e-5f) s = 6.103515625e-5f;
    for (int k = 0; k < K; k++) w[k] = w[k] / s;
    return margin;
}

void sprig_moe_ffn(sprig_pool *pool, const struct sprig_hparams *hp, const struct sprig_layer *L, int n, const float *xn,
                   const float *router_in, bool gelu, float *out, float *gate, float *up, void *act, size_t act_bytes,
                   struct sprig_moe_scratch *s)
{
    const int E = hp->n_expert, K = hp->n_expert_used, F = hp->n_ff_exp, D = hp->dim;
    sprig_act a;
    /* the router: logits[n][E] */
    sprig_act_init(&a, router_in ? router_in : xn, n, D, act, act_bytes);
    const sprig_weight *rw[1] = { &L->router };
    float *ro[1] = { s->logits };
    sprig_matmul(pool, &a, 1, rw, ro);
    memset(s->count, 0, sizeof(int32_t) * (size_t)(E + 1));
    for (int i = 0; i < n; i++) {
        const float mg = route(s->logits + (size_t)i * E, E, K, s->sel + (size_t)i * K, s->w + (size_t)i * K);
        if (i == n - 1 && mg < s->margin) s->margin = mg;
        for (int k = 0; k < K; k++) s->count[s->sel[(size_t)i * K + k] + 1]++;
    }
    if (s->layer_at < SPRIG_MOE_ROUTE_LAYERS) {   /* the routing, for the rounds' predictions */
        for (int i = 0; i < n; i++)
            for (int k = 0; k < K; k++)
                s->route[((size_t)i * SPRIG_MOE_ROUTE_LAYERS + (size_t)s->layer_at) * (size_t)K + (size_t)k] =
                    (int16_t)s->sel[(size_t)i * K + k];
        s->route_layers = ++s->layer_at;
        s->route_rows = n;
    }
    for (int e = 0; e < E; e++) s->count[e + 1] += s->count[e];   /* offsets */
    {   /* (row, slot) pairs grouped by expert, rows ascending within an expert: count[e] is expert e's
         * cursor while filling, which leaves it at expert e + 1's start; shifted back after */
        for (int i = 0; i < n; i++)
            for (int k = 0; k < K; k++) {
                const int e = s->sel[(size_t)i * K + k];
                s->order[s->count[e]++] = i * K + k;
            }
        for (int e = E; e > 0; e--) s->count[e] = s->count[e - 1];   /* count[e] advanced to the next expert's start */
        s->count[0] = 0;
    }
    int ran = 0;
    for (int e = 0; e < E; e++) {
        const int lo = s->count[e], m = s->count[e + 1] - lo;
        if (m == 0) continue;
        ran++;
        s->count_all.bytes += (int64_t)sprig_moe_expert_bytes(L, e);
        __atomic_fetch_or(&L->exp_touched[e >> 6], (uint64_t)1 << (e & 63), __ATOMIC_RELAXED);
        for (int j = 0; j < m; j++) {
            const int i = s->order[lo + j] / K;
            memcpy(s->xg + (size_t)j * D, xn + (size_t)i * D, sizeof(float) * (size_t)D);
        }
        sprig_act_init(&a, s->xg, m, D, act, act_bytes);
        const sprig_weight *gu[2] = { &L->exp_gate[e], &L->exp_up[e] };
        float *guo[2] = { gate, up };
        sprig_matmul(pool, &a, 2, gu, guo);
        if (L->exp_gate_s) for (int64_t i = 0; i < (int64_t)m * F; i++) gate[i] *= L->exp_gate_s[e];   /* per-expert scales */
        if (L->exp_up_s) for (int64_t i = 0; i < (int64_t)m * F; i++) up[i] *= L->exp_up_s[e];
        if (gelu) sprig_geglu(gate, gate, up, (int64_t)m * F);
        else sprig_swiglu(gate, gate, up, (int64_t)m * F);
        sprig_act_init(&a, gate, m, F, act, act_bytes);
        const sprig_weight *dw[1] = { &L->exp_down[e] };
        float *dout[1] = { s->y };
        sprig_matmul(pool, &a, 1, dw, dout);
        if (L->exp_down_s) for (int64_t i = 0; i < (int64_t)m * D; i++) s->y[i] *= L->exp_down_s[e];
        for (int j = 0; j < m; j++) {
            const int rk = s->order[lo + j];
            float *dst = s->slot + (size_t)rk * D;
            const float wk = s->w[rk];
            const float *src = s->y + (size_t)j * D;
            for (int d = 0; d < D; d++) dst[d] = src[d] * wk;   /* ggml_mul(experts, weights) */
        }
    }
    s->last_experts = ran;
    s->count_all.layer_runs++;
    s->count_all.experts += ran;
    for (int i = 0; i < n; i++) {   /* the slots in order: ((s0 + s1) + s2) + ... as ggml_add's chain */
        float *o = out + (size_t)i * D;
        const float *sl = s->slot + (size_t)i * K * D;
        memcpy(o, sl, sizeof(float) * (size_t)D);
        for (int k = 1; k < K; k++)
            for (int d = 0; d < D; d++) o[d] += sl[(size_t)k * D + d];
    }
    if (!L->sh_gate_inp) return;
    /* the shared expert on every row, gated: out += shared(x) * sigmoid(sh_gate_inp . x) (llama.cpp's qwen35moe) */
    const int FS = hp->n_ff_shexp;
    sprig_act_init(&a, xn, n, D, act, act_bytes);
    const sprig_weight *gu[2] = { &L->sh_gate, &L->sh_up };
    float *guo[2] = { gate, up };
    sprig_matmul(pool, &a, 2, gu, guo);
    sprig_swiglu(gate, gate, up, (int64_t)n * FS);
    sprig_act_init(&a, gate, n, FS, act, act_bytes);
    const sprig_weight *dw[1] = { &L->sh_down };
    float *dout[1] = { s->y };
    sprig_matmul(pool, &a, 1, dw, dout);
    for (int i = 0; i < n; i++) {
        const float *x = xn + (size_t)i * D;
        float g = 0;
        for (int d = 0; d < D; d++) g += L->sh_gate_inp[d] * x[d];
        const float sg = 1.0f / (1.0f + expf(-g));
        float *o = out + (size_t)i * D;
        const float *y = s->y + (size_t)i * D;
        for (int d = 0; d < D; d++) o[d] += y[d] * sg;
    }
}

int sprig_moe_last_experts(const struct sprig_moe_scratch *s) { return s->last_experts; }

size_t sprig_moe_expert_bytes(const struct sprig_layer *L, int e)
{
    const sprig_weight *w[3] = { &L->exp_gate[e], &L->exp_up[e], &L->exp_down[e] };
    size_t b = 0;
    for (int i = 0; i < 3; i++) b += w[i]->row_bytes * (size_t)w[i]->n_out;
    return b;
}

void sprig_moe_gemma4(sprig_pool *pool, const struct sprig_hparams *hp, const struct sprig_layer *L, int n, const float *x,
                      float *out, float *gate, float *up, void *act, size_t act_bytes, struct sprig_moe_scratch *s)
{
    const int D = hp->dim;
    /* out (the dense MLP's output) through its norm */
    sprig_rmsnorm(out, out, L->ffn_post_norm1, n, D, hp->eps);
    /* the experts' input, and the router's: rms_norm(x) / sqrt(dim) * scale, each step rounded as ggml's ops */
    sprig_rmsnorm(s->xn2, x, L->ffn_pre_norm2, n, D, hp->eps);
    sprig_rmsnorm(s->rin, x, s->ones, n, D, hp->eps);
    const float inv = 1.0f / sqrtf((float)D);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < D; d++) {
            float *r = &s->rin[(size_t)i * D + d];
            *r = *r * inv;
            *r = *r * L->router_s[d];
        }
    sprig_moe_ffn(pool, hp, L, n, s->xn2, s->rin, true, s->mo, gate, up, act, act_bytes, s);
    sprig_rmsnorm(s->mo, s->mo, L->ffn_post_norm2, n, D, hp->eps);
    sprig_add_inplace(out, s->mo, (int64_t)n * D);   /* ggml_add(cur_mlp, cur_moe) */
}

void sprig_moe_begin(struct sprig_moe_scratch *s)
{
    if (!s) return;
    s->margin = 1.0f;
    s->count_all.forwards++;
    s->layer_at = s->route_layers = s->route_rows = 0;
}

void sprig_moe_end(const struct sprig_moe_scratch *s, int n)
{
    if (s && sprig_log_get_level() >= SPRIG_LOG_DEBUG)
        SPRIG_LOGD("moe: forward of %d rows: the last row's smallest router margin %.6g", n, (double)s->margin);
}
