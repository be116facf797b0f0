/*
 * tests/test-round.c — the decoding session (spec/round) with a mock target
 * and a scripted drafter; no model.
 *
 * The mock target is a real function of its context: its argmax after a
 * context is the next token of a fixed script while the context follows the
 * script, and a hash of the context otherwise. It keeps its context in a real
 * dense KV cache (one row per slot holding the token and its RoPE position),
 * rolls back with kv trim / gather_within_tail, and reads every prediction
 * back out of that cache — so a wrong rollback changes the output and a
 * misplaced row shows up as a position that disagrees with its slot. It logs
 * every finalize, and can be tree-capable, tree-incapable (NULL slots), or
 * available only on some rounds. The scripted drafter replays a plan of
 * "this many correct drafts, then a wrong one" per round, so full, partial
 * and zero accepts all happen, with the true token as the runner-up at the
 * first wrong step (so a branching tree can recover it).
 *
 * Pinned: plain == chain == linear tree == branching tree output (greedy),
 * identical rollback logs and statistics for chain vs linear tree with proof
 * that every accept kind occurred and the tree path ran; refusal defaults and
 * the once-only warning; the switch (env vs option); a path through a sibling
 * leaf; budget / EOS / cancel / context stops mid-round; the accept hooks;
 * sampling sessions follow the target's joint distribution; bad parameters
 * and broken targets/drafters are errors.
 */
#include "test.h"
#include "base/log.h"
#include "base/rng.h"
#include "kv/kv.h"
#include "spec/round.h"
#include "tensor/types.h"

#define V 16
#define EOS 2
#define SCRIPT_LEN 400

/* ---------------------------------------------------------------- log capture */

static struct { int level; char msg[256]; } g_log[64];
static int g_nlog;

static void capture(int level, const char *msg, void *user)
{
    (void)user;
    if (g_nlog < 64) {
        g_log[g_nlog].level = level;
        snprintf(g_log[g_nlog].msg, sizeof g_log[0].msg, "%s", msg);
        g_nlog++;
    }
}

static int count_log(int level, const char *needle)
{
    int c = 0;
    for (int i = 0; i < g_nlog; i++)
        if (g_log[i].level == level && strstr(g_log[i].msg, needle)) c++;
    return c;
}

/* ---------------------------------------------------------------- mock target */

struct fin_entry { bool tree; int accepted, block; bool path_is_prefix; int path[SPRIG_TREE_MAX]; int n_path; };

struct mock {
    sprig_target base;
    sprig_kv *kv;                       /* 1 layer, row = (token, position) */
    const int32_t *script;
    int n_script;
    bool probs_mode;                    /* fill probabilities from hashed distributions */
    int avail;                          /* 0 yes, 1 every other call, 2 never */
    int avail_calls, fwd, fwd_tree;
    bool bad_positions;
    int break_finalize;                 /* 1: keep one slot too few */
    struct fin_entry log[1024];
    int n_log;
};

static uint64_t hash_seq(const int32_t *s, int n, uint64_t salt)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ salt;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)s[i] + 0x9E3779B97F4A7C15ull;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

/* The target's greedy choice after ctx[n]. */
static int32_t oracle(const struct mock *m, const int32_t *ctx, int n)
{
    if (n < m->n_script && !memcmp(ctx, m->script, (size_t)n * sizeof *ctx)) return m->script[n];
    return 3 + (int32_t)(hash_seq(ctx, n, 7) % (V - 3));
}

/* The target's sampling distribution after ctx[n] over nv tokens. */
static void dist(const int32_t *ctx, int n, int nv, float *p)
{
    sprig_rng r;
    sprig_rng_seed(&r, hash_seq(ctx, n, 1));
    double z[V], mx = -1e30, sum = 0, kept = 0;
    for (int v = 0; v < nv; v++) { z[v] = 1.3 * sprig_rng_normal(&r); mx = z[v] > mx ? z[v] : mx; }
    for (int v = 0; v < nv; v++) { z[v] = exp(z[v] - mx); sum += z[v]; }
    for (int v = 0; v < nv; v++) { z[v] /= sum; if (z[v] < 0.04) z[v] = 0; kept += z[v]; }
    for (int v = 0; v < nv; v++) p[v] = (float)(z[v] / kept);
}

/* Tokens of the cache slots [0, n) into out; flags slots whose position is not their index. */
static int cache_tokens(struct mock *m, int32_t *out)
{
    int n = sprig_kv_len(m->kv);
    sprig_kv_view vw = sprig_kv_view_layer(m->kv, 0);
    const float *k = (const float *)(const void *)vw.k.base;   /* f32 records of 2 elements, contiguous */
    for (int j = 0; j < n; j++) {
        out[j] = (int32_t)k[2 * j];
        if ((int)k[2 * j + 1] != j) m->bad_positions = true;
    }
    return n;
}

static void append(struct mock *m, const int32_t *tok, const int *pos, int n)
{
    float rows[2 * SPRIG_TREE_MAX * 8];
    for (int done = 0; done < n;) {
        int c = SPRIG_MIN(n - done, SPRIG_TREE_MAX * 8);
        for (int i = 0; i < c; i++) { rows[2 * i] = (float)tok[done + i]; rows[2 * i + 1] = (float)pos[done + i]; }
        sprig_kv_write(m->kv, 0, c, rows, rows);
        sprig_kv_commit(m->kv, c);
        done += c;
    }
}

static void fill_row(struct mock *m, sprig_rows *rows, int i, const int32_t *ctx, int n)
{
    if (rows->sampling) dist(ctx, n, m->base.n_vocab, rows->probs + (size_t)i * m->base.n_vocab);
    else rows->argmax[i] = oracle(m, ctx, n);
}

static sprig_status mock_prefill(sprig_target *t, const int32_t *tok, int n, sprig_rows *rows,
                                 sprig_target_state *st, sprig_error *err)
{
    struct mock *m = (struct mock *)t;
    int base = sprig_kv_len(m->kv);
    if (base + n > t->n_ctx) return sprig_err(err, SPRIG_E_CONTEXT_FULL, "mock prefill: full");
    int pos[4096];
    for (int i = 0; i < n; i++) pos[i] = base + i;
    append(m, tok, pos, n);
    static int32_t ctx[8192];
    int len = cache_tokens(m, ctx);
    fill_row(m, rows, 0, ctx, len);
    st->n_past = len;
    st->hidden = NULL;
    st->kv = m->kv;
    return SPRIG_OK;
}

