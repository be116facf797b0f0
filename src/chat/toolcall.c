/*
 * chat/toolcall — see toolcall.h. One parser per row; the rows are the
 * table at the end. Every parser reads a hostile text: bounded by n, never
 * past it, nesting bounded, and a region that does not parse is refused
 * (the reply is then all content).
 */
#include "chat/toolcall.h"
#include "grammar/schema.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

struct sprig_toolfmt {
    const char *name;
    const char *args_key;           /* the JSON formats' key for the arguments ("arguments", llama3 "parameters"); NULL: not JSON */
    const char *open, *close, *sep; /* the grammar's text around one call, and between calls */
    const char *detect, *detect2;   /* the template shows both (detect2 NULL: the first alone) */
    const char *start;              /* the output marker before the calls; NULL: the reply itself is the call (llama3) */
    int id_len;                     /* 0: "call_" + 24 alphanumerics */
    /* the calls of region r[n] (it starts at the marker) appended to calls; *used: the bytes they span */
    bool (*parse)(const char *r, size_t n, const json_t *tools, json_t *calls, size_t *used);
};

/* ---- small readers over [p, p + n) ---- */
typedef struct { const char *p; size_t n, i; } rd;

static void ws(rd *r)
{
    while (r->i < r->n && (r->p[r->i] == ' ' || r->p[r->i] == '\n' || r->p[r->i] == '\t' || r->p[r->i] == '\r')) r->i++;
}

static bool lit(rd *r, const char *s)
{
    const size_t k = strlen(s);
    if (r->n - r->i < k || memcmp(r->p + r->i, s, k)) return false;
    r->i += k;
    return true;
}

static bool at_end(const rd *r) { return r->i >= r->n; }

/* a JSON value at the reader (any kind), the reader moved past it */
static json_t *json_at(rd *r)
{
    json_error_t e;
    json_t *v = json_loadb(r->p + r->i, r->n - r->i, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (v) r->i += (size_t)e.position;
    return v;
}

/* {"name": s, "arguments": s} appended; args an object (or a string holding one) */
static bool add_call(json_t *calls, const char *name, size_t name_n, const json_t *args)
{
    for (size_t i = 0; i < name_n; i++)   /* a name is printable text */
        if ((unsigned char)name[i] < 0x20) return false;
    json_t *obj = NULL;
    if (json_is_string(args)) obj = json_loads(json_string_value(args), 0, NULL);
    else if (json_is_object(args)) obj = json_incref((json_t *)args);
    else if (!args) obj = json_object();
    if (!json_is_object(obj) || !name_n) {
        json_decref(obj);
        return false;
    }
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    json_t *c = text ? json_pack("{s:s%, s:s}", "name", name, name_n, "arguments", text) : NULL;
    free(text);
    return c && !json_array_append_new(calls, c);
}

/* a JSON object {"name": ..., "arguments" | "parameters": ...} as a call */
static bool call_from_object(const json_t *o, json_t *calls)
{
    const json_t *name = json_object_get(o, "name");
    const json_t *args = json_object_get(o, "arguments");
    if (!args) args = json_object_get(o, "parameters");
    return json_is_string(name) && add_call(calls, json_string_value(name), json_string_length(name), args);
}

static bool json_call_at(rd *r, json_t *calls)
{
    json_t *o = json_at(r);
    const bool ok = json_is_object(o) && call_from_object(o, calls);
    json_decref(o);
    return ok;
}

/* ---- hermes: <tool_call>{json}</tool_call> ... ---- */
static bool parse_hermes(const char *p, size_t n, const json_t *tools, json_t *calls, size_t *used)
{
    (void)tools;
    rd r = { p, n, 0 };
    while (lit(&r, "<tool_call>")) {   /* a call that does not parse ends the calls (a reply cut by its token budget) */
        const size_t had = json_array_size(calls);
        ws(&r);
        if (!json_call_at(&r, calls)) break;
        ws(&r);
        if (!lit(&r, "</tool_call>") && !at_end(&r)) {
            json_array_remove(calls, had);
            break;
        }
        *used = r.i;
        ws(&r);
    }
    return json_array_size(calls) > 0;
}

/* ---- qwen3-coder: <tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call> ---- */
static const char *find_in(const rd *r, const char *s)
{
    return memmem(r->p + r->i, r->n - r->i, s, strlen(s));
}

/* the schema type of tool `name`'s parameter `param` ("string" when unknown) */
static const char *param_type(const json_t *tools, const char *name, const char *param)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const json_t *fn = json_object_get(t, "function");
        if (!json_is_string(json_object_get(fn, "name")) || strcmp(json_string_value(json_object_get(fn, "name")), name)) continue;
        const json_t *ty = json_object_get(json_object_get(json_object_get(json_object_get(fn, "parameters"), "properties"), param), "type");
        if (json_is_string(ty)) return json_string_value(ty);
        if (json_is_array(ty)) {   /* ["integer", "null"]: typed unless string is among them */
            size_t k;
            const json_t *x;
            json_array_foreach(ty, k, x) if (json_is_string(x) && !strcmp(json_string_value(x), "string")) return "string";
            return json_array_size(ty) ? "any" : "string";
        }
    }
    return "string";
}

