/*
 * serve/request — see request.h. Jansson does the JSON (it rejects
 * malformed text, duplicate-free parsing is not required by the API, and
 * JSON_REJECT_DUPLICATES would refuse what OpenAI accepts); this file only
 * checks what the fields mean.
 */
#include "serve/request.h"
#include "grammar/gbnf.h"
#include "grammar/schema.h"

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
    json_decref(r->messages);
    json_decref(r->tools);
    json_decref(r->template_vars);
    free(r->tool_name);
    free(r->grammar);
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

/* message i's content: a string, text parts joined by newlines, or null (an assistant's tool calls) */
static bool message_content(const json_t *c, size_t i, bool may_be_null, json_t **out, char *why, size_t cap, char *param, size_t pcap)
{
    char field[64];
    snprintf(field, sizeof field, "messages[%zu].content", i);
    if (!c || json_is_null(c)) {
        if (!may_be_null) return fail(why, cap, param, pcap, field, "'%s' is required", field);
        *out = json_null();
        return true;
    }
    if (json_is_string(c)) {
        if (memchr(json_string_value(c), 0, json_string_length(c))) return fail(why, cap, param, pcap, field, "'%s' holds a NUL character", field);
        *out = json_deep_copy(c);
        return *out != NULL;
    }
    if (!json_is_array(c)) return fail(why, cap, param, pcap, field, "'%s' must be a string, an array of text parts or null", field);
    size_t n = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        const json_t *part = json_array_get(c, k), *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text"))
            return fail(why, cap, param, pcap, field, "'%s[%zu]': only parts of type \"text\" are supported", field, k);
        if (!json_is_string(text)) return fail(why, cap, param, pcap, field, "'%s[%zu].text' must be a string", field, k);
        n += json_string_length(text) + 1;
    }
    char *buf = malloc(n + 1), *q = buf;
    if (!buf) return fail(why, cap, param, pcap, field, "out of memory");
    for (size_t k = 0; k < json_array_size(c); k++) {
        const json_t *text = json_object_get(json_array_get(c, k), "text");
        if (k) *q++ = '\n';
        memcpy(q, json_string_value(text), json_string_length(text));
        q += json_string_length(text);
    }
    *out = json_stringn(buf, (size_t)(q - buf));
    free(buf);
    if (!*out) return fail(why, cap, param, pcap, field, "'%s' is not valid text", field);
    return true;
}

/* an assistant's tool_calls: [{id?, type: "function", function: {name, arguments}}]; arguments given as a
 * string that parses as a JSON object become that object (what chat templates read) */
static bool message_tool_calls(const json_t *tc, size_t i, json_t *norm, char *why, size_t cap, char *param, size_t pcap)
{
    char field[64];
    snprintf(field, sizeof field, "messages[%zu].tool_calls", i);
    if (!json_is_array(tc)) return fail(why, cap, param, pcap, field, "'%s' must be an array", field);
    json_t *calls = json_array();
    json_object_set_new(norm, "tool_calls", calls);
    for (size_t k = 0; k < json_array_size(tc); k++) {
        const json_t *c = json_array_get(tc, k), *fn = json_object_get(c, "function"), *id = json_object_get(c, "id"),
                     *type = json_object_get(c, "type");
        const json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (!json_is_object(c) || !json_is_object(fn) || !json_is_string(name))
            return fail(why, cap, param, pcap, field, "'%s[%zu]' must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", field, k);
        if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "function")))
            return fail(why, cap, param, pcap, field, "'%s[%zu].type' must be \"function\"", field, k);
        if (id && !json_is_string(id)) return fail(why, cap, param, pcap, field, "'%s[%zu].id' must be a string", field, k);
        json_t *a = NULL;
        if (!args || json_is_null(args)) a = json_object();
        else if (json_is_object(args)) a = json_deep_copy(args);
        else if (json_is_string(args)) {
            json_t *parsed = json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
            a = json_is_object(parsed) ? parsed : json_deep_copy(args);
            if (!json_is_object(parsed)) json_decref(parsed);
        } else return fail(why, cap, param, pcap, field, "'%s[%zu].function.arguments' must be a JSON string or an object", field, k);
        json_t *call = json_pack("{s:s,s:{s:O,s:o}}", "type", "function", "function", "name", name, "arguments", a);
        if (!call) return fail(why, cap, param, pcap, field, "out of memory");
        if (id) json_object_set(call, "id", (json_t *)id);
        json_array_append_new(calls, call);
    }
    return true;
}

