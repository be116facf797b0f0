/*
 * grammar/gbnf — see gbnf.h. A recursive-descent reader over hostile text:
 * every read is bounded by n, nesting by SPRIG_GBNF_MAX_NEST, the element
 * count by SPRIG_GBNF_MAX_ELEMS; errors name the rule and line:column.
 */
#include "grammar/gbnf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPRIG_GBNF_MAX_ELEMS 100000
#define SPRIG_GBNF_MAX_NEST 64
#define SPRIG_GBNF_MAX_REPEAT 10000
#define SPRIG_GBNF_MAX_RULES 20000

typedef struct evec { sprig_gelem *v; int n, cap; } evec;

typedef struct rule {
    char *name;
    evec e;
    bool defined;
    size_t ref_at;   /* where it was first referenced (for "undefined" errors) */
} rule;

typedef struct parser {
    const char *t;
    size_t n, i;
    rule *r;
    int n_r, cap_r;
    int total;       /* elements in all rules */
    int depth;
    const char *cur; /* the rule being read, for messages */
    sprig_error *err;
    sprig_status st;
} parser;

static void where(const parser *P, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t k = 0; k < at && k < P->n; k++) {
        if (P->t[k] == '\n') { (*line)++; *col = 1; }
        else if (((unsigned char)P->t[k] & 0xc0) != 0x80) (*col)++;
    }
}