#define NAME_MAX_LEN 256   /* name[] and param[] */
static bool qwen3_coder_call(rd *rr, const char *p, const json_t *tools, json_t *calls, char *name, char *param);

static bool parse_qwen3_coder(const char *p, size_t n, const json_t *tools, json_t *calls, size_t *used)
{
    rd r = { p, n, 0 };
    char name[NAME_MAX_LEN], param[NAME_MAX_LEN];
    while (lit(&r, "<tool_call>")) {   /* a call that does not parse ends the calls */
        if (!qwen3_coder_call(&r, p, tools, calls, name, param)) break;
        *used = r.i;
        ws(&r);
    }
    return json_array_size(calls) > 0;
}

static bool qwen3_coder_call(rd *rr, const char *p, const json_t *tools, json_t *calls, char *name, char *param)
{
    rd r = *rr;
    {
        ws(&r);
        if (!lit(&r, "<function=")) return false;
        const char *gt = find_in(&r, ">");
        if (!gt || (size_t)(gt - (p + r.i)) >= NAME_MAX_LEN || gt == p + r.i) return false;
        memcpy(name, p + r.i, (size_t)(gt - (p + r.i)));
        name[gt - (p + r.i)] = 0;
        r.i = (size_t)(gt - p) + 1;
        json_t *args = json_object();
        if (!args) return false;
        for (;;) {
            ws(&r);
            if (!lit(&r, "<parameter=")) break;
            const char *pg = find_in(&r, ">");
            if (!pg || (size_t)(pg - (p + r.i)) >= NAME_MAX_LEN || pg == p + r.i) { json_decref(args); return false; }
            memcpy(param, p + r.i, (size_t)(pg - (p + r.i)));
            param[pg - (p + r.i)] = 0;
            r.i = (size_t)(pg - p) + 1;
            const char *end = find_in(&r, "</parameter>");
            if (!end) { json_decref(args); return false; }
            size_t a = r.i, b = (size_t)(end - p);
            if (a < b && p[a] == '\n') a++;   /* the value's own line: one newline each side is the layout */
            if (b > a && p[b - 1] == '\n') b--;
            const char *ty = param_type(tools, name, param);
            json_t *v = NULL;
            if (strcmp(ty, "string")) v = json_loadb(p + a, b - a, JSON_DECODE_ANY, NULL);
            if (!v) v = json_stringn(p + a, b - a);
            if (!v || json_object_set_new(args, param, v)) { json_decref(args); return false; }
            r.i = (size_t)(end - p) + strlen("</parameter>");
        }
        const size_t had = json_array_size(calls);
        const bool ok = lit(&r, "</function>") && add_call(calls, name, strlen(name), args);
        json_decref(args);
        if (!ok) return false;
        ws(&r);
        if (!lit(&r, "</tool_call>") && !at_end(&r)) {
            json_array_remove(calls, had);
            return false;
        }
    }
    *rr = r;
    return true;
}

/* ---- llama3: [<|python_tag|>]{"name": ..., "parameters": {...}} [; {...}] ---- */
static bool parse_llama3(const char *p, size_t n, const json_t *tools, json_t *calls, size_t *used)
{
    (void)tools;
    rd r = { p, n, 0 };
    ws(&r);
    lit(&r, "<|python_tag|>");
    for (;;) {
        ws(&r);
        if (at_end(&r) || r.p[r.i] != '{' || !json_call_at(&r, calls)) break;
        *used = r.i;
        ws(&r);
        lit(&r, ";");
    }
    return json_array_size(calls) > 0;
}

