/*
 * grammar/schema — see schema.h. Each schema node becomes a rule; rules
 * with the same body are shared; $defs become rules named after them.
 */
#include "grammar/schema.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 64
#define MAX_RULES 4096
#define MAX_BOUND 10000

typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void printf_(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* s[n] as a GBNF literal "..." */
static void literal(sbuf *b, const char *s, size_t n)
{
    puts_(b, "\"");
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[3] = { '\\', (char)c, 0 };
            puts_(b, e);
        } else if (c == '\n') puts_(b, "\\n");
        else if (c == '\r') puts_(b, "\\r");
        else if (c == '\t') puts_(b, "\\t");
        else if (c < 0x20 || c == 0x7f) printf_(b, "\\x%02X", c);
        else put(b, (const char *)&c, 1);
    }
    puts_(b, "\"");
}

typedef struct conv {
    sbuf rules;          /* "name ::= body\n" lines */
    char **names, **bodies;
    int n;
    const json_t *root;
    const char *prefix;  /* before every rule name this schema makes ("" alone) */
    sprig_error *err;
    sprig_status st;
    char path[256];      /* where in the schema, for messages */
} conv;

static bool fail(conv *C, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(conv *C, const char *fmt, ...)
{
    if (C->st) return false;
    va_list ap;
    va_start(ap, fmt);
    C->st = sprig_verr(C->err, SPRIG_E_INVALID_ARG, fmt, ap);
    va_end(ap);
    sprig_err_prefix(C->err, "schema %s", C->path[0] ? C->path : "(root)");
    return false;
}

/* a rule with this body: an existing one with the same body, else a new one named after hint; its name into out */
static bool rule(conv *C, const char *hint, const char *body, char *out, size_t cap)
{
    for (int i = 0; i < C->n; i++)
        if (!strcmp(C->bodies[i], body)) {
            snprintf(out, cap, "%s", C->names[i]);
            return true;
        }
    if (C->n >= MAX_RULES) return fail(C, "more than %d rules", MAX_RULES);
    char name[96];
    size_t k = (size_t)snprintf(name, 32, "%.24s", C->prefix);
    for (const char *p = hint; *p && k < 60; p++) name[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '-';
    name[k] = 0;
    if (!k) snprintf(name, sizeof name, "r");
    if (k == strlen(C->prefix)) snprintf(name + k, sizeof name - k, "r");
    char final_name[96];
    snprintf(final_name, sizeof final_name, "%s", name);
    static const char *const reserved[] = { "root", "space", "boolean", "null", "integral-part", "decimal-part", "integer", "uinteger",
                                            "number", "char", "string", "value", "object", "array", NULL };
    for (int suffix = 1;; suffix++) {
        bool taken = false;
        for (int i = 0; reserved[i] && !taken; i++) taken = !strcmp(final_name, reserved[i]);
        for (int i = 0; i < C->n && !taken; i++) taken = !strcmp(C->names[i], final_name);
        if (!taken) break;
        snprintf(final_name, sizeof final_name, "%.80s-%d", name, suffix);
    }
    char **nn = realloc(C->names, sizeof *nn * (size_t)(C->n + 1)), **nb = nn ? realloc(C->bodies, sizeof *nb * (size_t)(C->n + 1)) : NULL;
    if (nn) C->names = nn;
    if (nb) C->bodies = nb;
    if (!nn || !nb || !(C->names[C->n] = strdup(final_name)) || !(C->bodies[C->n] = strdup(body))) {
        C->st = sprig_err(C->err, SPRIG_E_NOMEM, "schema: out of memory");
        return false;
    }
    C->n++;
    snprintf(out, cap, "%s", final_name);
    return true;
}

static const char *PRIMITIVES =
    "space ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"
    "boolean ::= (\"true\" | \"false\") space\n"
    "null ::= \"null\" space\n"
    "integral-part ::= [0] | [1-9] [0-9]{0,15}\n"
    "decimal-part ::= [0-9]{1,16}\n"
    "integer ::= \"-\"? integral-part space\n"
    "uinteger ::= integral-part space\n"
    "number ::= \"-\"? integral-part (\".\" decimal-part)? ([eE] [-+]? integral-part)? space\n"
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\" space\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space\n"
    "array ::= \"[\" space ( value (\",\" space value)* )? \"]\" space\n";

static bool visit(conv *C, const json_t *s, const char *hint, int depth, char *out, size_t cap);

const char *sprig_schema_primitives(void) { return PRIMITIVES; }

static bool bound(conv *C, const json_t *s, const char *key, long *v)
{
    const json_t *x = json_object_get(s, key);
    if (!x) return true;
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > MAX_BOUND)
        return fail(C, "'%s' must be an integer in [0, %d]", key, MAX_BOUND);
    *v = (long)json_integer_value(x);
    return true;
}

/* a JSON value as a literal (enum / const) */
static bool value_literal(conv *C, sbuf *b, const json_t *v)
{
    char *j = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!j) return fail(C, "an enum or const value cannot be written");
    literal(b, j, strlen(j));
    free(j);
    puts_(b, " space");
    return true;
}