static sprig_status mock_forward(sprig_target *t, const int32_t *block, int n, sprig_rows *rows, sprig_capture *cap,
                                 sprig_error *err)
{
    struct mock *m = (struct mock *)t;
    static int32_t ctx[8192];
    int past = cache_tokens(m, ctx);
    if (past + n > t->n_ctx) return sprig_err(err, SPRIG_E_CONTEXT_FULL, "mock forward: full");
    int pos[SPRIG_TREE_MAX] = { 0 };
    for (int i = 0; i < n; i++) pos[i] = past + i;
    append(m, block, pos, n);
    for (int i = 0; i < n; i++) {
        ctx[past + i] = block[i];
        fill_row(m, rows, i, ctx, past + i + 1);
    }
    m->fwd++;
    cap->block = n;
    cap->tree = false;
    cap->priv = m;
    return SPRIG_OK;
}

static sprig_status mock_finalize(sprig_target *t, int accepted, int n, sprig_capture *cap, sprig_target_state *st,
                                  sprig_error *err)
{
    struct mock *m = (struct mock *)t;
    if (cap->priv != m) return sprig_err(err, SPRIG_E_INTERNAL, "mock finalize: foreign capture");
    sprig_status s = sprig_kv_trim(m->kv, n - (accepted + 1) + (m->break_finalize ? 1 : 0), err);
    if (s) return s;
    struct fin_entry *e = &m->log[m->n_log++ % 1024];
    *e = (struct fin_entry){ .tree = false, .accepted = accepted, .block = n, .path_is_prefix = true, .n_path = accepted + 1 };
    for (int i = 0; i <= accepted; i++) e->path[i] = i;
    st->n_past = sprig_kv_len(m->kv);
    return SPRIG_OK;
}

static bool mock_available(sprig_target *t, char *reason, size_t cap)
{
    struct mock *m = (struct mock *)t;
    int call = m->avail_calls++;
    bool ok = m->avail == 0 || (m->avail == 1 && call % 2 == 0);
    if (!ok) snprintf(reason, cap, "mock cache cannot gather this round");
    return ok;
}

static sprig_status mock_forward_tree(sprig_target *t, const sprig_tree *tree, sprig_rows *rows, sprig_capture *cap,
                                      sprig_error *err)
{
    struct mock *m = (struct mock *)t;
    static int32_t ctx[8192];
    int past = cache_tokens(m, ctx);
    int n = tree->n;
    if (past + n > t->n_ctx) return sprig_err(err, SPRIG_E_CONTEXT_FULL, "mock tree forward: full");
    int depth[SPRIG_TREE_MAX], pos[SPRIG_TREE_MAX] = { 0 };
    sprig_tree_depths(tree, depth);
    for (int i = 0; i < n; i++) pos[i] = past + depth[i];
    append(m, tree->tokens, pos, n);
    for (int i = 0; i < n; i++) {
        int path[SPRIG_TREE_MAX];
        int len = sprig_tree_path_to(tree, i, path);
        for (int j = 0; j < len; j++) ctx[past + j] = tree->tokens[path[j]];
        fill_row(m, rows, i, ctx, past + len);
    }
    m->fwd_tree++;
    cap->block = n;
    cap->tree = true;
    cap->priv = m;
    return SPRIG_OK;
}

static sprig_status mock_finalize_tree(sprig_target *t, const int *path, int n_path, int n, sprig_capture *cap,
                                       sprig_target_state *st, sprig_error *err)
{
    struct mock *m = (struct mock *)t;
    if (cap->priv != m) return sprig_err(err, SPRIG_E_INTERNAL, "mock finalize_tree: foreign capture");
    sprig_status s = sprig_kv_gather_within_tail(m->kv, n, path, n_path, err);
    if (s) return s;
    struct fin_entry *e = &m->log[m->n_log++ % 1024];
    *e = (struct fin_entry){ .tree = true, .accepted = n_path - 1, .block = n, .path_is_prefix = true, .n_path = n_path };
    for (int i = 0; i < n_path; i++) {
        e->path[i] = path[i];
        e->path_is_prefix &= path[i] == i;
    }
    st->n_past = sprig_kv_len(m->kv);
    return SPRIG_OK;
}

static const struct sprig_target_vt mock_tree_vt = {
    .name = "mock-tree", .prefill = mock_prefill, .verify_forward = mock_forward, .verify_finalize = mock_finalize,
    .tree_round_is_available = mock_available, .verify_forward_tree = mock_forward_tree,
    .verify_finalize_tree = mock_finalize_tree,
};
static const struct sprig_target_vt mock_chain_vt = {
    .name = "mock-chain", .prefill = mock_prefill, .verify_forward = mock_forward, .verify_finalize = mock_finalize,
};

static void mock_init(struct mock *m, bool tree_capable, const int32_t *script, int n_script, int n_ctx)
{
    memset(m, 0, sizeof *m);
    m->base.vt = tree_capable ? &mock_tree_vt : &mock_chain_vt;
    m->base.n_vocab = V;
    m->base.n_ctx = n_ctx;
    m->base.n_eos = 1;
    m->base.eos[0] = EOS;
    struct sprig_kv_params kp = { .n_layer = 1, .n_ctx = n_ctx, .n_kv_head = 1, .head_dim = 2, .mode = SPRIG_KV_MODE_F32 };
    sprig_error err;
    m->kv = sprig_kv_create_dense(&kp, &err);
    CHECK(m->kv != NULL);
    m->script = script;
    m->n_script = n_script;
}

static void mock_reset(struct mock *m)
{
    sprig_kv_clear(m->kv);
    m->avail_calls = m->fwd = m->fwd_tree = m->n_log = 0;
    m->bad_positions = false;
}

/* ---------------------------------------------------------------- scripted drafter */

