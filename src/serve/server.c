/*
 * serve/server — see server.h.
 */
#include "serve/server.h"
#include "serve/response.h"
#include "base/err.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sprig_server {
    const sprig_model *m;
    const char *model_id;
    const sprig_chat *chat;   /* NULL: chat is refused */
    const char *bos, *eos;
    int n_ctx, queue_max, parallel;
    sprig_batch *batch;           /* NULL: no batching */
    int rows;                     /* a slot's largest verify block */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sprig_job *head, *tail;
    int queued;                   /* jobs waiting for a slot */
    int idle;                     /* workers waiting for a job */
    bool stopping;
    sprig_session **slots;
    pthread_t *threads;
    int started;                  /* workers running */
    int64_t prompt_tokens, cached_tokens, requests_cached;   /* prefix reuse, over finished requests */
    bool *busy;                   /* [parallel] a slot's worker is running a job (its session is not to be read) */
};

struct worker_arg { struct sprig_server *sv; int slot; };

/* Can the queue's head start now? It books its KV slots in the batch's pool
 * (a cancelled one needs none); the head waits while the pool is spoken for,
 * and nobody overtakes it. Called with sv->mu held. */
static bool admit(struct sprig_server *sv, sprig_job *j)
{
    if (!sv->batch) return true;
    return sprig_job_cancelled(j) || sprig_batch_admit(sv->batch, j->need);
}

/* May slot i take job j? Yes unless j prefers another slot (the one whose cache holds the longest prefix of its
 * prompt) that is idle: that slot takes it. Called with sv->mu held. */
static bool mine(const struct sprig_server *sv, int i, const sprig_job *j)
{
    return j->pref_slot < 0 || j->pref_slot == i || sv->busy[j->pref_slot];
}

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    struct sprig_server *sv = wa->sv;
    const int slot = wa->slot;
    sprig_session *s = sv->slots[slot];
    free(wa);
    for (;;) {
        pthread_mutex_lock(&sv->mu);
        sv->idle++;
        while (!sv->stopping && (!sv->head || !mine(sv, slot, sv->head) || !admit(sv, sv->head))) pthread_cond_wait(&sv->cv, &sv->mu);
        sv->idle--;
        if (sv->stopping) { pthread_mutex_unlock(&sv->mu); return NULL; }
        sprig_job *j = sv->head;
        sv->head = j->next;
        if (!sv->head) sv->tail = NULL;
        sv->queued--;
        sv->busy[slot] = true;
        pthread_mutex_unlock(&sv->mu);
        if (sprig_job_cancelled(j)) sprig_job_finish(j, 0, NULL);
        else {
            sprig_job_run(j, s);
            struct sprig_stats st;
            sprig_session_get_stats(s, &st);
            pthread_mutex_lock(&sv->mu);
            sv->prompt_tokens += st.prompt_tokens;
            sv->cached_tokens += st.cached_tokens;
            sv->requests_cached += st.cached_tokens > 0;
            pthread_mutex_unlock(&sv->mu);
        }
        pthread_mutex_lock(&sv->mu);
        sv->busy[slot] = false;
        pthread_cond_broadcast(&sv->cv);   /* a job that preferred this slot may go elsewhere no more: it is idle */
        pthread_mutex_unlock(&sv->mu);
        if (j->need) {   /* its KV slots back: a request waiting for the pool may start */
            sprig_batch_release(sv->batch, j->need);
            pthread_mutex_lock(&sv->mu);
            pthread_cond_broadcast(&sv->cv);
            pthread_mutex_unlock(&sv->mu);
        }
        sprig_job_unref(j);
    }
}

