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
 *
 * Sharing across sessions (test_shared): four sessions on one batch, each
 * on its own thread (plain greedy, draft-model chain, draft-model tree
 * sampled, n-gram), run twelve requests whose prompts share a long system
 * prefix and differ after it, starting at random times, in every paged KV
 * mode, on a pool small enough that cached blocks are evicted, with
 * cancellations in the middle of a prompt's prefill: every reply must equal
 * the same request run alone on a dense cache with reuse off, the requests
 * must have attached blocks computed by other sessions, and the pool must
 * have evicted some. Prompt chunks join the shared steps (prefill_rows 0,
 * the default: some must have run beside another session's rows) or run on
 * the session's own threads (prefill_rows -1: none went through the batch).
 *
 * The prompt cache file (test_prompt_cache): a session saves, a new one
 * loads and continues a longer prompt: equal to a session without it, the
 * saved tokens reported cached, the draft model's section restored; a file
 * made for another model, KV type, sprig version or kernel family is
 * refused naming it; a truncated, corrupted or foreign file is refused; a
 * refused load leaves the session working.
 */
#include "test.h"
#include "sprig.h"
#include "api/pcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

static sprig_model *g_m;

static char *turn(sprig_session *s, const char *prompt, int n, uint64_t seed, struct sprig_stats *st)
{
    struct test_text b = { 0 };
    sprig_error err = { 0 };
    sprig_session_set_seed(s, seed);
    CHECKF(sprig_session_generate(s, prompt, strlen(prompt), n, test_text_collect, &b, &err) == SPRIG_OK, "%s", err.msg);
    sprig_session_get_stats(s, st);
    if (!b.p) b.p = calloc(1, 1);
    return b.p;
}

/* grain 1: the session's own cache is cut back to the exact common prefix; grain g > 1: what is reused comes from
 * the pool in whole blocks of g slots */
static void conversation(const char *name, struct sprig_session_params p, bool expect_reuse, int grain)
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
        if (k && expect_reuse && grain == 1) CHECKF(a.cached_tokens >= a.prompt_tokens / 2, "%s turn %d: %lld of %lld prompt tokens reused", name, k,
                                      (long long)a.cached_tokens, (long long)a.prompt_tokens);
        else if (k && expect_reuse) /* all but this turn's new text (a reply of 24 and an ask of < 8), in whole blocks */
            CHECKF(a.cached_tokens % grain == 0 && a.cached_tokens + 24 + 8 + grain >= a.prompt_tokens, "%s turn %d: %lld of %lld prompt tokens reused",
                   name, k, (long long)a.cached_tokens, (long long)a.prompt_tokens);
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
        CHECKF(expect_reuse && grain == 1 ? a.cached_tokens > 0 && a.cached_tokens < a.prompt_tokens
               : expect_reuse ? a.cached_tokens % grain == 0 && a.cached_tokens < a.prompt_tokens : a.cached_tokens == 0, "%s: '%s' reused %lld of %lld",
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
    conversation("plain greedy", p, true, 1);
    p.temp = 0.8f;
    conversation("plain sampled", p, true, 1);
    p.temp = 0;
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = test_shared("models/stories-draft.gguf");
    conversation("draft model chain", p, true, 1);
    p.tree = SPRIG_TREE_ON;
    p.tree_branches = 2;
    conversation("draft model tree", p, true, 1);
    p.temp = 0.8f;
    conversation("draft model tree sampled", p, true, 1);
    p.drafter = SPRIG_DRAFTER_NGRAM;
    p.draft_path = NULL;
    p.tree = SPRIG_TREE_OFF;
    p.tree_branches = 0;
    p.temp = 0;
    conversation("n-gram chain", p, true, 1);
    /* on a batch: kept between generations while the pool holds every session's whole context, else returned to the
     * pool, whose cached blocks the next turn attaches again (whole blocks) */
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
    if (b) conversation("batch, pool for both", p, true, 1);
    sprig_batch_free(b);
    bp.kv_blocks = 40;   /* 1,280 slots for two contexts of 1,024: overcommitted */
    b = NULL;
    CHECKF(sprig_batch_create(g_m, &bp, &b, &err) == SPRIG_OK, "%s", err.msg);
    p.batch = b;
    if (b) conversation("batch, pool overcommitted", p, true, 32);
    sprig_batch_free(b);
}

enum { N_SESS = 4, N_REQ = 3 };

struct req {
    char prompt[6000];
    int n;
    uint64_t seed;
    char *want;            /* alone, dense, no reuse */
    char *got;
    struct sprig_stats st;
};

struct worker {
    sprig_session *s;
    struct req *r;         /* [N_REQ] */
    unsigned seed;
    int cancels_mid_prefill, cancels_tried;
};

static void nap_us(unsigned us)
{
    struct timespec t = { 0, (long)us * 1000L };
    nanosleep(&t, NULL);
}

/* Cancels again and again (a cancel before the generate starts is cleared by it) until told to stop. */
struct canceller { sprig_session *s; unsigned us; atomic_bool stop; };
static void *cancel_after(void *arg)
{
    struct canceller *c = arg;
    nap_us(c->us);
    while (!atomic_load(&c->stop)) {
        sprig_session_cancel(c->s);
        nap_us(50);
    }
    return NULL;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < N_REQ; i++) {
        nap_us((unsigned)(rand_r(&w->seed) % 20000));   /* arrive at a random time */
        if (i == 1) {   /* a request cancelled while its prompt is prefilled, then the real one */
            for (int t = 0; t < 6 && !w->cancels_mid_prefill; t++) {
                struct canceller c = { w->s, (unsigned)(rand_r(&w->seed) % 300), false };
                pthread_t th;
                pthread_create(&th, NULL, cancel_after, &c);
                struct test_text b = { 0 };
                sprig_error err = { 0 };
                sprig_session_set_seed(w->s, w->r[i].seed);
                const char *p = w->r[(i + 1) % N_REQ].prompt;   /* another prompt, so its blocks are half done */
                sprig_session_generate(w->s, p, strlen(p), w->r[i].n, test_text_collect, &b, &err);
                atomic_store(&c.stop, true);
                pthread_join(th, NULL);
                struct sprig_stats st;
                sprig_session_get_stats(w->s, &st);
                w->cancels_tried++;
                w->cancels_mid_prefill += !strcmp(st.stop, "cancel") && st.generated_tokens == 0;
                free(b.p);
            }
        }
        w->r[i].got = turn(w->s, w->r[i].prompt, w->r[i].n, w->r[i].seed, &w->r[i].st);
    }
    return NULL;
}

