/*
 * api — the thin implementation of include/sprig.h: argument checking and
 * wiring. A session owns a thread pool, a forward context (KV cache +
 * scratch), the target adapter, an optional drafter, a sampler and the
 * round loop (spec/round), and turns emitted tokens into streamed text.
 * No math lives here.
 */
#include "sprig.h"
#include "base/log.h"
#include "base/pool.h"
#include "base/timer.h"
#include "kv/kv.h"
#include "model/arch.h"
#include "sample/sample.h"
#include "spec/batch.h"
#include "spec/drafters.h"
#include "spec/ngram.h"
#include "spec/round.h"
#include "spec/profile.h"
#include "spec/shape.h"
#include "spec/target_llama.h"
#include "grammar/match.h"
#include "grammar/schema.h"
#include "api/pcache.h"
#include "base/mmap.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- models */

void sprig_model_get_info(const sprig_model *m, struct sprig_model_info *out)
{
    memset(out, 0, sizeof *out);
    out->arch = m->arch->name;
    out->name = m->name;
    out->n_vocab = m->hp.n_vocab;
    out->n_ctx_train = m->hp.n_ctx_train;
    out->n_embd = m->hp.dim;
    out->n_layer = m->hp.n_layer;
    out->n_head = m->hp.n_head;
    out->n_head_kv = m->hp.n_kv_head;
    out->n_ff = m->hp.n_ff;
    out->n_params = m->n_params;
    out->weight_bytes = m->weight_bytes;
    out->load_ms = m->load_ms;
    out->kernels = sprig_kernels_name();
    out->token_bos = sprig_tokenizer_bos(m->tok);
    out->token_eos = sprig_tokenizer_eos(m->tok);
    out->weights_copied_mb = (double)m->copied_bytes / 1e6;
    out->weights_mapped_mb = (double)m->mapped_bytes / 1e6;
    double eb;
    sprig_model_experts_touched(m, &out->experts_touched, &out->experts_total, &eb);
    out->experts_touched_mb = eb / 1e6;
}

const char *sprig_model_meta_str(const sprig_model *m, const char *key, size_t *len)
{
    const char *s = NULL;
    size_t n = 0;
    if (len) *len = 0;
    int64_t i = m && key ? sprig_gguf_find_kv(m->gguf, key) : -1;
    if (i < 0 || sprig_gguf_kv_type(m->gguf, i) != SPRIG_GGUF_STR) return NULL;
    if (sprig_gguf_get_str(m->gguf, key, &s, &n, false, NULL)) return NULL;
    if (len) *len = n;
    return s;
}

const char *sprig_model_token_piece(const sprig_model *m, int32_t id, size_t *len)
{
    if (len) *len = 0;
    return m ? sprig_tokenizer_piece(m->tok, id, len) : NULL;
}

int sprig_text_to_tokens(const sprig_model *m, const char *text, size_t len, bool add_bos,
                         int32_t *out, int cap, sprig_error *err)
{
    return sprig_tokenize(m->tok, text, len, add_bos, out, cap, err);
}

char *sprig_tokens_to_text(const sprig_model *m, const int32_t *ids, int n, int prev_token)
{
    return sprig_detokenize(m->tok, ids, n, prev_token);
}

void sprig_free(void *p) { free(p); }

void sprig_set_log_level(int level) { sprig_log_set_level(level); }

/* ---------------------------------------------------------------- sessions */

struct sprig_session {
    const sprig_model *m;
    struct sprig_session_params p;
    uint64_t seed;
    int block;                     /* verify block (1 = plain) */
    sprig_pool *pool;
    sprig_ctx *ctx;
    sprig_target *target;
    sprig_drafter *drafter;
    sprig_sampler *sampler;
    sprig_spec_session *spec;
    sprig_shape *shape;            /* tree auto: costs and calibration, kept across generations */
    int profile_keyed;             /* its verify costs' cache key (spec/profile.h): 0 not yet tried, 1 in profile_key, -1 none */
    char profile_key[SPRIG_PROFILE_KEY_MAX];
    sprig_round_fn round_fn;       /* sprig_session_set_round_fn */
    void *round_user;
    int32_t *prompt;               /* tokenized prompt */
    int prompt_cap, n_prompt;
    int32_t *gen;                  /* [gen_cap] generated ids */
    sprig_logprob *gen_top;        /* [gen_cap][top_logprobs] */
    int gen_cap, n_gen;
    char *text;                    /* one token's text */
    size_t text_cap;
    sprig_detok detok;
    sprig_text_fn on_text;
    void *user;
    double t_begin, t_end;
    struct sprig_moe_counters moe0, moe1;   /* the target's expert reading at the start and after the prefill */
    sprig_gmatch *grammar;         /* sprig_session_set_grammar, or NULL */
    bool render_special;           /* control tokens' text in the output (sprig_session_set_render_special) */
    bool no_prefix_reuse;          /* sprig_session_set_prefix_reuse(false) */
    bool attached;                 /* counted in its batch's room for whole contexts (sprig_batch_attach) */
    int32_t *kept;                 /* [n_kept] what the target's cache holds after the last generation (its history) */
    int n_kept, kept_cap;
    int from_cache;                /* prompt tokens of the last generate that were not computed (kept or shared) */
    double warm_ms;                /* its chunked prefill on a shared pool (before the round loop's) */
    atomic_bool cancel;            /* sprig_session_cancel */
    bool cancelled_early;          /* the last generate stopped before its round loop began */
};

enum { SPRIG_PREFILL_CHUNK_DEFAULT = 256 };

struct sprig_session_params sprig_session_default_params(void)
{
    return (struct sprig_session_params){
        .n_threads = 0, .n_ctx = 0, .n_batch = 0, .kv_type = SPRIG_KV_F32,
        .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = SPRIG_SEED_RANDOM,
        .drafter = SPRIG_DRAFTER_NONE, .draft_path = NULL, .draft_max = 4,
        .tree = SPRIG_TREE_FROM_ENV, .tree_branches = 0, .sampled_drafts = true, .ngram_min = 1, .ngram_max = 4,
        .ignore_eos = false, .parse_special = false, .top_logprobs = 0,
    };
}

static uint64_t pick_seed(uint64_t seed, const void *salt)
{
    if (seed != SPRIG_SEED_RANDOM) return seed;
    return (sprig_time_ns() ^ ((uint64_t)(uintptr_t)salt << 16)) & 0xffffffffu;
}

const char *sprig_kv_type_name(enum sprig_kv_type t) { return sprig_kv_mode_name((int)t); }

bool sprig_kv_type_from_name(const char *name, enum sprig_kv_type *out)
{
    const int m = sprig_kv_mode_from_name(name);
    if (m < 0) return false;
    *out = (enum sprig_kv_type)m;
    return true;
}

const char *sprig_kv_type_list(void) { return sprig_kv_mode_list(); }

static const char *const drafter_names[] = {
    [SPRIG_DRAFTER_NONE] = "none", [SPRIG_DRAFTER_MODEL] = "draft-model",
    [SPRIG_DRAFTER_MTP] = "mtp", [SPRIG_DRAFTER_NGRAM] = "ngram", [SPRIG_DRAFTER_ORACLE] = "oracle",
};

