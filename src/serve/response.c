/*
 * serve/response — see response.h.
 */
#include "serve/response.h"

#include <stdlib.h>
#include <string.h>

json_t *sprig_serve_utf8(const char *s, size_t n)
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

const char *sprig_serve_error_type(int status)
{
    return status == 401 ? "authentication_error" : status == 503 ? "server_overloaded" : status >= 500 ? "server_error"
                                                                                                      : "invalid_request_error";
}

json_t *sprig_serve_error_obj(const char *msg, const char *type, const char *param)
{
    return json_pack("{s:{s:o, s:s, s:o, s:n}}", "error", "message", sprig_serve_utf8(msg, strlen(msg)), "type", type, "param",
                     param && *param ? json_string(param) : json_null(), "code");
}

json_t *sprig_serve_usage(const struct sprig_stats *st)
{
    json_t *u = json_pack("{s:I, s:{s:I}, s:I, s:I, s:{s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f}}", "prompt_tokens",
                     (json_int_t)st->prompt_tokens, "prompt_tokens_details", "cached_tokens", (json_int_t)st->cached_tokens,
                     "completion_tokens", (json_int_t)st->generated_tokens, "total_tokens",
                     (json_int_t)(st->prompt_tokens + st->generated_tokens), "speculative", "path", st->path ? st->path : "",
                     "drafter", st->drafter ? st->drafter : "", "rounds", (json_int_t)st->rounds, "proposed",
                     (json_int_t)st->proposed, "accepted", (json_int_t)st->accepted, "emitted_per_verify", st->emitted_per_verify,
                     "acceptance", st->acceptance_rate, "branch_rounds", (json_int_t)st->branch_rounds, "draft_ms", st->draft_ms,
                     "verify_ms", st->verify_ms);
    if (u && st->plan_n > 0) {   /* tree auto's planner: its choices, and verify costs rows -> ms with their samples */
        json_t *costs = json_array();
        for (int i = 0; i < st->plan_n && i < SPRIG_PLAN_SIZES; i++)
            json_array_append_new(costs, json_pack("{s:i, s:f, s:I}", "rows", st->plan_rows[i], "ms", st->plan_ms[i], "samples",
                                                   (json_int_t)st->plan_samples[i]));
        json_object_set_new(json_object_get(u, "speculative"), "plan",
                            json_pack("{s:I, s:I, s:I, s:o, s:{s:f, s:f, s:I, s:I}}", "chains", (json_int_t)st->plan_chains, "trees",
                                      (json_int_t)st->plan_trees, "joint", (json_int_t)st->plan_joint, "verify_ms", costs, "drafting",
                                      "width_1_ms", st->plan_draft_ms[0], "wider_ms", st->plan_draft_ms[1], "wide_rounds",
                                      (json_int_t)st->plan_wide_rounds, "stopped_short", (json_int_t)st->plan_draft_stops));
    }
    return u;
}

json_t *sprig_serve_logprobs(const sprig_model *m, const struct sprig_output *o, bool chat, int top_n, int from, int to)
{
    if (!o->top || o->top_n < 1) return json_null();
    if (to < 0 || to > o->n_tokens) to = o->n_tokens;
    json_t *content = json_array(), *toks = json_array(), *lps = json_array(), *tops = json_array();
    for (int i = from < 0 ? 0 : from; i < to; i++) {
        const sprig_logprob *t = o->top + (size_t)i * (size_t)o->top_n;
        size_t pl = 0;
        const char *piece = sprig_model_token_piece(m, o->tokens[i], &pl);
        json_t *lp = json_null();
        for (int k = 0; k < o->top_n; k++)
            if (t[k].id == o->tokens[i]) { json_decref(lp); lp = json_real(t[k].logprob); }
        json_t *alts = chat ? json_array() : json_object();
        for (int k = 0; k < top_n && k < o->top_n; k++) {
            size_t al = 0;
            const char *ap = sprig_model_token_piece(m, t[k].id, &al);
            if (chat) json_array_append_new(alts, json_pack("{s:o, s:f}", "token", sprig_serve_utf8(ap ? ap : "", al), "logprob", t[k].logprob));
            else {
                json_t *key = sprig_serve_utf8(ap ? ap : "", al);
                json_object_set_new(alts, json_string_value(key), json_real(t[k].logprob));
                json_decref(key);
            }
        }
        if (chat) {
            json_array_append_new(content, json_pack("{s:o, s:o, s:o}", "token", sprig_serve_utf8(piece ? piece : "", pl), "logprob", lp,
                                                     "top_logprobs", alts));
        } else {
            json_array_append_new(toks, sprig_serve_utf8(piece ? piece : "", pl));
            json_array_append_new(lps, lp);
            json_array_append_new(tops, alts);
        }
    }
    if (chat) {
        json_decref(toks); json_decref(lps); json_decref(tops);
        return json_pack("{s:o}", "content", content);
    }
    json_decref(content);
    return json_pack("{s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops);
}
