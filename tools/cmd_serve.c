/*
 * tools/cmd_serve — `sprig serve`: the OpenAI API over HTTP.
 *
 *   GET  /health, /v1/models, / (the page)
 *   POST /v1/completions, /v1/chat/completions (the model's chat template),
 *        JSON or Server-Sent Events (`"stream": true`: `data: {...}` chunks,
 *        then `data: [DONE]`)
 *
 * This file is the HTTP layer only: the command line, routes, the API key,
 * request bodies collected and responses sent. The server itself — slots,
 * the queue, admission to the shared KV pool, continuous batching, each
 * request's generation, stream and response bodies — is the library's
 * serve room (src/serve/server.h, job.h). libmicrohttpd does HTTP
 * (Debian's libmicrohttpd-dev: a small, long-kept embeddable server; thread
 * per connection, so a streaming response may block on its generation); a
 * client that goes away cancels its job, so its slot is free at once.
 */
#include "cli.h"
#include "serve_page.h"
#include "sprig.h"
#include "chat/chat.h"
#include "serve/response.h"
#include "serve/server.h"
#include "base/mem.h"
#include "base/timer.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BODY_MAX (1 << 20)

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static enum MHD_Result send_body(struct MHD_Connection *c, unsigned status, char *s, const char *retry_after)
{
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
    json_t *o = sprig_serve_error_obj(msg, sprig_serve_error_type((int)status), param);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return send_body(c, status, s, status == 503 ? "1" : NULL);
}

/* ---------------------------------------------------------------- HTTP */

struct conn { char *body; size_t len, cap; bool too_big; };

/* what the HTTP callbacks see */
struct http { sprig_server *sv; const char *api_key; };

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
    (void)pos;
    const ssize_t n = sprig_job_read_sse(cls, buf, max);
    return n > 0 ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void sse_free(void *cls)
{
    sprig_job_cancel(cls);   /* the client is gone: stop generating */
    sprig_job_unref(cls);
}

static enum MHD_Result handle_generate(sprig_server *sv, struct MHD_Connection *c, struct conn *cs, bool chat)
{
    char why[512], param[64] = "";
    if (cs->too_big) {
        snprintf(why, sizeof why, "the request body is larger than %d bytes", BODY_MAX);
        return send_error(c, 400, why, "");
    }
    const char *route = chat ? "/v1/chat/completions" : "/v1/completions";
    sprig_job *j;
    const int st = sprig_server_submit(sv, cs->body, cs->len, chat, &j, why, sizeof why, param, sizeof param);
    if (st) return send_error(c, (unsigned)st, why, param);
    if (j->req.stream) {
        const int err = sprig_job_wait_started(j, why, sizeof why);
        if (err) {
            enum MHD_Result ret = send_error(c, (unsigned)err, why, err == 400 ? "prompt" : NULL);
            sprig_job_unref(j);
            return ret;
        }
        fprintf(stderr, "sprig serve: %s %s stream 200\n", sprig_job_id(j), route);
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, j, sse_free);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    char *body = NULL;
    const int err = sprig_job_wait_result(j, &body, why, sizeof why);
    fprintf(stderr, "sprig serve: %s %s %d (%lld tokens)\n", sprig_job_id(j), route, err ? err : 200, sprig_job_tokens(j));
    enum MHD_Result ret = err ? send_error(c, (unsigned)err, why, err == 400 ? "prompt" : NULL) : send_body(c, MHD_HTTP_OK, body, NULL);
    sprig_job_unref(j);
    return ret;
}