/* ---- mistral: [TOOL_CALLS][{...}, ...]  |  [TOOL_CALLS]NAME[CALL_ID]id[ARGS]{...} ---- */
static bool parse_mistral(const char *p, size_t n, const json_t *tools, json_t *calls, size_t *used)
{
    (void)tools;
    rd r = { p, n, 0 };
    while (lit(&r, "[TOOL_CALLS]")) {
        ws(&r);
        if (!at_end(&r) && r.p[r.i] == '[') {
            json_t *a = json_at(&r);
            size_t i;
            const json_t *o;
            bool ok = json_is_array(a) && json_array_size(a) > 0;
            const size_t had = json_array_size(calls);
            json_array_foreach(a, i, o) ok = ok && json_is_object(o) && call_from_object(o, calls);
            json_decref(a);
            if (!ok) {
                while (json_array_size(calls) > had) json_array_remove(calls, had);
                break;
            }
        } else {
            const char *args = find_in(&r, "[ARGS]"), *id = find_in(&r, "[CALL_ID]");
            if (!args) break;
            const char *name_end = id && id < args ? id : args;
            const size_t name_n = (size_t)(name_end - (p + r.i));
            const char *name = p + r.i;
            bool ok = true;
            for (size_t k = 0; k < name_n; k++) ok = ok && name[k] != '[' && name[k] != '{' && name[k] != '\n';
            if (!ok) break;
            r.i = (size_t)(args - p) + strlen("[ARGS]");
            json_t *v = json_at(&r);
            ok = json_is_object(v) && add_call(calls, name, name_n, v);
            json_decref(v);
            if (!ok) break;
        }
        *used = r.i;
        ws(&r);
    }
    return json_array_size(calls) > 0;
}

/* ---- gemma4: <|tool_call>call:NAME{key:value,...}<tool_call|> ---- */
#define GQ "<|\"|>"

static json_t *gemma_value(rd *r, int depth);

static json_t *gemma_string(rd *r)
{
    const char *end = find_in(r, GQ);
    if (!end) return NULL;
    json_t *s = json_stringn(r->p + r->i, (size_t)(end - (r->p + r->i)));
    r->i = (size_t)(end - r->p) + strlen(GQ);
    return s;
}

