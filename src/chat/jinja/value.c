/*
 * chat/jinja/value — values, the arena and the output buffer (value.h).
 */
#include "chat/jinja/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena: chunks of at least 64 KB, bump-allocated ---- */
struct chunk { struct chunk *next; size_t used, size; _Alignas(16) unsigned char mem[]; };
struct sprig_jarena { struct chunk *head; size_t total, cap; };

sprig_jarena *sprig_jarena_create(size_t cap_bytes)
{
    sprig_jarena *a = calloc(1, sizeof *a);
    if (a) a->cap = cap_bytes;
    return a;
}

void sprig_jarena_free(sprig_jarena *a)
{
    if (!a) return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *sprig_jarena_alloc(sprig_jarena *a, size_t n)
{
    if (n > a->cap) return NULL;
    n = (n + 15) & ~(size_t)15;
    struct chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        const size_t size = n > 65536 ? n : 65536;
        if (a->total + size > a->cap) return NULL;
        if (!(c = malloc(sizeof *c + size))) return NULL;
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += size;
    }
    void *p = c->mem + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

/* ---- strings, lists, dicts ---- */
const sprig_jstr *sprig_jstr_new(sprig_jarena *a, const char *p, size_t n)
{
    if (n > ((size_t)1 << 40)) return NULL;
    sprig_jstr *s = sprig_jarena_alloc(a, sizeof *s + n + 1);
    if (!s) return NULL;
    s->n = n;
    if (n) memcpy(s->p, p, n);
    s->p[n] = 0;
    return s;
}

sprig_jv sprig_jv_strn(sprig_jarena *a, const char *p, size_t n)
{
    sprig_jv v = { .k = JV_STR, .s = sprig_jstr_new(a, p, n) };
    if (!v.s) v.k = JV_UNDEF;
    return v;
}

sprig_jlist *sprig_jlist_new(sprig_jarena *a, int cap)
{
    sprig_jlist *l = sprig_jarena_alloc(a, sizeof *l);
    if (!l) return NULL;
    l->cap = cap > 4 ? cap : 4;
    if (!(l->v = sprig_jarena_alloc(a, sizeof *l->v * (size_t)l->cap))) return NULL;
    return l;
}

bool sprig_jlist_push(sprig_jarena *a, sprig_jlist *l, sprig_jv v)
{
    if (l->n == l->cap) {
        if (l->cap > (1 << 24)) return false;
        sprig_jv *nv = sprig_jarena_alloc(a, sizeof *nv * (size_t)l->cap * 2);
        if (!nv) return false;
        memcpy(nv, l->v, sizeof *nv * (size_t)l->n);
        l->v = nv;
        l->cap *= 2;
    }
    l->v[l->n++] = v;
    return true;
}

sprig_jdict *sprig_jdict_new(sprig_jarena *a, int cap)
{
    sprig_jdict *d = sprig_jarena_alloc(a, sizeof *d);
    if (!d) return NULL;
    d->cap = cap > 4 ? cap : 4;
    d->k = sprig_jarena_alloc(a, sizeof *d->k * (size_t)d->cap);
    d->v = sprig_jarena_alloc(a, sizeof *d->v * (size_t)d->cap);
    return d->k && d->v ? d : NULL;
}

sprig_jv *sprig_jdict_get(const sprig_jdict *d, const char *key, size_t n)
{
    for (int i = 0; i < d->n; i++)
        if (d->k[i].k == JV_STR && d->k[i].s->n == n && !memcmp(d->k[i].s->p, key, n)) return &d->v[i];
    return NULL;
}

bool sprig_jv_hashable(sprig_jv v)
{
    return v.k == JV_STR || v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL || v.k == JV_NONE;
}

sprig_jv *sprig_jdict_find(const sprig_jdict *d, sprig_jv key)
{
    if (key.k == JV_STR) return sprig_jdict_get(d, key.s->p, key.s->n);
    if (!sprig_jv_hashable(key)) return NULL;
    for (int i = 0; i < d->n; i++)
        if (d->k[i].k != JV_STR && sprig_jv_equal(d->k[i], key)) return &d->v[i];
    return NULL;
}

bool sprig_jdict_set(sprig_jarena *a, sprig_jdict *d, const sprig_jstr *key, sprig_jv v)
{
    const sprig_jv k = { .k = JV_STR, .s = key };
    return sprig_jdict_put(a, d, k, v);
}

bool sprig_jdict_put(sprig_jarena *a, sprig_jdict *d, sprig_jv key, sprig_jv v)
{
    sprig_jv *old = sprig_jdict_find(d, key);
    if (old) {
        *old = v;
        return true;
    }
    if (d->n == d->cap) {
        if (d->cap > (1 << 24)) return false;
        sprig_jv *nk = sprig_jarena_alloc(a, sizeof *nk * (size_t)d->cap * 2);
        sprig_jv *nv = sprig_jarena_alloc(a, sizeof *nv * (size_t)d->cap * 2);
        if (!nk || !nv) return false;
        memcpy(nk, d->k, sizeof *nk * (size_t)d->n);
        memcpy(nv, d->v, sizeof *nv * (size_t)d->n);
        d->k = nk;
        d->v = nv;
        d->cap *= 2;
    }
    d->k[d->n] = key;
    d->v[d->n++] = v;
    return true;
}

/* ---- semantics ---- */
bool sprig_jv_truthy(sprig_jv v)
{
    switch (v.k) {
    case JV_BOOL: return v.b;
    case JV_INT: return v.i != 0;
    case JV_FLOAT: return v.f != 0.0;
    case JV_STR: return v.s->n > 0;
    case JV_LIST: return v.l->n > 0;
    case JV_DICT: return v.d->n > 0;
    case JV_MACRO:
    case JV_FUNC: return true;
    default: return false;
    }
}

static bool is_num(sprig_jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }
static double num(sprig_jv v) { return v.k == JV_FLOAT ? v.f : v.k == JV_INT ? (double)v.i : v.b ? 1.0 : 0.0; }

bool sprig_jv_equal(sprig_jv a, sprig_jv b)
{
    if (is_num(a) && is_num(b)) {
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) return (a.k == JV_INT ? a.i : a.b) == (b.k == JV_INT ? b.i : b.b);
        return num(a) == num(b);
    }
    if (a.k != b.k) return false;
    switch (a.k) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return a.s->n == b.s->n && !memcmp(a.s->p, b.s->p, a.s->n);
    case JV_LIST:
        if (a.l->n != b.l->n) return false;
        for (int i = 0; i < a.l->n; i++)
            if (!sprig_jv_equal(a.l->v[i], b.l->v[i])) return false;
        return true;
    case JV_DICT:
        if (a.d->n != b.d->n) return false;
        for (int i = 0; i < a.d->n; i++) {
            const sprig_jv *o = sprig_jdict_find(b.d, a.d->k[i]);
            if (!o || !sprig_jv_equal(a.d->v[i], *o)) return false;
        }
        return true;
    case JV_MACRO: return a.m == b.m;
    case JV_FUNC: return !strcmp(a.fn, b.fn);
    default: return false;
    }
}

