/*
 * serve/job — see job.h.
 */
#include "serve/job.h"
#include "serve/response.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

sprig_job *sprig_job_new(struct sprig_serve_req *req, bool chat, char *prompt, int n_predict, const sprig_model *m,
                         const char *model_id)
{
    sprig_job *j = calloc(1, sizeof *j);
    if (!j) {
        sprig_serve_req_free(req);
        free(prompt);
        return NULL;
    }
    j->req = *req;
    j->chat = chat;
    j->prompt = prompt;
    j->n_predict = n_predict;
    j->m = m;
    j->model_id = model_id;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    j->pref_slot = -1;
    j->created = (long)time(NULL);
    static unsigned long counter;
    snprintf(j->id, sizeof j->id, "%s-%lx%04lx", chat ? "chatcmpl" : "cmpl", (unsigned long)j->created,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffff);
    return j;
}

void sprig_job_unref(sprig_job *j)
{
    pthread_mutex_lock(&j->mu);
    const int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    sprig_serve_req_free(&j->req);
    free(j->prompt);
    free(j->gen);
    free(j->sse);
    if (j->result) json_decref(j->result);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* "data: {event}\n\n" appended to the job's stream; called with j->mu held */
static bool append_event(sprig_job *j, json_t *ev)
{
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (!s) return false;
    const size_t n = strlen(s);
    const bool ok = sprig_grow(&j->sse, &j->sse_cap, j->sse_len + n + 8);
    if (ok) {
        memcpy(j->sse + j->sse_len, "data: ", 6);
        memcpy(j->sse + j->sse_len + 6, s, n);
        memcpy(j->sse + j->sse_len + 6 + n, "\n\n", 2);
        j->sse_len += n + 8;
    }
    free(s);
    return ok;
}

static const char *finish_reason(const sprig_job *j, bool calls)
{
    if (calls) return "tool_calls";
    if (j->stopped_by_string) return "stop";
    const char *s = j->st.stop ? j->st.stop : "";
    return !strcmp(s, "budget") || !strcmp(s, "context") ? "length" : "stop";
}

static size_t max_stop_len(const sprig_job *j)
{
    size_t n = 0;
    for (int i = 0; i < j->req.n_stop; i++) if (strlen(j->req.stop[i]) > n) n = strlen(j->req.stop[i]);
    return n;
}

/* a call's id: "call_" + 24 alphanumerics, or the 9 Mistral's templates demand; from the job's id and the call's index */
static void call_id(const sprig_job *j, int index, char *out, size_t cap)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const int len = sprig_toolfmt_id_len(j->tools) ? sprig_toolfmt_id_len(j->tools) : 24;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = j->id; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ (uint64_t)index) * 1099511628211ull;
    size_t k = (size_t)snprintf(out, cap, "%s", len == 24 ? "call_" : "");
    for (int i = 0; i < len && k + 1 < cap; i++) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        out[k++] = digits[(h >> 33) % 62];
    }
    out[k] = 0;
}

/* OpenAI's tool_calls array for parsed calls [{name, arguments}]; streamed deltas carry their index */
static json_t *tool_calls_json(const sprig_job *j, const json_t *calls, bool stream)
{
    json_t *out = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(calls, i, c) {
        char id[40];
        call_id(j, (int)i, id, sizeof id);
        json_t *t = json_pack("{s:s, s:s, s:{s:O, s:O}}", "id", id, "type", "function", "function", "name", json_object_get(c, "name"),
                              "arguments", json_object_get(c, "arguments"));
        if (t && stream) json_object_set_new(t, "index", json_integer((json_int_t)i));
        json_array_append_new(out, t);
    }
    return out;
}

/* the reply as content and calls (tools offered and the format known; else all content): *calls NULL or non-empty */
static bool split_reply(sprig_job *j, json_t **calls, char **content, size_t *content_n, size_t *head_n)
{
    *calls = NULL;
    *head_n = j->gen_len;
    if (!j->tools) {
        *content = NULL;
        *content_n = j->gen_len;
        return true;
    }
    if (!sprig_toolfmt_parse(j->tools, j->gen, j->gen_len, j->req.tools, calls, content, content_n, head_n)) return false;
    while (j->req.single_tool_call && json_array_size(*calls) > 1) json_array_remove(*calls, json_array_size(*calls) - 1);
    if (!json_array_size(*calls)) {
        json_decref(*calls);
        *calls = NULL;
    }
    return true;
}