sprig_status sprig_server_create(const sprig_model *m, const struct sprig_server_params *p, sprig_server **out, sprig_error *err)
{
    *out = NULL;
    if (!m || !p || p->parallel < 1 || p->parallel > 64 || p->queue_max < 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "server: parallel must be 1..64 and queue_max >= 0");
    struct sprig_server *sv = calloc(1, sizeof *sv);
    if (!sv) return sprig_err(err, SPRIG_E_NOMEM, "server: out of memory");
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    struct sprig_session_params sp = p->session;
    sv->m = m;
    sv->model_id = p->model_id ? p->model_id : "";
    sv->chat = p->chat;
    sv->bos = sprig_model_token_piece(m, mi.token_bos, NULL);
    sv->eos = sprig_model_token_piece(m, mi.token_eos, NULL);
    sv->parallel = p->parallel;
    sv->queue_max = p->queue_max;
    sv->n_ctx = sp.n_ctx ? sp.n_ctx : (mi.n_ctx_train < 4096 ? mi.n_ctx_train : 4096);
    sv->rows = sp.drafter == SPRIG_DRAFTER_NONE ? 1 : sp.draft_max + 1 + sp.tree_branches;
    pthread_mutex_init(&sv->mu, NULL);
    pthread_cond_init(&sv->cv, NULL);
    sv->slots = calloc((size_t)sv->parallel, sizeof *sv->slots);
    sv->busy = calloc((size_t)sv->parallel, sizeof *sv->busy);
    sv->threads = calloc((size_t)sv->parallel, sizeof *sv->threads);
    sprig_status st = SPRIG_OK;
    if (!sv->slots || !sv->threads || !sv->busy) st = sprig_err(err, SPRIG_E_NOMEM, "server: out of memory");
    if (!st && p->kv_pool && p->kv_pool < sv->n_ctx)
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "--kv-pool: %d slots cannot hold one request's context of %d (-c)", p->kv_pool,
                             sv->n_ctx);
    if (!st && p->batching) {
        struct sprig_batch_params bp = sprig_batch_default_params();
        bp.n_seq = sv->parallel;
        bp.max_rows = sv->rows;
        bp.n_ctx = sv->n_ctx;
        bp.kv_type = sp.kv_type;
        bp.kv_block_slots = p->kv_block;
        bp.kv_blocks = p->kv_pool ? (p->kv_pool + p->kv_block - 1) / p->kv_block : 0;
        bp.wait_us = p->batch_wait_ms * 1000;
        bp.prefill_rows = p->prefill_rows;   /* 0: the default; -1: prompts on their own threads */
        if (sp.n_batch < bp.prefill_rows) sp.n_batch = bp.prefill_rows;
        st = sprig_batch_create(m, &bp, &sv->batch, err);
        sp.batch = sv->batch;
    }
    for (int i = 0; i < sv->parallel && !st; i++) st = sprig_session_create(m, &sp, &sv->slots[i], err);
    for (int i = 0; i < sv->parallel && !st; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (!wa) { st = sprig_err(err, SPRIG_E_NOMEM, "server: out of memory"); break; }
        *wa = (struct worker_arg){ sv, i };
        if (pthread_create(&sv->threads[i], NULL, worker, wa)) {
            free(wa);
            st = sprig_err(err, SPRIG_E_INTERNAL, "server: cannot start worker thread %d", i);
            break;
        }
        sv->started++;
    }
    if (st) {
        sprig_server_stop(sv);
        sprig_server_free(sv);
        return st;
    }
    *out = sv;
    return SPRIG_OK;
}

void sprig_server_stop(sprig_server *sv)
{
    if (!sv) return;
    pthread_mutex_lock(&sv->mu);
    sv->stopping = true;
    while (sv->head) {
        sprig_job *j = sv->head;
        sv->head = j->next;
        sprig_job_finish(j, 503, "the server is stopping");
        sprig_job_unref(j);
    }
    sv->tail = NULL;
    sv->queued = 0;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    for (int i = 0; i < sv->started; i++) pthread_join(sv->threads[i], NULL);
    sv->started = 0;
}

void sprig_server_free(sprig_server *sv)
{
    if (!sv) return;
    for (int i = 0; sv->slots && i < sv->parallel; i++) sprig_session_free(sv->slots[i]);
    if (sv->batch) sprig_batch_free(sv->batch);
    pthread_mutex_destroy(&sv->mu);
    pthread_cond_destroy(&sv->cv);
    free(sv->slots);
    free(sv->threads);
    free(sv->busy);
    free(sv);
}

/* The conversation as prompt text through the chat template */
static char *render(const struct sprig_server *sv, const struct sprig_serve_req *r, char *why, size_t cap)
{
    char *out = NULL;
    sprig_error err = { 0 };
    if (sprig_chat_apply(sv->chat, r->messages, r->tools, true, sv->bos, sv->eos, r->template_vars, &out, NULL, &err)) {
        snprintf(why, cap, "%s", err.msg);
        return NULL;
    }
    return out;
}