static const char *story =
    "Once upon a time there was a little girl named Lily. She loved to play in the park with her friends. "
    "One day she saw a big red ball under a tree. She ran to the ball and picked it up. Her friend Tom came "
    "to play with her. They threw the ball high in the sky and laughed. Then the sun went down and it was "
    "time to go home. Lily said goodbye to Tom and walked home with her mom. At home she ate her dinner and "
    "went to bed. She dreamed about the big red ball and the park. The next morning she woke up happy. ";

static void shared_run(enum sprig_kv_type kv, bool trees, long long *hits, long long *evicted, long long *cached, long long *mid)
{
    sprig_error err = { 0 };
    struct sprig_batch_params bp = sprig_batch_default_params();
    bp.n_seq = N_SESS;
    bp.n_ctx = 1024;
    bp.max_rows = 16;
    bp.kv_type = kv;
    bp.kv_block_slots = 16;
    bp.kv_blocks = 64;   /* room for the four sessions' requests sharing their prefix (25 + 4 x 6 blocks), not for
                            every block they publish: cached blocks are evicted */
    bp.wait_us = 2000;
    bp.prefill_rows = kv == SPRIG_KV_F32 || kv == SPRIG_KV_INT8 ? 0 : -1;   /* prompt chunks in the shared steps (8 rows), or beside them */
    sprig_batch *b = NULL;
    CHECKF(sprig_batch_create(g_m, &bp, &b, &err) == SPRIG_OK, "%s", err.msg);
    if (!b) return;
    struct sprig_session_params ps[N_SESS];
    for (int i = 0; i < N_SESS; i++) {
        ps[i] = sprig_session_default_params();
        ps[i].n_threads = 1;
        ps[i].n_ctx = 1024;
        ps[i].temp = 0;
        ps[i].kv_type = kv;
        ps[i].prefill_chunk = 32;
    }
    ps[1].drafter = ps[2].drafter = SPRIG_DRAFTER_MODEL;
    ps[1].draft_path = ps[2].draft_path = test_shared("models/stories-draft.gguf");
    if (trees) {
        ps[2].tree = SPRIG_TREE_ON;
        ps[2].tree_branches = 3;
    }
    ps[2].temp = 0.8f;
    ps[3].drafter = SPRIG_DRAFTER_NGRAM;
    static struct req rq[N_SESS][N_REQ];
    static const char *const tails[] = { "Tom said:", "The dog ran", "Mom smiled and", "In the park,", "The cat", "One night," };
    for (int i = 0; i < N_SESS; i++)
        for (int k = 0; k < N_REQ; k++) {
            struct req *r = &rq[i][k];
            memset(r, 0, sizeof *r);
            /* the system prefix (one or two copies of a 200-token story: prompts share 1 or 2 of them), then a tail
             * of its own (some 60 tokens: the distinct blocks fill the pool) */
            const int q = i * N_REQ + k;
            snprintf(r->prompt, sizeof r->prompt, "%s%s%s %s %s %s %s %s %s %d", story, (i + k) % 2 ? story : "", tails[q % 6],
                     tails[(q / 6 + 1) % 6], tails[(q + 2) % 6], tails[(q * 5 + 3) % 6], tails[(q / 3 + 4) % 6], tails[(q / 2 + 5) % 6],
                     tails[(q + 1) % 6], q);
            r->n = 12 + (i + k) % 5;
            r->seed = 100 + (uint64_t)(i * N_REQ + k);
            struct sprig_session_params alone = ps[i];
            alone.prefill_chunk = 0;
            sprig_session *s = NULL;
            CHECKF(sprig_session_create(g_m, &alone, &s, &err) == SPRIG_OK, "%s", err.msg);
            if (!s) continue;
            sprig_session_set_prefix_reuse(s, false);
            struct sprig_stats st;
            r->want = turn(s, r->prompt, r->n, r->seed, &st);
            sprig_session_free(s);
        }
    struct worker w[N_SESS];
    pthread_t th[N_SESS];
    for (int i = 0; i < N_SESS; i++) {
        ps[i].batch = b;
        w[i] = (struct worker){ .r = rq[i], .seed = 17u + (unsigned)i };
        CHECKF(sprig_session_create(g_m, &ps[i], &w[i].s, &err) == SPRIG_OK, "%s", err.msg);
    }
    for (int i = 0; i < N_SESS; i++)
        if (w[i].s) pthread_create(&th[i], NULL, work, &w[i]);
    for (int i = 0; i < N_SESS; i++)
        if (w[i].s) pthread_join(th[i], NULL);
    /* then unique prompts fill the pool (cached blocks evicted, the oldest first), and a shared-prefix request
     * again: still equal */
    for (int u = 0; u < 3 && w[0].s; u++) {
        char up[4000];
        int at = 0;
        for (int x = 0; x < 60 && at < 3500; x++) at += snprintf(up + at, sizeof up - (size_t)at, "%d %s ", u * 1000 + x, tails[x % 6]);
        struct sprig_stats st;
        free(turn(w[0].s, up, 4, 1, &st));
    }
    if (w[0].s) {
        struct sprig_stats st;
        char *again = turn(w[0].s, rq[0][0].prompt, rq[0][0].n, rq[0][0].seed, &st);
        CHECKF(!strcmp(again, rq[0][0].want), "%s: after evictions, request 0 differs\n    [%s]\n    [%s]", sprig_kv_type_name(kv),
               again, rq[0][0].want);
        free(again);
    }
    int trees_ran = 0;
    for (int i = 0; i < N_SESS; i++)
        for (int k = 0; k < N_REQ && w[i].s; k++) {
            struct req *r = &rq[i][k];
            CHECKF(r->got && r->want && !strcmp(r->got, r->want), "%s session %d request %d: differs with sharing\n    shared [%s]\n    alone  [%s]",
                   sprig_kv_type_name(kv), i, k, r->got ? r->got : "", r->want ? r->want : "");
            *cached += r->st.cached_tokens;
            trees_ran += !strcmp(r->st.path, "tree");
            free(r->got);
            free(r->want);
        }
    if (trees) CHECKF(trees_ran > 0, "%s: no request ran a tree", sprig_kv_type_name(kv));
    struct sprig_batch_stats bs;
    sprig_batch_get_stats(b, &bs);
    if (bp.prefill_rows >= 0)
        CHECKF(bs.prompt_chunks_shared > 0, "%s: no prompt chunk ran beside another session's rows (%lld chunks)", sprig_kv_type_name(kv),
               (long long)bs.prompt_chunks);
    else
        CHECKF(bs.prompt_chunks == 0, "%s: %lld prompt chunks went through the batch with prefill_rows -1", sprig_kv_type_name(kv),
               (long long)bs.prompt_chunks);
    CHECKF(bs.draft_blocks_published > 0 && bs.draft_blocks_hit > 0, "%s: the draft models shared no block (%lld published, %lld attached)",
           sprig_kv_type_name(kv), (long long)bs.draft_blocks_published, (long long)bs.draft_blocks_hit);
    *hits += bs.prefix_blocks_hit;
    *evicted += bs.prefix_blocks_evicted;
    for (int i = 0; i < N_SESS; i++) {
        *mid += w[i].cancels_mid_prefill;
        sprig_session_free(w[i].s);
    }
    fprintf(stderr, "  %-12s blocks attached %lld published %lld evicted %lld copied %lld; shared forwards %lld of %lld; prompt chunks "
            "%lld, %lld beside others; draft blocks attached %lld\n", sprig_kv_type_name(kv), (long long)bs.prefix_blocks_hit,
            (long long)bs.prefix_blocks_published, (long long)bs.prefix_blocks_evicted, (long long)bs.prefix_blocks_copied,
            (long long)bs.shared_forwards, (long long)bs.forwards, (long long)bs.prompt_chunks, (long long)bs.prompt_chunks_shared, (long long)bs.draft_blocks_hit);
    sprig_batch_free(b);
}