bool sprig_jv_less(sprig_jv a, sprig_jv b, bool *ok)
{
    *ok = true;
    if (is_num(a) && is_num(b)) {
        if (a.k == JV_INT && b.k == JV_INT) return a.i < b.i;
        return num(a) < num(b);
    }
    if (a.k == JV_STR && b.k == JV_STR) {
        const size_t n = a.s->n < b.s->n ? a.s->n : b.s->n;
        const int c = memcmp(a.s->p, b.s->p, n);
        return c < 0 || (c == 0 && a.s->n < b.s->n);
    }
    *ok = false;
    return false;
}

const char *sprig_jv_kind_name(sprig_jv v)
{
    static const char *const names[] = { "undefined", "none", "boolean", "integer", "float", "string", "list", "dict", "macro",
                                         "function" };
    return v.k == JV_DICT && v.ns ? "namespace" : names[v.k];
}

/* ---- output ---- */
void sprig_jbuf_put(sprig_jbuf *b, const char *s, size_t n)
{
    if (b->over) return;
    if (n > b->max - b->n) {
        b->over = true;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->over = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void sprig_jbuf_puts(sprig_jbuf *b, const char *s) { sprig_jbuf_put(b, s, strlen(s)); }

void sprig_jbuf_free(sprig_jbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Python's repr of a float: the shortest digits that read back, fixed
 * notation for exponents in [-4, 16), else d.ddde+XX */
static void print_float(sprig_jbuf *b, double f)
{
    char buf[64];
    if (isnan(f)) { sprig_jbuf_puts(b, "nan"); return; }
    if (isinf(f)) { sprig_jbuf_puts(b, f < 0 ? "-inf" : "inf"); return; }
    int p = 1;
    for (; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    snprintf(buf, sizeof buf, "%.*e", p - 1, f);
    char digits[32];
    int nd = 0;
    const char *q = buf;
    const bool neg = *q == '-';
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') digits[nd++] = *q;
    const int e = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    char out[64];
    int o = 0;
    if (neg) out[o++] = '-';
    if (e >= -4 && e < 16) {
        if (e < 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -e - 1; i++) out[o++] = '0';
            for (int i = 0; i < nd; i++) out[o++] = digits[i];
        } else {
            for (int i = 0; i <= e; i++) out[o++] = i < nd ? digits[i] : '0';
            out[o++] = '.';
            if (nd > e + 1)
                for (int i = e + 1; i < nd; i++) out[o++] = digits[i];
            else out[o++] = '0';
        }
        out[o] = 0;
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++) out[o++] = digits[i];
        }
        o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    sprig_jbuf_put(b, out, (size_t)o);
}

static void repr_str(sprig_jbuf *b, const sprig_jstr *s)
{
    const bool dq = memchr(s->p, '\'', s->n) && !memchr(s->p, '"', s->n);   /* Python's choice of quotes */
    const char qc = dq ? '"' : '\'';
    sprig_jbuf_put(b, &qc, 1);
    for (size_t i = 0; i < s->n; i++) {
        const unsigned char c = (unsigned char)s->p[i];
        char e[8];
        if (c == '\\' || c == (unsigned char)qc) { e[0] = '\\'; e[1] = (char)c; sprig_jbuf_put(b, e, 2); }
        else if (c == '\n') sprig_jbuf_puts(b, "\\n");
        else if (c == '\r') sprig_jbuf_puts(b, "\\r");
        else if (c == '\t') sprig_jbuf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) { snprintf(e, sizeof e, "\\x%02x", c); sprig_jbuf_puts(b, e); }
        else sprig_jbuf_put(b, (const char *)&s->p[i], 1);
    }
    sprig_jbuf_put(b, &qc, 1);
}

static void repr(sprig_jbuf *b, sprig_jv v)
{
    if (v.k == JV_STR) repr_str(b, v.s);
    else sprig_jv_print(b, v);
}

void sprig_jv_print(sprig_jbuf *b, sprig_jv v)
{
    char buf[32];
    switch (v.k) {
    case JV_UNDEF: return;
    case JV_NONE: sprig_jbuf_puts(b, "None"); return;
    case JV_BOOL: sprig_jbuf_puts(b, v.b ? "True" : "False"); return;
    case JV_INT: snprintf(buf, sizeof buf, "%lld", (long long)v.i); sprig_jbuf_puts(b, buf); return;
    case JV_FLOAT: print_float(b, v.f); return;
    case JV_STR: sprig_jbuf_put(b, v.s->p, v.s->n); return;
    case JV_LIST:
        sprig_jbuf_puts(b, "[");
        for (int i = 0; i < v.l->n; i++) {
            if (i) sprig_jbuf_puts(b, ", ");
            repr(b, v.l->v[i]);
        }
        sprig_jbuf_puts(b, "]");
        return;
    case JV_DICT:
        sprig_jbuf_puts(b, v.ns ? "<Namespace {" : "{");
        for (int i = 0; i < v.d->n; i++) {
            if (i) sprig_jbuf_puts(b, ", ");
            repr(b, v.d->k[i]);
            sprig_jbuf_puts(b, ": ");
            repr(b, v.d->v[i]);
        }
        sprig_jbuf_puts(b, v.ns ? "}>" : "}");
        return;
    case JV_MACRO: sprig_jbuf_puts(b, "<macro>"); return;
    case JV_FUNC: sprig_jbuf_puts(b, "<function "); sprig_jbuf_puts(b, v.fn); sprig_jbuf_puts(b, ">"); return;
    default: return;
    }
}

static void json_str(sprig_jbuf *b, const char *p, size_t n)
{
    sprig_jbuf_puts(b, "\"");
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)p[i];
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                      : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        char u[8];
        if (!e && c < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", c);
            e = u;
        }
        if (e) {
            sprig_jbuf_put(b, p + i - run, run);
            run = 0;
            sprig_jbuf_puts(b, e);
        } else run++;
    }
    sprig_jbuf_put(b, p + n - run, run);
    sprig_jbuf_puts(b, "\"");
}