static sprig_status check_params(const struct sprig_session_params *p, sprig_error *err)
{
    if (p->n_threads < 0 || p->n_threads > 256)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_threads: %d is out of range [0, 256]", p->n_threads);
    if (p->n_ctx < 0 || p->n_ctx > (1 << 24))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_ctx: %d is out of range [0, %d]", p->n_ctx, 1 << 24);
    if (p->n_batch < 0 || p->n_batch > 4096)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_batch: %d is out of range [0, 4096]", p->n_batch);
    if (!sprig_kv_type_name(p->kv_type))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv_type: %d is not a KV type (%s)", (int)p->kv_type, sprig_kv_type_list());
    if ((unsigned)p->drafter > SPRIG_DRAFTER_ORACLE)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "drafter: %d is not a drafter kind", (int)p->drafter);
    if ((p->drafter == SPRIG_DRAFTER_MODEL || p->drafter == SPRIG_DRAFTER_MTP || p->drafter == SPRIG_DRAFTER_ORACLE) &&
        (!p->draft_path || !*p->draft_path))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "draft_path: the %s drafter needs a file", drafter_names[p->drafter]);
    if (p->draft_max < 1 || p->draft_max > SPRIG_TREE_MAX - 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "draft_max: %d is out of range [1, %d]", p->draft_max, SPRIG_TREE_MAX - 1);
    if (p->tree < SPRIG_TREE_FROM_ENV || p->tree > SPRIG_TREE_ON)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: %d is not -1 (environment), 0 (off) or 1 (on)", p->tree);
    if (p->tree == SPRIG_TREE_ON && p->drafter == SPRIG_DRAFTER_NONE)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: tree mode needs a drafter (a draft model, an MTP head or the n-gram drafter)");
    if (p->tree_width < 0 || p->tree_width > 8)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree_width: %d is out of range [0, 8]", p->tree_width);
    if (p->tree_auto && (p->drafter == SPRIG_DRAFTER_NONE || p->tree_width < 1))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree_auto: needs a drafter and tree_width >= 1 (a dynamic tree to choose from)");
    if (p->tree_branches < 0 || p->draft_max + 1 + p->tree_branches > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree_branches: %d is out of range [0, %d] for draft_max %d",
                         p->tree_branches, SPRIG_TREE_MAX - 1 - p->draft_max, p->draft_max);
    if (p->ngram_min < 1 || p->ngram_max < p->ngram_min || p->ngram_max > SPRIG_NGRAM_MAX_N)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "ngram_min/ngram_max: [%d, %d] must satisfy 1 <= min <= max <= %d",
                         p->ngram_min, p->ngram_max, SPRIG_NGRAM_MAX_N);
    if (p->prefill_chunk < 0 || p->prefill_chunk > (1 << 20))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "prefill_chunk: %d is out of range [0, %d]", p->prefill_chunk, 1 << 20);
    if (p->top_logprobs < 0 || p->top_logprobs > SPRIG_TOP_LOGPROBS_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "top_logprobs: %d is out of range [0, %d]", p->top_logprobs,
                         SPRIG_TOP_LOGPROBS_MAX);
    if (!isfinite(p->temp) || p->temp < 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "temp: %g must be a finite number >= 0", (double)p->temp);
    return SPRIG_OK;
}

void sprig_session_free(sprig_session *s)
{
    if (!s) return;
    if (s->attached) sprig_batch_attach(s->p.batch, sprig_ctx_n_ctx(s->ctx), -1);
    sprig_spec_free(s->spec);
    sprig_drafter_free(s->drafter);
    sprig_model_target_free(s->target);
    sprig_sampler_free(s->sampler);
    sprig_ctx_free(s->ctx);
    sprig_pool_free(s->pool);
    if (s->shape) {   /* what tree auto chose, for the log */
        char line[1280];
        sprig_shape_summary(s->shape, line, sizeof line);
        SPRIG_LOGI("tree auto: %s", line);
        free(s->shape);
    }
    free(s->prompt);
    free(s->gen);
    free(s->gen_top);
    free(s->text);
    free(s->kept);
    sprig_gmatch_free(s->grammar);
    free(s);
}

/* ---- grammars: the model's vocabulary trie, built once on first use ---- */
static pthread_mutex_t gvocab_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *gv_text(const void *u, int32_t id, size_t *len)
{
    const sprig_tokenizer *t = u;
    if (id >= sprig_tokenizer_n_vocab(t)) {
        *len = 0;
        return NULL;
    }
    return sprig_tokenizer_token_text(t, id, len);
}
static bool gv_eog(const void *u, int32_t id) { return id < sprig_tokenizer_n_vocab(u) && sprig_tokenizer_is_eog(u, id); }

static const sprig_gvocab *model_gvocab(const sprig_model *m, sprig_error *err)
{
    pthread_mutex_lock(&gvocab_mu);
    if (!m->gvocab) ((sprig_model *)m)->gvocab = sprig_gvocab_create(m->hp.n_vocab, gv_text, gv_eog, m->tok, err);
    const sprig_gvocab *v = m->gvocab;
    pthread_mutex_unlock(&gvocab_mu);
    return v;
}

sprig_status sprig_model_prepare_grammars(const sprig_model *m, sprig_error *err)
{
    return model_gvocab(m, err) ? SPRIG_OK : err ? err->code : SPRIG_E_NOMEM;
}

sprig_status sprig_session_set_grammar(sprig_session *s, const char *gbnf, size_t len, sprig_error *err)
{
    if (!gbnf) {
        sprig_gmatch_free(s->grammar);
        s->grammar = NULL;
        return SPRIG_OK;
    }
    const sprig_gvocab *v = model_gvocab(s->m, err);
    if (!v) return err ? err->code : SPRIG_E_NOMEM;
    sprig_gbnf *g = NULL;
    sprig_status st = sprig_gbnf_parse(gbnf, len, &g, err);
    if (st) return st;
    sprig_gmatch *m = sprig_gmatch_create(g, v, err);
    sprig_gbnf_free(g);
    if (!m) return err ? err->code : SPRIG_E_NOMEM;
    sprig_spec_free(s->spec);   /* it points at the old grammar */
    s->spec = NULL;
    sprig_gmatch_free(s->grammar);
    s->grammar = m;
    return SPRIG_OK;
}

sprig_status sprig_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, sprig_error *err)
{
    *gbnf = NULL;
    json_error_t je;
    json_t *j = schema ? json_loadb(schema, len, JSON_DECODE_ANY, &je) : NULL;
    if (schema && !j) return sprig_err(err, SPRIG_E_INVALID_ARG, "schema: not JSON (%s at %d:%d)", je.text, je.line, je.column);
    const sprig_status st = sprig_schema_to_gbnf(j, gbnf, err);
    json_decref(j);
    return st;
}

sprig_status sprig_session_set_json_schema(sprig_session *s, const char *schema, size_t len, sprig_error *err)
{
    char *g = NULL;
    sprig_status st = sprig_json_schema_to_gbnf(schema, len, &g, err);
    if (!st) st = sprig_session_set_grammar(s, g, strlen(g), err);
    free(g);
    return st;
}