static bool parse_message(const json_t *e, size_t i, json_t **out, struct sprig_serve_msg *flat, char *why, size_t cap, char *param,
                          size_t pcap)
{
    char field[64];
    snprintf(field, sizeof field, "messages[%zu].role", i);
    if (!json_is_object(e)) return fail(why, cap, param, pcap, field, "'messages[%zu]' must be an object", i);
    const json_t *role = json_object_get(e, "role");
    if (!json_is_string(role)) return fail(why, cap, param, pcap, field, "'%s' must be a string", field);
    const char *rv = json_string_value(role);
    static const char *const roles[] = { "system", "developer", "user", "assistant", "tool" };
    bool known = false;
    for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++) known |= !strcmp(rv, roles[k]);
    if (!known) return fail(why, cap, param, pcap, field, "'%s' = '%.32s' is not system, developer, user, assistant or tool", field, rv);
    const bool assistant = !strcmp(rv, "assistant");
    const json_t *tc = json_object_get(e, "tool_calls");
    if (tc && !json_is_null(tc) && !assistant) {
        snprintf(field, sizeof field, "messages[%zu].tool_calls", i);
        return fail(why, cap, param, pcap, field, "'%s': only assistant messages carry tool calls", field);
    }
    json_t *norm = json_object(), *content = NULL;
    *out = norm;
    if (!norm) return fail(why, cap, param, pcap, field, "out of memory");
    json_object_set_new(norm, "role", json_string(!strcmp(rv, "developer") ? "system" : rv));
    if (!message_content(json_object_get(e, "content"), i, assistant && tc && !json_is_null(tc), &content, why, cap, param, pcap)) {
        json_decref(norm);
        return false;
    }
    json_object_set_new(norm, "content", content);
    static const char *const strs[] = { "name", "tool_call_id", "reasoning_content" };
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        const json_t *v = json_object_get(e, strs[k]);
        if (!v || json_is_null(v)) continue;
        if (!json_is_string(v)) {
            snprintf(field, sizeof field, "messages[%zu].%s", i, strs[k]);
            json_decref(norm);
            return fail(why, cap, param, pcap, field, "'%s' must be a string", field);
        }
        json_object_set(norm, strs[k], (json_t *)v);
    }
    if (tc && !json_is_null(tc) && !message_tool_calls(tc, i, norm, why, cap, param, pcap)) {
        json_decref(norm);
        return false;
    }
    flat->role = strdup(json_string_value(json_object_get(norm, "role")));
    flat->content = strdup(json_is_string(content) ? json_string_value(content) : "");
    if (!flat->role || !flat->content) {
        json_decref(norm);
        return fail(why, cap, param, pcap, field, "out of memory");
    }
    return true;
}