static void path_push(conv *C, size_t *saved, const char *fmt, const char *arg)
{
    *saved = strlen(C->path);
    const size_t room = sizeof C->path - *saved;
    snprintf(C->path + *saved, room, fmt, *saved ? "." : "", arg);
}

static bool object_rule(conv *C, const json_t *s, const char *hint, int depth, sbuf *body)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required"), *add = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) return fail(C, "'properties' must be an object");
    if (req && !json_is_array(req)) return fail(C, "'required' must be an array");
    if (!props || !json_object_size(props)) {   /* a map: any keys, values by additionalProperties */
        if (json_is_object(add) && json_object_size(add)) {
            char v[96];
            if (!visit(C, add, hint, depth + 1, v, sizeof v)) return false;
            printf_(body, "\"{\" space ( string \":\" space %s (\",\" space string \":\" space %s)* )? \"}\" space", v, v);
        } else if (json_is_false(add)) puts_(body, "\"{\" space \"}\" space");
        else puts_(body, "object");
        return true;
    }
    const char *k;
    const json_t *p;
    int n = 0, n_req = 0;
    char (*kv)[128] = calloc(json_object_size(props), sizeof *kv);
    bool *is_req = calloc(json_object_size(props), sizeof *is_req);
    if (!kv || !is_req) {
        free(kv);
        free(is_req);
        C->st = sprig_err(C->err, SPRIG_E_NOMEM, "schema: out of memory");
        return false;
    }
    bool ok = true;
    json_object_foreach((json_t *)props, k, p) {
        size_t i;
        const json_t *r;
        json_array_foreach(req, i, r) if (json_is_string(r) && !strcmp(json_string_value(r), k)) is_req[n] = true;
        n_req += is_req[n];
        size_t saved;
        path_push(C, &saved, "%sproperties.%s", k);
        char v[96], kvname[160];
        ok = visit(C, p, k, depth + 1, v, sizeof v);
        if (ok) {   /* "key" : value as its own rule */
            sbuf kb = { 0 };
            json_t *ks = json_string(k);
            char *kj = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
            json_decref(ks);
            if (kj) literal(&kb, kj, strlen(kj));
            free(kj);
            printf_(&kb, " space \":\" space %s", v);
            snprintf(kvname, sizeof kvname, "%s-%s-kv", hint, k);
            ok = !kb.oom && rule(C, kvname, kb.p, kv[n], sizeof kv[n]);
            free(kb.p);
        }
        C->path[saved] = 0;
        if (!ok) break;
        n++;
    }
    if (ok) {
        puts_(body, "\"{\" space ");
        if (n_req) {
            bool first = true;
            for (int i = 0; i < n; i++)
                if (is_req[i]) {
                    printf_(body, "%s%s ", first ? "" : "\",\" space ", kv[i]);
                    first = false;
                }
            for (int i = 0; i < n; i++)
                if (!is_req[i]) printf_(body, "(\",\" space %s)? ", kv[i]);
        } else {   /* no required key: the first present one starts without a comma */
            puts_(body, "( ");
            for (int i = 0; i < n; i++) {
                printf_(body, "%s%s ", i ? "| " : "", kv[i]);
                for (int j = i + 1; j < n; j++) printf_(body, "(\",\" space %s)? ", kv[j]);
            }
            puts_(body, ")? ");
        }
        if (add && !json_is_false(add)) {   /* more keys after the known ones */
            char v[96] = "value";
            if (json_is_object(add) && json_object_size(add) && !visit(C, add, hint, depth + 1, v, sizeof v)) ok = false;
            if (ok) printf_(body, "(\",\" space string \":\" space %s)* ", v);
        }
        puts_(body, "\"}\" space");
    }
    free(kv);
    free(is_req);
    return ok;
}