sprig_status sprig_session_create(const sprig_model *m, const struct sprig_session_params *p,
                                  sprig_session **out, sprig_error *err)
{
    *out = NULL;
    if (!m) return sprig_err(err, SPRIG_E_INVALID_ARG, "model: NULL");
    struct sprig_session_params dp = sprig_session_default_params();
    if (!p) p = &dp;
    sprig_status st = check_params(p, err);
    if (st) return st;
    sprig_session *s = calloc(1, sizeof *s);
    if (!s) return sprig_err(err, SPRIG_E_NOMEM, "session: out of memory");
    s->m = m;
    s->p = *p;
    s->seed = pick_seed(p->seed, s);
    s->block = p->drafter == SPRIG_DRAFTER_NONE ? 1 : p->draft_max + 1;
    int rows = s->block + (p->drafter == SPRIG_DRAFTER_NONE ? 0 : p->tree_branches);

    if (!(s->pool = sprig_pool_create(p->n_threads, err))) goto fail;
    struct sprig_ctx_params cp = {
        .n_ctx = p->n_ctx, .n_batch = p->n_batch > 0 ? (p->n_batch < rows ? rows : p->n_batch) : (rows > 64 ? rows : 64),
        .kv_mode = (int)p->kv_type, .kv_block_slots = p->kv_block_slots,
        .kv_pool = p->batch ? sprig_batch_kv_pool(p->batch) : NULL,
    };
    if (p->batch && rows > sprig_batch_max_rows(p->batch)) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "batch: verify blocks of %d rows exceed the batch's max_rows %d", rows,
                       sprig_batch_max_rows(p->batch));
        goto fail_st;
    }
    if ((st = sprig_ctx_create(m, s->pool, &cp, &s->ctx, err))) goto fail_st;
    if (sprig_ctx_n_batch(s->ctx) < rows) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "n_ctx: %d slots cannot hold a verify block of %d", sprig_ctx_n_ctx(s->ctx), rows);
        goto fail_st;
    }
    if (!(s->target = sprig_model_target_create(s->ctx, rows, err))) goto fail;
    if (p->batch) {
        if ((st = sprig_model_target_set_batch(s->target, p->batch, err))) goto fail_st;
        sprig_batch_attach(p->batch, sprig_ctx_n_ctx(s->ctx), +1);
        s->attached = true;
    }
    struct sprig_sampler_params sp = {
        .temp = p->temp, .top_k = p->top_k, .top_p = p->top_p, .min_p = p->min_p, .seed = s->seed,
    };
    if (!(s->sampler = sprig_sampler_create(&sp, m->hp.n_vocab, err))) goto fail;
    int n_ctx = sprig_ctx_n_ctx(s->ctx);
    switch (p->drafter) {   /* constructors with different arguments */
    case SPRIG_DRAFTER_NONE: break;
    case SPRIG_DRAFTER_MODEL:
        s->drafter = sprig_draft_model_create(p->draft_path, m, s->pool, n_ctx + SPRIG_TREE_MAX, p->batch, err);
        break;
    case SPRIG_DRAFTER_MTP: s->drafter = sprig_draft_mtp_create(p->draft_path, m, s->pool, n_ctx, err); break;
    case SPRIG_DRAFTER_NGRAM: s->drafter = sprig_draft_ngram_create(p->ngram_min, p->ngram_max, n_ctx + 1, err); break;
    case SPRIG_DRAFTER_ORACLE:
        s->drafter = sprig_draft_oracle_create(p->draft_path, m->hp.n_vocab, p->oracle_accept, p->oracle_sibling, p->oracle_seed, err);
        break;
    }
    if (p->drafter != SPRIG_DRAFTER_NONE && !s->drafter) goto fail;
    if (p->drafter != SPRIG_DRAFTER_NONE && p->tree_auto) {
        if (!(s->shape = calloc(1, sizeof *s->shape))) { st = sprig_err(err, SPRIG_E_NOMEM, "session: out of memory"); goto fail_st; }
        sprig_shape_init(s->shape);
    }
    s->text_cap = sprig_detok_max_out(m->tok) + 64;
    if (!(s->text = malloc(s->text_cap))) { st = sprig_err(err, SPRIG_E_NOMEM, "session: out of memory"); goto fail_st; }
    *out = s;
    return SPRIG_OK;
fail:
    st = err ? err->code : SPRIG_E_INTERNAL;
    if (st == SPRIG_OK) st = SPRIG_E_INTERNAL;
fail_st:
    sprig_session_free(s);
    return st;
}

void sprig_session_set_seed(sprig_session *s, uint64_t seed) { s->seed = pick_seed(seed, s); }

void sprig_session_set_parse_special(sprig_session *s, bool on) { s->p.parse_special = on; }
void sprig_session_set_render_special(sprig_session *s, bool on) { s->render_special = on; }

void sprig_session_set_round_fn(sprig_session *s, sprig_round_fn fn, void *user)
{
    s->round_fn = fn;
    s->round_user = user;
}

static void on_round(void *user, const sprig_tree *b, const sprig_walk *w, bool tree)
{
    const sprig_session *s = user;
    const struct sprig_round_trace r = { .n = b->n, .tokens = b->tokens, .parents = b->parents, .n_path = w->n_path, .path = w->path,
                                         .tree = tree };
    s->round_fn(s->round_user, &r);
}

sprig_status sprig_session_set_sampling(sprig_session *s, float temp, int top_k, float top_p, float min_p, int top_logprobs,
                                        sprig_error *err)
{
    struct sprig_session_params p = s->p;
    p.temp = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.top_logprobs = top_logprobs;
    sprig_status st = check_params(&p, err);
    if (st) return st;
    struct sprig_sampler_params sp = { .temp = temp, .top_k = top_k, .top_p = top_p, .min_p = min_p, .seed = s->seed };
    sprig_sampler *ns = sprig_sampler_create(&sp, s->m->hp.n_vocab, err);
    if (!ns) return err ? err->code : SPRIG_E_INVALID_ARG;
    sprig_spec_free(s->spec);   /* it points at the old sampler */
    s->spec = NULL;
    sprig_sampler_free(s->sampler);
    s->sampler = ns;
    if (top_logprobs != s->p.top_logprobs) s->gen_cap = 0;   /* gen_top is sized by it: regrow next generate */
    s->p = p;
    return SPRIG_OK;
}

void sprig_session_cancel(sprig_session *s) { atomic_store(&s->cancel, true); }

static bool on_token(void *user, int32_t token, const sprig_logprob *top)
{
    sprig_session *s = user;
    if (atomic_load(&s->cancel)) return false;
    if (s->n_gen == 0) sprig_ctx_moe_counters(s->ctx, &s->moe1);   /* the prefill's forwards are done */
    if (s->n_gen < s->gen_cap) {   /* sized for everything the context lets the round loop emit */
        if (top) memcpy(s->gen_top + (size_t)s->n_gen * (size_t)s->p.top_logprobs, top,
                        (size_t)s->p.top_logprobs * sizeof *top);
        s->gen[s->n_gen++] = token;
    }
    size_t n = sprig_detok_push(s->m->tok, &s->detok, token, s->text, s->text_cap);
    if (n && s->on_text && !s->on_text(s->user, s->text, n)) return false;
    if (s->render_special && s->on_text && sprig_tokenizer_type(s->m->tok, token) == SPRIG_TOKEN_CONTROL &&
        !sprig_tokenizer_is_eog(s->m->tok, token)) {   /* a control token's own text ([TOOL_CALLS], <|python_tag|>) */
        size_t pl = 0;
        const char *piece = sprig_tokenizer_piece(s->m->tok, token, &pl);
        if (piece && pl) return s->on_text(s->user, piece, pl);
    }
    return true;
}

