/*
 * tools/cmd_serve — `sprig serve`: the OpenAI API over HTTP.
 *
 *   GET  /health, /v1/models
 *   POST /v1/completions, /v1/chat/completions (the model's chat template),
 *        JSON or Server-Sent Events (`"stream": true`: `data: {...}` chunks,
 *        then `data: [DONE]`)
 *
 * libmicrohttpd does HTTP (Debian's libmicrohttpd-dev: a small, long-kept
 * embeddable server; thread per connection, so a streaming response may
 * block on its generation) and Jansson the JSON (serve_req.c reads
 * requests; responses are built as Jansson objects, so strings are always
 * escaped right). Each of the --parallel slots owns one session (its own
 * cache and drafter, sharing the loaded model) and a worker thread that
 * takes requests from one bounded queue; a full queue answers 503 with
 * Retry-After. A request's output is delivered through its job: the worker
 * appends, the connection thread reads. A client that goes away cancels
 * its job (the session's text callback then stops the generation), so its
 * slot is free at once.
 *
 * Continuous batching (default): the slots' sessions share one batch
 * (sprig.h sprig_batch): their caches are paged sequences on one KV pool,
 * and each step every generating slot's verify block or tree — plain,
 * chain or tree, whatever its round chose — runs in ONE forward, each with
 * its own accepted path and rollback. A request books its KV slots
 * (prompt + max_tokens + a verify block, at most the context) before a slot
 * starts it: while the pool is spoken for, the oldest waiting request waits
 * (and a full queue answers 503), so a running sequence never finds the
 * pool empty. --no-batch gives each slot its own cache and forwards (the
 * comparison `make bench` draws).
 */
#include "cli.h"
#include "serve_page.h"
#include "serve_req.h"
#include "sprig.h"
#include "chat/template.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BODY_MAX (1 << 20)

struct job {
    struct serve_req req;
    bool chat;
    char *prompt;                 /* what the session tokenizes */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *gen;                    /* generated text (stop strings cut) */
    size_t gen_len, gen_cap, sent;   /* sent: bytes of gen already streamed */
    char *sse;                    /* SSE bytes ready for the connection */
    size_t sse_len, sse_cap, sse_read;
    bool started, done, cancelled, stopped_by_string, role_sent;
    int need;                     /* KV slots booked in the batch's pool (0: none) */
    int refs;                     /* the connection and the worker */
    int http_status;              /* != 200: the worker's error */
    char err[512];
    json_t *result;               /* the final response object (non-streaming) */
    struct sprig_stats st;
    char id[40];
    long created;
    struct job *next;
};

struct server {
    sprig_model *m;
    const char *model_path, *model_id, *api_key;
    const struct sprig_chat_family *family;   /* NULL: chat is refused */
    const char *bos, *eos;
    int n_ctx, queue_max, parallel;
    struct sprig_session_params sp;
    sprig_batch *batch;           /* NULL: --no-batch */
    int rows;                     /* a slot's largest verify block */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    int queued;                   /* jobs waiting for a slot */
    int idle;                     /* workers waiting for a job */
    bool stopping;
    sprig_session **slots;
    pthread_t *threads;
};

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static void job_unref(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    const int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    serve_req_free(&j->req);
    free(j->prompt);
    free(j->gen);
    free(j->sse);
    if (j->result) json_decref(j->result);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static bool grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    char *n = realloc(*buf, c);
    if (!n) return false;
    *buf = n;
    *cap = c;
    return true;
}

/* text as valid UTF-8 (an invalid byte becomes U+FFFD), for JSON strings */
static json_t *utf8_string(const char *s, size_t n)
{
    char *o = malloc(3 * n + 1);
    if (!o) return json_string("");
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = (unsigned char)s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int t = 1; ok && t < len; t++) ok = ((unsigned char)s[i + t] >> 6) == 2;
        if (ok && len == 2 && c < 0xC2) ok = false;
        if (ok && len == 3) {
            const unsigned char c1 = (unsigned char)s[i + 1];
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
        }
        if (ok && len == 4) {
            const unsigned char c1 = (unsigned char)s[i + 1];
            ok = c <= 0xF4 && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
        }
        if (ok && c == 0) ok = false;
        if (ok) {
            memcpy(o + k, s + i, (size_t)len);
            k += (size_t)len;
            i += (size_t)len;
        } else {
            memcpy(o + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
    }
    json_t *j = json_stringn(o, k);
    free(o);
    return j ? j : json_string("");
}

/* ---------------------------------------------------------------- responses */

static json_t *error_obj(const char *msg, const char *type, const char *param)
{
    return json_pack("{s:{s:o, s:s, s:o, s:n}}", "error", "message", utf8_string(msg, strlen(msg)), "type", type, "param",
                     param && *param ? json_string(param) : json_null(), "code");
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *o, const char *retry_after)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg, const char *param)
{
    const char *type = status == 401 ? "authentication_error" : status == 503 ? "server_overloaded" : status >= 500 ? "server_error"
                                                                                                                     : "invalid_request_error";
    return send_json(c, status, error_obj(msg, type, param), status == 503 ? "1" : NULL);
}