struct sdrafter {
    sprig_drafter base;
    const struct mock *m;               /* its oracle gives the true continuation */
    const int *plan;                    /* correct drafts per round (-1: all); cycles */
    int n_plan, round;
    bool rank_mode;                     /* sampling tests: drafts = a perturbed ranking */
    int too_many;                       /* broken drafter: propose k tokens */
    int begin_calls, accept_calls, accept_tree_calls;
};

static int32_t wrong(int32_t truth, int i) { int32_t w = 3 + (truth - 3 + 1 + i % 5) % (V - 3); return w == truth ? 3 + (w - 2) % (V - 3) : w; }

/* ranking of a perturbed copy of the target's distribution (sampling tests) */
static void rank2(const int32_t *ctx, int n, int nv, int32_t *r0, int32_t *r1)
{
    float p[V];
    dist(ctx, n, nv, p);
    sprig_rng r;
    sprig_rng_seed(&r, hash_seq(ctx, n, 2));
    double best = -1e30, second = -1e30;
    *r0 = *r1 = 0;
    for (int v = 0; v < nv; v++) {
        double s = log(p[v] + 1e-3) + 1.0 * sprig_rng_normal(&r);
        if (s > best) { second = best; *r1 = *r0; best = s; *r0 = v; }
        else if (s > second) { second = s; *r1 = v; }
    }
}

static sprig_status sd_draft_block(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, sprig_draft *out,
                                   sprig_error *err)
{
    struct sdrafter *s = (struct sdrafter *)d;
    static int32_t c[8192];
    if (ctx->target->n_past != ctx->n_history)
        return sprig_err(err, SPRIG_E_INTERNAL, "drafter: history %d vs target %d", ctx->n_history, ctx->target->n_past);
    memcpy(c, ctx->history, (size_t)ctx->n_history * sizeof *c);
    int n = ctx->n_history;
    c[n++] = ctx->bonus;
    int good = s->plan ? s->plan[s->round % s->n_plan] : -1;
    s->round++;
    if (good < 0) good = k;
    int want = s->too_many ? k : k - 1;
    for (int i = 0; i < want; i++) {
        int32_t truth, alt;
        if (s->rank_mode) {
            rank2(c, n, s->m->base.n_vocab, &truth, &alt);
            out->tokens[i] = truth;
            out->runner_up[i] = alt;
        } else {
            truth = oracle(s->m, c, n);
            out->tokens[i] = i < good ? truth : wrong(truth, i);
            out->runner_up[i] = i == good ? truth : wrong(truth, i + 2);
        }
        c[n++] = out->tokens[i];
    }
    out->n = want;
    return SPRIG_OK;
}

static sprig_status sd_begin(sprig_drafter *d, const sprig_draft_ctx *ctx, sprig_error *err)
{
    (void)ctx; (void)err;
    struct sdrafter *s = (struct sdrafter *)d;
    s->begin_calls++;
    s->round = 0;
    return SPRIG_OK;
}

static sprig_status sd_accept(sprig_drafter *d, const sprig_round_info *info, sprig_error *err)
{
    struct sdrafter *s = (struct sdrafter *)d;
    if (info->tree || !info->draft || info->walk->accepted > info->draft->n)
        return sprig_err(err, SPRIG_E_INTERNAL, "accept hook: inconsistent round info");
    s->accept_calls++;
    return SPRIG_OK;
}

static sprig_status sd_accept_tree(sprig_drafter *d, const sprig_round_info *info, sprig_error *err)
{
    struct sdrafter *s = (struct sdrafter *)d;
    if (!info->tree || info->draft || info->walk->n_path < 1)
        return sprig_err(err, SPRIG_E_INTERNAL, "accept_tree hook: inconsistent round info");
    s->accept_tree_calls++;
    return SPRIG_OK;
}

static const struct sprig_drafter_vt sd_vt = {
    .name = "scripted", .draft_block = sd_draft_block, .begin = sd_begin, .accept = sd_accept,
};
static const struct sprig_drafter_vt sd_tree_hook_vt = {
    .name = "scripted-tree-hook", .draft_block = sd_draft_block, .begin = sd_begin, .accept = sd_accept,
    .accept_tree = sd_accept_tree,
};

static void sd_init(struct sdrafter *s, const struct mock *m, const int *plan, int n_plan)
{
    memset(s, 0, sizeof *s);
    s->base.vt = &sd_vt;
    s->m = m;
    s->plan = plan;
    s->n_plan = n_plan;
}

/* ---------------------------------------------------------------- running sessions */

static struct out { int32_t tok[4096]; int n; int cancel_after; } g_out;

static bool collect(void *user, int32_t tok, const sprig_logprob *top)
{
    struct out *o = user;
    if (o->n < 4096) o->tok[o->n++] = tok;
    return !(o->cancel_after && o->n >= o->cancel_after);
}

static int32_t g_script[SCRIPT_LEN];
static const int P = 6;   /* prompt = script[0..P) */

static void make_script(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 2024);
    for (int i = 0; i < SCRIPT_LEN; i++) g_script[i] = 3 + (int32_t)(sprig_rng_u64(&r) % (V - 3));
}

struct run {
    sprig_spec_stats stats;
    int32_t tok[4096];
    int n;
    sprig_status st;
    char msg[512];
};

