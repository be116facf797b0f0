/*
 * tests/test-spec-swa.c — speculation on sliding-window targets (gemma3
 * layout from sprig mkmodel: window 32, every third layer global, final
 * logit soft-capping, an untied output so that random weights give varied
 * text) is byte-identical to plain greedy decoding over more
 * than four windows of context, and the proof fails without the band.
 *
 *   - plain decoding on the rotating ring (kv_layout "ring") equals plain
 *     decoding on a full paged cache under the band mask (two different
 *     ways of hiding the slots past the window);
 *   - chain, linear tree (no branches) and branching tree, each with a
 *     draft model (the target's first four layers' seed), the n-gram drafter
 *     and (gemma4) Gemma 4's assistant as MTP drafter, equal plain decoding
 *     (a random assistant's drafts are nearly all rejected; the others'
 *     are not); the statistics prove the path ran ("chain" / "tree" with
 *     rounds, the ring layout, the drafter) and that zero and partial
 *     accepts happened (rollback past the window);
 *   - in f32 and in a lossy mode (turbo4-asym);
 *   - with the band intersection removed (sprig_band_set_enabled(false): a
 *     tree verify's caller mask escapes the window once the context passes
 *     it), the branching tree's output DIFFERS from plain decoding; the
 *     first differing step is printed.
 */
#include "test.h"
#include "test_session.h"
#include "sprig.h"
#include "mkmodel/mkmodel.h"
#include "model/internal.h"

#include <stdlib.h>

enum { WINDOW = 32, N_GEN = 160 };



static struct sprig_session_params greedy(enum sprig_kv_type mode)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 2;
    p.n_ctx = 512;
    p.ignore_eos = true;
    p.tree = SPRIG_TREE_OFF;
    p.kv_type = mode;
    return p;
}

/* A target, a draft model (the target's seed, fewer layers: some drafts
 * agree) and, for gemma4, its assistant (another helper writes it). */
struct fixture { const char *arch; char *target, *draft, *assistant; };
static struct fixture g_fx[3];

static void make_fixture(struct fixture *fx, const char *arch)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    fx->arch = arch;
    mp.arch = arch;
    mp.dim = 128;
    mp.n_heads = 2;
    mp.n_kv_heads = 1;
    mp.head_dim = 64;
    mp.n_layers = 6;
    mp.ffn = 256;
    mp.ctx = 1024;
    mp.std = 0.08f;
    mp.type = 0;   /* f32 */
    mp.window = WINDOW;
    mp.swa_pattern = 3;
    mp.final_softcap = 30.0f;
    /* tied, the scaled embedding makes a random model repeat its input token; gemma2 is always tied
     * (llama.cpp refuses its output.weight): its text repeats, so drafts are accepted whole */
    mp.output = strcmp(arch, "gemma2") ? SPRIG_MKMODEL_OUTPUT_UNTIED : SPRIG_MKMODEL_OUTPUT_DEFAULT;
    mp.seed = 77;
    if (!strcmp(arch, "gemma2")) {   /* every other layer slides; scores soft-capped (tight, so the cap matters) */
        mp.swa_pattern = 2;
        mp.attn_softcap = 5.0f;
    }
    if (!strcmp(arch, "gemma4")) {   /* sliding heads of 32, global of 64, two shared-KV layers, per-layer inputs */
        mp.head_dim_swa = 32;
        mp.shared_kv = 2;
        mp.per_layer_embd = 16;
        mp.no_global_v = true;
    }
    char name[64];
    snprintf(name, sizeof name, "spec-swa-%s-target.gguf", arch);
    fx->target = strdup(test_tmpfile(name));
    CHECKF(sprig_mkmodel_write(&mp, fx->target, &err) == SPRIG_OK, "%s", err.msg);
    mp.n_layers = 4;
    mp.shared_kv = 0;
    snprintf(name, sizeof name, "spec-swa-%s-draft.gguf", arch);
    fx->draft = strdup(test_tmpfile(name));
    CHECKF(sprig_mkmodel_write(&mp, fx->draft, &err) == SPRIG_OK, "%s", err.msg);
    if (strcmp(arch, "gemma4")) return;
    /* Gemma 4's assistant for the target: two layers (sliding, global) reading the target's last caches */
    struct sprig_mkmodel_params ap;
    CHECK(sprig_mkmodel_preset("tiny", &ap, &err) == SPRIG_OK);
    ap.arch = "gemma4-assistant";
    ap.target = fx->target;
    ap.dim = 64;
    ap.n_layers = 2;
    ap.n_heads = 2;
    ap.ffn = 128;
    ap.type = 0;
    ap.std = 0.08f;
    ap.vocab = ap.ctx = 0;   /* the target's */
    ap.seed = 78;
    fx->assistant = strdup(test_tmpfile("spec-swa-gemma4-assistant.gguf"));
    CHECKF(sprig_mkmodel_write(&ap, fx->assistant, &err) == SPRIG_OK, "%s", err.msg);
}