static bool fail_at(parser *P, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail_at(parser *P, size_t at, const char *fmt, ...)
{
    if (P->st) return false;
    va_list ap;
    va_start(ap, fmt);
    P->st = sprig_verr(P->err, SPRIG_E_INVALID_ARG, fmt, ap);
    va_end(ap);
    int line, col;
    where(P, at, &line, &col);
    sprig_err_prefix(P->err, "grammar %d:%d%s%s%s", line, col, P->cur ? " (rule '" : "", P->cur ? P->cur : "", P->cur ? "')" : "");
    return false;
}

static bool oom(parser *P)
{
    if (!P->st) P->st = sprig_err(P->err, SPRIG_E_NOMEM, "grammar: out of memory");
    return false;
}

static bool push(parser *P, evec *v, uint32_t type, uint32_t value)
{
    if (P->total >= SPRIG_GBNF_MAX_ELEMS) return fail_at(P, P->i, "the grammar has more than %d elements", SPRIG_GBNF_MAX_ELEMS);
    if (v->n == v->cap) {
        const int cap = v->cap ? v->cap * 2 : 16;
        sprig_gelem *nv = realloc(v->v, sizeof *nv * (size_t)cap);
        if (!nv) return oom(P);
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = (sprig_gelem){ type, value };
    P->total++;
    return true;
}

/* the rule named name[len] (created when new); -1 on error */
static int symbol(parser *P, const char *name, size_t len, size_t at)
{
    for (int k = 0; k < P->n_r; k++)
        if (strlen(P->r[k].name) == len && !memcmp(P->r[k].name, name, len)) return k;
    if (P->n_r >= SPRIG_GBNF_MAX_RULES) return fail_at(P, at, "more than %d rules", SPRIG_GBNF_MAX_RULES), -1;
    if (P->n_r == P->cap_r) {
        const int cap = P->cap_r ? P->cap_r * 2 : 32;
        rule *nr = realloc(P->r, sizeof *nr * (size_t)cap);
        if (!nr) return oom(P), -1;
        P->r = nr;
        P->cap_r = cap;
    }
    rule *r = &P->r[P->n_r];
    memset(r, 0, sizeof *r);
    if (!(r->name = malloc(len + 1))) return oom(P), -1;
    memcpy(r->name, name, len);
    r->name[len] = 0;
    r->ref_at = at;
    return P->n_r++;
}

/* a helper rule named after the current one */
static int helper(parser *P)
{
    char name[96];
    for (int k = P->n_r;; k++) {
        snprintf(name, sizeof name, "%.80s_%d", P->cur ? P->cur : "rule", k);
        bool taken = false;
        for (int j = 0; j < P->n_r && !taken; j++) taken = !strcmp(P->r[j].name, name);
        if (!taken) break;
    }
    const int id = symbol(P, name, strlen(name), P->i);
    if (id >= 0) P->r[id].defined = true;
    return id;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* spaces, tabs, comments; newlines too when nested */
static void space(parser *P, bool newlines)
{
    while (P->i < P->n) {
        const char c = P->t[P->i];
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) P->i++;
        else if (c == '#') {
            while (P->i < P->n && P->t[P->i] != '\n') P->i++;
        } else break;
    }
}

static bool hex(parser *P, int digits, uint32_t *out)
{
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        if (P->i >= P->n) return fail_at(P, P->i, "a \\x / \\u / \\U escape needs %d hex digits", digits);
        const char c = P->t[P->i++];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail_at(P, P->i - 1, "'%c' is not a hex digit", c);
        v = v * 16 + (uint32_t)d;
    }
    if (v > 0x10FFFF) return fail_at(P, P->i, "U+%X is past Unicode's last code point", (unsigned)v);
    *out = v;
    return true;
}

/* one character of a literal or class: an escape or a UTF-8 sequence */
static bool character(parser *P, uint32_t *out)
{
    if (P->i >= P->n) return fail_at(P, P->i, "the text ends inside a literal or class");
    const unsigned char c = (unsigned char)P->t[P->i];
    if (c == '\\') {
        P->i++;
        if (P->i >= P->n) return fail_at(P, P->i, "the text ends after '\\'");
        const char e = P->t[P->i++];
        switch (e) {
        case 'n': *out = '\n'; return true;
        case 'r': *out = '\r'; return true;
        case 't': *out = '\t'; return true;
        case '\\': case '"': case '[': case ']': case '-': case '^': *out = (uint32_t)e; return true;
        case 'x': return hex(P, 2, out);
        case 'u': return hex(P, 4, out);
        case 'U': return hex(P, 8, out);
        default: return fail_at(P, P->i - 2, "unknown escape '\\%c'", e);
        }
    }
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || P->i + (size_t)len > P->n) return fail_at(P, P->i, "invalid UTF-8");
    uint32_t v = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (int k = 1; k < len; k++) {
        const unsigned char d = (unsigned char)P->t[P->i + (size_t)k];
        if ((d & 0xc0) != 0x80) return fail_at(P, P->i, "invalid UTF-8");
        v = (v << 6) | (d & 0x3f);
    }
    P->i += (size_t)len;
    *out = v;
    return true;
}

static bool alternates(parser *P, int rid, bool nested);

/* x{min,max} (max < 0: unbounded) applied to the symbol out[from..] */
static bool repeat(parser *P, evec *out, int from, int min, int max, size_t at)
{
    if (from == out->n) return fail_at(P, at, "a repetition needs something before it");
    const int len = out->n - from;
    sprig_gelem *sym = malloc(sizeof *sym * (size_t)len);
    if (!sym) return oom(P);
    memcpy(sym, out->v + from, sizeof *sym * (size_t)len);
    P->total -= len;
    out->n = from;
    bool ok = true;
    for (int k = 0; k < min && ok; k++)
        for (int j = 0; j < len && ok; j++) ok = push(P, out, sym[j].type, sym[j].value);
    if (ok && max < 0) {   /* r ::= sym r | */
        const int r = helper(P);
        ok = r >= 0;
        for (int j = 0; j < len && ok; j++) ok = push(P, &P->r[r].e, sym[j].type, sym[j].value);
        ok = ok && push(P, &P->r[r].e, GE_RULE, (uint32_t)r) && push(P, &P->r[r].e, GE_ALT, 0) && push(P, &P->r[r].e, GE_END, 0) &&
             push(P, out, GE_RULE, (uint32_t)r);
    } else if (ok && max > min) {   /* r_1 ::= sym r_2 | ... innermost first */
        int inner = -1;
        for (int k = 0; k < max - min && ok; k++) {
            const int r = helper(P);
            ok = r >= 0;
            for (int j = 0; j < len && ok; j++) ok = push(P, &P->r[r].e, sym[j].type, sym[j].value);
            if (ok && inner >= 0) ok = push(P, &P->r[r].e, GE_RULE, (uint32_t)inner);
            ok = ok && push(P, &P->r[r].e, GE_ALT, 0) && push(P, &P->r[r].e, GE_END, 0);
            inner = r;
        }
        ok = ok && push(P, out, GE_RULE, (uint32_t)inner);
    }
    free(sym);
    return ok;
}