int sprig_server_apply_template(sprig_server *sv, const char *body, size_t len, char **out, char *why, size_t cap, char *param,
                                size_t pcap)
{
    *out = NULL;
    snprintf(param, pcap, "%s", "");
    if (!sv->chat) {
        snprintf(why, cap, "the model has no usable chat template; start the server with --chat-template-file F or --chat-template NAME");
        return 400;
    }
    struct sprig_serve_req req;   /* the messages, tools and template variables as a chat request takes them */
    if (!sprig_serve_req_parse(body ? body : "", len, true, sv->n_ctx, &req, why, cap, param, pcap)) return 400;
    json_t *root = json_loadb(body, len, 0, NULL);
    const json_t *agp = json_object_get(root, "add_generation_prompt");
    int status = 0;
    char *prompt = NULL;
    sprig_error err = { 0 };
    if (agp && !json_is_boolean(agp)) {
        snprintf(why, cap, "'add_generation_prompt' must be a boolean");
        snprintf(param, pcap, "add_generation_prompt");
        status = 400;
    } else if (sprig_chat_apply(sv->chat, req.messages, req.tools, agp ? json_is_true(agp) : true, sv->bos, sv->eos, req.template_vars,
                                &prompt, NULL, &err)) {
        snprintf(why, cap, "%s", err.msg);
        snprintf(param, pcap, "messages");
        status = err.code == SPRIG_E_NOMEM ? 500 : 400;
    } else {
        json_t *o = json_pack("{s:s}", "prompt", prompt);
        if (!o || !(*out = json_dumps(o, JSON_COMPACT))) {
            snprintf(why, cap, "the rendered prompt is not valid UTF-8");
            status = 500;
        }
        json_decref(o);
    }
    free(prompt);
    json_decref(root);
    sprig_serve_req_free(&req);
    return status;
}

int sprig_server_submit(sprig_server *sv, const char *body, size_t len, bool chat, sprig_job **out, char *why, size_t cap,
                        char *param, size_t pcap)
{
    *out = NULL;
    struct sprig_serve_req req;
    if (!sprig_serve_req_parse(body ? body : "", len, chat, sv->n_ctx, &req, why, cap, param, pcap)) return 400;
    if (chat && !sv->chat) {
        sprig_serve_req_free(&req);
        snprintf(why, cap, "the model has no usable chat template; start the server with --chat-template-file F or --chat-template NAME");
        snprintf(param, pcap, "messages");
        return 400;
    }
    char *prompt = chat ? render(sv, &req, why, cap) : strdup(req.prompt);
    if (!prompt) {
        sprig_serve_req_free(&req);
        snprintf(param, pcap, "messages");
        return 400;
    }
    const int n_predict = req.max_tokens ? req.max_tokens : chat ? sv->n_ctx : 16;
    const struct sprig_toolfmt *fmt = chat && req.tools ? sprig_chat_toolfmt(sv->chat) : NULL;
    if (chat && req.tool_choice >= SPRIG_TOOL_REQUIRED) {   /* a call is due: decode under its format's grammar */
        if (!fmt) fmt = sprig_toolfmt_named("llama3");   /* the template shows no format: the reply is the call's JSON */
        sprig_error err = { 0 };
        if (sprig_toolfmt_grammar(fmt, req.tools, req.tool_name, !req.single_tool_call, &req.grammar, &err)) {
            snprintf(why, cap, "%s", err.msg);
            snprintf(param, pcap, "tools");
            sprig_serve_req_free(&req);
            free(prompt);
            return 400;
        }
        req.grammar_from = "tool_choice";
    }
    sprig_job *j = sprig_job_new(&req, chat, prompt, n_predict, sv->m, sv->model_id);
    if (!j) {
        snprintf(why, cap, "out of memory");
        param[0] = 0;
        return 500;
    }
    j->tools = fmt;
    const int np = sprig_text_to_tokens(sv->m, j->prompt, strlen(j->prompt), true, NULL, 0, NULL);
    if (sv->batch) {   /* the KV slots it may fill: prompt, max_tokens and a verify block, at most the context */
        const long long need = (np > 0 ? np : (long long)strlen(j->prompt) + 1) + (long long)n_predict + sv->rows;
        j->need = need < sv->n_ctx ? (int)need : sv->n_ctx;
    }
    int32_t *ids = np > 0 && sv->parallel > 1 ? malloc(sizeof *ids * (size_t)np) : NULL;
    const int nid = ids ? sprig_text_to_tokens(sv->m, j->prompt, strlen(j->prompt), true, ids, np, NULL) : 0;
    pthread_mutex_lock(&sv->mu);
    int best = 0;   /* the idle slot whose cache holds the longest prefix of the prompt prefers it (llama-server's choice) */
    for (int i = 0; i < sv->parallel && nid > 0; i++) {
        const int m = sv->busy[i] ? 0 : sprig_session_prefix_match(sv->slots[i], ids, nid);
        if (m > best) {
            best = m;
            j->pref_slot = i;
        }
    }
    free(ids);
    if (sv->stopping || sv->queued >= sv->queue_max + sv->idle) {   /* --queue counts requests that wait, not those an idle slot takes */
        const bool stopping = sv->stopping;
        pthread_mutex_unlock(&sv->mu);
        j->refs = 1;
        sprig_job_unref(j);
        snprintf(why, cap, "%s", stopping ? "the server is stopping" : "the request queue is full; retry later");
        param[0] = 0;
        return 503;
    }
    if (sv->tail) sv->tail->next = j; else sv->head = j;
    sv->tail = j;
    sv->queued++;
    pthread_cond_broadcast(&sv->cv);   /* the slot it prefers must hear it */
    pthread_mutex_unlock(&sv->mu);
    *out = j;
    return 0;
}