/* Whether this generation may start from cached rows at all: not with reuse off, not for recurrent targets (their
 * state cannot be cut back to an arbitrary position), not for a sliding-window ring (likewise; a paged cache keeps
 * every slot), not for drafters that read every prompt row's hidden state (a cached row has none). */
static bool reuse_ok(const sprig_session *s)
{
    const sprig_kv *kv = sprig_ctx_kv(s->ctx);
    return !s->no_prefix_reuse && s->m->hp.n_recurrent == 0 &&
           (s->m->hp.swa_window == 0 || !strcmp(sprig_kv_kind(kv), "paged")) && !(s->drafter && s->drafter->reads_all_hidden);
}

static bool shared_pool(const sprig_session *s) { return s->p.batch && !strcmp(sprig_kv_kind(sprig_ctx_kv(s->ctx)), "paged"); }

/* The prompt's prefix the target's cache already holds: from the last generation (kept[]), the cache trimmed to it,
 * or, for a session on a shared pool, the blocks of it the pool holds (whichever is longer); 0 (the cache cleared)
 * when there is none or reuse is off (reuse_ok). At least the prompt's last token is always fed (its row picks the
 * first token). A session on a batch keeps its own rows between generations only while the pool has room for every
 * session's whole context (its blocks stay shareable in the pool either way). */
static int reuse_prefix(sprig_session *s, int need)
{
    sprig_kv *kv = sprig_ctx_kv(s->ctx);
    int common = 0;
    const bool ok = reuse_ok(s) && s->n_kept == sprig_kv_len(kv);
    while (ok && common < s->n_kept && common < need - 1 && s->kept[common] == s->prompt[common]) common++;
    if (shared_pool(s) && reuse_ok(s) && sprig_kv_paged_lookup(kv, s->prompt, need - 1) > common) common = 0;
    if (common && sprig_ctx_trim(s->ctx, s->n_kept - common, NULL) != SPRIG_OK) common = 0;
    if (!common) sprig_kv_clear(kv);
    s->n_kept = 0;   /* until this generation ends well */
    if (!common && shared_pool(s) && reuse_ok(s)) common = sprig_kv_paged_share(kv, s->prompt, need - 1);
    return common;
}

/* Chunked prefill on a batch (model.h's sprig_prefill_shared): where a chunk runs. The batch's prefill_rows N: in the
 * shared steps, at most N rows a step while other sessions generate (alone or beside other prompts only, up to what
 * the batch's scratch holds); 0 (-1 when made): on the session's own threads beside the batch's steps. */
static sprig_status run_chunk(void *user, sprig_ctx *c, const int32_t *tokens, int n, sprig_error *err)
{
    sprig_session *s = user;
    const int cap = sprig_batch_prefill_rows(s->p.batch), nb = sprig_ctx_n_batch(c);
    if (!cap) return sprig_prefill(c, tokens, n, NULL, NULL, err);
    const int alone = nb < (cap > 64 ? cap : 64) ? nb : cap > 64 ? cap : 64;
    sprig_status st = SPRIG_OK;
    for (int at = 0; !st && at < n;) {
        const int step = sprig_batch_others_generating(s->p.batch, c) > 0 && cap < alone ? cap : alone;
        const struct sprig_fwd f = { .n = n - at < step ? n - at : step, .tokens = tokens + at };
        st = sprig_batch_forward(s->p.batch, c, &f, err);
        at += f.n;
    }
    return st;
}

/* a session waiting for another's chunk: no step waits for it */
static void leave_batch(void *user)
{
    sprig_session *s = user;
    sprig_batch_leave(s->p.batch, s->ctx);
}

static bool cancelled(void *user) { return atomic_load(&((sprig_session *)user)->cancel); }

/* On a batch: prefill prompt[have .. need - 1) in chunks, sharing them with the other sessions (with prefix reuse:
 * share), before the round loop feeds the last token. *held gets the slots the cache holds (need - 1, less when
 * cancelled), *shared counts the tokens attached. */
static sprig_status warm_prefill(sprig_session *s, int have, int need, bool share, int *held, int *shared, sprig_error *err)
{
    const struct sprig_shared_prefill o = {
        .chunk = s->p.prefill_chunk > 0 ? s->p.prefill_chunk : SPRIG_PREFILL_CHUNK_DEFAULT, .share = share,
        .run = run_chunk, .waiting = leave_batch, .stop = cancelled, .user = s,
    };
    const sprig_status st = sprig_prefill_shared(s->ctx, s->prompt, have, need - 1, &o, held, shared, err);
    sprig_batch_leave(s->p.batch, s->ctx);   /* until its first verify the session drafts and prefills alone */
    return st;
}

int sprig_session_prefix_match(const sprig_session *s, const int32_t *ids, int n)
{
    int common = 0;
    if (s->no_prefix_reuse) return 0;
    while (common < s->n_kept && common < n && s->kept[common] == ids[common]) common++;
    return common;
}

void sprig_session_set_prefix_reuse(sprig_session *s, bool on)
{
    s->no_prefix_reuse = !on;
    if (!on) s->n_kept = 0;
}

/* ---- the prompt cache file (api/pcache.h) ---- */

/* Why this session's cache cannot be saved or restored (NULL: it can). */
static const char *pcache_refusal(const sprig_session *s, char *why, size_t cap)
{
    if (s->no_prefix_reuse) return "prefix reuse is off for this session";
    if (s->m->hp.n_recurrent)
        return snprintf(why, cap, "%s's %d recurrent layers keep a state that cannot be cut back to a prefix", s->m->arch->name,
                        s->m->hp.n_recurrent), why;
    if (s->drafter && s->drafter->reads_all_hidden) return "the drafter reads the hidden state of every prompt row, which is not kept";
    if (!sprig_kv_rows_portable(sprig_ctx_kv(s->ctx), why, cap)) return why;
    return NULL;
}

static bool draft_cache(sprig_session *s, struct sprig_draft_cache *dc)
{
    return s->drafter && s->drafter->vt->own_cache && s->drafter->vt->own_cache(s->drafter, dc);
}

static void pcache_id(sprig_session *s, char *id, size_t cap)
{
    const sprig_kv *kv = sprig_ctx_kv(s->ctx);
    struct sprig_draft_cache dc;
    char draft[256] = "none";
    if (draft_cache(s, &dc))
        snprintf(draft, sizeof draft, "%016llx %s, %s", (unsigned long long)sprig_gguf_fingerprint(dc.model->gguf), dc.model->name,
                 sprig_kv_mode_name(dc.kv->p.mode));
    snprintf(id, cap, "sprig=%s\nkernels=%s\nmodel=%016llx %s (%s)\nkv=%s, %d layers x %d kv heads x %d\ndraft model=%s\n", SPRIG_VERSION,
             sprig_kernels_name(), (unsigned long long)sprig_gguf_fingerprint(s->m->gguf), s->m->name, s->m->arch->name,
             sprig_kv_mode_name(kv->p.mode), kv->p.n_layer, kv->p.n_kv_head, kv->p.head_dim, draft);
}

