/*
 * serve/response — the pieces of OpenAI API response bodies that do not
 * depend on a request's state: strings made valid UTF-8 for JSON, error
 * objects, `usage` (with sprig's speculative figures) and `logprobs` in
 * both endpoints' formats. Built as Jansson objects so every string is
 * escaped right.
 */
#ifndef SPRIG_SERVE_RESPONSE_H
#define SPRIG_SERVE_RESPONSE_H

#include "sprig.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* text[n] as a JSON string, an invalid UTF-8 byte (or NUL) as U+FFFD */
json_t *sprig_serve_utf8(const char *s, size_t n);

/* OpenAI's error type for an HTTP status ("invalid_request_error", ...) */
const char *sprig_serve_error_type(int status);
/* {"error": {"message", "type", "param", "code"}}; param NULL or "" -> null */
json_t *sprig_serve_error_obj(const char *msg, const char *type, const char *param);

/* {"prompt_tokens", "prompt_tokens_details": {"cached_tokens"}, "completion_tokens", "total_tokens", "speculative": {...}} */
json_t *sprig_serve_usage(const struct sprig_stats *st);

/* The log-probabilities of generated tokens [from, to) of o (to < 0: all)
 * in the chat format ({"content": [...]}) or the completions one ({"tokens",
 * "token_logprobs", "top_logprobs"}), top_n alternatives each; null when o
 * recorded none. */
json_t *sprig_serve_logprobs(const sprig_model *m, const struct sprig_output *o, bool chat, int top_n, int from, int to);

#endif