static bool typed(conv *C, const json_t *s, const char *type, const char *hint, int depth, sbuf *body)
{
    if (!strcmp(type, "object")) return object_rule(C, s, hint, depth, body);
    if (!strcmp(type, "array")) {
        long lo = 0, hi = -1;
        if (!bound(C, s, "minItems", &lo) || !bound(C, s, "maxItems", &hi)) return false;
        if (hi >= 0 && hi < lo) return fail(C, "maxItems < minItems");
        const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
        if (json_is_array(prefix)) {   /* a tuple */
            puts_(body, "\"[\" space ");
            size_t i;
            const json_t *x;
            json_array_foreach(prefix, i, x) {
                char v[96];
                if (!visit(C, x, hint, depth + 1, v, sizeof v)) return false;
                printf_(body, "%s%s ", i ? "\",\" space " : "", v);
            }
            puts_(body, "\"]\" space");
            return true;
        }
        char v[96] = "value";
        if (items && !json_is_boolean(items) && !visit(C, items, hint, depth + 1, v, sizeof v)) return false;
        puts_(body, "\"[\" space ");
        if (hi == 0) {
            puts_(body, "\"]\" space");
            return true;
        }
        if (lo == 0) puts_(body, "( ");
        printf_(body, "%s ", v);
        const long more_lo = lo > 1 ? lo - 1 : 0;
        if (hi < 0) printf_(body, "(\",\" space %s){%ld,} ", v, more_lo);
        else printf_(body, "(\",\" space %s){%ld,%ld} ", v, more_lo, hi - 1);
        if (lo == 0) puts_(body, ")? ");
        puts_(body, "\"]\" space");
        return true;
    }
    if (!strcmp(type, "string")) {
        long lo = 0, hi = -1;
        if (!bound(C, s, "minLength", &lo) || !bound(C, s, "maxLength", &hi)) return false;
        if (hi >= 0 && hi < lo) return fail(C, "maxLength < minLength");
        if (json_object_get(s, "pattern")) return fail(C, "'pattern' is not supported");
        if (!lo && hi < 0) puts_(body, "string");
        else if (hi < 0) printf_(body, "\"\\\"\" char{%ld,} \"\\\"\" space", lo);
        else printf_(body, "\"\\\"\" char{%ld,%ld} \"\\\"\" space", lo, hi);
        return true;
    }
    if (!strcmp(type, "integer")) {
        const json_t *mn = json_object_get(s, "minimum");
        puts_(body, json_is_number(mn) && json_number_value(mn) >= 0 ? "uinteger" : "integer");
        return true;
    }
    if (!strcmp(type, "number")) { puts_(body, "number"); return true; }
    if (!strcmp(type, "boolean")) { puts_(body, "boolean"); return true; }
    if (!strcmp(type, "null")) { puts_(body, "null"); return true; }
    return fail(C, "unknown type '%s'", type);
}