static void run_session(sprig_target *t, sprig_drafter *d, struct sprig_spec_params p, struct run *out)
{
    sprig_error err = { 0 };
    memset(&g_out, 0, sizeof g_out);
    p.on_token = collect;
    p.user = &g_out;
    sprig_spec_session *s = sprig_spec_create(t, d, &p, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (!s) { out->st = err.code; return; }
    out->st = sprig_spec_generate(s, g_script, P, &err);
    snprintf(out->msg, sizeof out->msg, "%s", err.msg);
    out->stats = *sprig_spec_get_stats(s);
    memcpy(out->tok, g_out.tok, sizeof g_out.tok);
    out->n = g_out.n;
    sprig_spec_free(s);
}

static bool same_tokens(const struct run *a, const struct run *b)
{
    return a->n == b->n && !memcmp(a->tok, b->tok, (size_t)a->n * sizeof a->tok[0]);
}

static bool is_script(const struct run *a)
{
    return a->n <= SCRIPT_LEN - P && !memcmp(a->tok, g_script + P, (size_t)a->n * sizeof a->tok[0]);
}

static struct sprig_spec_params params(int block, int tree, int max_tokens)
{
    struct sprig_spec_params p = sprig_spec_default_params();
    p.block = block;
    p.tree = tree;
    p.max_tokens = max_tokens;
    return p;
}

/* full, partial (several depths), zero accepts */
static const int PLAN[] = { -1, 2, 0, 1, -1, 0, 3, -1, 1, 0, 2 };
#define NPLAN ((int)(sizeof PLAN / sizeof PLAN[0]))

static void test_plain_decoding(void)
{
    static struct mock m;
    mock_init(&m, false, g_script, SCRIPT_LEN, 1024);
    static struct run r;
    run_session(&m.base, NULL, params(4, SPRIG_TREE_OFF, 50), &r);
    CHECK_EQ_INT(r.st, SPRIG_OK);
    CHECK_EQ_INT(r.n, 50);
    CHECK(is_script(&r));
    CHECK_STR(sprig_path_name(r.stats.path), "plain");
    CHECK_STR(sprig_stop_name(r.stats.stop), "budget");
    CHECK_EQ_INT(r.stats.rounds, 49);
    CHECK_EQ_INT(r.stats.empty_rounds, 49);
    CHECK_EQ_INT(r.stats.proposed, 0);
    CHECK_EQ_INT(r.stats.emitted, 50);
    CHECK_EQ_INT(r.stats.emitted_rounds, 49);
    CHECK(!m.bad_positions);
    sprig_kv_free(m.kv);
}

static void test_chain_equals_linear_tree(void)
{
    static struct mock mc, mt;
    static struct sdrafter dc, dt;
    static struct run rc, rt, rp;
    mock_init(&mc, true, g_script, SCRIPT_LEN, 1024);
    mock_init(&mt, true, g_script, SCRIPT_LEN, 1024);
    for (int block = 2; block <= 6; block++) {
        mock_reset(&mc);
        mock_reset(&mt);
        sd_init(&dc, &mc, PLAN, NPLAN);
        sd_init(&dt, &mt, PLAN, NPLAN);
        g_nlog = 0;
        run_session(&mc.base, &dc.base, params(block, SPRIG_TREE_OFF, 120), &rc);
        int chain_info = count_log(SPRIG_LOG_INFO, "decoding path: chain");
        g_nlog = 0;
        run_session(&mt.base, &dt.base, params(block, SPRIG_TREE_ON, 120), &rt);
        int tree_info = count_log(SPRIG_LOG_INFO, "decoding path: tree");
        CHECK_EQ_INT(rc.st, SPRIG_OK);
        CHECK_EQ_INT(rt.st, SPRIG_OK);
        /* identical output, and it is plain greedy decoding's output */
        CHECK(same_tokens(&rc, &rt));
        CHECK(is_script(&rc));
        CHECK_EQ_INT(rc.n, 120);
        /* identical rollback logs */
        CHECK_EQ_INT(mc.n_log, mt.n_log);
        bool logs = mc.n_log == mt.n_log;
        for (int i = 0; logs && i < mc.n_log; i++)
            logs &= !mc.log[i].tree && mt.log[i].tree && mt.log[i].path_is_prefix &&
                    mc.log[i].accepted == mt.log[i].accepted && mc.log[i].block == mt.log[i].block;
        CHECKF(logs, "block %d: rollback logs differ", block);
        /* identical statistics */
        CHECK(sprig_stats_same_counts(&rc.stats, &rt.stats));
        /* the script exercised every kind of accept */
        CHECKF(rc.stats.full_accept_rounds > 0 && (block == 2 || rc.stats.partial_accept_rounds > 0) &&
                   rc.stats.zero_accept_rounds > 0,
               "block %d: full %lld partial %lld zero %lld", block, (long long)rc.stats.full_accept_rounds,
               (long long)rc.stats.partial_accept_rounds, (long long)rc.stats.zero_accept_rounds);
        if (block == 2) CHECK_EQ_INT(rc.stats.partial_accept_rounds, 0);   /* 1 draft: full or zero only */
        /* and the tree path actually ran, every round, while the chain arm never touched it */
        CHECK_STR(sprig_path_name(rt.stats.path), "tree");
        CHECK_STR(sprig_path_name(rc.stats.path), "chain");
        CHECK_EQ_INT(rt.stats.tree_rounds, rt.stats.rounds);
        CHECK_EQ_INT(rc.stats.tree_rounds, 0);
        CHECK_EQ_INT(mt.fwd_tree, rt.stats.rounds);
        CHECK_EQ_INT(mt.fwd, 0);
        CHECK_EQ_INT(mc.fwd_tree, 0);
        CHECK_EQ_INT(mt.avail_calls, rt.stats.rounds);   /* asked every round */
        CHECK_EQ_INT(mc.avail_calls, 0);                  /* never asked with the switch off */
        CHECK_EQ_INT(chain_info, 1);
        CHECK_EQ_INT(tree_info, 1);
        CHECK(!mc.bad_positions && !mt.bad_positions);
        CHECK(rc.stats.proposed == rc.stats.rounds * (block - 1) || rc.stats.block_min < block);
        /* the chain's hook ran every round; the tree's was skipped with one warning */
        CHECK_EQ_INT(dc.accept_calls, rc.stats.rounds);
        CHECK_EQ_INT(dt.accept_calls, 0);
        CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "no tree form"), 1);
        CHECK_EQ_INT(dc.begin_calls, 1);
    }
    /* plain decoding gives the same tokens */
    mock_reset(&mc);
    run_session(&mc.base, NULL, params(1, SPRIG_TREE_OFF, 120), &rp);
    CHECK(same_tokens(&rp, &rc));
    sprig_kv_free(mc.kv);
    sprig_kv_free(mt.kv);
}