static json_t *usage_obj(const struct sprig_stats *st)
{
    return json_pack("{s:I, s:I, s:I, s:{s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f}}", "prompt_tokens",
                     (json_int_t)st->prompt_tokens, "completion_tokens", (json_int_t)st->generated_tokens, "total_tokens",
                     (json_int_t)(st->prompt_tokens + st->generated_tokens), "speculative", "path", st->path ? st->path : "",
                     "drafter", st->drafter ? st->drafter : "", "rounds", (json_int_t)st->rounds, "proposed",
                     (json_int_t)st->proposed, "accepted", (json_int_t)st->accepted, "emitted_per_verify", st->emitted_per_verify,
                     "acceptance", st->acceptance_rate, "branch_rounds", (json_int_t)st->branch_rounds, "draft_ms", st->draft_ms,
                     "verify_ms", st->verify_ms);
}

static const char *finish_reason(const struct job *j)
{
    if (j->stopped_by_string) return "stop";
    const char *s = j->st.stop ? j->st.stop : "";
    return !strcmp(s, "budget") || !strcmp(s, "context") ? "length" : "stop";
}

/* the chosen token's log-probabilities (from the verify rows, as plain decoding's) */
/* The logprobs of generated tokens [from, to) (to < 0: all so far) in the endpoint's format:
 * the whole reply's, or a streamed chunk's (the tokens generated since the last chunk). */
static json_t *logprobs_obj(const struct job *j, sprig_session *s, const sprig_model *m, int from, int to)
{
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    if (!o.top || o.top_n < 1) return json_null();
    if (to < 0 || to > o.n_tokens) to = o.n_tokens;
    json_t *content = json_array(), *toks = json_array(), *lps = json_array(), *tops = json_array();
    for (int i = from < 0 ? 0 : from; i < to; i++) {
        const sprig_logprob *t = o.top + (size_t)i * (size_t)o.top_n;
        size_t pl = 0;
        const char *piece = sprig_model_token_piece(m, o.tokens[i], &pl);
        json_t *lp = json_null();
        for (int k = 0; k < o.top_n; k++)
            if (t[k].id == o.tokens[i]) { json_decref(lp); lp = json_real(t[k].logprob); }
        json_t *alts = j->chat ? json_array() : json_object();
        for (int k = 0; k < j->req.top_logprobs && k < o.top_n; k++) {
            size_t al = 0;
            const char *ap = sprig_model_token_piece(m, t[k].id, &al);
            if (j->chat) json_array_append_new(alts, json_pack("{s:o, s:f}", "token", utf8_string(ap ? ap : "", al), "logprob", t[k].logprob));
            else {
                json_t *key = utf8_string(ap ? ap : "", al);
                json_object_set_new(alts, json_string_value(key), json_real(t[k].logprob));
                json_decref(key);
            }
        }
        if (j->chat) {
            json_array_append_new(content, json_pack("{s:o, s:o, s:o}", "token", utf8_string(piece ? piece : "", pl), "logprob", lp,
                                                     "top_logprobs", alts));
        } else {
            json_array_append_new(toks, utf8_string(piece ? piece : "", pl));
            json_array_append_new(lps, lp);
            json_array_append_new(tops, alts);
        }
    }
    if (j->chat) {
        json_decref(toks); json_decref(lps); json_decref(tops);
        return json_pack("{s:o}", "content", content);
    }
    json_decref(content);
    return json_pack("{s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops);
}

/* ---------------------------------------------------------------- generation */

static size_t max_stop_len(const struct job *j)
{
    size_t n = 0;
    for (int i = 0; i < j->req.n_stop; i++) if (strlen(j->req.stop[i]) > n) n = strlen(j->req.stop[i]);
    return n;
}

/* one SSE event with the text gen[from, to) (or the final one) appended to the job's stream */
/* lp: the chunk's logprobs (stolen), or NULL */
static void push_event(struct job *j, size_t from, size_t to, const char *finish, const struct server *sv, bool final_usage, json_t *lp)
{
    json_t *choice = j->chat ? json_pack("{s:i, s:{}, s:o, s:o}", "index", 0, "delta", "finish_reason", finish ? json_string(finish) : json_null(),
                                         "logprobs", lp ? lp : json_null())
                             : json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "text", utf8_string(j->gen + from, to - from),
                                         "finish_reason", finish ? json_string(finish) : json_null(), "logprobs", lp ? lp : json_null());
    if (j->chat && to > from) json_object_set_new(json_object_get(choice, "delta"), "content", utf8_string(j->gen + from, to - from));
    if (j->chat && !j->role_sent) {
        json_object_set_new(json_object_get(choice, "delta"), "role", json_string("assistant"));
        j->role_sent = true;
    }
    json_t *ev = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", j->id, "object", j->chat ? "chat.completion.chunk" : "text_completion",
                           "created", (json_int_t)j->created, "model", sv->model_id, "choices", choice);
    if (final_usage) json_object_set_new(ev, "usage", usage_obj(&j->st));
    char *s = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    if (!s) return;
    const size_t n = strlen(s);
    if (grow(&j->sse, &j->sse_cap, j->sse_len + n + 8)) {
        memcpy(j->sse + j->sse_len, "data: ", 6);
        memcpy(j->sse + j->sse_len + 6, s, n);
        memcpy(j->sse + j->sse_len + 6 + n, "\n\n", 2);
        j->sse_len += n + 8;
    }
    free(s);
    j->started = true;
}