sprig_status sprig_session_save_cache(sprig_session *s, const char *path, sprig_error *err)
{
    char why[200], id[1024];
    const char *no = pcache_refusal(s, why, sizeof why);
    if (no) return sprig_err(err, SPRIG_E_REFUSED, "prompt cache %s: not saved: %s", path, no);
    const sprig_kv *kv = sprig_ctx_kv(s->ctx);
    if (!s->n_kept || s->n_kept != sprig_kv_len(kv))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "prompt cache %s: nothing to save (no generate has finished on this session)", path);
    struct sprig_draft_cache dc;
    const bool with_draft = draft_cache(s, &dc);
    pcache_id(s, id, sizeof id);
    sprig_pcache_writer *w = sprig_pcache_begin(path, id, with_draft ? 2 : 1, err);
    if (!w) return err ? err->code : SPRIG_E_IO;
    bool ok = !sprig_pcache_section_head(w, s->kept, s->n_kept, kv->p.n_layer, (uint64_t)sprig_kv_row_bytes(kv)) &&
              sprig_kv_rows_save(kv, s->n_kept, sprig_pcache_file(w));
    if (ok && with_draft)
        ok = !sprig_pcache_section_head(w, dc.fed, *dc.n_fed, dc.kv->p.n_layer, (uint64_t)sprig_kv_row_bytes(dc.kv)) &&
             sprig_kv_rows_save(dc.kv, *dc.n_fed, sprig_pcache_file(w));
    if (!ok) {
        sprig_pcache_abort(w);
        return sprig_err(err, SPRIG_E_IO, "prompt cache %s: write error", path);
    }
    return sprig_pcache_end(w, err);
}

/* Rows of one section into kv, after checking they are this cache's shape. */
static sprig_status load_section(const sprig_pcache_section *sec, sprig_kv *kv, int room, const char *what, const char *path,
                                 sprig_error *err)
{
    if (sec->n_layer != kv->p.n_layer || sec->row_bytes != (uint64_t)sprig_kv_row_bytes(kv))
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache %s: the %s rows are %d layers x %llu bytes, this cache's %d x %lld", path,
                         what, sec->n_layer, (unsigned long long)sec->row_bytes, kv->p.n_layer, (long long)sprig_kv_row_bytes(kv));
    if (sec->n_tokens > room)
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "prompt cache %s: %d %s tokens do not fit the context of %d", path, sec->n_tokens,
                         what, room);
    return sprig_kv_rows_load(kv, sec->n_tokens, sec->rows, sec->rows_len, err);
}

sprig_status sprig_session_load_cache(sprig_session *s, const char *path, int *n_tokens, sprig_error *err)
{
    if (n_tokens) *n_tokens = 0;
    char why[200], id[1024];
    const char *no = pcache_refusal(s, why, sizeof why);
    if (no) return sprig_err(err, SPRIG_E_REFUSED, "prompt cache %s: not used: %s", path, no);
    sprig_map map;
    sprig_status st = sprig_map_file(path, &map, err);
    if (st) return st;
    sprig_pcache pc;
    pcache_id(s, id, sizeof id);
    struct sprig_draft_cache dc;
    const bool with_draft = draft_cache(s, &dc);
    sprig_kv *kv = sprig_ctx_kv(s->ctx);
    s->n_kept = 0;
    if (!(st = sprig_pcache_parse(map.data, map.size, &pc, err)) && !(st = sprig_pcache_match(&pc, id, path, err))) {
        const int n = pc.sec[0].n_tokens;
        if (pc.n_sections != (with_draft ? 2 : 1))
            st = sprig_err(err, SPRIG_E_FORMAT, "prompt cache %s: %d sections for a session with%s a draft model", path, pc.n_sections,
                           with_draft ? "" : "out");
        if (!st && n > s->kept_cap) {
            int32_t *nk = realloc(s->kept, sizeof *nk * (size_t)n);
            if (!nk) st = sprig_err(err, SPRIG_E_NOMEM, "prompt cache %s: out of memory for %d tokens", path, n);
            else s->kept = nk, s->kept_cap = n;
        }
        if (!st) st = load_section(&pc.sec[0], kv, sprig_ctx_n_ctx(s->ctx) - 1, "target", path, err);
        if (!st && with_draft && !(st = load_section(&pc.sec[1], dc.kv, dc.cap, "draft model", path, err))) {
            memcpy(dc.fed, pc.sec[1].tokens, sizeof *dc.fed * (size_t)pc.sec[1].n_tokens);
            *dc.n_fed = pc.sec[1].n_tokens;
        }
        if (!st) {
            memcpy(s->kept, pc.sec[0].tokens, sizeof *s->kept * (size_t)n);
            s->n_kept = n;
            if (n_tokens) *n_tokens = n;
        }
    }
    if (st) {   /* nothing half restored */
        sprig_kv_clear(kv);
        if (with_draft) {
            sprig_kv_clear(dc.kv);
            *dc.n_fed = 0;
        }
    }
    sprig_unmap(&map);
    return st;
}

/* a grammar's forced text as tokens (no BOS, no control tokens) */
static int forced_tokens(void *user, const char *text, size_t n, int32_t *out, int cap)
{
    sprig_session *s = user;
    const int r = sprig_tokenize(s->m->tok, text, n, SPRIG_TOK_MID_TEXT, out, cap, NULL);
    return r < 0 ? 0 : r < cap ? r : cap;
}