static void test_branching_tree(void)
{
    static struct mock mc, mt;
    static struct sdrafter dc, dt;
    static struct run rc, rt;
    mock_init(&mc, true, g_script, SCRIPT_LEN, 1024);
    mock_init(&mt, true, g_script, SCRIPT_LEN, 1024);
    sd_init(&dc, &mc, PLAN, NPLAN);
    sd_init(&dt, &mt, PLAN, NPLAN);
    dt.base.vt = &sd_tree_hook_vt;
    struct sprig_spec_params pt = params(5, SPRIG_TREE_ON, 150);
    pt.tree_branches = 2;
    g_nlog = 0;
    run_session(&mc.base, &dc.base, params(5, SPRIG_TREE_OFF, 150), &rc);
    run_session(&mt.base, &dt.base, pt, &rt);
    CHECK_EQ_INT(rt.st, SPRIG_OK);
    CHECK(same_tokens(&rc, &rt));
    CHECK(is_script(&rt));
    /* some accepted path went through a sibling leaf (a node past the chain) */
    int through_leaf = 0;
    for (int i = 0; i < mt.n_log; i++) {
        const struct fin_entry *e = &mt.log[i];
        if (!e->path_is_prefix) {
            through_leaf++;
            CHECK(e->path[e->n_path - 1] >= 5);   /* leaves follow the 5 chain nodes */
        }
    }
    CHECK(through_leaf > 0);
    CHECK(rt.stats.block_max == 7);
    /* the leaves recover the first wrong step's token: more accepted per verify */
    CHECK(sprig_stats_emitted_per_verify(&rt.stats) > sprig_stats_emitted_per_verify(&rc.stats));
    CHECK(rt.stats.accepted > rc.stats.accepted);
    /* proposed counts tree nodes - 1 */
    CHECK(rt.stats.proposed > rt.stats.rounds * 4);
    CHECK_EQ_INT(dt.accept_tree_calls, rt.stats.rounds);
    CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "no tree form"), 0);
    CHECK(!mt.bad_positions);
    sprig_kv_free(mc.kv);
    sprig_kv_free(mt.kv);
}

static void test_refusal_defaults(void)
{
    static struct mock m;
    static struct sdrafter d;
    static struct run r;
    mock_init(&m, false, g_script, SCRIPT_LEN, 1024);
    char reason[256];
    CHECK(!sprig_target_tree_round_is_available(&m.base, reason, sizeof reason));
    CHECK(strstr(reason, "mock-chain") != NULL);
    sprig_error err;
    sprig_tree t;
    sprig_tree_root(&t, 5);
    int32_t am[4];
    sprig_rows rows = { .cap = 4, .argmax = am };
    sprig_capture cap = { 0 };
    sprig_target_state st = { 0 };
    CHECK_EQ_INT(sprig_target_verify_forward_tree(&m.base, &t, &rows, &cap, &err), SPRIG_E_REFUSED);
    CHECK(strstr(err.msg, "mock-chain") != NULL && strstr(err.msg, "tree") != NULL);
    int path[1] = { 0 };
    CHECK_EQ_INT(sprig_target_verify_finalize_tree(&m.base, path, 1, 1, &cap, &st, &err), SPRIG_E_REFUSED);
    CHECK(strstr(err.msg, "mock-chain") != NULL);
    CHECK_EQ_INT(sprig_kv_len(m.kv), 0);   /* nothing was appended */

    /* a session with the switch on falls back to chain rounds and says so once */
    sd_init(&d, &m, PLAN, NPLAN);
    g_nlog = 0;
    run_session(&m.base, &d.base, params(4, SPRIG_TREE_ON, 80), &r);
    CHECK_EQ_INT(r.st, SPRIG_OK);
    CHECK(is_script(&r));
    CHECK_EQ_INT(r.n, 80);
    CHECK_STR(sprig_path_name(r.stats.path), "chain");
    CHECK_EQ_INT(r.stats.tree_rounds, 0);
    CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "declined"), 1);
    CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "mock-chain"), 1);
    CHECK_EQ_INT(count_log(SPRIG_LOG_INFO, "decoding path: chain"), 1);
    CHECK_EQ_INT(count_log(SPRIG_LOG_INFO, "decoding path: tree"), 0);
    CHECK_EQ_INT(d.accept_calls, r.stats.rounds);

    /* a tree-capable target that declines every round: same fallback, its reason in the warning */
    static struct mock m2;
    mock_init(&m2, true, g_script, SCRIPT_LEN, 1024);
    m2.avail = 2;
    sd_init(&d, &m2, PLAN, NPLAN);
    g_nlog = 0;
    run_session(&m2.base, &d.base, params(4, SPRIG_TREE_ON, 80), &r);
    CHECK(is_script(&r));
    CHECK_EQ_INT(m2.fwd_tree, 0);
    CHECK_EQ_INT(m2.avail_calls, r.stats.rounds);
    CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "cannot gather this round"), 1);
    sprig_kv_free(m.kv);
    sprig_kv_free(m2.kv);
}

static void test_availability_moves(void)
{
    static struct mock m;
    static struct sdrafter d;
    static struct run r;
    mock_init(&m, true, g_script, SCRIPT_LEN, 1024);
    m.avail = 1;
    sd_init(&d, &m, PLAN, NPLAN);
    d.base.vt = &sd_tree_hook_vt;
    struct sprig_spec_params p = params(4, SPRIG_TREE_ON, 100);
    p.tree_branches = 1;
    g_nlog = 0;
    run_session(&m.base, &d.base, p, &r);
    CHECK_EQ_INT(r.st, SPRIG_OK);
    CHECK(is_script(&r));
    CHECK(r.stats.tree_rounds > 0 && r.stats.chain_rounds > 0);
    CHECK_EQ_INT(m.avail_calls, r.stats.rounds);
    CHECK_EQ_INT(m.fwd_tree, r.stats.tree_rounds);
    CHECK_EQ_INT(m.fwd, r.stats.chain_rounds);
    CHECK_EQ_INT(d.accept_calls, r.stats.chain_rounds);
    CHECK_EQ_INT(d.accept_tree_calls, r.stats.tree_rounds);
    CHECK_STR(sprig_path_name(r.stats.path), "tree");
    CHECK_EQ_INT(count_log(SPRIG_LOG_WARN, "declined"), 1);
    CHECK_EQ_INT(count_log(SPRIG_LOG_INFO, "decoding path: tree"), 1);
    CHECK_EQ_INT(count_log(SPRIG_LOG_INFO, "decoding path: chain"), 1);
    CHECK(!m.bad_positions);
    sprig_kv_free(m.kv);
}