/* one SSE event with the text text[from, to) (or the final one) appended to the job's stream;
 * lp: the chunk's logprobs (stolen), or NULL */
static void push_text_event(sprig_job *j, const char *text, size_t from, size_t to, const char *finish, bool final_usage, json_t *lp)
{
    json_t *choice = j->chat ? json_pack("{s:i, s:{}, s:o, s:o}", "index", 0, "delta", "finish_reason", finish ? json_string(finish) : json_null(),
                                         "logprobs", lp ? lp : json_null())
                             : json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "text", sprig_serve_utf8(text + from, to - from),
                                         "finish_reason", finish ? json_string(finish) : json_null(), "logprobs", lp ? lp : json_null());
    if (j->chat && to > from) json_object_set_new(json_object_get(choice, "delta"), "content", sprig_serve_utf8(text + from, to - from));
    if (j->chat && !j->role_sent) {
        json_object_set_new(json_object_get(choice, "delta"), "role", json_string("assistant"));
        j->role_sent = true;
    }
    json_t *ev = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", j->id, "object", j->chat ? "chat.completion.chunk" : "text_completion",
                           "created", (json_int_t)j->created, "model", j->model_id, "choices", choice);
    if (final_usage) json_object_set_new(ev, "usage", sprig_serve_usage(&j->st));
    append_event(j, ev);
    j->started = true;
}

/* the same with the generated text gen[from, to) */
static void push_event(sprig_job *j, size_t from, size_t to, const char *finish, bool final_usage, json_t *lp)
{
    push_text_event(j, j->gen, from, to, finish, final_usage, lp);
}

struct gen_ctx {
    sprig_job *j;
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
    json_t *lp = sprig_serve_logprobs(g->j->m, &o, g->j->chat, g->j->req.top_logprobs, g->tok_sent, o.n_tokens);
    g->tok_sent = o.n_tokens;
    return lp;
}

/* "sprig_trace": each verify round as an event of its own (no choices), before the text it emits:
 * the verified block's tokens (as pieces) and parents, the accepted path, the running acceptance */
static void on_round(void *user, const struct sprig_round_trace *r)
{
    struct gen_ctx *g = user;
    sprig_job *j = g->j;
    g->proposed += r->n - 1;
    g->accepted += r->n_path - 1;
    json_t *toks = json_array(), *par = json_array(), *path = json_array();
    for (int i = 0; i < r->n; i++) {
        size_t pl = 0;
        const char *piece = sprig_model_token_piece(j->m, r->tokens[i], &pl);
        json_array_append_new(toks, sprig_serve_utf8(piece ? piece : "", pl));
        json_array_append_new(par, json_integer(r->parents[i]));
    }
    for (int i = 0; i < r->n_path; i++) json_array_append_new(path, json_integer(r->path[i]));
    json_t *ev = json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:{s:o, s:o, s:o, s:b, s:f}}}", "id", j->id, "object",
                           j->chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)j->created, "model",
                           j->model_id, "choices", "sprig", "round", "tokens", toks, "parents", par, "path", path, "tree", r->tree,
                           "acceptance", g->proposed ? (double)g->accepted / (double)g->proposed : 0.0);
    pthread_mutex_lock(&j->mu);
    if (!j->cancelled) {
        if (append_event(j, ev)) {
            j->started = true;
            pthread_cond_broadcast(&j->cv);
        }
    } else {
        json_decref(ev);
    }
    pthread_mutex_unlock(&j->mu);
}