sprig_status sprig_session_generate(sprig_session *s, const char *prompt, size_t prompt_len, int n_predict,
                                    sprig_text_fn on_text, void *user, sprig_error *err)
{
    if (!prompt && prompt_len) return sprig_err(err, SPRIG_E_INVALID_ARG, "prompt: NULL with length %zu", prompt_len);
    if (n_predict < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "n_predict: %d must be at least 1", n_predict);
    if (prompt_len > (size_t)1 << 28) return sprig_err(err, SPRIG_E_INVALID_ARG, "prompt: %zu bytes is too long", prompt_len);
    sprig_spec_free(s->spec);
    s->spec = NULL;
    sprig_sampler_reseed(s->sampler, s->seed);
    atomic_store(&s->cancel, false);
    s->cancelled_early = false;

    int flags = sprig_tokenizer_add_bos(s->m->tok) ? SPRIG_TOK_BOS : 0;
    if (s->p.parse_special) {
        /* a chat template that writes the BOS text itself: no second BOS (as llama.cpp) */
        size_t bl = 0;
        const char *bt = sprig_tokenizer_piece(s->m->tok, sprig_tokenizer_bos(s->m->tok), &bl);
        if (bt && bl && prompt_len >= bl && !memcmp(prompt, bt, bl)) flags &= ~SPRIG_TOK_BOS;
        flags |= SPRIG_TOK_PARSE_SPECIAL;
    }
    int need = sprig_tokenize(s->m->tok, prompt ? prompt : "", prompt_len, flags, s->prompt, s->prompt_cap, err);
    if (need < 0) return err ? err->code : SPRIG_E_INVALID_ARG;
    if (need > s->prompt_cap) {
        int32_t *np = realloc(s->prompt, (size_t)need * sizeof *np);
        if (!np) return sprig_err(err, SPRIG_E_NOMEM, "prompt: out of memory for %d tokens", need);
        s->prompt = np;
        s->prompt_cap = need;
        need = sprig_tokenize(s->m->tok, prompt ? prompt : "", prompt_len, flags, s->prompt, s->prompt_cap, err);
        if (need < 0) return err ? err->code : SPRIG_E_INVALID_ARG;
    }
    s->n_prompt = need;
    if (need == 0) return sprig_err(err, SPRIG_E_INVALID_ARG, "prompt: empty, and the model adds no BOS token");
    int n_ctx = sprig_ctx_n_ctx(s->ctx);
    if (need >= n_ctx)
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "prompt: %d tokens do not fit the context of %d (leave room to generate)", need, n_ctx);
    /* the round loop emits at most one token more than the free slots */
    int gen_need = n_predict < n_ctx - need + 1 ? n_predict : n_ctx - need + 1;
    s->n_gen = 0;
    if (gen_need > s->gen_cap) {
        size_t top_n = (size_t)s->p.top_logprobs;
        int32_t *ng = malloc((size_t)gen_need * sizeof *ng);
        sprig_logprob *nt = top_n ? malloc((size_t)gen_need * top_n * sizeof *nt) : NULL;
        if (!ng || (top_n && !nt)) {
            free(ng);
            free(nt);
            return sprig_err(err, SPRIG_E_NOMEM, "session: out of memory for %d generated tokens", gen_need);
        }
        free(s->gen);
        free(s->gen_top);
        s->gen = ng;
        s->gen_top = nt;
        s->gen_cap = gen_need;
    }

    struct sprig_spec_params sp = sprig_spec_default_params();
    sp.block = s->block;
    sp.tree_branches = s->p.drafter == SPRIG_DRAFTER_NONE ? 0 : s->p.tree_branches;
    sp.tree_width = s->p.drafter == SPRIG_DRAFTER_NONE ? 0 : s->p.tree_width;
    sp.shape = s->p.drafter != SPRIG_DRAFTER_NONE && s->p.tree_auto ? s->shape : NULL;
    sp.tree = s->p.drafter == SPRIG_DRAFTER_NONE ? SPRIG_TREE_OFF : s->p.tree;
    sp.max_tokens = n_predict;
    sp.ignore_eos = s->p.ignore_eos;
    sp.sampling = !sprig_sampler_is_greedy(s->sampler);
    sp.sampler = s->sampler;
    sp.seed = s->seed;
    sp.draft_q = sp.sampling && s->drafter && s->p.sampled_drafts;
    sp.top_logprobs = s->p.top_logprobs;
    sp.on_token = on_token;
    sp.user = s;
    sp.on_round = s->round_fn ? on_round : NULL;
    sp.round_user = s;
    sp.grammar = s->grammar;
    sp.grammar_blind_drafts = s->p.grammar_blind_drafts;
    sp.tokenize = forced_tokens;
    sp.tokenize_user = s;
    if (!(s->spec = sprig_spec_create(s->target, s->drafter, &sp, err))) return err ? err->code : SPRIG_E_INTERNAL;
    /* tree auto: the target's verify costs from this machine's cache, else measured once and cached */
    char path[4096];
    if (sp.shape && !s->profile_keyed)
        s->profile_keyed = sprig_profile_key(sprig_gguf_path(s->m->gguf), sprig_kernels_name(), sprig_pool_size(s->pool), s->profile_key,
                                             sizeof s->profile_key) ? 1 : -1;
    const bool keyed = sp.shape && s->profile_keyed > 0;
    if (keyed && !sp.shape->profiled &&
        sprig_profile_load(sp.shape, s->profile_key, sprig_shape_profile_need(sprig_model_target_profile_rows(s->target)), path, sizeof path))
        SPRIG_LOGI("tree auto: the target's verify times from %s", path);

    s->on_text = on_text;
    s->user = user;
    sprig_detok_init(&s->detok, s->prompt[need - 1]);
    s->t_begin = sprig_time_ms();
    int cached = reuse_prefix(s, need);
    sprig_ctx_moe_counters(s->ctx, &s->moe0);
    s->moe1 = s->moe0;
    s->from_cache = cached;
    s->warm_ms = 0;
    sprig_status st = SPRIG_OK;
    if (s->p.batch) sprig_batch_busy(s->p.batch, +1);   /* working beside the batch's steps until it leaves */
    if (shared_pool(s) && cached < need - 1) {
        const double t0 = sprig_time_ms();
        st = warm_prefill(s, cached, need, reuse_ok(s), &cached, &s->from_cache, err);
        s->warm_ms = sprig_time_ms() - t0;
        s->cancelled_early = !st && cached < need - 1;
    }
    if (!st && !s->cancelled_early) st = sprig_spec_generate_cached(s->spec, s->prompt, need, cached, err);
    if (s->p.batch) {
        sprig_batch_leave(s->p.batch, s->ctx);   /* the other sessions stop waiting for this one */
        sprig_batch_busy(s->p.batch, -1);
    }
    if (!st && !s->cancelled_early && shared_pool(s) && reuse_ok(s)) {   /* the conversation so far, for any session */
        int nh = 0;
        const int32_t *h = sprig_spec_history(s->spec, &nh);
        if (nh == sprig_kv_len(sprig_ctx_kv(s->ctx))) sprig_kv_paged_publish(sprig_ctx_kv(s->ctx), h, nh);
    }
    if (s->p.batch && (st || s->cancelled_early || s->no_prefix_reuse || !sprig_batch_room_for_all(s->p.batch))) {
        sprig_kv_clear(sprig_ctx_kv(s->ctx));    /* its blocks go back to the shared pool at once */
    } else if (!st && !s->no_prefix_reuse) {   /* what the cache holds now, for the next prompt's prefix */
        int nh = 0;
        const int32_t *h = sprig_spec_history(s->spec, &nh);
        if (nh > s->kept_cap) {
            int32_t *nk = realloc(s->kept, sizeof *nk * (size_t)nh);
            if (nk) {
                s->kept = nk;
                s->kept_cap = nh;
            }
        }
        if (nh <= s->kept_cap && nh == sprig_kv_len(sprig_ctx_kv(s->ctx))) {
            memcpy(s->kept, h, sizeof *h * (size_t)nh);
            s->n_kept = nh;
        }
    }
    const sprig_spec_stats *learned = sprig_spec_get_stats(s->spec);
    if (keyed && (learned->ms_profile > 0 || learned->rounds > 0)) {   /* what the profile and the rounds taught */
        if (sprig_profile_save(sp.shape, s->profile_key, path, sizeof path)) SPRIG_LOGD("tree auto: verify times cached in %s", path);
        else SPRIG_LOGD("tree auto: verify times not cached (no writable cache directory)");
    }
    size_t n = sprig_detok_flush(s->m->tok, &s->detok, s->text, s->text_cap);
    if (n && on_text) on_text(user, s->text, n);
    s->t_end = sprig_time_ms();
    return st;
}

/* ---------------------------------------------------------------- batches */

