/*
 * chat/chat — one front for the two forms of a chat template (chat.h).
 */
#include "chat/chat.h"
#include "chat/jinja/jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sprig_chat {
    const struct sprig_chat_family *family;   /* a table row, or NULL */
    sprig_jinja *jinja;                       /* compiled Jinja, or NULL */
    const struct sprig_toolfmt *tools;        /* how its model writes tool calls (NULL: not known) */
    bool string_arguments;                    /* the template takes a tool call's arguments as JSON text, not an object */
    char describe[160];
};

/* tool_calls' arguments (objects) written as JSON text, in a copy of messages; NULL when none is an object */
static json_t *arguments_as_text(const json_t *messages)
{
    json_t *copy = NULL;
    size_t i, k;
    const json_t *m, *call;
    json_array_foreach(messages, i, m) {
        json_array_foreach(json_object_get(m, "tool_calls"), k, call) {
            const json_t *args = json_object_get(json_object_get(call, "function"), "arguments");
            if (!json_is_object(args)) continue;
            if (!copy && !(copy = json_deep_copy(messages))) return NULL;
            json_t *fn = json_object_get(json_array_get(json_object_get(json_array_get(copy, i), "tool_calls"), k), "function");
            char *text = json_dumps(args, JSON_COMPACT);
            if (text) json_object_set_new(fn, "arguments", json_string(text));
            free(text);
        }
    }
    return copy;
}

/* Does the template take arguments as text? Rendered with an object it fails (e.g. '...' + arguments) where
 * rendered with the same as text it does not: a user's turn and an assistant's with one tool call, both ways (as llama.cpp's
 * template capabilities are found). */
static bool wants_string_arguments(const sprig_jinja *t)
{
    json_t *obj = json_loads("{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"\","
                             "\"tool_calls\":[{\"id\":\"call_1___\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":"
                             "{\"a\":1}}}]}],\"add_generation_prompt\":false,\"bos_token\":\"\",\"eos_token\":\"\"}", 0, NULL);
    if (!obj) return false;
    char *out = NULL;
    sprig_error e = { 0 };
    bool yes = false;
    if (sprig_jinja_render(t, obj, NULL, &out, NULL, &e) == SPRIG_E_FORMAT) {
        json_t *text = arguments_as_text(json_object_get(obj, "messages"));
        if (text) {
            json_object_set_new(obj, "messages", text);
            free(out);
            out = NULL;
            yes = sprig_jinja_render(t, obj, NULL, &out, NULL, &e) == SPRIG_OK;
        }
    }
    free(out);
    json_decref(obj);
    return yes;
}

sprig_status sprig_chat_from_name(const char *name, sprig_chat **out, sprig_error *err)
{
    *out = NULL;
    const struct sprig_chat_family *f = sprig_chat_find(name);
    if (!f) {
        char names[256];
        sprig_chat_names(names, sizeof names);
        return sprig_err(err, SPRIG_E_INVALID_ARG, "unknown template '%s' (one of: %s)", name, names);
    }
    sprig_chat *c = calloc(1, sizeof *c);
    if (!c) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    c->family = f;
    snprintf(c->describe, sizeof c->describe, "%s (chosen with --chat-template)", f->name);
    *out = c;
    return SPRIG_OK;
}

sprig_status sprig_chat_from_text(const char *text, size_t n, const char *source, sprig_chat **out, sprig_error *err)
{
    *out = NULL;
    sprig_chat *c = calloc(1, sizeof *c);
    if (!c) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    sprig_status st = sprig_jinja_compile(text, n, &c->jinja, err);
    if (st) {
        sprig_err_prefix(err, "%s", source);
        free(c);
        return st;
    }
    c->tools = sprig_toolfmt_detect(text, n);
    c->string_arguments = wants_string_arguments(c->jinja);
    snprintf(c->describe, sizeof c->describe, "Jinja, from %s", source);
    *out = c;
    return SPRIG_OK;
}

void sprig_chat_free(sprig_chat *c)
{
    if (!c) return;
    sprig_jinja_free(c->jinja);
    free(c);
}

const char *sprig_chat_describe(const sprig_chat *c) { return c->describe; }
const struct sprig_chat_family *sprig_chat_family_of(const sprig_chat *c) { return c->family; }
const struct sprig_toolfmt *sprig_chat_toolfmt(const sprig_chat *c) { return c->tools; }
void sprig_chat_set_toolfmt(sprig_chat *c, const struct sprig_toolfmt *f) { c->tools = f; }

/* a family row renders role / content pairs */
static sprig_status apply_family(const sprig_chat *c, const json_t *messages, bool gen, const char *bos, const char *eos, char **out,
                                 size_t *out_n, sprig_error *err)
{
    const size_t n = json_array_size(messages);
    if (!n || n > 4096) return sprig_err(err, SPRIG_E_INVALID_ARG, "messages: %zu messages (1 to 4096)", n);
    sprig_chat_msg *m = calloc(n, sizeof *m);
    if (!m) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(messages, i);
        m[i].role = json_string_value(json_object_get(e, "role"));
        m[i].content = json_string_value(json_object_get(e, "content"));
        if (!m[i].role || !m[i].content) {
            free(m);
            return sprig_err(err, SPRIG_E_INVALID_ARG, "messages[%zu]: the %s template takes a string role and content", i, c->family->name);
        }
    }
    const sprig_status st = sprig_chat_render(c->family, m, (int)n, gen, bos, eos, out, out_n, err);
    free(m);
    return st;
}

sprig_status sprig_chat_apply(const sprig_chat *c, const json_t *messages, const json_t *tools, bool add_generation_prompt,
                              const char *bos, const char *eos, const json_t *extra, char **out, size_t *out_n,
                              sprig_error *err)
{
    *out = NULL;
    if (!json_is_array(messages)) return sprig_err(err, SPRIG_E_INVALID_ARG, "messages: must be an array");
    if (tools && !json_is_array(tools)) return sprig_err(err, SPRIG_E_INVALID_ARG, "tools: must be an array");
    if (extra && !json_is_object(extra)) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat template variables: must be an object");
    if (c->family) {
        if (tools && json_array_size(tools))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "tools: the %s template row has no tool format; use the model's own template",
                             c->family->name);
        return apply_family(c, messages, add_generation_prompt, bos, eos, out, out_n, err);
    }
    json_t *vars = json_object();
    if (!vars) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    if (extra) json_object_update(vars, (json_t *)extra);
    json_t *text_args = c->string_arguments ? arguments_as_text(messages) : NULL;   /* the template wants text */
    json_object_set(vars, "messages", text_args ? text_args : (json_t *)messages);
    json_decref(text_args);
    if (tools) json_object_set(vars, "tools", (json_t *)tools);
    json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
    json_object_set_new(vars, "bos_token", bos ? json_string_nocheck(bos) : json_null());
    json_object_set_new(vars, "eos_token", eos ? json_string_nocheck(eos) : json_null());
    const sprig_status st = sprig_jinja_render(c->jinja, vars, NULL, out, out_n, err);
    json_decref(vars);
    return st;
}