static void test_switch(void)
{
    const char *on[] = { "1", "true", "on", "yes", "TRUE", "On", "YES" };
    const char *off[] = { "0", "false", "off", "no", "", "2", "tree", "yes please" };
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) CHECKF(sprig_spec_parse_switch(on[i]), "%s", on[i]);
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) CHECKF(!sprig_spec_parse_switch(off[i]), "%s", off[i]);
    CHECK(!sprig_spec_parse_switch(NULL));
    /* the option overrides whatever the environment says */
    CHECK(sprig_spec_resolve_tree(SPRIG_TREE_ON, NULL));
    CHECK(sprig_spec_resolve_tree(SPRIG_TREE_ON, "0"));
    CHECK(!sprig_spec_resolve_tree(SPRIG_TREE_OFF, "1"));
    CHECK(!sprig_spec_resolve_tree(SPRIG_TREE_OFF, NULL));
    CHECK(sprig_spec_resolve_tree(SPRIG_TREE_FROM_ENV, "yes"));
    CHECK(!sprig_spec_resolve_tree(SPRIG_TREE_FROM_ENV, NULL));   /* off by default */
    CHECK(!sprig_spec_resolve_tree(SPRIG_TREE_FROM_ENV, "off"));
    /* sessions: FROM_ENV follows this process's environment (read, never written) */
    static struct mock m;
    mock_init(&m, true, g_script, SCRIPT_LEN, 64);
    sprig_error err;
    struct sprig_spec_params p = params(4, SPRIG_TREE_FROM_ENV, 8);
    sprig_spec_session *s = sprig_spec_create(&m.base, NULL, &p, &err);
    CHECK_EQ_INT(sprig_spec_tree_mode(s), sprig_spec_parse_switch(getenv("SPRIG_TREE")));
    sprig_spec_free(s);
    p.tree = SPRIG_TREE_ON;
    s = sprig_spec_create(&m.base, NULL, &p, &err);
    CHECK(sprig_spec_tree_mode(s));
    sprig_spec_free(s);
    p.tree = SPRIG_TREE_OFF;
    s = sprig_spec_create(&m.base, NULL, &p, &err);
    CHECK(!sprig_spec_tree_mode(s));
    sprig_spec_free(s);
    CHECK_EQ_INT(sprig_spec_default_params().tree, SPRIG_TREE_FROM_ENV);
    sprig_kv_free(m.kv);
}

static void test_stops(void)
{
    static const int ALL[] = { -1 };
    static struct mock m;
    static struct sdrafter d;
    static struct run r;
    static int32_t script[SCRIPT_LEN];
    memcpy(script, g_script, sizeof script);
    mock_init(&m, true, script, SCRIPT_LEN, 1024);

    for (int tree = 0; tree <= 1; tree++) {
        /* budget: full accepts of 4, cut to exactly max_tokens */
        for (int max = 1; max <= 12; max++) {
            mock_reset(&m);
            sd_init(&d, &m, ALL, 1);
            run_session(&m.base, &d.base, params(4, tree, max), &r);
            CHECK_EQ_INT(r.st, SPRIG_OK);
            CHECK_EQ_INT(r.n, max);
            CHECK(is_script(&r));
            CHECK_EQ_INT(r.stats.emitted, max);
            CHECK_STR(sprig_stop_name(r.stats.stop), "budget");
            CHECK_EQ_INT(r.stats.zero_accept_rounds + r.stats.partial_accept_rounds, 0);
        }
        /* EOS inside a round: everything before it, nothing after */
        memcpy(script, g_script, sizeof script);
        script[P + 6] = EOS;   /* the 7th generated token */
        mock_reset(&m);
        sd_init(&d, &m, ALL, 1);
        run_session(&m.base, &d.base, params(4, tree, 50), &r);
        CHECK_EQ_INT(r.n, 6);
        CHECK(!memcmp(r.tok, script + P, 6 * sizeof(int32_t)));
        CHECK_STR(sprig_stop_name(r.stats.stop), "eos");
        CHECK_EQ_INT(r.stats.emitted, 6);
        CHECK_EQ_INT(r.stats.rounds, 2);   /* 1 + 4 + (1, then EOS) */
        /* ignore_eos goes through it */
        mock_reset(&m);
        sd_init(&d, &m, ALL, 1);
        struct sprig_spec_params p = params(4, tree, 20);
        p.ignore_eos = true;
        run_session(&m.base, &d.base, p, &r);
        CHECK_EQ_INT(r.n, 20);
        CHECK(!memcmp(r.tok, script + P, 20 * sizeof(int32_t)));
        /* EOS as the very first token */
        script[P] = EOS;
        mock_reset(&m);
        run_session(&m.base, &d.base, params(4, tree, 50), &r);
        CHECK_EQ_INT(r.n, 0);
        CHECK_EQ_INT(r.stats.rounds, 0);
        CHECK_STR(sprig_stop_name(r.stats.stop), "eos");
        memcpy(script, g_script, sizeof script);
        /* cancel from the callback mid-round */
        mock_reset(&m);
        sd_init(&d, &m, ALL, 1);
        memset(&g_out, 0, sizeof g_out);
        struct sprig_spec_params pc = params(4, tree, 50);
        pc.on_token = collect;
        g_out.cancel_after = 3;
        pc.user = &g_out;
        sprig_error err;
        sprig_spec_session *s = sprig_spec_create(&m.base, &d.base, &pc, &err);
        CHECK_EQ_INT(sprig_spec_generate(s, script, P, &err), SPRIG_OK);
        CHECK_EQ_INT(g_out.n, 3);
        CHECK_STR(sprig_stop_name(sprig_spec_get_stats(s)->stop), "cancel");
        CHECK(sprig_spec_done(s));
        CHECK_EQ_INT(sprig_spec_step(s, &err), SPRIG_OK);   /* a no-op once done */
        CHECK_EQ_INT(g_out.n, 3);
        sprig_spec_free(s);
    }
    /* a full context ends the session; blocks shrink to the room left */
    static struct mock small;
    mock_init(&small, true, g_script, SCRIPT_LEN, 20);
    sd_init(&d, &small, PLAN, NPLAN);
    struct sprig_spec_params p = params(4, SPRIG_TREE_ON, 100);
    p.tree_branches = 2;
    run_session(&small.base, &d.base, p, &r);
    CHECK_EQ_INT(r.st, SPRIG_OK);
    CHECK_STR(sprig_stop_name(r.stats.stop), "context");
    CHECK_EQ_INT(sprig_kv_len(small.kv), 20);
    CHECK(is_script(&r));
    CHECK_EQ_INT(r.n, 20 - P + 1);   /* every slot used, plus the uncached last token */
    sprig_kv_free(small.kv);
    sprig_kv_free(m.kv);
}