static void test_across_sessions(void)
{
    static const enum sprig_kv_type modes[] = { SPRIG_KV_F32, SPRIG_KV_F16, SPRIG_KV_INT8, SPRIG_KV_TURBO4 };
    long long hits = 0, evicted = 0, cached = 0, mid = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) shared_run(modes[i], true, &hits, &evicted, &cached, &mid);
    CHECKF(hits > 0, "no block was shared (%lld)", hits);
    CHECKF(evicted > 0, "no cached block was evicted (%lld)", evicted);
    CHECKF(mid > 0, "no cancellation landed in a prefill (%lld)", mid);
    fprintf(stderr, "  %lld prompt tokens attached from the pool; %lld cancellations in a prefill\n", cached, mid);
}

/* A copy of file `from` at `to` with `what` replaced by `with` (same length or not) and the checksum made right. */
static bool patch_file(const char *from, const char *to, const char *what, const char *with, long cut)
{
    size_t got = 0;
    char *b0 = test_read_file(from, &got), *b = b0 ? realloc(b0, got + 64) : NULL;
    if (!b) {
        free(b0);
        return false;
    }
    const long n = (long)got;
    long len = n;
    if (what) {   /* in the id text, near the start */
        char *at = memmem(b, (size_t)(n < 2048 ? n : 2048), what, strlen(what));
        if (!at) { free(b); return false; }
        const long off = at - b, dl = (long)strlen(with) - (long)strlen(what);
        memmove(at + strlen(with), at + strlen(what), (size_t)(n - off - (long)strlen(what)));
        memcpy(at, with, strlen(with));
        len = n + dl;
        uint32_t il;
        memcpy(&il, b + 12, 4);
        il = (uint32_t)((long)il + dl);
        memcpy(b + 12, &il, 4);
        uint64_t h = 0xcbf29ce484222325ull;
        for (long i = 0; i < len - 8; i++) h = (h ^ (uint8_t)b[i]) * 0x100000001b3ull;
        memcpy(b + len - 8, &h, 8);
    }
    if (cut > 0) len -= cut;
    if (cut < 0) b[n / 2] ^= 0x10;   /* one bit in the rows */
    FILE *f = fopen(to, "wb");
    const bool ok = f && fwrite(b, 1, (size_t)len, f) == (size_t)len;
    if (f) fclose(f);
    free(b);
    return ok;
}