struct sprig_batch_params sprig_batch_default_params(void)
{
    return (struct sprig_batch_params){ .n_seq = 4, .max_rows = 64, .kv_type = SPRIG_KV_F32 };
}

sprig_status sprig_batch_create(const sprig_model *m, const struct sprig_batch_params *p, sprig_batch **out, sprig_error *err)
{
    *out = NULL;
    if (!m || !p) return sprig_err(err, SPRIG_E_INVALID_ARG, "batch: model or params is NULL");
    if (!sprig_kv_type_name(p->kv_type)) return sprig_err(err, SPRIG_E_INVALID_ARG, "kv_type: %d is not a KV type", (int)p->kv_type);
    if (p->n_ctx < 0 || p->max_rows < 0 || p->wait_us < 0 || p->kv_block_slots < 0 || p->prefill_rows < -1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "batch: n_ctx, max_rows, kv_block_slots and wait_us must be >= 0, prefill_rows >= -1");
    struct sprig_batch_config c = {
        .n_seq = p->n_seq, .max_rows = p->max_rows ? p->max_rows : 64,
        .n_ctx = p->n_ctx ? p->n_ctx : (m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096),
        .kv_mode = (int)p->kv_type, .block_slots = p->kv_block_slots, .n_blocks = p->kv_blocks, .wait_us = p->wait_us,
        .prefill_rows = p->prefill_rows,
    };
    if (!(*out = sprig_batch_new(m, &c, err))) return err && err->code ? err->code : SPRIG_E_INVALID_ARG;
    return SPRIG_OK;
}

void sprig_batch_free(sprig_batch *b) { sprig_batch_delete(b); }

void sprig_batch_get_stats(sprig_batch *b, struct sprig_batch_stats *o)
{
    struct sprig_batch_counts c;
    sprig_batch_get_counts(b, &c);
    long long total, booked;
    sprig_batch_slots(b, &total, &booked);
    struct sprig_kv_pool_stats ps;
    sprig_kv_pool_get_stats(sprig_batch_kv_pool(b), &ps);
    *o = (struct sprig_batch_stats){ .forwards = c.forwards, .shared_forwards = c.shared, .seqs = c.seqs, .rows = c.rows,
                                     .max_seqs = c.max_seqs, .timeouts = c.timeouts, .kv_slots = total, .kv_booked = booked,
                                     .prompt_chunks = c.prompt_chunks, .prompt_chunks_shared = c.prompt_chunks_shared,
                                     .prompt_rows = c.prompt_rows, .joint_plans = c.joint_plans, .joint_offers = c.joint_offers,
                                     .joint_late = c.joint_late, .prefix_blocks_hit = ps.hit_blocks, .prefix_blocks_published = ps.published,
                                     .prefix_blocks_evicted = ps.evicted, .prefix_blocks_copied = ps.copied,
                                     .kv_blocks = ps.n_blocks, .kv_block_slots = sprig_kv_pool_params(sprig_batch_kv_pool(b))->block_slots,
                                     .prefix_blocks_cached = ps.cached_blocks, .prefix_blocks_idle = ps.idle_blocks,
                                     .prefix_blocks_shared = ps.shared_blocks };
    struct sprig_kv_pool *dp = sprig_batch_draft_pool_now(b);
    if (dp) {
        sprig_kv_pool_get_stats(dp, &ps);
        o->draft_blocks_hit = ps.hit_blocks;
        o->draft_blocks_published = ps.published;
    }
}

void sprig_session_get_stats(const sprig_session *s, struct sprig_stats *o)
{
    memset(o, 0, sizeof *o);
    o->seed = s->seed;
    o->drafter = drafter_names[s->p.drafter];
    o->draft_max = s->p.drafter == SPRIG_DRAFTER_NONE ? 0 : s->p.draft_max;
    o->tree_branches = s->p.drafter == SPRIG_DRAFTER_NONE ? 0 : s->p.tree_branches;
    o->n_threads = sprig_pool_size(s->pool);
    o->kernels = sprig_kernels_name();
    o->kv_type = sprig_kv_mode_name(sprig_ctx_kv(s->ctx)->p.mode);
    o->kv_layout = sprig_kv_kind(sprig_ctx_kv(s->ctx));
    o->load_ms = s->m->load_ms;
    o->path = "plain";
    o->stop = "running";
    if (!s->spec) return;
    if (s->cancelled_early) {   /* stopped between prompt chunks: no round loop ran */
        o->stop = "cancel";
        o->prompt_tokens = s->n_prompt;
        o->cached_tokens = s->from_cache;
        o->prefill_ms = s->warm_ms;
        return;
    }
    const sprig_spec_stats *t = sprig_spec_get_stats(s->spec);
    o->tree_mode = sprig_spec_tree_mode(s->spec);
    o->path = sprig_path_name(t->path);
    o->stop = sprig_stop_name(t->stop);
    o->prompt_tokens = t->prompt_tokens;
    o->cached_tokens = s->from_cache;
    o->generated_tokens = t->emitted;
    o->prefill_ms = t->ms_prefill + s->warm_ms;
    double total = s->t_end > s->t_begin ? s->t_end - s->t_begin : 0;
    o->decode_ms = total > o->prefill_ms + t->ms_profile ? total - o->prefill_ms - t->ms_profile : 0;   /* not the one-time profile */
    o->profile_ms = t->ms_profile;
    o->prefill_tok_s = o->prefill_ms > 0 ? (double)t->prompt_tokens / o->prefill_ms * 1e3 : 0;
    o->decode_tok_s = o->decode_ms > 0 && t->emitted > 1 ? (double)(t->emitted - 1) / o->decode_ms * 1e3 : 0;
    if (s->grammar) {
        struct sprig_gmatch_stats gs;
        sprig_gmatch_get_stats(s->grammar, &gs);
        o->grammar_rows_masked = sprig_spec_rows_masked(s->spec);
        o->grammar_pruned = t->grammar_pruned;
        o->grammar_forced = t->grammar_forced;
        o->grammar_forced_rounds = t->grammar_forced_rounds;
        o->grammar_walks = gs.walks;
        o->grammar_mask_hits = gs.mask_hits;
    }
    if (s->shape) {   /* the planner's view: what it chose and what it thinks a verify costs */
        static const int sizes[] = SPRIG_SHAPE_PROFILE_SIZES;
        _Static_assert(sizeof sizes / sizeof sizes[0] == SPRIG_PLAN_SIZES, "SPRIG_PLAN_SIZES follows the profile's sizes");
        o->plan_chains = s->shape->plan_chains;
        o->plan_trees = s->shape->plan_trees;
        o->plan_joint = s->shape->plan_joint;
        o->plan_draft_ms[0] = s->shape->draft_w_ms[0];
        o->plan_draft_ms[1] = s->shape->draft_w_ms[1];
        o->plan_wide_rounds = s->shape->wide_n;
        o->plan_draft_stops = s->shape->draft_stops;
        for (int i = 0; i < SPRIG_PLAN_SIZES && sizes[i] <= SPRIG_TREE_MAX; i++) {
            o->plan_rows[o->plan_n] = sizes[i];
            o->plan_ms[o->plan_n] = sprig_shape_t(s->shape, sizes[i]);
            o->plan_samples[o->plan_n++] = sprig_costs_samples(&s->shape->cost, sizes[i]);
        }
    }
    o->rounds = t->rounds;
    o->proposed = t->proposed;
    o->accepted = t->accepted;
    o->emitted = t->emitted_rounds;
    o->emitted_per_verify = sprig_stats_emitted_per_verify(t);
    o->acceptance_rate = sprig_stats_acceptance_rate(t);
    o->zero_accept_rounds = t->zero_accept_rounds;
    o->partial_accept_rounds = t->partial_accept_rounds;
    o->full_accept_rounds = t->full_accept_rounds;
    o->branch_rounds = t->branch_rounds;
    o->block_min = t->block_min;
    o->block_max = t->block_max;
    o->sampled_rounds = t->sampled_rounds;
    o->draft_ms = t->ms_draft;
    o->verify_ms = t->ms_verify;
    o->walk_ms = t->ms_walk;
    o->finalize_ms = t->ms_finalize;
    o->rollback_ms = s->ctx ? sprig_ctx_rollback_ms(s->ctx) : 0;
    if (s->ctx) {   /* the decode's expert reading: now minus after the prefill */
        struct sprig_moe_counters c;
        sprig_ctx_moe_counters(s->ctx, &c);
        const double fw = (double)(c.forwards - s->moe1.forwards), runs = (double)(c.layer_runs - s->moe1.layer_runs);
        const double ex = (double)(c.experts - s->moe1.experts), by = (double)(c.bytes - s->moe1.bytes);
        o->expert_forwards = c.forwards - s->moe1.forwards;
        o->experts_per_layer = runs > 0 ? ex / runs : 0;
        o->expert_mb_per_forward = fw > 0 ? by / fw / 1e6 : 0;
        o->experts_per_token = t->emitted > 1 ? ex / (double)(t->emitted - 1) : 0;
        o->experts_per_verify = fw > 0 ? ex / fw : 0;
    }
}