static void test_bad_params_and_broken_parts(void)
{
    static struct mock m;
    mock_init(&m, true, g_script, SCRIPT_LEN, 64);
    static struct sdrafter d;
    sd_init(&d, &m, PLAN, NPLAN);
    sprig_error err;
    struct { struct sprig_spec_params p; const char *field; } bad[] = {
        { params(0, 0, 10), "block" },
        { params(SPRIG_TREE_MAX + 1, 0, 10), "block" },
        { params(4, 7, 10), "tree" },
        { params(4, 0, 0), "max_tokens" },
        { params(60, 0, 10), "tree_branches" },
        { params(4, 0, 10), "tree_branches" },
    };
    bad[4].p.tree_branches = 5;
    bad[5].p.tree_branches = -1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        CHECK(sprig_spec_create(&m.base, &d.base, &bad[i].p, &err) == NULL);
        CHECKF(strstr(err.msg, bad[i].field) != NULL, "case %zu: '%s'", i, err.msg);
    }
    struct sprig_spec_params ok = params(4, 0, 10);
    CHECK(sprig_spec_create(&m.base, &d.base, NULL, &err) == NULL);
    static const struct sprig_drafter_vt no_draft_vt = { .name = "empty" };
    sprig_drafter empty = { .vt = &no_draft_vt };
    CHECK(sprig_spec_create(&m.base, &empty, &ok, &err) == NULL);
    CHECK(strstr(err.msg, "draft_block") != NULL);
    static const struct sprig_target_vt no_prefill_vt = { .name = "half" };
    sprig_target half = { .vt = &no_prefill_vt, .n_vocab = V, .n_ctx = 10 };
    CHECK(sprig_spec_create(&half, NULL, &ok, &err) == NULL);
    CHECK(strstr(err.msg, "half") != NULL);
    m.base.n_eos = 99;
    CHECK(sprig_spec_create(&m.base, NULL, &ok, &err) == NULL);
    CHECK(strstr(err.msg, "n_eos") != NULL);
    m.base.n_eos = 1;

    sprig_spec_session *s = sprig_spec_create(&m.base, &d.base, &ok, &err);
    CHECK_EQ_INT(sprig_spec_step(s, &err), SPRIG_E_INVALID_ARG);   /* before begin */
    CHECK_EQ_INT(sprig_spec_begin(s, g_script, 0, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_spec_begin(s, g_script, 65, &err), SPRIG_E_CONTEXT_FULL);
    int32_t badtok[2] = { 1, V };
    CHECK_EQ_INT(sprig_spec_begin(s, badtok, 2, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "vocabulary") != NULL);
    CHECK_STR(sprig_stop_name(sprig_spec_get_stats(s)->stop), "error");
    sprig_spec_free(s);

    /* a drafter that proposes k tokens for a block of k */
    mock_reset(&m);
    d.too_many = 1;
    s = sprig_spec_create(&m.base, &d.base, &ok, &err);
    CHECK_EQ_INT(sprig_spec_generate(s, g_script, P, &err), SPRIG_E_INTERNAL);
    CHECK(strstr(err.msg, "scripted") != NULL);
    sprig_spec_free(s);
    d.too_many = 0;
    /* a target whose finalize keeps one slot too few */
    mock_reset(&m);
    m.break_finalize = 1;
    s = sprig_spec_create(&m.base, &d.base, &ok, &err);
    CHECK_EQ_INT(sprig_spec_generate(s, g_script, P, &err), SPRIG_E_INTERNAL);
    CHECK(strstr(err.msg, "mock-tree") != NULL && strstr(err.msg, "verify_finalize") != NULL);
    sprig_spec_free(s);
    m.break_finalize = 0;
    sprig_kv_free(m.kv);
}