static char *dump(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *sprig_server_health_json(sprig_server *sv)
{
    pthread_mutex_lock(&sv->mu);
    json_t *o = json_pack("{s:s, s:i, s:{s:I, s:I, s:I, s:f}}", "status", "ok", "slots", sv->parallel, "prompt_cache", "prompt_tokens",
                          (json_int_t)sv->prompt_tokens, "cached_tokens", (json_int_t)sv->cached_tokens, "requests_reusing",
                          (json_int_t)sv->requests_cached, "hit_rate",
                          sv->prompt_tokens ? (double)sv->cached_tokens / (double)sv->prompt_tokens : 0.0);
    pthread_mutex_unlock(&sv->mu);
    if (o && sv->batch) {
        struct sprig_batch_stats bs;
        sprig_batch_get_stats(sv->batch, &bs);
        json_object_set_new(o, "batch", json_pack("{s:I, s:I, s:I, s:I, s:i, s:I, s:I, s:I}", "forwards", (json_int_t)bs.forwards,
                                                  "shared_forwards", (json_int_t)bs.shared_forwards, "sequences", (json_int_t)bs.seqs,
                                                  "rows", (json_int_t)bs.rows, "max_sequences", bs.max_seqs,
                                                  "wait_limit_forwards", (json_int_t)bs.timeouts, "kv_slots", (json_int_t)bs.kv_slots,
                                                  "kv_booked", (json_int_t)bs.kv_booked));
        json_t *bj = json_object_get(o, "batch");
        json_object_set_new(bj, "prompt_chunks", json_integer(bs.prompt_chunks));
        json_object_set_new(bj, "prompt_chunks_shared", json_integer(bs.prompt_chunks_shared));
        json_object_set_new(bj, "prompt_rows", json_integer(bs.prompt_rows));
        json_object_set_new(bj, "joint_plans", json_integer(bs.joint_plans));   /* tree auto's rows, allocated per step */
        json_object_set_new(bj, "joint_offers", json_integer(bs.joint_offers));
        json_object_set_new(bj, "joint_late", json_integer(bs.joint_late));
        json_t *pc = json_object_get(o, "prompt_cache");
        json_object_set_new(pc, "draft_blocks", json_pack("{s:I, s:I}", "published", (json_int_t)bs.draft_blocks_published,
                                                           "attached", (json_int_t)bs.draft_blocks_hit));   /* the draft models' pool */
        /* the blocks the sessions share through the pool */
        json_object_set_new(pc, "blocks", json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I}", "total", bs.kv_blocks,
                                                     "slots_per_block", bs.kv_block_slots, "cached", bs.prefix_blocks_cached,
                                                     "idle", bs.prefix_blocks_idle, "shared", bs.prefix_blocks_shared,
                                                     "published", (json_int_t)bs.prefix_blocks_published,
                                                     "attached", (json_int_t)bs.prefix_blocks_hit,
                                                     "evicted", (json_int_t)bs.prefix_blocks_evicted,
                                                     "copied", (json_int_t)bs.prefix_blocks_copied));
    }
    return dump(o);
}

char *sprig_server_models_json(sprig_server *sv)
{
    return dump(json_pack("{s:s, s:[{s:s, s:s, s:I, s:s}]}", "object", "list", "data", "id", sv->model_id, "object", "model", "created",
                          (json_int_t)0, "owned_by", "sprig"));
}

bool sprig_server_batch_stats(sprig_server *sv, struct sprig_batch_stats *out)
{
    if (!sv->batch) return false;
    sprig_batch_get_stats(sv->batch, out);
    return true;
}