static json_t *gemma_value(rd *r, int depth)
{
    if (depth > 64 || at_end(r)) return NULL;
    if (lit(r, GQ)) return gemma_string(r);
    if (lit(r, "{")) {
        json_t *o = json_object();
        while (o && !lit(r, "}")) {
            if (json_object_size(o) && !lit(r, ",")) goto bad_o;
            json_t *k = NULL;
            if (lit(r, GQ)) k = gemma_string(r);
            else {
                const size_t a = r->i;
                while (r->i < r->n && r->p[r->i] != ':' && r->p[r->i] != '}' && r->p[r->i] != ',' && (unsigned char)r->p[r->i] >= 0x20) r->i++;
                if (r->i > a) k = json_stringn(r->p + a, r->i - a);
            }
            if (!k || memchr(json_string_value(k), 0, json_string_length(k)) || !lit(r, ":")) { json_decref(k); goto bad_o; }
            json_t *v = gemma_value(r, depth + 1);
            const int rc = v ? json_object_setn_new(o, json_string_value(k), json_string_length(k), v) : -1;
            json_decref(k);
            if (rc) goto bad_o;
        }
        return o;
    bad_o:
        json_decref(o);
        return NULL;
    }
    if (lit(r, "[")) {
        json_t *a = json_array();
        while (a && !lit(r, "]")) {
            json_t *v = (json_array_size(a) && !lit(r, ",")) ? NULL : gemma_value(r, depth + 1);
            if (!v || json_array_append_new(a, v)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    if (lit(r, "true")) return json_true();
    if (lit(r, "false")) return json_false();
    if (lit(r, "null") || lit(r, "None")) return json_null();
    const size_t a = r->i;   /* a number, as Python printed it */
    while (r->i < r->n && strchr("+-0123456789.eE", r->p[r->i])) r->i++;
    return r->i > a ? json_loadb(r->p + a, r->i - a, JSON_DECODE_ANY, NULL) : NULL;
}

static bool parse_gemma4(const char *p, size_t n, const json_t *tools, json_t *calls, size_t *used)
{
    (void)tools;
    rd r = { p, n, 0 };
    while (lit(&r, "<|tool_call>")) {   /* a call that does not parse ends the calls */
        const char *brace = lit(&r, "call:") ? find_in(&r, "{") : NULL;
        if (!brace) break;
        const char *name = p + r.i;
        const size_t name_n = (size_t)(brace - name);
        r.i = (size_t)(brace - p);
        json_t *args = gemma_value(&r, 0);
        const size_t had = json_array_size(calls);
        const bool ok = json_is_object(args) && add_call(calls, name, name_n, args);
        json_decref(args);
        if (!ok) break;
        if (!lit(&r, "<tool_call|>") && !at_end(&r)) {
            json_array_remove(calls, had);
            break;
        }
        *used = r.i;
        ws(&r);
    }
    return json_array_size(calls) > 0;
}

/* ---- the table: first match wins, so the more specific rows come first ---- */
static const struct sprig_toolfmt formats[] = {
    { "gemma4", NULL, "<|tool_call>call:", "<tool_call|>", "", "<|tool_call>call:", NULL, "<|tool_call>", 0, parse_gemma4 },
    { "qwen3-coder", NULL, "<tool_call>\n<function=", "</function>\n</tool_call>", "\n", "<tool_call>", "<function=", "<tool_call>", 0,
      parse_qwen3_coder },
    { "hermes", "arguments", "<tool_call>\n", "\n</tool_call>", "\n", "<tool_call>", NULL, "<tool_call>", 0, parse_hermes },
    { "mistral-v11", NULL, "[TOOL_CALLS]", "", "", "[TOOL_CALLS]", "[ARGS]", "[TOOL_CALLS]", 9, parse_mistral },
    { "mistral", "arguments", "[TOOL_CALLS][", "]", ", ", "[TOOL_CALLS]", NULL, "[TOOL_CALLS]", 9, parse_mistral },
    { "llama3", "parameters", "", "", "; ", "ipython", NULL, NULL, 0, parse_llama3 },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

const struct sprig_toolfmt *sprig_toolfmt_detect(const char *t, size_t n)
{
    for (size_t i = 0; t && i < N_FORMATS; i++)
        if (memmem(t, n, formats[i].detect, strlen(formats[i].detect)) &&
            (!formats[i].detect2 || memmem(t, n, formats[i].detect2, strlen(formats[i].detect2))))
            return &formats[i];
    return NULL;
}

const struct sprig_toolfmt *sprig_toolfmt_named(const char *name)
{
    for (size_t i = 0; name && i < N_FORMATS; i++)
        if (!strcmp(name, formats[i].name)) return &formats[i];
    return NULL;
}

const char *sprig_toolfmt_names(void) { return "gemma4, qwen3-coder, hermes, mistral-v11, mistral, llama3"; }
const char *sprig_toolfmt_name(const struct sprig_toolfmt *f) { return f->name; }
int sprig_toolfmt_id_len(const struct sprig_toolfmt *f) { return f->id_len; }

size_t sprig_toolfmt_find(const struct sprig_toolfmt *f, const char *text, size_t n, size_t *held)
{
    size_t h = n;
    if (f->start) {
        const char *hit = memmem(text, n, f->start, strlen(f->start));
        if (hit) {
            if (held) *held = n;
            return (size_t)(hit - text);
        }
        const size_t k = strlen(f->start);
        for (size_t m = k - 1 < n ? k - 1 : n; m > 0 && h == n; m--)
            if (!memcmp(text + n - m, f->start, m)) h = n - m;
        if (held) *held = h;
        return n;
    }
    /* llama3: the reply itself, when it opens with a JSON object or <|python_tag|> */
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) i++;
    static const char tag[] = "<|python_tag|>";
    if (i < n && (text[i] == '{' || (n - i >= sizeof tag - 1 && !memcmp(text + i, tag, sizeof tag - 1)))) {
        if (held) *held = n;
        return i;
    }
    if (i == n || (n - i < sizeof tag - 1 && !memcmp(text + i, tag, n - i))) h = 0;   /* nothing yet, or the tag's start */
    if (held) *held = h;
    return n;
}

/* ---- grammars for tool_choice "required" / a named function ---- */
static void gb_put(char **b, size_t *n, size_t *cap, const char *s)
{
    const size_t k = strlen(s);
    if (*n + k + 1 > *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        while (nc < *n + k + 1) nc *= 2;
        char *nb = realloc(*b, nc);
        if (!nb) return;
        *b = nb;
        *cap = nc;
    }
    memcpy(*b + *n, s, k + 1);
    *n += k;
}

/* s as the inside of a GBNF string literal */
static void gb_lit(char **b, size_t *n, size_t *cap, const char *s)
{
    char tmp[8];
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : NULL;
        if (!e && c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\x%02X", c);
            e = tmp;
        }
        const char one[2] = { (char)c, 0 };
        gb_put(b, n, cap, e ? e : one);
    }
}

sprig_status sprig_toolfmt_grammar(const struct sprig_toolfmt *f, const json_t *tools, const char *name, bool parallel, char **out,
                                   sprig_error *err)
{
    *out = NULL;
    char *b = NULL;
    size_t n = 0, cap = 0;
    size_t i;
    const json_t *t;
    int picked = 0;
    if (f->args_key) {   /* one schema: anyOf the tools' {"name": const, args_key: parameters} objects */
        json_t *any = json_array();
        json_array_foreach(tools, i, t) {
            const json_t *fn = json_object_get(t, "function");
            const char *tn = json_string_value(json_object_get(fn, "name"));
            if (!tn || (name && strcmp(tn, name))) continue;
            const json_t *params = json_object_get(fn, "parameters");
            json_t *obj = json_pack("{s:s, s:{s:{s:s}, s:O}, s:[s, s], s:b}", "type", "object", "properties", "name", "const", tn, f->args_key,
                                    json_is_object(params) && json_object_size(params) ? params : json_pack("{s:s}", "type", "object"),
                                    "required", "name", f->args_key, "additionalProperties", 0);
            if (!strcmp(f->name, "mistral"))   /* Mistral Nemo's template writes each call's 9-character id after its arguments */
                json_object_set_new(json_object_get(obj, "properties"), "id", json_pack("{s:s, s:i, s:i}", "type", "string", "minLength", 9,
                                                                                        "maxLength", 9));
            json_array_append_new(any, obj);
            picked++;
        }
        json_t *schema = json_pack("{s:o}", "anyOf", any);
        char *g = NULL;
        const sprig_status st = picked ? sprig_schema_to_gbnf(schema, &g, err) : SPRIG_OK;
        json_decref(schema);
        if (st) {
            sprig_err_prefix(err, "tools");
            return st;
        }
        if (g) {   /* the schema's root becomes `call` */
            gb_put(&b, &n, &cap, "call");
            gb_put(&b, &n, &cap, g + 4);
            free(g);
        }
    } else if (!strcmp(f->name, "mistral-v11")) {   /* NAME[ARGS]{...}: each tool's parameters as a rule of its own */
        char *rules = NULL;
        size_t rn = 0, rc = 0;
        gb_put(&b, &n, &cap, "call ::= ");
        json_array_foreach(tools, i, t) {
            const json_t *fn = json_object_get(t, "function");
            const char *tn = json_string_value(json_object_get(fn, "name"));
            if (!tn || (name && strcmp(tn, name))) continue;
            const json_t *params = json_object_get(fn, "parameters");
            json_t *own = json_is_object(params) && json_object_size(params) ? json_incref((json_t *)params) : json_pack("{s:s}", "type", "object");
            char rule_name[32], *g = NULL;
            snprintf(rule_name, sizeof rule_name, "tool%zu-args", i);
            const sprig_status st = sprig_schema_to_gbnf_rule(own, rule_name, false, &g, err);
            json_decref(own);
            if (st) {
                free(b);
                free(rules);
                sprig_err_prefix(err, "tools[%zu]", i);
                return st;
            }
            gb_put(&rules, &rn, &rc, g);
            free(g);
            gb_put(&b, &n, &cap, picked++ ? " | \"" : "\"");
            gb_lit(&b, &n, &cap, tn);
            gb_put(&b, &n, &cap, "\" (\"[CALL_ID]\" [a-zA-Z0-9]{9})? \"[ARGS]\" ");   /* Mistral Small 3.2 writes an id */
            gb_put(&b, &n, &cap, rule_name);
        }
        gb_put(&b, &n, &cap, "\n");
        if (rules) gb_put(&b, &n, &cap, rules);
        gb_put(&b, &n, &cap, sprig_schema_primitives());
        free(rules);
    } else if (!strcmp(f->name, "qwen3-coder")) {   /* <function=NAME>\n then its parameters, each <parameter=P>\nvalue\n</parameter>\n */
        gb_put(&b, &n, &cap, "call ::= ");
        json_array_foreach(tools, i, t) {
            const json_t *fn = json_object_get(t, "function");
            const char *tn = json_string_value(json_object_get(fn, "name"));
            if (!tn || (name && strcmp(tn, name))) continue;
            gb_put(&b, &n, &cap, picked ? " | \"" : "\"");
            gb_lit(&b, &n, &cap, tn);
            gb_put(&b, &n, &cap, ">\\n\" (");
            const json_t *props = json_object_get(json_object_get(fn, "parameters"), "properties");
            const char *k;
            const json_t *v;
            int np = 0;
            json_object_foreach((json_t *)props, k, v) {
                gb_put(&b, &n, &cap, np++ ? " | \"<parameter=" : "\"<parameter=");
                gb_lit(&b, &n, &cap, k);
                gb_put(&b, &n, &cap, ">\\n\" pvalue \"\\n</parameter>\\n\"");
            }
            gb_put(&b, &n, &cap, np ? ")*" : "\"\")");
            picked++;
        }
        gb_put(&b, &n, &cap, "\npvalue ::= ([^<] | \"<\" [^/])*\n");
    } else {   /* gemma4: NAME then any object in its notation */
        gb_put(&b, &n, &cap, "call ::= (");
        json_array_foreach(tools, i, t) {
            const char *tn = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
            if (!tn || (name && strcmp(tn, name))) continue;
            gb_put(&b, &n, &cap, picked++ ? " | \"" : "\"");
            gb_lit(&b, &n, &cap, tn);
            gb_put(&b, &n, &cap, "\"");
        }
        gb_put(&b, &n, &cap, ") gobj\n"
                             "gobj ::= \"{\" (gkey \":\" gval (\",\" gkey \":\" gval)*)? \"}\"\n"
                             "gkey ::= [a-zA-Z_] [a-zA-Z0-9_]*\n"
                             "gval ::= \"<|\\\"|>\" ([^<] | \"<\" [^|])* \"<|\\\"|>\" | \"-\"? [0-9]+ (\".\" [0-9]+)? | \"true\" | \"false\" | \"null\" | gobj | "
                             "\"[\" (gval (\",\" gval)*)? \"]\"\n");
    }
    if (!picked) {
        free(b);
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tool_choice: no tool named '%s' in tools", name ? name : "(any)");
    }
    gb_put(&b, &n, &cap, "root ::= \"");
    gb_lit(&b, &n, &cap, f->open);
    gb_put(&b, &n, &cap, "\" call");
    if (parallel) {
        gb_put(&b, &n, &cap, " (\"");
        if (!strcmp(f->name, "mistral")) gb_lit(&b, &n, &cap, f->sep);   /* mistral's calls share one array */
        else {   /* the others close a call and open the next */
            gb_lit(&b, &n, &cap, f->close);
            gb_lit(&b, &n, &cap, f->sep);
            gb_lit(&b, &n, &cap, f->open);
        }
        gb_put(&b, &n, &cap, "\" call)*");
    }
    gb_put(&b, &n, &cap, " \"");
    gb_lit(&b, &n, &cap, f->close);
    gb_put(&b, &n, &cap, "\"\n");
    if (!b) return sprig_err(err, SPRIG_E_NOMEM, "tools: out of memory");
    *out = b;
    return SPRIG_OK;
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\n' && p[i] != '\t' && p[i] != '\r') return false;
    return true;
}

bool sprig_toolfmt_parse(const struct sprig_toolfmt *f, const char *text, size_t n, const json_t *tools, json_t **calls, char **content,
                         size_t *content_n, size_t *head_n)
{
    *calls = json_array();
    *content = NULL;
    if (!*calls) return false;
    const size_t at = sprig_toolfmt_find(f, text, n, NULL);
    size_t used = 0, keep = n, tail = n;
    if (at < n && f->parse(text + at, n - at, tools, *calls, &used) && json_array_size(*calls)) {
        keep = at;
        while (keep && (text[keep - 1] == ' ' || text[keep - 1] == '\n' || text[keep - 1] == '\t' || text[keep - 1] == '\r')) keep--;
        tail = at + used;
        if (blank(text + tail, n - tail)) tail = n;
    } else {
        json_array_clear(*calls);
    }
    const size_t len = keep + (n - tail);
    if (!(*content = malloc(len + 1))) {
        json_decref(*calls);
        *calls = NULL;
        return false;
    }
    memcpy(*content, text, keep);
    memcpy(*content + keep, text + tail, n - tail);
    (*content)[len] = 0;
    *content_n = len;
    *head_n = keep;
    return true;
}