static bool number(parser *P, int *out)
{
    const size_t at = P->i;
    long v = 0;
    while (P->i < P->n && P->t[P->i] >= '0' && P->t[P->i] <= '9') {
        v = v * 10 + (P->t[P->i++] - '0');
        if (v > SPRIG_GBNF_MAX_REPEAT) return fail_at(P, at, "a repetition bound past %d", SPRIG_GBNF_MAX_REPEAT);
    }
    if (P->i == at) return fail_at(P, at, "expected a number");
    *out = (int)v;
    return true;
}

static bool sequence(parser *P, evec *out, bool nested)
{
    int last = -1;   /* where the last symbol starts */
    while (P->i < P->n && !P->st) {
        const size_t at = P->i;
        const char c = P->t[P->i];
        if (c == '"') {
            P->i++;
            last = out->n;
            while (P->i < P->n && P->t[P->i] != '"') {
                uint32_t cp;
                if (!character(P, &cp) || !push(P, out, GE_CHAR, cp)) return false;
            }
            if (P->i >= P->n) return fail_at(P, at, "a literal is not closed");
            P->i++;
        } else if (c == '[') {
            P->i++;
            last = out->n;
            uint32_t start = GE_CHAR;
            if (P->i < P->n && P->t[P->i] == '^') {
                P->i++;
                start = GE_CHAR_NOT;
            }
            while (P->i < P->n && P->t[P->i] != ']') {
                uint32_t cp;
                if (!character(P, &cp) || !push(P, out, out->n == last ? start : GE_CHAR_ALT, cp)) return false;
                if (P->i + 1 < P->n && P->t[P->i] == '-' && P->t[P->i + 1] != ']') {
                    P->i++;
                    uint32_t hi;
                    if (!character(P, &hi)) return false;
                    if (hi < cp) return fail_at(P, at, "a class range runs backwards");
                    if (!push(P, out, GE_CHAR_RNG_UPPER, hi)) return false;
                }
            }
            if (P->i >= P->n) return fail_at(P, at, "a character class is not closed");
            if (out->n == last) return fail_at(P, at, "an empty character class");
            P->i++;
        } else if (word_char(c)) {
            const size_t s = P->i;
            while (P->i < P->n && word_char(P->t[P->i])) P->i++;
            const int r = symbol(P, P->t + s, P->i - s, s);
            if (r < 0) return false;
            last = out->n;
            if (!push(P, out, GE_RULE, (uint32_t)r)) return false;
        } else if (c == '(') {
            P->i++;
            if (++P->depth > SPRIG_GBNF_MAX_NEST) return fail_at(P, at, "groups nest deeper than %d", SPRIG_GBNF_MAX_NEST);
            space(P, true);
            const int r = helper(P);
            if (r < 0 || !alternates(P, r, true)) return false;
            P->depth--;
            if (P->i >= P->n || P->t[P->i] != ')') return fail_at(P, at, "a group is not closed");
            P->i++;
            last = out->n;
            if (!push(P, out, GE_RULE, (uint32_t)r)) return false;
        } else if (c == '.') {
            P->i++;
            last = out->n;
            if (!push(P, out, GE_ANY, 0)) return false;
        } else if (c == '*' || c == '+' || c == '?') {
            P->i++;
            if (last < 0) return fail_at(P, at, "'%c' needs something before it", c);
            if (!repeat(P, out, last, c == '+' ? 1 : 0, c == '?' ? 1 : -1, at)) return false;
            last = -1;
        } else if (c == '{') {
            P->i++;
            if (last < 0) return fail_at(P, at, "'{' needs something before it");
            space(P, false);
            int lo = 0, hi = -1;
            if (!number(P, &lo)) return false;
            space(P, false);
            if (P->i < P->n && P->t[P->i] == ',') {
                P->i++;
                space(P, false);
                if (P->i < P->n && P->t[P->i] != '}' && !number(P, &hi)) return false;
                if (hi >= 0 && hi < lo) return fail_at(P, at, "{%d,%d}: the bounds run backwards", lo, hi);
            } else hi = lo;
            space(P, false);
            if (P->i >= P->n || P->t[P->i] != '}') return fail_at(P, at, "expected '}'");
            P->i++;
            if (!repeat(P, out, last, lo, hi, at)) return false;
            last = -1;
        } else if (c == '<') {
            return fail_at(P, at, "token references (<...>) are not supported");
        } else break;
        space(P, nested);
    }
    return !P->st;
}

