/*
 * serve/server — the core of `sprig serve` without HTTP: slots, the request
 * queue, admission to the shared KV pool, the workers, and the OpenAI
 * endpoints' bodies in and out. tools/cmd_serve.c wraps it with HTTP
 * (libmicrohttpd) alone; a program can drive it directly.
 *
 * Each of the `parallel` slots owns one session (its own cache and drafter,
 * sharing the loaded model) and a worker thread that takes requests from one
 * bounded queue; a full queue answers 503. A request's output is delivered
 * through its job (serve/job.h): the worker appends, the connection reads.
 *
 * Continuous batching (default): the slots' sessions share one batch
 * (sprig.h sprig_batch): their caches are paged sequences on one KV pool,
 * and each step every generating slot's verify block or tree — plain, chain
 * or tree, whatever its round chose — runs in ONE forward, each with its own
 * accepted path and rollback. A request books its KV slots (prompt +
 * max_tokens + a verify block, at most the context) before a slot starts
 * it: while the pool is spoken for, the oldest waiting request waits (and a
 * full queue answers 503), so a running sequence never finds the pool
 * empty. Without batching each slot has its own cache and forwards.
 */
#ifndef SPRIG_SERVE_SERVER_H
#define SPRIG_SERVE_SERVER_H

#include "chat/chat.h"
#include "serve/job.h"
#include "sprig.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sprig_server sprig_server;

struct sprig_server_params {
    struct sprig_session_params session;     /* every slot's session (drafter, tree, KV type, threads, n_ctx) */
    const char *model_id;                    /* "model" in the responses; borrowed */
    const sprig_chat *chat;                  /* the chat template (borrowed); NULL: chat requests are refused (400) */
    int parallel;                            /* slots, 1..64 */
    int queue_max;                           /* requests that may wait for a busy slot (more: 503) */
    bool batching;                           /* the slots' verify forwards as one (a shared paged KV pool) */
    int kv_pool;                             /* the pool's slots (0: parallel whole contexts) */
    int kv_block;                            /* the pool's block size, a power of two */
    int prefill_rows;                        /* --prefill-chunk: prompt rows a step (0: the default; -1: prompts on their
                                                own threads) */
    int batch_wait_ms;                       /* the longest a ready slot waits for the others (0: the batch's default) */
};

/* Sessions, the batch and the workers, on a loaded model (borrowed: it
 * must outlive the server). */
sprig_status sprig_server_create(const sprig_model *m, const struct sprig_server_params *p, sprig_server **out, sprig_error *err);
/* Stop taking work: queued requests end with 503 ("the server is stopping"),
 * running ones finish, the workers exit. */
void sprig_server_stop(sprig_server *sv);
/* After stop (and after every connection let go of its jobs). */
void sprig_server_free(sprig_server *sv);

/* A request body for /v1/completions (chat false) or /v1/chat/completions:
 * parsed, rendered through the chat template, its KV slots counted, queued.
 * 0 with *out (the caller's reference: sprig_job_unref when done), or an
 * HTTP status (400 with the field in param, 503 when the queue is full, 500)
 * with why[cap]. */
/* llama-server's POST /apply-template: a body {"messages": [...], "tools": [...]?,
 * "add_generation_prompt": bool? (default true)} rendered through the chat
 * template, as {"prompt": "..."} in *out (malloc'd). 0, or an HTTP status
 * with why[cap] and the field in param[pcap] (400: a bad body, or the
 * template's own error). */
int sprig_server_apply_template(sprig_server *sv, const char *body, size_t len, char **out, char *why, size_t cap, char *param,
                                size_t pcap);

int sprig_server_submit(sprig_server *sv, const char *body, size_t len, bool chat, sprig_job **out, char *why, size_t cap,
                        char *param, size_t pcap);

/* /health: status, slots, how the verify forwards were shared (malloc'd JSON) */
char *sprig_server_health_json(sprig_server *sv);
/* /v1/models (malloc'd JSON) */
char *sprig_server_models_json(sprig_server *sv);
/* the batch's figures; false without batching */
bool sprig_server_batch_stats(sprig_server *sv, struct sprig_batch_stats *out);

#endif