struct gen_ctx {
    struct job *j;
    const struct server *sv;
    sprig_session *s;
    int64_t proposed, accepted;
    int tok_sent;                 /* tokens whose logprobs were streamed */
};

/* A streamed chunk's logprobs: the tokens generated since the last chunk (NULL when not asked) */
static json_t *chunk_logprobs(struct gen_ctx *g)
{
    if (!g->j->req.logprobs) return NULL;
    struct sprig_output o;
    sprig_session_get_output(g->s, &o);
    json_t *lp = logprobs_obj(g->j, g->s, g->sv->m, g->tok_sent, o.n_tokens);
    g->tok_sent = o.n_tokens;
    return lp;
}

/* "sprig_trace": each verify round as an event of its own (no choices), before the text it emits:
 * the verified block's tokens (as pieces) and parents, the accepted path, the running acceptance */
static void on_round(void *user, const struct sprig_round_trace *r)
{
    struct gen_ctx *g = user;
    struct job *j = g->j;
    g->proposed += r->n - 1;
    g->accepted += r->n_path - 1;
    json_t *toks = json_array(), *par = json_array(), *path = json_array();
    for (int i = 0; i < r->n; i++) {
        size_t pl = 0;
        const char *piece = sprig_model_token_piece(g->sv->m, r->tokens[i], &pl);
        json_array_append_new(toks, utf8_string(piece ? piece : "", pl));
        json_array_append_new(par, json_integer(r->parents[i]));
    }
    for (int i = 0; i < r->n_path; i++) json_array_append_new(path, json_integer(r->path[i]));
    json_t *ev = json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:{s:o, s:o, s:o, s:b, s:f}}}", "id", j->id, "object",
                           j->chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)j->created, "model",
                           g->sv->model_id, "choices", "sprig", "round", "tokens", toks, "parents", par, "path", path, "tree", r->tree,
                           "acceptance", g->proposed ? (double)g->accepted / (double)g->proposed : 0.0);
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (!s) return;
    pthread_mutex_lock(&j->mu);
    const size_t n = strlen(s);
    if (!j->cancelled && grow(&j->sse, &j->sse_cap, j->sse_len + n + 8)) {
        memcpy(j->sse + j->sse_len, "data: ", 6);
        memcpy(j->sse + j->sse_len + 6, s, n);
        memcpy(j->sse + j->sse_len + 6 + n, "\n\n", 2);
        j->sse_len += n + 8;
        j->started = true;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    free(s);
}

static bool on_text(void *user, const char *text, size_t len)
{
    struct gen_ctx *g = user;
    struct job *j = g->j;
    pthread_mutex_lock(&j->mu);
    bool go = !j->cancelled;
    if (go && grow(&j->gen, &j->gen_cap, j->gen_len + len + 1)) {
        const size_t before = j->gen_len;
        memcpy(j->gen + j->gen_len, text, len);
        j->gen_len += len;
        j->gen[j->gen_len] = 0;
        /* a stop string ends the text where it starts (it may straddle pieces) */
        const size_t ms = max_stop_len(j);
        const size_t from = before > ms ? before - ms : 0;
        for (int i = 0; i < j->req.n_stop; i++) {
            const char *hit = memmem(j->gen + from, j->gen_len - from, j->req.stop[i], strlen(j->req.stop[i]));
            if (hit && (size_t)(hit - j->gen) < j->gen_len) {
                j->gen_len = (size_t)(hit - j->gen);
                j->gen[j->gen_len] = 0;
                j->stopped_by_string = true;
                go = false;
            }
        }
        if (j->req.stream) {   /* stream what no stop string can still claim */
            const size_t hold = j->stopped_by_string || !ms ? 0 : ms - 1;
            const size_t safe = j->gen_len > hold ? j->gen_len - hold : 0;
            if (safe > j->sent) {
                push_event(j, j->sent, safe, NULL, g->sv, false, chunk_logprobs(g));
                j->sent = safe;
                pthread_cond_broadcast(&j->cv);
            }
        }
    }
    pthread_mutex_unlock(&j->mu);
    return go;
}