static void test_stats_output(void)
{
    static struct mock m;
    static struct sdrafter d;
    static struct run r;
    mock_init(&m, true, g_script, SCRIPT_LEN, 1024);
    sd_init(&d, &m, PLAN, NPLAN);
    struct sprig_spec_params p = params(4, SPRIG_TREE_ON, 60);
    p.tree_branches = 1;
    run_session(&m.base, &d.base, p, &r);
    const char *path = test_tmpfile("stats.json");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    sprig_error err;
    CHECK_EQ_INT(sprig_stats_write_json(&r.stats, f, &err), SPRIG_OK);
    fclose(f);
    char buf[2048] = { 0 };
    f = fopen(path, "r");
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(got > 100);
    CHECK(buf[0] == '{' && strstr(buf, "}\n") != NULL);
    CHECK(strstr(buf, "\"path\":\"tree\"") != NULL);
    CHECK(strstr(buf, "\"stop\":\"budget\"") != NULL);
    char want[64];
    snprintf(want, sizeof want, "\"rounds\":%lld,", (long long)r.stats.rounds);
    CHECK(strstr(buf, want) != NULL);
    snprintf(want, sizeof want, "\"emitted\":%lld,", (long long)r.stats.emitted);
    CHECK(strstr(buf, want) != NULL);
    const char *keys[] = { "proposed", "accepted", "emitted_per_verify", "acceptance_rate", "zero_accept_rounds",
                           "partial_accept_rounds", "full_accept_rounds", "\"draft\"", "\"verify\"", "\"walk\"",
                           "\"finalize\"" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) CHECKF(strstr(buf, keys[i]) != NULL, "%s", keys[i]);
    int depth = 0, max_depth = 0;
    for (char *c = buf; *c; c++) {
        if (*c == '{') depth++, max_depth = depth > max_depth ? depth : max_depth;
        if (*c == '}') depth--;
    }
    CHECK(depth == 0 && max_depth == 2);
    CHECK_NEAR(sprig_stats_acceptance_rate(&r.stats), (double)r.stats.accepted / (double)r.stats.proposed, 1e-12);
    CHECK_EQ_INT(r.stats.zero_accept_rounds + r.stats.partial_accept_rounds + r.stats.full_accept_rounds +
                     r.stats.empty_rounds, r.stats.rounds);
    f = fopen(test_tmpfile("stats.txt"), "w");
    CHECK_EQ_INT(sprig_stats_print(&r.stats, f, &err), SPRIG_OK);
    fclose(f);
    CHECK_EQ_INT(sprig_stats_write_json(&r.stats, NULL, &err), SPRIG_E_INVALID_ARG);
    sprig_kv_free(m.kv);
}

/* Sampling sessions: the first four emitted tokens follow the mock target's
 * joint distribution, for the chain and for a branching tree. */
static void test_sampling_distribution(void)
{
    enum { NV = 4, NT = 4, CELLS = NV * NV * NV * NV };
    static struct mock m;
    static struct sdrafter d;
    mock_init(&m, true, g_script, SCRIPT_LEN, 64);
    m.base.n_vocab = NV;
    m.base.n_eos = 0;
    /* exact joint of the 4 tokens after the prompt */
    static const int32_t prompt[6] = { 1, 3, 0, 2, 1, 3 };
    static double pj[CELLS];
    int32_t ctx[16];
    memcpy(ctx, prompt, P * sizeof(int32_t));
    float p[4][NV];
    dist(ctx, P, NV, p[0]);
    for (int a = 0; a < NV; a++) {
        ctx[P] = a;
        dist(ctx, P + 1, NV, p[1]);
        for (int b = 0; b < NV; b++) {
            ctx[P + 1] = b;
            dist(ctx, P + 2, NV, p[2]);
            for (int c = 0; c < NV; c++) {
                ctx[P + 2] = c;
                dist(ctx, P + 3, NV, p[3]);
                for (int e = 0; e < NV; e++) pj[((a * NV + b) * NV + c) * NV + e] = (double)p[0][a] * p[1][b] * p[2][c] * p[3][e];
            }
        }
    }
    int runs = test_quick() ? 8000 : 100000;
    for (int mode = 0; mode < 2; mode++) {
        sd_init(&d, &m, NULL, 0);
        d.rank_mode = true;
        d.base.vt = &sd_tree_hook_vt;
        struct sprig_spec_params sp = params(4, mode ? SPRIG_TREE_ON : SPRIG_TREE_OFF, NT);
        sp.sampling = true;
        sp.tree_branches = mode ? 2 : 0;
        sp.seed = 77 + (uint64_t)mode;
        sp.on_token = collect;
        sp.user = &g_out;
        sprig_error err;
        sprig_spec_session *s = sprig_spec_create(&m.base, &d.base, &sp, &err);
        CHECK(s != NULL);
        static int64_t cnt[CELLS];
        memset(cnt, 0, sizeof cnt);
        int64_t accepted = 0, tree_rounds = 0;
        for (int i = 0; i < runs; i++) {
            mock_reset(&m);
            memset(&g_out, 0, sizeof g_out);
            if (sprig_spec_generate(s, prompt, P, &err)) { CHECKF(0, "%s", err.msg); break; }
            if (g_out.n != NT) { CHECK_EQ_INT(g_out.n, NT); break; }
            int cell = 0;
            for (int k = 0; k < NT; k++) cell = cell * NV + g_out.tok[k];
            cnt[cell]++;
            accepted += sprig_spec_get_stats(s)->accepted;
            tree_rounds += sprig_spec_get_stats(s)->tree_rounds;
            if (m.bad_positions) { CHECK(!m.bad_positions); break; }
        }
        double chi = 0, pool_o = 0, pool_e = 0;
        int bins = 0;
        for (int c = 0; c < CELLS; c++) {
            double e = pj[c] * runs;
            if (e < 5) { pool_o += (double)cnt[c]; pool_e += e; continue; }
            chi += (cnt[c] - e) * (cnt[c] - e) / e;
            bins++;
        }
        if (pool_e > 0) { chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e; bins++; }
        else CHECK(pool_o == 0);
        int dof = bins - 1;
        double limit = dof + 6.0 * sqrt(2.0 * dof);
        fprintf(stderr, "  sampling %s: chi2 %.1f (dof %d, limit %.1f), accepted/run %.3f, tree rounds/run %.2f\n",
                mode ? "tree" : "chain", chi, dof, limit, (double)accepted / runs, (double)tree_rounds / runs);
        CHECKF(chi < limit, "chi2 %.1f", chi);
        CHECK(accepted > runs / 4);   /* speculation actually happened */
        if (mode) CHECK(tree_rounds >= runs); else CHECK_EQ_INT(tree_rounds, 0);
        sprig_spec_free(s);
    }
    sprig_kv_free(m.kv);
}

int main(void)
{
    make_script();
    sprig_log_set_callback(capture, NULL);
    sprig_log_set_level(SPRIG_LOG_INFO);
    RUN(test_plain_decoding);
    RUN(test_chain_equals_linear_tree);
    RUN(test_branching_tree);
    RUN(test_refusal_defaults);
    RUN(test_availability_moves);
    RUN(test_switch);
    RUN(test_stops);
    RUN(test_bad_params_and_broken_parts);
    RUN(test_stats_output);
    RUN(test_sampling_distribution);
    return test_summary("test-round");
}