static bool alternates(parser *P, int rid, bool nested)
{
    evec seq = { 0 };
    if (!sequence(P, &seq, nested)) goto bad;
    for (;;) {
        evec *e = &P->r[rid].e;   /* P->r may move while a sequence adds helper rules */
        for (int k = 0; k < seq.n; k++)
            if (!push(P, e, seq.v[k].type, seq.v[k].value)) goto bad;
        P->total -= seq.n;
        seq.n = 0;
        if (P->i < P->n && P->t[P->i] == '|') {
            P->i++;
            space(P, true);
            if (!push(P, &P->r[rid].e, GE_ALT, 0)) goto bad;
            if (!sequence(P, &seq, nested)) goto bad;
        } else break;
    }
    free(seq.v);
    return push(P, &P->r[rid].e, GE_END, 0);
bad:
    free(seq.v);
    return false;
}

/* ---- checks ---- */
static bool nullable_alt(const parser *P, const sprig_gelem *e, const bool *nullable)
{
    for (; e->type != GE_END && e->type != GE_ALT; e++) {
        if (e->type != GE_RULE) return false;
        if (!nullable[e->value]) return false;
    }
    return true;
}

/* can rule r reach rule `target` before consuming a character? (depth-first, seen marks) */
static bool reaches(const parser *P, int r, int target, const bool *nullable, char *seen)
{
    if (seen[r]) return false;
    seen[r] = 1;
    const sprig_gelem *e = P->r[r].e.v;
    for (;;) {
        for (; e->type != GE_END && e->type != GE_ALT; e++) {
            if (e->type != GE_RULE) break;
            if ((int)e->value == target || reaches(P, (int)e->value, target, nullable, seen)) return true;
            if (!nullable[e->value]) break;
        }
        while (e->type != GE_END && e->type != GE_ALT) e++;
        if (e->type == GE_END) return false;
        e++;
    }
}