static bool on_text(void *user, const char *text, size_t len)
{
    struct gen_ctx *g = user;
    sprig_job *j = g->j;
    pthread_mutex_lock(&j->mu);
    bool go = !j->cancelled;
    if (go && sprig_grow(&j->gen, &j->gen_cap, j->gen_len + len + 1)) {
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
        if (j->req.stream) {   /* stream what no stop string (and no tool call's start) can still claim */
            const size_t hold = j->stopped_by_string || !ms ? 0 : ms - 1;
            size_t safe = j->gen_len > hold ? j->gen_len - hold : 0;
            if (j->tools) {
                size_t held = j->gen_len;
                if (!j->tool_at) {
                    const size_t at = sprig_toolfmt_find(j->tools, j->gen, j->gen_len, &held);
                    if (at < j->gen_len) j->tool_at = at + 1;
                }
                const size_t lim = j->tool_at ? j->tool_at - 1 : held;
                if (safe > lim) safe = lim;
            }
            if (safe > j->sent) {
                push_event(j, j->sent, safe, NULL, false, chunk_logprobs(g));
                j->sent = safe;
                pthread_cond_broadcast(&j->cv);
            }
        }
    }
    pthread_mutex_unlock(&j->mu);
    return go;
}

void sprig_job_run(sprig_job *j, sprig_session *s)
{
    sprig_error err = { 0 };
    const struct sprig_serve_req *r = &j->req;
    struct gen_ctx g = { .j = j, .s = s };
    sprig_status st = sprig_session_set_sampling(s, (float)r->temperature, r->top_k, (float)r->top_p, (float)r->min_p,
                                                 r->logprobs ? (r->top_logprobs > 0 ? r->top_logprobs : 1) : 0, &err);
    if (!st) st = sprig_session_set_grammar(s, r->grammar, r->grammar ? strlen(r->grammar) : 0, &err);
    if (!st) {
        sprig_session_set_seed(s, r->has_seed ? r->seed : SPRIG_SEED_RANDOM);
        sprig_session_set_parse_special(s, j->chat);
        sprig_session_set_render_special(s, j->tools != NULL);   /* call markers may be control tokens */
        sprig_session_set_prefix_reuse(s, !r->no_cache_prompt);
        sprig_session_set_round_fn(s, r->trace && r->stream ? on_round : NULL, &g);
        pthread_mutex_lock(&j->mu);
        j->running = s;
        const bool gone = j->cancelled;
        pthread_mutex_unlock(&j->mu);
        st = gone ? SPRIG_OK : sprig_session_generate(s, j->prompt, strlen(j->prompt), j->n_predict, on_text, &g, &err);
    }
    pthread_mutex_lock(&j->mu);
    j->running = NULL;
    sprig_session_get_stats(s, &j->st);
    if (st && !(j->cancelled || j->stopped_by_string)) {
        j->http_status = st == SPRIG_E_CONTEXT_FULL || st == SPRIG_E_INVALID_ARG ? 400 : 500;
        snprintf(j->err, sizeof j->err, "%s", err.msg);
    }
    json_t *calls = NULL;
    char *content = NULL;
    size_t content_n = j->gen_len, head_n = j->gen_len;
    if (!j->http_status && !split_reply(j, &calls, &content, &content_n, &head_n)) {
        j->http_status = 500;
        snprintf(j->err, sizeof j->err, "out of memory");
    }
    if (j->req.stream && !j->http_status) {
        struct sprig_output o;
        sprig_session_get_output(s, &o);
        json_t *lp = o.n_tokens > g.tok_sent ? chunk_logprobs(&g) : NULL;   /* the tokens not yet reported */
        if (calls) {   /* the content not yet sent (the text's own up to head_n, then any after the calls), then each call */
            const size_t from = j->sent < head_n ? j->sent : head_n;
            if (content_n > from || lp) push_text_event(j, content, from, content_n, NULL, false, lp);
            json_t *tc = tool_calls_json(j, calls, true);
            size_t i;
            json_t *t;
            json_array_foreach(tc, i, t) {
                json_t *ev = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:[O]}, s:n, s:n}]}", "id", j->id, "object", "chat.completion.chunk",
                                       "created", (json_int_t)j->created, "model", j->model_id, "choices", "index", 0, "delta", "tool_calls", t,
                                       "finish_reason", "logprobs");
                if (ev && !j->role_sent) {
                    json_object_set_new(json_object_get(json_array_get(json_object_get(ev, "choices"), 0), "delta"), "role",
                                        json_string("assistant"));
                    j->role_sent = true;
                }
                append_event(j, ev);
            }
            json_decref(tc);
        } else if (j->gen_len > j->sent || lp) push_event(j, j->sent, j->gen_len, NULL, false, lp);
        j->sent = j->gen_len;
        push_event(j, j->gen_len, j->gen_len, finish_reason(j, calls), true, NULL);
    } else if (!j->http_status) {
        json_t *text = calls && !content_n ? json_null() : sprig_serve_utf8(calls ? content : j->gen, content_n);
        json_t *choice = j->chat ? json_pack("{s:i, s:{s:s, s:o}, s:s}", "index", 0, "message", "role", "assistant", "content", text,
                                             "finish_reason", finish_reason(j, calls))
                                 : json_pack("{s:i, s:o, s:s}", "index", 0, "text", text, "finish_reason", finish_reason(j, calls));
        if (calls) json_object_set_new(json_object_get(choice, "message"), "tool_calls", tool_calls_json(j, calls, false));
        json_t *lp = json_null();
        if (r->logprobs) {
            struct sprig_output o;
            sprig_session_get_output(s, &o);
            json_decref(lp);
            lp = sprig_serve_logprobs(j->m, &o, j->chat, r->top_logprobs, 0, -1);
        }
        json_object_set_new(choice, "logprobs", lp);
        j->result = json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o}", "id", j->id, "object", j->chat ? "chat.completion" : "text_completion",
                              "created", (json_int_t)j->created, "model", j->model_id, "choices", choice, "usage",
                              sprig_serve_usage(&j->st));
    }
    json_decref(calls);
    free(content);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void sprig_job_finish(sprig_job *j, int status, const char *why)
{
    pthread_mutex_lock(&j->mu);
    if (status) {
        j->http_status = status;
        snprintf(j->err, sizeof j->err, "%s", why ? why : "");
    }
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

bool sprig_job_cancelled(sprig_job *j)
{
    pthread_mutex_lock(&j->mu);
    const bool c = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

int sprig_job_wait_started(sprig_job *j, char *why, size_t cap)
{
    pthread_mutex_lock(&j->mu);   /* an error before the first token is an HTTP error */
    while (!j->started && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    const int status = j->done && j->http_status ? j->http_status : 0;
    if (status) snprintf(why, cap, "%s", j->err);
    pthread_mutex_unlock(&j->mu);
    return status;
}

ssize_t sprig_job_read_sse(sprig_job *j, char *buf, size_t max)
{
    pthread_mutex_lock(&j->mu);
    while (j->sse_read == j->sse_len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    ssize_t n;
    if (j->sse_read < j->sse_len) {
        n = (ssize_t)(j->sse_len - j->sse_read < max ? j->sse_len - j->sse_read : max);
        memcpy(buf, j->sse + j->sse_read, (size_t)n);
        j->sse_read += (size_t)n;
    } else if (j->http_status && !j->cancelled) {   /* an error after the stream began: as an event, then the end */
        json_t *e = sprig_serve_error_obj(j->err, "server_error", NULL);
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
        n = 0;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

int sprig_job_wait_result(sprig_job *j, char **body, char *why, size_t cap)
{
    *body = NULL;
    pthread_mutex_lock(&j->mu);
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
    int status = j->http_status;
    if (status) snprintf(why, cap, "%s", j->err);
    else if (!j->result || !(*body = json_dumps(j->result, JSON_COMPACT))) {
        status = 500;
        snprintf(why, cap, "out of memory");
    }
    pthread_mutex_unlock(&j->mu);
    return status;
}

void sprig_job_cancel(sprig_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancelled = true;
    if (j->running) sprig_session_cancel(j->running);
    pthread_mutex_unlock(&j->mu);
}

const char *sprig_job_id(const sprig_job *j) { return j->id; }

long long sprig_job_tokens(sprig_job *j)
{
    pthread_mutex_lock(&j->mu);
    const long long n = (long long)j->st.generated_tokens;
    pthread_mutex_unlock(&j->mu);
    return n;
}