static void run_job(struct server *sv, sprig_session *s, struct job *j)
{
    sprig_error err = { 0 };
    const struct serve_req *r = &j->req;
    int n_predict = r->max_tokens ? r->max_tokens : r->chat ? sv->n_ctx : 16;
    struct gen_ctx g = { .j = j, .sv = sv, .s = s };
    sprig_status st = sprig_session_set_sampling(s, (float)r->temperature, r->top_k, (float)r->top_p, (float)r->min_p,
                                                 r->logprobs ? (r->top_logprobs > 0 ? r->top_logprobs : 1) : 0, &err);
    if (!st) {
        sprig_session_set_seed(s, r->has_seed ? r->seed : SPRIG_SEED_RANDOM);
        sprig_session_set_parse_special(s, j->chat);
        sprig_session_set_round_fn(s, r->trace && r->stream ? on_round : NULL, &g);
        st = sprig_session_generate(s, j->prompt, strlen(j->prompt), n_predict, on_text, &g, &err);
    }
    pthread_mutex_lock(&j->mu);
    sprig_session_get_stats(s, &j->st);
    if (st && !(j->cancelled || j->stopped_by_string)) {
        j->http_status = st == SPRIG_E_CONTEXT_FULL || st == SPRIG_E_INVALID_ARG ? 400 : 500;
        snprintf(j->err, sizeof j->err, "%s", err.msg);
    }
    if (j->req.stream && !j->http_status) {
        struct sprig_output o;
        sprig_session_get_output(s, &o);
        json_t *lp = o.n_tokens > g.tok_sent ? chunk_logprobs(&g) : NULL;   /* the tokens not yet reported */
        if (j->gen_len > j->sent || lp) push_event(j, j->sent, j->gen_len, NULL, sv, false, lp);
        j->sent = j->gen_len;
        push_event(j, j->gen_len, j->gen_len, finish_reason(j), sv, true, NULL);
    } else if (!j->http_status) {
        json_t *text = utf8_string(j->gen, j->gen_len);
        json_t *choice = j->chat ? json_pack("{s:i, s:{s:s, s:o}, s:s}", "index", 0, "message", "role", "assistant", "content", text,
                                             "finish_reason", finish_reason(j))
                                 : json_pack("{s:i, s:o, s:s}", "index", 0, "text", text, "finish_reason", finish_reason(j));
        json_object_set_new(choice, "logprobs", r->logprobs ? logprobs_obj(j, s, sv->m, 0, -1) : json_null());
        j->result = json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o}", "id", j->id, "object", j->chat ? "chat.completion" : "text_completion",
                              "created", (json_int_t)j->created, "model", sv->model_id, "choices", choice, "usage", usage_obj(&j->st));
    }
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

struct worker_arg { struct server *sv; int slot; };

/* Can the queue's head start now? It books its KV slots in the batch's pool
 * (a cancelled one needs none); the head waits while the pool is spoken for,
 * and nobody overtakes it. Called with sv->mu held. */
static bool admit(struct server *sv, struct job *j)
{
    if (!sv->batch) return true;
    pthread_mutex_lock(&j->mu);
    const bool cancelled = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return cancelled || sprig_batch_admit(sv->batch, j->need);
}

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    struct server *sv = wa->sv;
    sprig_session *s = sv->slots[wa->slot];
    free(wa);
    for (;;) {
        pthread_mutex_lock(&sv->mu);
        sv->idle++;
        while (!sv->stopping && (!sv->head || !admit(sv, sv->head))) pthread_cond_wait(&sv->cv, &sv->mu);
        sv->idle--;
        if (sv->stopping) { pthread_mutex_unlock(&sv->mu); return NULL; }
        struct job *j = sv->head;
        sv->head = j->next;
        if (!sv->head) sv->tail = NULL;
        sv->queued--;
        pthread_mutex_unlock(&sv->mu);
        pthread_mutex_lock(&j->mu);
        const bool skip = j->cancelled;
        if (skip) { j->done = true; pthread_cond_broadcast(&j->cv); }
        pthread_mutex_unlock(&j->mu);
        if (!skip) run_job(sv, s, j);
        if (j->need) {   /* its KV slots back: a request waiting for the pool may start */
            sprig_batch_release(sv->batch, j->need);
            pthread_mutex_lock(&sv->mu);
            pthread_cond_broadcast(&sv->cv);
            pthread_mutex_unlock(&sv->mu);
        }
        job_unref(j);
    }
}

/* ---------------------------------------------------------------- HTTP */

