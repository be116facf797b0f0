/*
 * serve/request — see request.h. Jansson does the JSON (it rejects
 * malformed text, duplicate-free parsing is not required by the API, and
 * JSON_REJECT_DUPLICATES would refuse what OpenAI accepts); this file only
 * checks what the fields mean.
 */
#include "serve/request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fail(char *why, size_t cap, char *param, size_t pcap, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    snprintf(param, pcap, "%s", field);
    return false;
}

void sprig_serve_req_free(struct sprig_serve_req *r)
{
    free(r->prompt);
    for (int i = 0; i < r->n_msgs; i++) {
        free(r->msgs[i].role);
        free(r->msgs[i].content);
    }
    free(r->msgs);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}

/* a JSON string's bytes as a C string: refused when it holds a NUL (the engine takes C strings) */
static char *dup_string(const json_t *s)
{
    const size_t n = json_string_length(s);
    const char *v = json_string_value(s);
    if (memchr(v, 0, n)) return NULL;
    char *c = malloc(n + 1);
    if (c) memcpy(c, v, n + 1);
    return c;
}

/* optional number field in [lo, hi] */
static bool get_num(const json_t *o, const char *k, double lo, double hi, double *out, char *why, size_t cap, char *param, size_t pcap)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return true;
    if (!json_is_number(v)) return fail(why, cap, param, pcap, k, "'%s' must be a number", k);
    const double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi) return fail(why, cap, param, pcap, k, "'%s' = %g is outside [%g, %g]", k, d, lo, hi);
    *out = d;
    return true;
}

static bool get_int(const json_t *o, const char *k, long long lo, long long hi, long long *out, bool *given, char *why, size_t cap,
                    char *param, size_t pcap)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return true;
    if (!json_is_integer(v)) return fail(why, cap, param, pcap, k, "'%s' must be an integer", k);
    const long long x = json_integer_value(v);
    if (x < lo || x > hi) return fail(why, cap, param, pcap, k, "'%s' = %lld is outside [%lld, %lld]", k, x, lo, hi);
    *out = x;
    if (given) *given = true;
    return true;
}

static bool get_bool(const json_t *o, const char *k, bool *out, char *why, size_t cap, char *param, size_t pcap)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) return fail(why, cap, param, pcap, k, "'%s' must be true or false", k);
    *out = json_is_true(v);
    return true;
}