/* llama-server's POST /apply-template: the prompt a conversation renders to, without generating */
static enum MHD_Result handle_apply_template(sprig_server *sv, struct MHD_Connection *c, struct conn *cs)
{
    char why[512], param[64] = "";
    if (cs->too_big) {
        snprintf(why, sizeof why, "the request body is larger than %d bytes", BODY_MAX);
        return send_error(c, 400, why, "");
    }
    char *body = NULL;
    const int st = sprig_server_apply_template(sv, cs->body, cs->len, &body, why, sizeof why, param, sizeof param);
    fprintf(stderr, "sprig serve: /apply-template %d\n", st ? st : 200);
    return st ? send_error(c, (unsigned)st, why, param) : send_body(c, MHD_HTTP_OK, body, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    struct http *h = cls;
    sprig_server *sv = h->sv;
    (void)version;
    struct conn *cs = *con_cls;
    if (!cs) {   /* headers only: allocate, and wait for the body */
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cs->len + *upload_size > BODY_MAX || !sprig_grow(&cs->body, &cs->cap, cs->len + *upload_size + 1)) cs->too_big = true;
        else {
            memcpy(cs->body + cs->len, upload, *upload_size);
            cs->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    const bool open_route = !strcmp(method, "GET") && (!strcmp(url, "/") || !strcmp(url, "/health"));   /* the page and the probe */
    if (h->api_key && !open_route) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, h->api_key))
            return send_error(c, 401, "a valid API key is required (Authorization: Bearer KEY)", NULL);
    }
    const bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (get && !strcmp(url, "/health")) return send_body(c, 200, sprig_server_health_json(sv), NULL);
    if (get && !strcmp(url, "/")) return send_text(c, 200, "text/html; charset=utf-8", serve_page_html);
    if (get && !strcmp(url, "/v1/models")) return send_body(c, 200, sprig_server_models_json(sv), NULL);
    if (post && !strcmp(url, "/v1/completions")) return handle_generate(sv, c, cs, false);
    if (post && !strcmp(url, "/v1/chat/completions")) return handle_generate(sv, c, cs, true);
    if (post && !strcmp(url, "/apply-template")) return handle_apply_template(sv, c, cs);
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
        "                   [--parallel N] [--queue N] [-c N] [-t N] [--api-key KEY] [--alias ID]\n"
        "                   [--chat-template-file F | --chat-template NAME]\n"
        "                   [--kv-type T] [--kv-pool SLOTS] [--kv-block N] [--batch-wait MS] [--no-batch]\n"
        "                   [--prefill-chunk ROWS]\n"
        "  POST /v1/completions, /v1/chat/completions (JSON or \"stream\": true for Server-Sent Events);\n"
        "  POST /apply-template: the prompt a conversation renders to ({\"prompt\": ...}).\n"
        "  Chat uses the model's own template (Jinja), --chat-template-file F, or a built-in row NAME.\n"
        "  GET /v1/models, /health. Each of the --parallel slots (default 1) decodes one request at a\n"
        "  time with its own drafter; every step the generating slots' verify blocks and trees run as ONE\n"
        "  batched forward on a shared paged KV pool (--kv-pool slots, default --parallel whole contexts,\n"
        "  in blocks of --kv-block, default 32; a request waits until its prompt + max_tokens fit the pool).\n"
        "  --batch-wait: the longest a slot ready to verify waits for the others (default 200).\n"
        "  Prompts share the pool's cached blocks: a prompt that starts like an earlier one (a chat's\n"
        "  next turn, a common system prompt) attaches those blocks and prefills only the rest, in chunks\n"
        "  of 256 tokens that other requests attach as soon as each is done. The chunks join the slots'\n"
        "  shared step, --prefill-chunk rows a step while other slots generate (default 8; 0: on the\n"
        "  request's own threads beside the step): more rows prefill faster and stall the streams more.\n"
        "  --no-batch: each slot its own cache and forwards. --queue requests (default 16) may wait for a\n"
        "  busy slot, more get 503 with Retry-After.\n");
}