/* the rule for schema s into out (a rule name or a primitive) */
static bool visit(conv *C, const json_t *s, const char *hint, int depth, char *out, size_t cap)
{
    if (depth > MAX_NEST) return fail(C, "the schema nests deeper than %d", MAX_NEST);
    if (json_is_true(s)) {
        snprintf(out, cap, "value");
        return true;
    }
    if (!json_is_object(s)) return fail(C, "a schema must be an object");
    static const char *const refused[] = { "allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas", NULL };
    for (int i = 0; refused[i]; i++)
        if (json_object_get(s, refused[i])) return fail(C, "'%s' is not supported", refused[i]);
    sbuf body = { 0 };
    bool ok = true;
    const json_t *ref = json_object_get(s, "$ref"), *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    const json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    const json_t *type = json_object_get(s, "type");
    if (ref) {
        const char *r = json_string_value(ref);
        const char *name = r && !strncmp(r, "#/$defs/", 8) ? r + 8 : r && !strncmp(r, "#/definitions/", 14) ? r + 14 : NULL;
        const json_t *defs = json_object_get(C->root, r && r[2] == '$' ? "$defs" : "definitions");
        const json_t *target = name ? json_object_get(defs, name) : NULL;
        if (!target) return fail(C, "'$ref' %s: only #/$defs/NAME and #/definitions/NAME of this schema are supported", r ? r : "(not a string)");
        char rname[96];
        snprintf(rname, sizeof rname, "%.24sref-%.60s", C->prefix, name);
        for (char *p = rname; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) *p = '-';
        for (int i = 0; i < C->n; i++)   /* defined (or being defined): the name, so recursion closes */
            if (!strcmp(C->names[i], rname)) {
                snprintf(out, cap, "%s", rname);
                return true;
            }
        char placeholder[128];
        snprintf(placeholder, sizeof placeholder, "\"\" # %s", rname);
        if (!rule(C, rname, placeholder, out, cap)) return false;   /* a placeholder body, replaced below */
        const int at = C->n - 1;
        char v[96];
        if (!visit(C, target, name, depth + 1, v, sizeof v)) return false;
        free(C->bodies[at]);
        if (!(C->bodies[at] = strdup(v))) {
            C->st = sprig_err(C->err, SPRIG_E_NOMEM, "schema: out of memory");
            return false;
        }
        return true;
    } else if (en) {
        if (!json_is_array(en) || !json_array_size(en)) return fail(C, "'enum' must be a non-empty array");
        puts_(&body, "(");
        size_t i;
        const json_t *x;
        json_array_foreach(en, i, x) {
            if (i) puts_(&body, " |");
            puts_(&body, " ");
            if (!value_literal(C, &body, x)) ok = false;
        }
        puts_(&body, " )");
    } else if (cn) {
        ok = value_literal(C, &body, cn);
    } else if (any) {
        if (!json_is_array(any) || !json_array_size(any)) return fail(C, "'anyOf' / 'oneOf' must be a non-empty array");
        size_t i;
        const json_t *x;
        json_array_foreach(any, i, x) {
            char v[96];
            if (!(ok = visit(C, x, hint, depth + 1, v, sizeof v))) break;
            printf_(&body, "%s%s", i ? " | " : "", v);
        }
    } else if (json_is_string(type)) {
        ok = typed(C, s, json_string_value(type), hint, depth, &body);
    } else if (json_is_array(type)) {
        size_t i;
        const json_t *x;
        json_array_foreach(type, i, x) {
            if (!json_is_string(x)) return fail(C, "'type' entries must be strings");
            sbuf one = { 0 };
            ok = typed(C, s, json_string_value(x), hint, depth, &one);
            char v[96];
            ok = ok && !one.oom && rule(C, hint, one.p, v, sizeof v);
            free(one.p);
            if (!ok) break;
            printf_(&body, "%s%s", i ? " | " : "", v);
        }
    } else if (type) {
        return fail(C, "'type' must be a string or an array of strings");
    } else if (json_object_get(s, "properties")) {
        ok = object_rule(C, s, hint, depth, &body);
    } else {
        snprintf(out, cap, "value");
        return true;
    }
    if (body.oom) {
        free(body.p);
        C->st = sprig_err(C->err, SPRIG_E_NOMEM, "schema: out of memory");
        return false;
    }
    /* a body that is one primitive's name needs no rule of its own */
    static const char *const prims[] = { "string", "integer", "uinteger", "number", "boolean", "null", "value", "object", "array", NULL };
    bool prim = false;
    for (int i = 0; ok && prims[i] && !prim; i++) prim = !strcmp(body.p, prims[i]);
    if (ok && prim) snprintf(out, cap, "%s", body.p);
    else if (ok) ok = rule(C, hint, body.p, out, cap);
    free(body.p);
    return ok;
}

sprig_status sprig_schema_to_gbnf(const json_t *schema, char **out, sprig_error *err)
{
    return sprig_schema_to_gbnf_rule(schema, "root", true, out, err);
}

sprig_status sprig_schema_to_gbnf_rule(const json_t *schema, const char *name, bool primitives, char **out, sprig_error *err)
{
    *out = NULL;
    const bool root = !strcmp(name, "root");
    conv C = { .root = schema, .err = err, .prefix = root ? "" : name };
    char prefixed[64];
    snprintf(prefixed, sizeof prefixed, "%.40s-", name);
    if (!root) C.prefix = prefixed;
    char top[96] = "object";
    if (schema && !visit(&C, schema, root ? "root" : "", 0, top, sizeof top) && !C.st)
        C.st = sprig_err(err, SPRIG_E_INTERNAL, "schema: conversion failed");
    sbuf b = { 0 };
    if (!C.st) {
        printf_(&b, "%s ::= %s\n", name, top);
        for (int i = 0; i < C.n; i++) {
            puts_(&b, C.names[i]);
            puts_(&b, " ::= ");
            puts_(&b, C.bodies[i]);
            puts_(&b, "\n");
        }
        if (primitives) puts_(&b, PRIMITIVES);
        if (b.oom) C.st = sprig_err(err, SPRIG_E_NOMEM, "schema: out of memory");
    }
    for (int i = 0; i < C.n; i++) {
        free(C.names[i]);
        free(C.bodies[i]);
    }
    free(C.names);
    free(C.bodies);
    free(C.rules.p);
    if (C.st) {
        free(b.p);
        return C.st;
    }
    *out = b.p;
    return SPRIG_OK;
}