static void newline_indent(sprig_jbuf *b, int indent, int depth)
{
    sprig_jbuf_puts(b, "\n");
    for (int i = 0; i < indent * depth; i++) sprig_jbuf_puts(b, " ");
}

void sprig_jv_tojson(sprig_jbuf *b, sprig_jv v, int indent, const char *item_sep, const char *key_sep, int depth)
{
    if (!item_sep) item_sep = indent >= 0 ? "," : ", ";
    if (!key_sep) key_sep = ": ";
    switch (v.k) {
    case JV_UNDEF:
    case JV_NONE: sprig_jbuf_puts(b, "null"); return;
    case JV_BOOL: sprig_jbuf_puts(b, v.b ? "true" : "false"); return;
    case JV_INT:
    case JV_FLOAT: sprig_jv_print(b, v); return;
    case JV_STR: json_str(b, v.s->p, v.s->n); return;
    case JV_LIST:
        sprig_jbuf_puts(b, "[");
        for (int i = 0; i < v.l->n; i++) {
            if (i) sprig_jbuf_puts(b, item_sep);
            if (indent >= 0) newline_indent(b, indent, depth + 1);
            sprig_jv_tojson(b, v.l->v[i], indent, item_sep, key_sep, depth + 1);
        }
        if (indent >= 0 && v.l->n) newline_indent(b, indent, depth);
        sprig_jbuf_puts(b, "]");
        return;
    case JV_DICT:
        sprig_jbuf_puts(b, "{");
        for (int i = 0; i < v.d->n; i++) {
            if (i) sprig_jbuf_puts(b, item_sep);
            if (indent >= 0) newline_indent(b, indent, depth + 1);
            if (v.d->k[i].k == JV_STR) json_str(b, v.d->k[i].s->p, v.d->k[i].s->n);
            else {   /* json.dumps writes other keys as strings: "1", "2.5", "true", "null" */
                sprig_jbuf_puts(b, "\"");
                sprig_jv_tojson(b, v.d->k[i], indent, item_sep, key_sep, depth + 1);
                sprig_jbuf_puts(b, "\"");
            }
            sprig_jbuf_puts(b, key_sep);
            sprig_jv_tojson(b, v.d->v[i], indent, item_sep, key_sep, depth + 1);
        }
        if (indent >= 0 && v.d->n) newline_indent(b, indent, depth);
        sprig_jbuf_puts(b, "}");
        return;
    default: sprig_jbuf_puts(b, "null"); return;
    }
}
