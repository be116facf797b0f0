/*
 * serve/request — one OpenAI API request body (`/v1/completions`,
 * `/v1/chat/completions`) parsed and checked into plain fields.
 *
 * The body is hostile input: Jansson parses it (depth and size bounded by
 * the caller's body limit), every field is checked for its type and range,
 * and an error names the field as OpenAI clients expect ("param"). Unknown
 * fields are ignored, as OpenAI's server does. Strings are copied, so the
 * request owns everything it points to (sprig_serve_req_free). Chat
 * messages take OpenAI's shapes: a content string, an array of text parts,
 * or null beside tool_calls; roles system, developer, user, assistant and
 * tool. tool_choice "auto", "none", "required" and a named function are
 * taken (the last two decode under a grammar of the template's call format:
 * the server builds it). Structured output: response_format {"type":
 * "json_object"} or {"type": "json_schema", "json_schema": {"schema": ...}},
 * llama-server's "json_schema" (a schema) and "grammar" (GBNF text), one of
 * them; a schema is compiled to GBNF and the GBNF checked here, so a bad one
 * is a 400 naming the field and the rule or keyword.
 */
#ifndef SPRIG_SERVE_REQUEST_H
#define SPRIG_SERVE_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPRIG_SERVE_MAX_STOP 4          /* OpenAI's limit */
#define SPRIG_SERVE_MAX_MESSAGES 256

struct sprig_serve_msg { char *role, *content; };

enum { SPRIG_TOOL_AUTO = 0, SPRIG_TOOL_NONE, SPRIG_TOOL_REQUIRED, SPRIG_TOOL_NAMED };

struct sprig_serve_req {
    bool chat;                    /* /v1/chat/completions */
    char *prompt;                 /* completions: the prompt */
    struct sprig_serve_msg *msgs;       /* chat: [n_msgs], role and content as text ("" for none) */
    int n_msgs;
    json_t *messages;             /* chat: the messages as the template gets them: role (developer -> system),
                                     content (a string, text parts joined by newlines, or null), tool_calls (their
                                     arguments as objects where the string parses as one), tool_call_id, name,
                                     reasoning_content */
    json_t *tools;                /* chat: the tools array (NULL: none, or tool_choice "none") */
    bool single_tool_call;        /* parallel_tool_calls false: at most one call in the reply */
    int tool_choice;              /* SPRIG_TOOL_AUTO, _NONE, _REQUIRED or _NAMED (tool_name) */
    char *tool_name;
    char *grammar;                /* GBNF the output must follow (response_format, json_schema, grammar), or NULL */
    const char *grammar_from;     /* the field it came from, for messages */
    json_t *template_vars;        /* chat: chat_template_kwargs, more template variables (NULL: none) */
    int max_tokens;               /* 0: not given */
    double temperature, top_p, min_p;
    int top_k;
    bool has_seed;
    uint64_t seed;
    char *stop[SPRIG_SERVE_MAX_STOP];
    int n_stop;
    bool stream;
    int top_logprobs;             /* completions: logprobs N; chat: top_logprobs (with logprobs true) */
    bool logprobs;                /* log-probabilities asked for */
    bool trace;                   /* "sprig_trace": stream each verify round (tree, accepted path) as an event */
    bool no_cache_prompt;         /* llama-server's "cache_prompt": false: prefill the whole prompt */
};

/* Parse body[len]; false with why[cap] and the offending field's name in
 * param[pcap] ("" when it is the body itself). max_tokens_cap bounds
 * max_tokens. Defaults: temperature 1, top_p 1, top_k 0, min_p 0 (OpenAI's). */
bool sprig_serve_req_parse(const char *body, size_t len, bool chat, int max_tokens_cap, struct sprig_serve_req *r, char *why, size_t cap,
                     char *param, size_t pcap);
void sprig_serve_req_free(struct sprig_serve_req *r);

#endif
