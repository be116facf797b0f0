/*
 * serve/job — one request's life in the server: queued, run on a slot's
 * session, its text delivered, ended. The worker that runs it appends the
 * generated text (cut at a stop string, which may straddle pieces) and, for
 * a streaming request, Server-Sent-Event bytes; the connection that asked
 * for it reads them. Two references (the connection's, the worker's); a
 * client that goes away cancels the job, so the session's text callback
 * stops the generation and the slot is free at once. No HTTP here: the
 * HTTP layer (tools/cmd_serve.c) only moves these bytes.
 *
 * When the request offers tools and the template shows how its model writes
 * calls (chat/toolcall.h), the reply is split into content and tool_calls
 * (finish_reason "tool_calls"); a stream sends the content up to where the
 * calls begin, then each call as one tool_calls delta when the reply ends.
 */
#ifndef SPRIG_SERVE_JOB_H
#define SPRIG_SERVE_JOB_H

#include "chat/toolcall.h"
#include "serve/request.h"
#include "sprig.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sprig_job {
    struct sprig_serve_req req;
    bool chat;
    char *prompt;                 /* what the session tokenizes */
    int n_predict;                /* tokens the session may generate */
    const sprig_model *m;         /* the server's; outlives the job's run */
    const char *model_id;         /* "model" in the responses (the server's) */
    const struct sprig_toolfmt *tools;   /* how the model writes tool calls, when the request offers tools (else NULL) */
    size_t tool_at;               /* streaming: where the reply's tool calls begin (0 until found, then the offset + 1) */
    int pref_slot;                /* the slot whose cache holds the longest prefix of its prompt (-1: any) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *gen;                    /* generated text (stop strings cut) */
    size_t gen_len, gen_cap, sent;   /* sent: bytes of gen already streamed */
    char *sse;                    /* SSE bytes ready for the connection */
    size_t sse_len, sse_cap, sse_read;
    bool started, done, cancelled, stopped_by_string, role_sent;
    sprig_session *running;       /* the session generating it (a cancel stops it between prompt chunks too) */
    int need;                     /* KV slots booked in the batch's pool (0: none) */
    int refs;                     /* the connection and the worker */
    int http_status;              /* != 200: the worker's error */
    char err[512];
    json_t *result;               /* the final response object (non-streaming) */
    struct sprig_stats st;
    char id[40];
    long created;
    struct sprig_job *next;       /* the server's queue */
} sprig_job;

/* A job for a parsed request (taken over: freed with the job) and its
 * prompt text (malloc'd, taken over); two references. NULL when out of
 * memory (req and prompt are then freed). */
sprig_job *sprig_job_new(struct sprig_serve_req *req, bool chat, char *prompt, int n_predict, const sprig_model *m,
                         const char *model_id);
/* Drop one reference; the last frees the job. */
void sprig_job_unref(sprig_job *j);

/* The worker: generate the request on session s (its sampling, seed and
 * parse-special set from the request), fill the stream or the result. */
void sprig_job_run(sprig_job *j, sprig_session *s);
/* End a job without running it (cancelled, or the server is stopping:
 * status 503 with why). */
void sprig_job_finish(sprig_job *j, int status, const char *why);
bool sprig_job_cancelled(sprig_job *j);

/* ---- the connection's side */
/* Streaming: wait for the first event or the end. 0: the stream may begin;
 * else the HTTP status of an error before the first token (why[cap]). */
int sprig_job_wait_started(sprig_job *j, char *why, size_t cap);
/* The next SSE bytes into buf[max] (blocks until there are some): > 0 bytes,
 * or 0 at the end of the stream (after `data: [DONE]`, or an error event
 * when the generation failed after it began). */
ssize_t sprig_job_read_sse(sprig_job *j, char *buf, size_t max);
/* Non-streaming: wait for the end. 0 with *body = the response JSON
 * (malloc'd), or the HTTP status of the error with why[cap]. */
int sprig_job_wait_result(sprig_job *j, char **body, char *why, size_t cap);
/* The client went away: stop generating (the worker's callback sees it). */
void sprig_job_cancel(sprig_job *j);
const char *sprig_job_id(const sprig_job *j);
/* tokens generated (after the end) */
long long sprig_job_tokens(sprig_job *j);

#endif