static void expect_refused(sprig_session *s, const char *path, sprig_status code, const char *needle)
{
    sprig_error err = { 0 };
    int n = -1;
    const sprig_status st = sprig_session_load_cache(s, path, &n, &err);
    CHECKF(st == code && strstr(err.msg, needle) && n == 0, "%s: status %d, '%s' (wanted %d naming '%s')", path, (int)st, err.msg,
           (int)code, needle);
}

static void test_prompt_cache(void)
{
    static const char *p1 = "Once upon a time there was a little girl named Lily. She loved to play";
    static const char *p2 = "Once upon a time there was a little girl named Lily. She loved to play in the park. One day";
    const char *file = test_tmpfile("prompt.cache");
    sprig_error err = { 0 };
    for (int with_draft = 0; with_draft < 2; with_draft++) {
        struct sprig_session_params p = sprig_session_default_params();
        p.n_threads = 1;
        p.n_ctx = 512;
        p.temp = 0;
        if (with_draft) {
            p.drafter = SPRIG_DRAFTER_MODEL;
            p.draft_path = test_shared("models/stories-draft.gguf");
            p.tree = SPRIG_TREE_ON;
            p.tree_branches = 2;
        }
        sprig_session *a = NULL, *b = NULL, *c = NULL;
        CHECKF(!sprig_session_create(g_m, &p, &a, &err) && !sprig_session_create(g_m, &p, &b, &err) &&
               !sprig_session_create(g_m, &p, &c, &err), "%s", err.msg);
        if (!a || !b || !c) return;
        struct sprig_stats st;
        CHECK_EQ_INT(sprig_session_save_cache(a, file, &err), SPRIG_E_INVALID_ARG);   /* nothing generated yet */
        free(turn(a, p1, 20, 1, &st));
        const long long held = st.prompt_tokens + st.generated_tokens - 1;
        CHECKF(sprig_session_save_cache(a, file, &err) == SPRIG_OK, "%s", err.msg);
        /* the file: one section per cache, the target's holding the prompt and the reply */
        {
            size_t n = 0;
            char *buf = test_read_file(file, &n);
            sprig_pcache pc;
            CHECKF(sprig_pcache_parse(buf, n, &pc, &err) == SPRIG_OK, "%s", err.msg);
            CHECK_EQ_INT(pc.n_sections, with_draft ? 2 : 1);
            CHECK_EQ_INT(pc.sec[0].n_tokens, held);
            if (with_draft) CHECK(pc.sec[1].n_tokens >= held);
            free(buf);
        }
        int n = 0;
        CHECKF(sprig_session_load_cache(b, file, &n, &err) == SPRIG_OK, "%s", err.msg);
        CHECK_EQ_INT(n, held);
        sprig_session_set_prefix_reuse(c, false);
        struct sprig_stats sb, sc;
        char *rb = turn(b, p2, 24, 2, &sb), *rc = turn(c, p2, 24, 2, &sc);
        CHECKF(!strcmp(rb, rc), "draft %d: the reply differs with the prompt cache\n    [%s]\n    [%s]", with_draft, rb, rc);
        CHECKF(sb.cached_tokens >= 10 && sc.cached_tokens == 0, "draft %d: %lld cached with the file, %lld without", with_draft,
               (long long)sb.cached_tokens, (long long)sc.cached_tokens);
        if (with_draft) CHECK_STR(sb.path, "tree");
        free(rb);
        free(rc);
        /* refusals, each naming what differs; the session still works after */
        const char *bad = test_tmpfile("bad.cache");
        CHECK(patch_file(file, bad, "sprig=" SPRIG_VERSION, "sprig=9.9.9", 0));
        expect_refused(b, bad, SPRIG_E_REFUSED, "sprig=9.9.9");
        CHECK(patch_file(file, bad, "kernels=", "kernels=other-", 0));
        expect_refused(b, bad, SPRIG_E_REFUSED, "another kernels:");
        CHECK(patch_file(file, bad, NULL, NULL, 100));
        expect_refused(b, bad, SPRIG_E_FORMAT, "checksum");
        CHECK(patch_file(file, bad, NULL, NULL, -1));
        expect_refused(b, bad, SPRIG_E_FORMAT, "corrupted");
        expect_refused(b, test_shared("models/stories260K.gguf"), SPRIG_E_FORMAT, "magic");
        struct sprig_session_params q = p;
        q.kv_type = SPRIG_KV_F16;
        sprig_session *d = NULL;
        CHECKF(!sprig_session_create(g_m, &q, &d, &err), "%s", err.msg);
        if (d) expect_refused(d, file, SPRIG_E_REFUSED, "another kv:");
        sprig_session_free(d);
        q = p;
        q.drafter = with_draft ? SPRIG_DRAFTER_NONE : SPRIG_DRAFTER_MODEL;   /* with a draft model where the file has none, and back */
        q.draft_path = with_draft ? NULL : test_shared("models/stories-draft.gguf");
        q.tree = SPRIG_TREE_OFF;
        q.tree_branches = 0;
        CHECKF(!sprig_session_create(g_m, &q, &d, &err), "%s", err.msg);
        if (d) expect_refused(d, file, SPRIG_E_REFUSED, "another draft model:");
        sprig_session_free(d);
        sprig_session_set_prefix_reuse(c, false);
        expect_refused(c, file, SPRIG_E_REFUSED, "prefix reuse is off");
        char *again = turn(b, p2, 24, 2, &sb);
        rc = turn(c, p2, 24, 2, &sc);
        CHECKF(!strcmp(again, rc), "draft %d: after the refusals the reply differs", with_draft);
        free(again);
        free(rc);
        sprig_session_free(a);
        sprig_session_free(b);
        sprig_session_free(c);
    }
    /* another model's file */
    sprig_model *dm = NULL;
    CHECKF(sprig_model_load(test_shared("models/stories-draft.gguf"), &dm, &err) == SPRIG_OK, "%s", err.msg);
    if (dm) {
        struct sprig_session_params p = sprig_session_default_params();
        p.n_threads = 1;
        p.n_ctx = 512;
        sprig_session *e = NULL;
        CHECKF(!sprig_session_create(dm, &p, &e, &err), "%s", err.msg);
        if (e) expect_refused(e, file, SPRIG_E_REFUSED, "another model:");
        sprig_session_free(e);
        sprig_model_free(dm);
    }
}

int main(void)
{
    sprig_error err = { 0 };
    if (sprig_model_load(test_shared("models/stories260K.gguf"), &g_m, &err)) {
        fprintf(stderr, "cannot load: %s\n", err.msg);
        return 1;
    }
    RUN(test_reuse);
    RUN(test_across_sessions);
    RUN(test_prompt_cache);
    sprig_model_free(g_m);
    return test_summary("test-prefix");
}