void sprig_session_get_output(const sprig_session *s, struct sprig_output *o)
{
    memset(o, 0, sizeof *o);
    o->prompt = s->prompt;
    o->n_prompt = s->spec ? s->n_prompt : 0;
    o->tokens = s->gen;
    o->n_tokens = s->spec ? s->n_gen : 0;
    o->top_n = s->p.top_logprobs;
    o->top = s->p.top_logprobs ? s->gen_top : NULL;
}

/* snprintf at buf + *o, keeping *o the length the whole text needs (as snprintf returns) */
static void jcat(char *buf, size_t cap, int *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void jcat(char *buf, size_t cap, int *o, const char *fmt, ...)
{
    if (*o < 0) return;
    va_list ap;
    va_start(ap, fmt);
    const size_t at = (size_t)*o < cap ? (size_t)*o : cap;
    const int k = vsnprintf(buf + at, cap - at, fmt, ap);
    va_end(ap);
    *o = k < 0 ? -1 : *o + k;
}

int sprig_stats_to_json(const struct sprig_stats *t, char *buf, size_t cap)
{
    int o = snprintf(buf, cap,
        "{\"path\":\"%s\",\"stop\":\"%s\",\"drafter\":\"%s\",\"tree_mode\":%s,\"draft_max\":%d,\"tree_branches\":%d,"
        "\"n_threads\":%d,\"kernels\":\"%s\",\"kv_type\":\"%s\",\"kv_layout\":\"%s\",\"seed\":%llu,"
        "\"prompt_tokens\":%lld,\"generated_tokens\":%lld,\"load_ms\":%.3f,\"prefill_ms\":%.3f,\"decode_ms\":%.3f,"
        "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f,"
        "\"rounds\":%lld,\"proposed\":%lld,\"accepted\":%lld,\"emitted\":%lld,\"emitted_per_verify\":%.4f,"
        "\"acceptance_rate\":%.4f,\"zero_accept_rounds\":%lld,\"partial_accept_rounds\":%lld,\"full_accept_rounds\":%lld,"
        "\"branch_rounds\":%lld,\"sampled_rounds\":%lld,\"draft_ms\":%.3f,\"verify_ms\":%.3f,\"walk_ms\":%.3f,\"finalize_ms\":%.3f,\"rollback_ms\":%.3f,"
        "\"expert_forwards\":%lld,\"experts_per_layer\":%.3f,\"expert_mb_per_forward\":%.3f,\"experts_per_token\":%.3f,\"experts_per_verify\":%.3f,"
        "\"grammar_rows_masked\":%lld,\"grammar_walks\":%lld,\"grammar_mask_hits\":%lld,\"grammar_pruned\":%lld,\"grammar_forced\":%lld,"
        "\"grammar_forced_rounds\":%lld,\"cached_tokens\":%lld",
        t->path, t->stop, t->drafter, t->tree_mode ? "true" : "false", t->draft_max, t->tree_branches,
        t->n_threads, t->kernels ? t->kernels : "", t->kv_type ? t->kv_type : "", t->kv_layout ? t->kv_layout : "", (unsigned long long)t->seed,
        (long long)t->prompt_tokens, (long long)t->generated_tokens, t->load_ms, t->prefill_ms, t->decode_ms,
        t->prefill_tok_s, t->decode_tok_s,
        (long long)t->rounds, (long long)t->proposed, (long long)t->accepted, (long long)t->emitted, t->emitted_per_verify,
        t->acceptance_rate, (long long)t->zero_accept_rounds, (long long)t->partial_accept_rounds,
        (long long)t->full_accept_rounds, (long long)t->branch_rounds, (long long)t->sampled_rounds, t->draft_ms, t->verify_ms, t->walk_ms, t->finalize_ms, t->rollback_ms,
        (long long)t->expert_forwards, t->experts_per_layer, t->expert_mb_per_forward, t->experts_per_token, t->experts_per_verify,
        (long long)t->grammar_rows_masked, (long long)t->grammar_walks, (long long)t->grammar_mask_hits, (long long)t->grammar_pruned,
        (long long)t->grammar_forced, (long long)t->grammar_forced_rounds, (long long)t->cached_tokens);
    if (t->plan_n > 0) {   /* tree auto's planner: its choices and its cost estimates, rows -> ms with their samples */
        jcat(buf, cap, &o, ",\"plan\":{\"chains\":%lld,\"trees\":%lld,\"joint\":%lld,\"verify_ms\":[", (long long)t->plan_chains,
             (long long)t->plan_trees, (long long)t->plan_joint);
        for (int i = 0; i < t->plan_n && i < SPRIG_PLAN_SIZES; i++)
            jcat(buf, cap, &o, "%s{\"rows\":%d,\"ms\":%.3f,\"samples\":%lld}", i ? "," : "", t->plan_rows[i], t->plan_ms[i],
                 (long long)t->plan_samples[i]);
        jcat(buf, cap, &o, "],\"drafting\":{\"width_1_ms\":%.3f,\"wider_ms\":%.3f,\"wide_rounds\":%lld,\"stopped_short\":%lld}}",
             t->plan_draft_ms[0], t->plan_draft_ms[1], (long long)t->plan_wide_rounds, (long long)t->plan_draft_stops);
    }
    jcat(buf, cap, &o, "}");
    return o;
}