static bool parse_obj(const json_t *o, bool chat, int max_tokens_cap, struct sprig_serve_req *r, char *why, size_t cap, char *param,
                      size_t pcap)
{
    r->chat = chat;
    r->temperature = 1.0;
    r->top_p = 1.0;
    if (chat) {
        const json_t *m = json_object_get(o, "messages");
        if (!m) return fail(why, cap, param, pcap, "messages", "'messages' is required");
        if (!json_is_array(m) || json_array_size(m) == 0) return fail(why, cap, param, pcap, "messages", "'messages' must be a non-empty array");
        if (json_array_size(m) > SPRIG_SERVE_MAX_MESSAGES)
            return fail(why, cap, param, pcap, "messages", "'messages' holds %zu messages, more than %d", json_array_size(m), SPRIG_SERVE_MAX_MESSAGES);
        r->msgs = calloc(json_array_size(m), sizeof *r->msgs);
        if (!r->msgs) return fail(why, cap, param, pcap, "messages", "out of memory");
        for (size_t i = 0; i < json_array_size(m); i++) {
            const json_t *e = json_array_get(m, i), *role = json_object_get(e, "role"), *content = json_object_get(e, "content");
            char field[64];
            snprintf(field, sizeof field, "messages[%zu].role", i);
            if (!json_is_object(e)) return fail(why, cap, param, pcap, field, "'messages[%zu]' must be an object", i);
            if (!json_is_string(role)) return fail(why, cap, param, pcap, field, "'%s' must be a string", field);
            const char *rv = json_string_value(role);
            if (strcmp(rv, "system") && strcmp(rv, "user") && strcmp(rv, "assistant") && strcmp(rv, "developer"))
                return fail(why, cap, param, pcap, field, "'%s' = '%.32s' is not system, developer, user or assistant", field, rv);
            snprintf(field, sizeof field, "messages[%zu].content", i);
            if (!json_is_string(content)) return fail(why, cap, param, pcap, field, "'%s' must be a string", field);
            r->msgs[i].role = strdup(!strcmp(rv, "developer") ? "system" : rv);
            r->msgs[i].content = dup_string(content);
            r->n_msgs = (int)i + 1;
            if (!r->msgs[i].role || !r->msgs[i].content)
                return fail(why, cap, param, pcap, field, "'%s' holds a NUL character", field);
        }
    } else {
        const json_t *p = json_object_get(o, "prompt");
        if (!p) return fail(why, cap, param, pcap, "prompt", "'prompt' is required");
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
        if (!json_is_string(p)) return fail(why, cap, param, pcap, "prompt", "'prompt' must be a string (or an array of one)");
        if (!(r->prompt = dup_string(p))) return fail(why, cap, param, pcap, "prompt", "'prompt' holds a NUL character");
    }
    long long v = 0;
    bool given = false;
    if (!get_int(o, chat && json_object_get(o, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens", 1, max_tokens_cap,
                 &v, &given, why, cap, param, pcap))
        return false;
    r->max_tokens = given ? (int)v : 0;
    if (!get_num(o, "temperature", 0, 2, &r->temperature, why, cap, param, pcap)) return false;
    if (!get_num(o, "top_p", 0, 1, &r->top_p, why, cap, param, pcap)) return false;
    if (r->top_p == 0) r->top_p = 1e-6;   /* "only the most likely": the sampler wants (0, 1] */
    if (!get_num(o, "min_p", 0, 0.999999, &r->min_p, why, cap, param, pcap)) return false;
    v = 0;
    if (!get_int(o, "top_k", 0, 1 << 24, &v, NULL, why, cap, param, pcap)) return false;
    r->top_k = (int)v;
    v = 0;
    if (!get_int(o, "seed", 0, INT64_MAX, &v, &r->has_seed, why, cap, param, pcap)) return false;
    r->seed = (uint64_t)v;
    if (!get_bool(o, "stream", &r->stream, why, cap, param, pcap)) return false;
    if (!get_bool(o, "sprig_trace", &r->trace, why, cap, param, pcap)) return false;
    const json_t *n = json_object_get(o, "n");
    if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1))
        return fail(why, cap, param, pcap, "n", "'n' must be 1 (one choice per request)");
    const json_t *stop = json_object_get(o, "stop");
    if (stop && !json_is_null(stop)) {
        if (json_is_string(stop)) {
            if (json_string_length(stop) == 0) return fail(why, cap, param, pcap, "stop", "'stop' must not be empty");
            if (!(r->stop[r->n_stop++] = dup_string(stop))) return fail(why, cap, param, pcap, "stop", "'stop' holds a NUL character");
        } else if (json_is_array(stop)) {
            if (json_array_size(stop) > SPRIG_SERVE_MAX_STOP)
                return fail(why, cap, param, pcap, "stop", "'stop' holds %zu strings, at most %d", json_array_size(stop), SPRIG_SERVE_MAX_STOP);
            for (size_t i = 0; i < json_array_size(stop); i++) {
                const json_t *s = json_array_get(stop, i);
                if (!json_is_string(s) || json_string_length(s) == 0)
                    return fail(why, cap, param, pcap, "stop", "'stop[%zu]' must be a non-empty string", i);
                if (!(r->stop[r->n_stop++] = dup_string(s))) return fail(why, cap, param, pcap, "stop", "'stop[%zu]' holds a NUL character", i);
            }
        } else {
            return fail(why, cap, param, pcap, "stop", "'stop' must be a string or an array of strings");
        }
    }
    if (chat) {
        if (!get_bool(o, "logprobs", &r->logprobs, why, cap, param, pcap)) return false;
        v = 0;
        if (!get_int(o, "top_logprobs", 0, 20, &v, NULL, why, cap, param, pcap)) return false;
        r->top_logprobs = (int)v;
        if (r->top_logprobs && !r->logprobs) return fail(why, cap, param, pcap, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    } else {
        v = 0;
        given = false;
        if (!get_int(o, "logprobs", 0, 5, &v, &given, why, cap, param, pcap)) return false;   /* OpenAI's completions limit */
        r->logprobs = given;
        r->top_logprobs = (int)v;
    }
    return true;
}

bool sprig_serve_req_parse(const char *body, size_t len, bool chat, int max_tokens_cap, struct sprig_serve_req *r, char *why, size_t cap,
                     char *param, size_t pcap)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    if (!o) return fail(why, cap, param, pcap, "", "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    bool ok = json_is_object(o) ? parse_obj(o, chat, max_tokens_cap, r, why, cap, param, pcap)
                                : fail(why, cap, param, pcap, "", "the body must be a JSON object");
    json_decref(o);
    if (!ok) sprig_serve_req_free(r);
    return ok;
}