static bool check(parser *P)
{
    for (int k = 0; k < P->n_r; k++)
        if (!P->r[k].defined) {
            P->cur = NULL;
            return fail_at(P, P->r[k].ref_at, "rule '%s' is used but not defined", P->r[k].name);
        }
    bool *nullable = calloc((size_t)P->n_r, sizeof *nullable);
    char *seen = malloc((size_t)P->n_r);
    if (!nullable || !seen) {
        free(nullable);
        free(seen);
        return oom(P);
    }
    for (bool changed = true; changed;) {   /* fixed point */
        changed = false;
        for (int k = 0; k < P->n_r; k++) {
            if (nullable[k]) continue;
            const sprig_gelem *e = P->r[k].e.v;
            for (;;) {
                if (nullable_alt(P, e, nullable)) { nullable[k] = changed = true; break; }
                while (e->type != GE_END && e->type != GE_ALT) e++;
                if (e->type == GE_END) break;
                e++;
            }
        }
    }
    bool ok = true;
    for (int k = 0; k < P->n_r && ok; k++) {
        memset(seen, 0, (size_t)P->n_r);
        if (reaches(P, k, k, nullable, seen)) {
            P->cur = NULL;
            ok = fail_at(P, P->r[k].ref_at, "rule '%s' is left-recursive (it can reach itself before reading a character)", P->r[k].name);
        }
    }
    free(nullable);
    free(seen);
    return ok;
}

void sprig_gbnf_free(sprig_gbnf *g)
{
    if (!g) return;
    for (int k = 0; k < g->n_rules; k++) free(g->names[k]);
    free(g->names);
    free(g->rule);
    free(g->e);
    free(g);
}

sprig_status sprig_gbnf_parse(const char *text, size_t n, sprig_gbnf **out, sprig_error *err)
{
    *out = NULL;
    parser P = { .t = text ? text : "", .n = text ? n : 0, .err = err };
    for (;;) {
        space(&P, true);
        if (P.i >= P.n) break;
        const size_t at = P.i;
        while (P.i < P.n && word_char(P.t[P.i])) P.i++;
        if (P.i == at) {
            fail_at(&P, at, "expected a rule name");
            break;
        }
        const int r = symbol(&P, P.t + at, P.i - at, at);
        if (r < 0) break;
        P.cur = P.r[r].name;
        if (P.r[r].defined) {
            fail_at(&P, at, "rule '%s' is defined twice", P.r[r].name);
            break;
        }
        P.r[r].defined = true;
        P.r[r].ref_at = at;
        space(&P, false);
        if (P.n - P.i < 3 || memcmp(P.t + P.i, "::=", 3)) {
            fail_at(&P, P.i, "expected '::='");
            break;
        }
        P.i += 3;
        space(&P, true);
        if (!alternates(&P, r, false)) break;
        if (P.i < P.n && P.t[P.i] != '\n') {
            fail_at(&P, P.i, "unexpected '%c'", P.t[P.i]);
            break;
        }
        P.cur = NULL;
    }
    int root = -1;
    for (int k = 0; k < P.n_r && !P.st; k++)
        if (!strcmp(P.r[k].name, "root")) root = k;
    if (!P.st && root < 0) {
        P.cur = NULL;
        fail_at(&P, P.n, "the grammar has no 'root' rule");
    }
    if (!P.st) check(&P);
    sprig_gbnf *g = P.st ? NULL : calloc(1, sizeof *g);
    if (!P.st && !g) oom(&P);
    if (g) {
        g->n_rules = P.n_r;
        g->root = root;
        g->e = malloc(sizeof *g->e * (size_t)(P.total ? P.total : 1));
        g->rule = malloc(sizeof *g->rule * (size_t)P.n_r);
        g->names = calloc((size_t)P.n_r, sizeof *g->names);
        if (!g->e || !g->rule || !g->names) oom(&P);
        for (int k = 0; !P.st && k < P.n_r; k++) {
            g->rule[k] = g->n_e;
            memcpy(g->e + g->n_e, P.r[k].e.v, sizeof *g->e * (size_t)P.r[k].e.n);
            g->n_e += P.r[k].e.n;
            g->names[k] = P.r[k].name;
            P.r[k].name = NULL;
        }
    }
    for (int k = 0; k < P.n_r; k++) {
        free(P.r[k].name);
        free(P.r[k].e.v);
    }
    free(P.r);
    if (P.st) {
        sprig_gbnf_free(g);
        return P.st;
    }
    *out = g;
    return SPRIG_OK;
}
