/*
 * tests/test-prefix.c — prefix reuse across a session's generations
 * (sprig_session_set_prefix_reuse): a chat's next turn keeps what the
 * cache holds from the last one and prefills only the rest.
 *
 * A 6-turn conversation on stories260K (each turn's prompt = the last
 * prompt + its reply + new text), greedy and sampled with fixed seeds, plain
 * and with the draft model (chain and tree): every reply must be
 * byte-identical with reuse on and off, and with reuse on, turn k must
 * report cached tokens covering the previous turn's prompt and reply while
 * the session with reuse off reports none. Also: a prompt that shares only
 * part of the history, one that is a strict prefix of it (its last token is
 * fed again), and a first prompt (nothing cached).
 */
#include "test.h"
#include "sprig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sprig_model *g_m;

struct buf { char *p; size_t n, cap; };

static bool collect(void *user, const char *t, size_t n)
{
    struct buf *b = user;
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, t, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static char *turn(sprig_session *s, const char *prompt, int n, uint64_t seed, struct sprig_stats *st)
{
    struct buf b = { 0 };
    sprig_error err = { 0 };
    sprig_session_set_seed(s, seed);
    CHECKF(sprig_session_generate(s, prompt, strlen(prompt), n, collect, &b, &err) == SPRIG_OK, "%s", err.msg);
    sprig_session_get_stats(s, st);
    if (!b.p) b.p = calloc(1, 1);
    return b.p;
}

static void conversation(const char *name, struct sprig_session_params p, bool expect_reuse)
{
    sprig_error err = { 0 };
    sprig_session *on = NULL, *off = NULL;
    CHECKF(sprig_session_create(g_m, &p, &on, &err) == SPRIG_OK && sprig_session_create(g_m, &p, &off, &err) == SPRIG_OK, "%s: %s", name, err.msg);
    if (!on || !off) {
        sprig_session_free(on);
        sprig_session_free(off);
        return;
    }
    sprig_session_set_prefix_reuse(off, false);
    static const char *const asks[] = { "Once upon a time", " Then Tom said:", " The next day,", " Lily smiled.", " After that,", " In the end," };
    char prompt[8192] = "";
    long long reused = 0;
    for (int k = 0; k < 6; k++) {
        strncat(prompt, asks[k], sizeof prompt - strlen(prompt) - 1);
        struct sprig_stats a, b;
        char *ra = turn(on, prompt, 24, 4242 + (uint64_t)k, &a), *rb = turn(off, prompt, 24, 4242 + (uint64_t)k, &b);
        CHECKF(!strcmp(ra, rb), "%s turn %d: the replies differ with reuse on and off\n    on  [%s]\n    off [%s]", name, k, ra, rb);
        CHECKF(b.cached_tokens == 0, "%s turn %d: reuse off, %lld cached", name, k, (long long)b.cached_tokens);
        if (k && expect_reuse) CHECKF(a.cached_tokens >= a.prompt_tokens / 2, "%s turn %d: %lld of %lld prompt tokens reused", name, k,
                                      (long long)a.cached_tokens, (long long)a.prompt_tokens);
        else CHECKF(a.cached_tokens == 0, "%s turn %d: %lld cached where reuse is off", name, k, (long long)a.cached_tokens);
        reused += a.cached_tokens;
        strncat(prompt, ra, sizeof prompt - strlen(prompt) - 1);
        free(ra);
        free(rb);
    }
    /* a prompt sharing part of the history, then a strict prefix of it */
    const char *other[] = { "Once upon a time there was a cat named", "Once upon a time" };
    for (int k = 0; k < 2; k++) {
        struct sprig_stats a, b;
        char *ra = turn(on, other[k], 16, 99, &a), *rb = turn(off, other[k], 16, 99, &b);
        CHECKF(!strcmp(ra, rb), "%s: '%s' differs with reuse on and off", name, other[k]);
        CHECKF(expect_reuse ? a.cached_tokens > 0 && a.cached_tokens < a.prompt_tokens : a.cached_tokens == 0, "%s: '%s' reused %lld of %lld",
               name, other[k], (long long)a.cached_tokens, (long long)a.prompt_tokens);
        free(ra);
        free(rb);
    }
    fprintf(stderr, "  %-28s %lld prompt tokens reused over 5 turns\n", name, reused);
    sprig_session_free(on);
    sprig_session_free(off);
}

static void test_reuse(void)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.n_threads = 1;
    p.n_ctx = 1024;
    p.temp = 0;
    conversation("plain greedy", p, true);
    p.temp = 0.8f;
    conversation("plain sampled", p, true);
    p.temp = 0;
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = test_shared("models/stories-draft.gguf");
    conversation("draft model chain", p, true);
    p.tree = SPRIG_TREE_ON;
    p.tree_branches = 2;
    conversation("draft model tree", p, true);
    p.temp = 0.8f;
    conversation("draft model tree sampled", p, true);
    p.drafter = SPRIG_DRAFTER_NGRAM;
    p.draft_path = NULL;
    p.tree = SPRIG_TREE_OFF;
    p.tree_branches = 0;
    p.temp = 0;
    conversation("n-gram chain", p, true);
    /* on a batch: kept between generations while the pool holds every session's whole context, else returned */
    struct sprig_batch_params bp = sprig_batch_default_params();
    bp.n_seq = 2;
    bp.n_ctx = 1024;
    bp.max_rows = 8;
    sprig_batch *b = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_batch_create(g_m, &bp, &b, &err) == SPRIG_OK, "%s", err.msg);
    p.batch = b;
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = test_shared("models/stories-draft.gguf");
    if (b) conversation("batch, pool for both", p, true);
    sprig_batch_free(b);
    bp.kv_blocks = 40;   /* 1,280 slots for two contexts of 1,024: overcommitted */
    b = NULL;
    CHECKF(sprig_batch_create(g_m, &bp, &b, &err) == SPRIG_OK, "%s", err.msg);
    p.batch = b;
    if (b) conversation("batch, pool overcommitted", p, false);
    sprig_batch_free(b);
}

int main(void)
{
    sprig_error err = { 0 };
    if (sprig_model_load(test_shared("models/stories260K.gguf"), &g_m, &err)) {
        fprintf(stderr, "cannot load: %s\n", err.msg);
        return 1;
    }
    RUN(test_reuse);
    sprig_model_free(g_m);
    return test_summary("test-prefix");
}