struct conn { char *body; size_t len, cap; bool too_big; };

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct job *j = cls;
    (void)pos;
    pthread_mutex_lock(&j->mu);
    while (j->sse_read == j->sse_len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    ssize_t n;
    if (j->sse_read < j->sse_len) {
        n = (ssize_t)(j->sse_len - j->sse_read < max ? j->sse_len - j->sse_read : max);
        memcpy(buf, j->sse + j->sse_read, (size_t)n);
        j->sse_read += (size_t)n;
    } else if (j->http_status && !j->cancelled) {   /* an error after the stream began: as an event, then the end */
        json_t *e = error_obj(j->err, "server_error", NULL);
        char *s = json_dumps(e, JSON_COMPACT);
        json_decref(e);
        j->cancelled = true;
        n = s ? snprintf(buf, max, "data: %s\n\n", s) : 0;
        free(s);
        if (n < 0 || (size_t)n >= max) n = 0;
    } else if (!j->cancelled) {
        j->cancelled = true;   /* [DONE] written once */
        n = snprintf(buf, max, "data: [DONE]\n\n");
    } else {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

static void sse_free(void *cls)
{
    struct job *j = cls;
    pthread_mutex_lock(&j->mu);
    j->cancelled = true;   /* the client is gone: stop generating */
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

/* The conversation as prompt text through the chat template */
static char *render(const struct server *sv, const struct serve_req *r, char *why, size_t cap)
{
    sprig_chat_msg msgs[SERVE_MAX_MESSAGES];
    for (int i = 0; i < r->n_msgs; i++) msgs[i] = (sprig_chat_msg){ r->msgs[i].role, r->msgs[i].content };
    char *out = NULL;
    sprig_error err = { 0 };
    if (sprig_chat_render(sv->family, msgs, r->n_msgs, true, sv->bos, sv->eos, &out, NULL, &err)) {
        snprintf(why, cap, "%s", err.msg);
        return NULL;
    }
    return out;
}

static enum MHD_Result handle_generate(struct server *sv, struct MHD_Connection *c, struct conn *cs, bool chat)
{
    char why[512], param[64];
    if (cs->too_big) {
        snprintf(why, sizeof why, "the request body is larger than %d bytes", BODY_MAX);
        return send_error(c, 400, why, "");
    }
    struct job *j = calloc(1, sizeof *j);
    if (!j) return send_error(c, 500, "out of memory", NULL);
    if (!serve_req_parse(cs->body ? cs->body : "", cs->len, chat, sv->n_ctx, &j->req, why, sizeof why, param, sizeof param)) {
        free(j);
        return send_error(c, 400, why, param);
    }
    j->chat = chat;
    if (chat && !sv->family) {
        serve_req_free(&j->req);
        free(j);
        return send_error(c, 400, "the model has no tokenizer.chat_template; start the server with --chat-template NAME", "messages");
    }
    j->prompt = chat ? render(sv, &j->req, why, sizeof why) : strdup(j->req.prompt);
    if (!j->prompt) {
        serve_req_free(&j->req);
        free(j);
        return send_error(c, 400, why, "messages");
    }
    if (sv->batch) {   /* the KV slots it may fill: prompt, max_tokens and a verify block, at most the context */
        const int np = sprig_text_to_tokens(sv->m, j->prompt, strlen(j->prompt), true, NULL, 0, NULL);
        const long long mt = j->req.max_tokens ? j->req.max_tokens : chat ? sv->n_ctx : 16;
        const long long need = (np > 0 ? np : (long long)strlen(j->prompt) + 1) + mt + sv->rows;
        j->need = need < sv->n_ctx ? (int)need : sv->n_ctx;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    j->created = (long)time(NULL);
    static unsigned long counter;
    snprintf(j->id, sizeof j->id, "%s-%lx%04lx", chat ? "chatcmpl" : "cmpl", (unsigned long)j->created,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffff);
    pthread_mutex_lock(&sv->mu);
    if (sv->queued >= sv->queue_max + sv->idle) {   /* --queue counts requests that wait, not those an idle slot takes */
        pthread_mutex_unlock(&sv->mu);
        j->refs = 1;
        job_unref(j);
        return send_error(c, 503, "the request queue is full; retry later", NULL);
    }
    if (sv->tail) sv->tail->next = j; else sv->head = j;
    sv->tail = j;
    sv->queued++;
    pthread_cond_signal(&sv->cv);
    pthread_mutex_unlock(&sv->mu);

    if (j->req.stream) {
        pthread_mutex_lock(&j->mu);   /* an error before the first token is an HTTP error */
        while (!j->started && !j->done) pthread_cond_wait(&j->cv, &j->mu);
        const bool failed = j->done && j->http_status;
        pthread_mutex_unlock(&j->mu);
        if (failed) {
            enum MHD_Result ret = send_error(c, (unsigned)j->http_status, j->err, j->http_status == 400 ? "prompt" : NULL);
            job_unref(j);
            return ret;
        }
        fprintf(stderr, "sprig serve: %s %s stream 200\n", j->id, chat ? "/v1/chat/completions" : "/v1/completions");
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, j, sse_free);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    enum MHD_Result ret;
    fprintf(stderr, "sprig serve: %s %s %d (%lld tokens)\n", j->id, chat ? "/v1/chat/completions" : "/v1/completions",
            j->http_status ? j->http_status : 200, (long long)j->st.generated_tokens);
    if (j->http_status) ret = send_error(c, (unsigned)j->http_status, j->err, j->http_status == 400 ? "prompt" : NULL);
    else {
        json_incref(j->result);
        ret = send_json(c, MHD_HTTP_OK, j->result, NULL);
    }
    job_unref(j);
    return ret;
}

/* /health: the status, the slots, and how the verify forwards were shared (no request's data) */
static json_t *health_obj(struct server *sv)
{
    json_t *o = json_pack("{s:s, s:i}", "status", "ok", "slots", sv->parallel);
    if (sv->batch) {
        struct sprig_batch_stats bs;
        sprig_batch_get_stats(sv->batch, &bs);
        json_object_set_new(o, "batch", json_pack("{s:I, s:I, s:I, s:I, s:i, s:I, s:I, s:I}", "forwards", (json_int_t)bs.forwards,
                                                  "shared_forwards", (json_int_t)bs.shared_forwards, "sequences", (json_int_t)bs.seqs,
                                                  "rows", (json_int_t)bs.rows, "max_sequences", bs.max_seqs,
                                                  "wait_limit_forwards", (json_int_t)bs.timeouts, "kv_slots", (json_int_t)bs.kv_slots,
                                                  "kv_booked", (json_int_t)bs.kv_booked));
    }
    return o;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    struct server *sv = cls;
    (void)version;
    struct conn *cs = *con_cls;
    if (!cs) {   /* headers only: allocate, and wait for the body */
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cs->len + *upload_size > BODY_MAX || !grow(&cs->body, &cs->cap, cs->len + *upload_size + 1)) cs->too_big = true;
        else {
            memcpy(cs->body + cs->len, upload, *upload_size);
            cs->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    const bool open_route = !strcmp(method, "GET") && (!strcmp(url, "/") || !strcmp(url, "/health"));   /* the page and the probe */
    if (sv->api_key && !open_route) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, sv->api_key))
            return send_error(c, 401, "a valid API key is required (Authorization: Bearer KEY)", NULL);
    }
    const bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (get && !strcmp(url, "/health")) return send_json(c, 200, health_obj(sv), NULL);
    if (get && !strcmp(url, "/")) return send_text(c, 200, "text/html; charset=utf-8", serve_page_html);
    if (get && !strcmp(url, "/v1/models")) {
        json_t *o = json_pack("{s:s, s:[{s:s, s:s, s:I, s:s}]}", "object", "list", "data", "id", sv->model_id, "object", "model",
                              "created", (json_int_t)0, "owned_by", "sprig");
        return send_json(c, 200, o, NULL);
    }
    if (post && !strcmp(url, "/v1/completions")) return handle_generate(sv, c, cs, false);
    if (post && !strcmp(url, "/v1/chat/completions")) return handle_generate(sv, c, cs, true);
    char why[300];
    snprintf(why, sizeof why, "no route for %.16s %.200s", method, url);
    return send_error(c, 404, why, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls; (void)c; (void)toe;
    struct conn *cs = *con_cls;
    if (cs) {
        free(cs->body);
        free(cs);
        *con_cls = NULL;
    }
}

/* ---------------------------------------------------------------- command */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sprig serve -m MODEL [--draft FILE | --mtp FILE | --draft-ngram] [--draft-max K]\n"
        "                   [--tree | --tree auto] [--tree-nodes M] [--tree-width W] [--host 127.0.0.1] [--port 8080]\n"
        "                   [--parallel N] [--queue N] [-c N] [-t N] [--api-key KEY] [--chat-template NAME] [--alias ID]\n"
        "                   [--kv-type T] [--kv-pool SLOTS] [--kv-block N] [--batch-wait MS] [--no-batch]\n"
        "  POST /v1/completions, /v1/chat/completions (JSON or \"stream\": true for Server-Sent Events);\n"
        "  GET /v1/models, /health. Each of the --parallel slots (default 1) decodes one request at a\n"
        "  time with its own drafter; every step the generating slots' verify blocks and trees run as ONE\n"
        "  batched forward on a shared paged KV pool (--kv-pool slots, default --parallel whole contexts,\n"
        "  in blocks of --kv-block, default 32; a request waits until its prompt + max_tokens fit the pool).\n"
        "  --batch-wait: the longest a slot ready to verify waits for the others (default 200).\n"
        "  --no-batch: each slot its own cache and forwards. --queue requests (default 16) may wait for a\n"
        "  busy slot, more get 503 with Retry-After.\n");
}

int sprig_cmd_serve(int argc, char **argv)
{
    const char *C = "serve";
    struct server sv = { .queue_max = 16, .parallel = 1 };
    struct sprig_session_params p = sprig_session_default_params();
    const char *host = "127.0.0.1", *chat_name = NULL;
    long long port = 8080, v;
    int tree_nodes = 0, kv_pool = 0, kv_block = 32, batch_wait_ms = 0;
    bool depth_set = false, batching = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!val) { fprintf(stderr, "sprig serve: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); sv.model_path = val; }
        else if (!strcmp(a, "--host")) { NEEDV(); host = val; }
        else if (!strcmp(a, "--port")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 65535, &port)) return 2; }
        else if (!strcmp(a, "--parallel")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 64, &v)) return 2; sv.parallel = (int)v; }
        else if (!strcmp(a, "--queue")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 4096, &v)) return 2; sv.queue_max = (int)v; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEEDV(); if (!cli_parse_int(C, a, val, 16, 1 << 20, &v)) return 2; p.n_ctx = (int)v; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 256, &v)) return 2; p.n_threads = (int)v; }
        else if (!strcmp(a, "--api-key")) { NEEDV(); sv.api_key = val; }
        else if (!strcmp(a, "--no-batch")) batching = false;
        else if (!strcmp(a, "--kv-type")) {
            NEEDV();
            if (!sprig_kv_type_from_name(val, &p.kv_type)) {
                fprintf(stderr, "sprig serve: --kv-type: '%s' is not a KV cache type (%s)\n", val, sprig_kv_type_list());
                return 2;
            }
        }
        else if (!strcmp(a, "--batch-wait")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 10000, &v)) return 2; batch_wait_ms = (int)v; }
        else if (!strcmp(a, "--kv-pool")) { NEEDV(); if (!cli_parse_int(C, a, val, 16, 1 << 26, &v)) return 2; kv_pool = (int)v; }
        else if (!strcmp(a, "--kv-block")) {
            NEEDV();
            if (!cli_parse_int(C, a, val, 1, 4096, &v)) return 2;
            if (v & (v - 1)) { fprintf(stderr, "sprig serve: --kv-block: %lld is not a power of two\n", v); return 2; }
            kv_block = (int)v;
        }
        else if (!strcmp(a, "--alias")) { NEEDV(); sv.model_id = val; }
        else if (!strcmp(a, "--chat-template")) { NEEDV(); chat_name = val; }
        else if (!strcmp(a, "--draft")) { NEEDV(); p.drafter = SPRIG_DRAFTER_MODEL; p.draft_path = val; }
        else if (!strcmp(a, "--mtp")) { NEEDV(); p.drafter = SPRIG_DRAFTER_MTP; p.draft_path = val; }
        else if (!strcmp(a, "--draft-ngram")) p.drafter = SPRIG_DRAFTER_NGRAM;
        else if (!strcmp(a, "--draft-max")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 63, &v)) return 2; p.draft_max = (int)v; depth_set = true; }
        else if (!strcmp(a, "--tree") && val && !strcmp(val, "auto")) { p.tree = SPRIG_TREE_ON; p.tree_auto = true; i++; }
        else if (!strcmp(a, "--tree")) p.tree = SPRIG_TREE_ON;
        else if (!strcmp(a, "--tree-branches")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 62, &v)) return 2; p.tree_branches = (int)v; }
        else if (!strcmp(a, "--tree-nodes")) { NEEDV(); if (!cli_parse_int(C, a, val, 2, 64, &v)) return 2; tree_nodes = (int)v; }
        else if (!strcmp(a, "--tree-width")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; p.tree_width = (int)v; }
        else { fprintf(stderr, "sprig serve: unknown option '%s' (see sprig serve --help)\n", a); return 2; }