/* tools: [{type: "function", function: {name, description?, parameters?}}]; tool_choice "auto" or "none" */
static bool parse_tools(const json_t *o, struct sprig_serve_req *r, char *why, size_t cap, char *param, size_t pcap)
{
    const json_t *tools = json_object_get(o, "tools"), *choice = json_object_get(o, "tool_choice"),
                 *par = json_object_get(o, "parallel_tool_calls");
    if (par && !json_is_null(par) && !json_is_boolean(par))
        return fail(why, cap, param, pcap, "parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r->single_tool_call = json_is_false(par);
    if (choice && !json_is_null(choice)) {
        const char *c = json_is_string(choice) ? json_string_value(choice) : NULL;
        const json_t *fname = json_object_get(json_object_get(choice, "function"), "name");
        if (c && !strcmp(c, "none")) return true;   /* the model is not offered the tools */
        if (c && !strcmp(c, "required")) r->tool_choice = SPRIG_TOOL_REQUIRED;
        else if (json_is_object(choice) && json_is_string(fname) && json_string_length(fname)) {
            r->tool_choice = SPRIG_TOOL_NAMED;
            if (!(r->tool_name = dup_string(fname))) return fail(why, cap, param, pcap, "tool_choice", "'tool_choice' names a tool with a NUL");
        } else if (!c || strcmp(c, "auto"))
            return fail(why, cap, param, pcap, "tool_choice",
                        "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (!tools || json_is_null(tools)) return true;
    if (!json_is_array(tools)) return fail(why, cap, param, pcap, "tools", "'tools' must be an array");
    for (size_t k = 0; k < json_array_size(tools); k++) {
        const json_t *t = json_array_get(tools, k), *fn = json_object_get(t, "function"), *type = json_object_get(t, "type");
        char field[48];
        snprintf(field, sizeof field, "tools[%zu]", k);
        if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function") || !json_is_object(fn) ||
            !json_is_string(json_object_get(fn, "name")))
            return fail(why, cap, param, pcap, field, "'%s' must be {\"type\": \"function\", \"function\": {\"name\", ...}}", field);
        const json_t *params = json_object_get(fn, "parameters");
        if (params && !json_is_null(params) && !json_is_object(params))
            return fail(why, cap, param, pcap, field, "'%s.function.parameters' must be a JSON schema object", field);
    }
    if (json_array_size(tools)) r->tools = json_deep_copy(tools);
    if (r->tool_choice && !r->tools) return fail(why, cap, param, pcap, "tool_choice", "'tool_choice' asks for a tool call but 'tools' is empty");
    if (r->tool_choice == SPRIG_TOOL_NAMED) {
        bool found = false;
        for (size_t k = 0; k < json_array_size(tools) && !found; k++)
            found = !strcmp(json_string_value(json_object_get(json_object_get(json_array_get(tools, k), "function"), "name")), r->tool_name);
        if (!found) return fail(why, cap, param, pcap, "tool_choice", "'tool_choice' names '%s', which is not in 'tools'", r->tool_name);
    }
    return true;
}

/* response_format, json_schema, grammar: at most one, compiled to GBNF and checked */
static bool parse_format(const json_t *o, struct sprig_serve_req *r, char *why, size_t cap, char *param, size_t pcap)
{
    const json_t *rf = json_object_get(o, "response_format"), *js = json_object_get(o, "json_schema"), *gr = json_object_get(o, "grammar");
    if (json_is_null(rf)) rf = NULL;
    if (json_is_null(js)) js = NULL;
    if (json_is_null(gr)) gr = NULL;
    const char *type = rf ? json_string_value(json_object_get(rf, "type")) : NULL;
    if (rf && (!json_is_object(rf) || !type))
        return fail(why, cap, param, pcap, "response_format", "'response_format' must be an object with a 'type'");
    if (type && !strcmp(type, "text")) rf = NULL;
    if (!!rf + !!js + !!gr > 1)
        return fail(why, cap, param, pcap, rf ? "response_format" : "json_schema", "give one of 'response_format', 'json_schema' and 'grammar'");
    sprig_error err = { 0 };
    const json_t *schema = NULL;
    bool any_object = false;
    if (rf && !strcmp(type, "json_object")) {
        r->grammar_from = "response_format";
        any_object = true;
    } else if (rf && !strcmp(type, "json_schema")) {
        r->grammar_from = "response_format.json_schema.schema";
        schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
        if (!json_is_object(schema))
            return fail(why, cap, param, pcap, "response_format", "'response_format.json_schema.schema' must be a JSON schema object");
    } else if (rf) {
        return fail(why, cap, param, pcap, "response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"");
    } else if (js) {
        r->grammar_from = "json_schema";
        schema = js;
        if (!json_is_object(js)) return fail(why, cap, param, pcap, "json_schema", "'json_schema' must be a JSON schema object");
    } else if (gr) {
        r->grammar_from = "grammar";
        if (!json_is_string(gr) || !(r->grammar = dup_string(gr)))
            return fail(why, cap, param, pcap, "grammar", "'grammar' must be GBNF text (a string without NUL characters)");
    } else return true;
    if ((schema || any_object) && sprig_schema_to_gbnf(schema, &r->grammar, &err))
        return fail(why, cap, param, pcap, rf ? "response_format" : "json_schema", "'%s': %s", r->grammar_from, err.msg);
    sprig_gbnf *g = NULL;
    if (sprig_gbnf_parse(r->grammar, strlen(r->grammar), &g, &err))
        return fail(why, cap, param, pcap, rf ? "response_format" : js ? "json_schema" : "grammar", "'%s': %s", r->grammar_from, err.msg);
    sprig_gbnf_free(g);
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
        if (!r->msgs || !(r->messages = json_array())) return fail(why, cap, param, pcap, "messages", "out of memory");
        for (size_t i = 0; i < json_array_size(m); i++) {
            json_t *norm = NULL;
            if (!parse_message(json_array_get(m, i), i, &norm, &r->msgs[i], why, cap, param, pcap)) return false;
            r->n_msgs = (int)i + 1;
            if (json_array_append_new(r->messages, norm)) return fail(why, cap, param, pcap, "messages", "out of memory");
        }
        if (!parse_tools(o, r, why, cap, param, pcap)) return false;
        const json_t *kw = json_object_get(o, "chat_template_kwargs");
        if (kw && !json_is_null(kw)) {
            if (!json_is_object(kw)) return fail(why, cap, param, pcap, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
            r->template_vars = json_deep_copy(kw);
        }
    } else {
        const json_t *p = json_object_get(o, "prompt");
        if (!p) return fail(why, cap, param, pcap, "prompt", "'prompt' is required");
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
        if (!json_is_string(p)) return fail(why, cap, param, pcap, "prompt", "'prompt' must be a string (or an array of one)");
        if (!(r->prompt = dup_string(p))) return fail(why, cap, param, pcap, "prompt", "'prompt' holds a NUL character");
    }
    if (!parse_format(o, r, why, cap, param, pcap)) return false;
    if (r->grammar && r->tool_choice >= SPRIG_TOOL_REQUIRED)
        return fail(why, cap, param, pcap, "tool_choice", "a tool call and '%s' both constrain the reply: give one", r->grammar_from);
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
    bool cache_prompt = true;
    if (!get_bool(o, "cache_prompt", &cache_prompt, why, cap, param, pcap)) return false;
    r->no_cache_prompt = !cache_prompt;
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