int sprig_cmd_serve(int argc, char **argv)
{
    const char *C = "serve";
    struct sprig_server_params sp = { .queue_max = 16, .parallel = 1 };
    const char *model_path = NULL, *api_key = NULL;
    struct sprig_session_params p = sprig_session_default_params();
    const char *host = "127.0.0.1", *chat_name = NULL, *chat_file = NULL;
    long long port = 8080, v;
    int tree_nodes = 0, kv_pool = 0, kv_block = 32, batch_wait_ms = 0, prefill_rows = 0;
    bool depth_set = false, batching = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!val) { fprintf(stderr, "sprig serve: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); model_path = val; }
        else if (!strcmp(a, "--host")) { NEEDV(); host = val; }
        else if (!strcmp(a, "--port")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 65535, &port)) return 2; }
        else if (!strcmp(a, "--parallel")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 64, &v)) return 2; sp.parallel = (int)v; }
        else if (!strcmp(a, "--queue")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 4096, &v)) return 2; sp.queue_max = (int)v; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEEDV(); if (!cli_parse_int(C, a, val, 16, 1 << 20, &v)) return 2; p.n_ctx = (int)v; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 256, &v)) return 2; p.n_threads = (int)v; }
        else if (!strcmp(a, "--api-key")) { NEEDV(); api_key = val; }
        else if (!strcmp(a, "--no-batch")) batching = false;
        else if (!strcmp(a, "--kv-type")) {
            NEEDV();
            if (!sprig_kv_type_from_name(val, &p.kv_type)) {
                fprintf(stderr, "sprig serve: --kv-type: '%s' is not a KV cache type (%s)\n", val, sprig_kv_type_list());
                return 2;
            }
        }
        else if (!strcmp(a, "--batch-wait")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 10000, &v)) return 2; batch_wait_ms = (int)v; }
        else if (!strcmp(a, "--prefill-chunk")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 4096, &v)) return 2; prefill_rows = v ? (int)v : -1; }
        else if (!strcmp(a, "--kv-pool")) { NEEDV(); if (!cli_parse_int(C, a, val, 16, 1 << 26, &v)) return 2; kv_pool = (int)v; }
        else if (!strcmp(a, "--kv-block")) {
            NEEDV();
            if (!cli_parse_int(C, a, val, 1, 4096, &v)) return 2;
            if (v & (v - 1)) { fprintf(stderr, "sprig serve: --kv-block: %lld is not a power of two\n", v); return 2; }
            kv_block = (int)v;
        }
        else if (!strcmp(a, "--alias")) { NEEDV(); sp.model_id = val; }
        else if (!strcmp(a, "--chat-template")) { NEEDV(); chat_name = val; }
        else if (!strcmp(a, "--chat-template-file")) { NEEDV(); chat_file = val; }
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
    if (!model_path) { fprintf(stderr, "sprig serve: -m MODEL is required\n"); return 2; }
    if (!cli_tree_shape(C, &p, tree_nodes, depth_set, &p.tree)) return 2;
    if (p.tree == SPRIG_TREE_FROM_ENV) p.tree = SPRIG_TREE_OFF;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    if (sprig_model_load(model_path, &m, &err)) { fprintf(stderr, "sprig serve: %s\n", err.msg); return 1; }
    if (!sp.model_id) {
        const char *slash = strrchr(model_path, '/');
        sp.model_id = slash ? slash + 1 : model_path;
    }
    sprig_chat *tmpl = NULL;   /* --chat-template NAME, --chat-template-file F, else the model's own (Jinja) */
    if (chat_name && sprig_chat_from_name(chat_name, &tmpl, &err)) {
        fprintf(stderr, "sprig serve: --chat-template: %s\n", err.msg);
        sprig_model_free(m);
        return 2;
    }
    if (chat_file) {
        char why[512];
        size_t n = 0;
        char *text = cli_read_all(chat_file, (size_t)1 << 24, &n, why, sizeof why);
        const sprig_status st = text ? sprig_chat_from_text(text, n, chat_file, &tmpl, &err) : SPRIG_E_IO;
        free(text);
        if (st) {
            fprintf(stderr, "sprig serve: --chat-template-file: %s\n", text ? err.msg : why);
            sprig_model_free(m);
            return 1;
        }
    }
    if (!tmpl) {   /* the model's template; a model without one serves completions only */
        size_t tl = 0;
        const char *text = sprig_model_meta_str(m, "tokenizer.chat_template", &tl);
        if (text && sprig_chat_from_text(text, tl, "tokenizer.chat_template", &tmpl, &err)) {
            fprintf(stderr, "sprig serve: %s: %s (give --chat-template-file F or --chat-template NAME)\n", model_path, err.msg);
            sprig_model_free(m);
            return 1;
        }
    }
    sp.chat = tmpl;
    if (tmpl) fprintf(stderr, "sprig serve: chat template %s\n", sprig_chat_describe(tmpl));
    if (tmpl && sprig_chat_toolfmt(tmpl)) fprintf(stderr, "sprig serve: tool calls read as %s\n", sprig_toolfmt_name(sprig_chat_toolfmt(tmpl)));
    {   /* the vocabulary's index for grammars (response_format, tool_choice), built now rather than in a request */
        const double t0 = sprig_time_ms();
        if (sprig_model_prepare_grammars(m, &err)) {
            fprintf(stderr, "sprig serve: %s\n", err.msg);
            sprig_chat_free(tmpl);
            sprig_model_free(m);
            return 1;
        }
        fprintf(stderr, "sprig serve: grammar index of the vocabulary built in %.0f ms\n", sprig_time_ms() - t0);
    }
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    p.temp = 0;
    sp.session = p;
    sp.batching = batching;
    sp.kv_pool = kv_pool;
    sp.kv_block = kv_block;
    sp.prefill_rows = prefill_rows;
    sp.batch_wait_ms = batch_wait_ms;
    int rc = 0;
    const int n_ctx = p.n_ctx ? p.n_ctx : (mi.n_ctx_train < 4096 ? mi.n_ctx_train : 4096);
    if (kv_pool && kv_pool < n_ctx) {
        fprintf(stderr, "sprig serve: --kv-pool: %d slots cannot hold one request's context of %d (-c)\n", kv_pool, n_ctx);
        rc = 2;
    }
    struct http h = { .api_key = api_key };
    if (!rc && sprig_server_create(m, &sp, &h.sv, &err)) { fprintf(stderr, "sprig serve: %s\n", err.msg); rc = 1; }
    struct MHD_Daemon *d = NULL;
    if (!rc) {
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
            fprintf(stderr, "sprig serve: --host: '%s' is not an IPv4 address\n", host);
            rc = 2;
        } else {
            d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, (uint16_t)port,
                                 NULL, NULL, on_request, &h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, &h, MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,   /* a restart binds past TIME_WAIT */
                                 MHD_OPTION_END);
            if (!d) { fprintf(stderr, "sprig serve: cannot listen on %s:%lld\n", host, port); rc = 1; }
        }
    }
    struct sprig_batch_stats bs;
    if (!rc) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGPIPE, SIG_IGN);
        fprintf(stderr, "sprig serve: %s on http://%s:%lld (%d slot%s, drafter %s%s, %s)\n", sp.model_id, host, port, sp.parallel,
                sp.parallel == 1 ? "" : "s", p.drafter == SPRIG_DRAFTER_NONE ? "none" : p.draft_path ? p.draft_path : "ngram",
                p.tree == SPRIG_TREE_ON ? (p.tree_auto ? ", tree auto" : ", tree") : "",
                sprig_server_batch_stats(h.sv, &bs) ? "verify forwards batched across slots" : "each slot verifies alone");
        while (!g_stop) pause();
        fprintf(stderr, "sprig serve: stopping\n");
    }
    /* queued requests are answered 503, running ones finish, then the connections close */
    sprig_server_stop(h.sv);
    if (d) MHD_stop_daemon(d);
    if (h.sv && sprig_server_batch_stats(h.sv, &bs)) {
        fprintf(stderr, "sprig serve: %lld verify forwards, %lld shared by several slots (%.2f sequences, %.1f rows per forward)\n",
                (long long)bs.forwards, (long long)bs.shared_forwards, bs.forwards ? (double)bs.seqs / (double)bs.forwards : 0.0,
                bs.forwards ? (double)bs.rows / (double)bs.forwards : 0.0);
    }
    sprig_server_free(h.sv);
    sprig_model_free(m);
    sprig_chat_free(tmpl);
    return rc;
}