#undef NEEDV
    }
    if (!sv.model_path) { fprintf(stderr, "sprig serve: -m MODEL is required\n"); return 2; }
    if (!cli_tree_shape(C, &p, tree_nodes, depth_set, &p.tree)) return 2;
    if (p.tree == SPRIG_TREE_FROM_ENV) p.tree = SPRIG_TREE_OFF;
    sprig_error err = { 0 };
    if (sprig_model_load(sv.model_path, &sv.m, &err)) { fprintf(stderr, "sprig serve: %s\n", err.msg); return 1; }
    if (!sv.model_id) {
        const char *slash = strrchr(sv.model_path, '/');
        sv.model_id = slash ? slash + 1 : sv.model_path;
    }
    if (chat_name && !(sv.family = sprig_chat_find(chat_name))) {
        char names[256];
        sprig_chat_names(names, sizeof names);
        fprintf(stderr, "sprig serve: --chat-template: '%s' is not one of: %s\n", chat_name, names);
        sprig_model_free(sv.m);
        return 2;
    }
    if (!sv.family) {   /* detected from the model, else chat is refused per request */
        size_t tl = 0;
        const char *tmpl = sprig_model_meta_str(sv.m, "tokenizer.chat_template", &tl);
        if (tmpl && !(sv.family = sprig_chat_detect(tmpl, tl, &err)))
            fprintf(stderr, "sprig serve: warning: %s; chat requests are refused (choose --chat-template NAME)\n", err.msg);
    }
    struct sprig_model_info mi;
    sprig_model_get_info(sv.m, &mi);
    sv.bos = sprig_model_token_piece(sv.m, mi.token_bos, NULL);
    sv.eos = sprig_model_token_piece(sv.m, mi.token_eos, NULL);
    p.temp = 0;
    sv.sp = p;
    sv.slots = calloc((size_t)sv.parallel, sizeof *sv.slots);
    sv.threads = calloc((size_t)sv.parallel, sizeof *sv.threads);
    int rc = 0, started = 0;
    pthread_mutex_init(&sv.mu, NULL);
    pthread_cond_init(&sv.cv, NULL);
    sv.n_ctx = p.n_ctx ? p.n_ctx : (mi.n_ctx_train < 4096 ? mi.n_ctx_train : 4096);
    sv.rows = p.drafter == SPRIG_DRAFTER_NONE ? 1 : p.draft_max + 1 + p.tree_branches;
    if (kv_pool && kv_pool < sv.n_ctx) {
        fprintf(stderr, "sprig serve: --kv-pool: %d slots cannot hold one request's context of %d (-c)\n", kv_pool, sv.n_ctx);
        rc = 2;
    }
    if (!rc && batching) {
        struct sprig_batch_params bp = sprig_batch_default_params();
        bp.n_seq = sv.parallel;
        bp.max_rows = sv.rows;
        bp.n_ctx = sv.n_ctx;
        bp.kv_type = p.kv_type;
        bp.kv_block_slots = kv_block;
        bp.kv_blocks = kv_pool ? (kv_pool + kv_block - 1) / kv_block : 0;
        bp.wait_us = batch_wait_ms * 1000;
        if (sprig_batch_create(sv.m, &bp, &sv.batch, &err)) { fprintf(stderr, "sprig serve: %s\n", err.msg); rc = 1; }
        p.batch = sv.batch;
    }
    for (int i = 0; i < sv.parallel && !rc; i++)
        if (sprig_session_create(sv.m, &p, &sv.slots[i], &err)) { fprintf(stderr, "sprig serve: %s\n", err.msg); rc = 1; }
    for (int i = 0; i < sv.parallel && !rc; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        *wa = (struct worker_arg){ &sv, i };
        if (pthread_create(&sv.threads[i], NULL, worker, wa)) { free(wa); rc = 1; break; }
        started++;
    }
    struct MHD_Daemon *d = NULL;
    if (!rc) {
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
            fprintf(stderr, "sprig serve: --host: '%s' is not an IPv4 address\n", host);
            rc = 2;
        } else {
            d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, (uint16_t)port,
                                 NULL, NULL, on_request, &sv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, &sv, MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,   /* a restart binds past TIME_WAIT */
                                 MHD_OPTION_END);
            if (!d) { fprintf(stderr, "sprig serve: cannot listen on %s:%lld\n", host, port); rc = 1; }
        }
    }
    if (!rc) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGPIPE, SIG_IGN);
        fprintf(stderr, "sprig serve: %s on http://%s:%lld (%d slot%s, drafter %s%s, %s)\n", sv.model_id, host, port, sv.parallel,
                sv.parallel == 1 ? "" : "s", p.drafter == SPRIG_DRAFTER_NONE ? "none" : p.draft_path ? p.draft_path : "ngram",
                p.tree == SPRIG_TREE_ON ? (p.tree_auto ? ", tree auto" : ", tree") : "",
                sv.batch ? "verify forwards batched across slots" : "each slot verifies alone");
        while (!g_stop) pause();
        fprintf(stderr, "sprig serve: stopping\n");
    }
    /* queued requests are answered 503, running ones finish, then the connections close */
    pthread_mutex_lock(&sv.mu);
    sv.stopping = true;
    while (sv.head) {
        struct job *j = sv.head;
        sv.head = j->next;
        pthread_mutex_lock(&j->mu);
        j->http_status = 503;
        snprintf(j->err, sizeof j->err, "the server is stopping");
        j->done = true;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        job_unref(j);
    }
    sv.tail = NULL;
    sv.queued = 0;
    pthread_cond_broadcast(&sv.cv);
    pthread_mutex_unlock(&sv.mu);
    for (int i = 0; i < started; i++) pthread_join(sv.threads[i], NULL);
    if (d) MHD_stop_daemon(d);
    for (int i = 0; i < sv.parallel; i++) sprig_session_free(sv.slots[i]);
    if (sv.batch) {
        struct sprig_batch_stats bs;
        sprig_batch_get_stats(sv.batch, &bs);
        fprintf(stderr, "sprig serve: %lld verify forwards, %lld shared by several slots (%.2f sequences, %.1f rows per forward)\n",
                (long long)bs.forwards, (long long)bs.shared_forwards, bs.forwards ? (double)bs.seqs / (double)bs.forwards : 0.0,
                bs.forwards ? (double)bs.rows / (double)bs.forwards : 0.0);
        sprig_batch_free(sv.batch);
    }
    free(sv.slots);
    free(sv.threads);
    sprig_model_free(sv.m);
    return rc;
}