static const char *PROMPT = "Once upon a time there was";

static void check_mode(const struct fixture *fx, const sprig_model *m, enum sprig_kv_type mode)
{
    const int n_gen = test_quick() ? 104 : N_GEN;   /* quick (ASan): still past four windows */
    struct sprig_session_params p = greedy(mode);
    struct test_run plain, paged;
    if (!test_run_session(m, &p, PROMPT, n_gen, &plain)) return;
    CHECK_STR(plain.st.path, "plain");
    CHECK_STR(plain.st.kv_layout, "ring");
    CHECKF(plain.st.prompt_tokens + n_gen > 4 * WINDOW, "%lld + %d tokens: not past four windows",
           (long long)plain.st.prompt_tokens, n_gen);
    p.kv_block_slots = 16;   /* a full cache under the band mask (gemma4's per-layer shapes: refused) */
    if (strcmp(fx->arch, "gemma4") && test_run_session(m, &p, PROMPT, n_gen, &paged)) {
        CHECK_STR(paged.st.kv_layout, "paged");
        CHECKF(test_first_diff(&plain, &paged) < 0, "kv %s: the ring's plain output differs from the paged cache's at step %d",
               sprig_kv_type_name(mode), test_first_diff(&plain, &paged));
        free(paged.ids);
    }
    const struct { enum sprig_drafter_kind kind; const char *path, *label; } d[3] = {
        { SPRIG_DRAFTER_MODEL, fx->draft, "draft-model" }, { SPRIG_DRAFTER_NGRAM, NULL, "ngram" },
        { SPRIG_DRAFTER_MTP, fx->assistant, "gemma4-assistant" },
    };
    const int nd = fx->assistant ? 3 : 2;
    static const char *const shapes[3] = { "chain", "linear tree", "branching tree" };
    int64_t zero = 0, partial = 0;
    for (int di = 0; di < nd; di++)
        for (int sh = 0; sh < 3; sh++) {
            p = greedy(mode);
            p.drafter = d[di].kind;
            p.draft_path = d[di].path;
            p.draft_max = 4;
            if (sh) { p.tree = SPRIG_TREE_ON; p.tree_branches = sh == 2 ? 2 : 0; }
            struct test_run r;
            if (!test_run_session(m, &p, PROMPT, n_gen, &r)) continue;
            const int at = test_first_diff(&r, &plain);
            CHECKF(at < 0, "kv %s, %s %s: output differs from plain decoding at step %d", sprig_kv_type_name(mode),
                   d[di].label, shapes[sh], at);
            CHECK_STR(r.st.path, sh ? "tree" : "chain");
            CHECK_STR(r.st.kv_layout, "ring");
            CHECK(r.st.rounds > 0);
            if (getenv("SPRIG_TEST_VERBOSE")) fprintf(stderr, "    %s %s: rounds %lld zero %lld partial %lld full %lld\n", d[di].label, shapes[sh], (long long)r.st.rounds, (long long)r.st.zero_accept_rounds, (long long)r.st.partial_accept_rounds, (long long)r.st.full_accept_rounds);
            if (d[di].kind == SPRIG_DRAFTER_MTP) CHECK_STR(r.st.drafter, "mtp");
            zero += r.st.zero_accept_rounds;
            partial += r.st.partial_accept_rounds;
            free(r.ids);
        }
    fprintf(stderr, "  %s, kv %s: %d tokens (prompt %lld), zero/partial accepts %lld/%lld\n", fx->arch, sprig_kv_type_name(mode), n_gen,
            (long long)plain.st.prompt_tokens, (long long)zero, (long long)partial);
    CHECK(zero > 0 && (partial > 0 || !strcmp(fx->arch, "gemma2")));
    free(plain.ids);
}

static void spec_equals_plain(const struct fixture *fx, int n_sliding)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(fx->target, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    CHECK_EQ_INT(m->hp.swa_window, WINDOW);
    int sliding = 0;
    for (int l = 0; l < m->hp.n_layer; l++) sliding += m->layers[l].window == WINDOW;
    CHECK_EQ_INT(sliding, n_sliding);
    check_mode(fx, m, SPRIG_KV_F32);
    if (!test_quick()) check_mode(fx, m, SPRIG_KV_TURBO4_ASYM);
    sprig_model_free(m);
}

static void test_gemma3_spec_equals_plain(void) { spec_equals_plain(&g_fx[0], 4); }   /* layers 0, 1, 3, 4 of 6 with period 3 */
static void test_gemma2_spec_equals_plain(void) { spec_equals_plain(&g_fx[2], 3); }   /* layers 0, 2, 4 */
static void test_gemma4_spec_equals_plain(void)
{
    spec_equals_plain(&g_fx[1], 4);   /* period 3: s s g s s g (layers 4, 5 share layers 2's and 3's caches) */
}

/* Without the band a tree verify's rows see keys past the window: the
 * equality above must then break (proof the test can fail and that the
 * band is what keeps trees exact). */
static void test_fails_without_band(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(g_fx[0].target, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    struct sprig_session_params p = greedy(SPRIG_KV_F32);
    struct test_run plain, r;
    if (test_run_session(m, &p, PROMPT, N_GEN, &plain)) {
        p.drafter = SPRIG_DRAFTER_MODEL;
        p.draft_path = g_fx[0].draft;
        p.draft_max = 4;
        p.tree = SPRIG_TREE_ON;
        p.tree_branches = 2;
        const bool was = sprig_band_set_enabled(false);
        if (test_run_session(m, &p, PROMPT, N_GEN, &r)) {
            const int at = test_first_diff(&r, &plain);
            CHECKF(at >= 0, "without the band the tree's output still equals plain decoding");
            CHECK_STR(r.st.path, "tree");
            if (at >= 0)
                fprintf(stderr, "  without the band: first difference at step %d (position %lld): plain %d, tree %d\n", at,
                        (long long)plain.st.prompt_tokens + at, plain.ids[at], r.ids[at]);
            CHECKF(at < 0 || plain.st.prompt_tokens + at > WINDOW, "a difference inside the first window (step %d)", at);
            free(r.ids);
        }
        sprig_band_set_enabled(was);
        free(plain.ids);
    }
    sprig_model_free(m);
}

int main(void)
{
    make_fixture(&g_fx[0], "gemma3");
    make_fixture(&g_fx[1], "gemma4");
    make_fixture(&g_fx[2], "gemma2");
    RUN(test_gemma3_spec_equals_plain);
    RUN(test_gemma4_spec_equals_plain);
    RUN(test_gemma2_spec_equals_plain);
    RUN(test_fails_without_band);
    for (int i = 0; i < 3; i++) {
        free(g_fx[i].target);
        free(g_fx[i].draft);
        free(g_fx[i].assistant);
    }
    return test_summary("test-spec-swa");
}
