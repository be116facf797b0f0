/*
 * chat/jinja/lex — tokens of a chat template (lex.h).
 *
 * Two passes: the whitespace rules rewrite the text into a copy that keeps,
 * per byte, its offset in the template (for line:column), then the
 * tokenizer walks the copy: text up to the next tag, then the tag's tokens.
 * Whitespace here is ASCII's (space, \t, \n, \v, \f, \r).
 */
#include "chat/jinja/lex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
static bool digit(char c) { return c >= '0' && c <= '9'; }
static bool word(char c) { return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

typedef struct pp { char *p; int32_t *at; size_t n; } pp;

/* src's bytes [i, j) appended with their offsets */
static void put(pp *o, const char *src, size_t i, size_t j)
{
    for (size_t k = i; k < j; k++) {
        o->p[o->n] = src[k];
        o->at[o->n++] = (int32_t)k;
    }
}

/* transformers' whitespace: the trailing newline, lstrip_blocks, trim_blocks, then the generation tags */
static bool preprocess(const char *src, size_t n, pp *out)
{
    if (n && src[n - 1] == '\n') n--;
    pp a = { malloc(n + 1), malloc(sizeof(int32_t) * (n + 1)), 0 }, b = { malloc(n + 1), malloc(sizeof(int32_t) * (n + 1)), 0 };
    if (!a.p || !a.at || !b.p || !b.at) {
        free(a.p); free(a.at); free(b.p); free(b.at);
        return false;
    }
    /* lstrip_blocks: spaces and tabs from a line's start to a block or comment tag */
    for (size_t i = 0; i < n;) {
        if (i == 0 || src[i - 1] == '\n') {
            size_t j = i;
            while (j < n && (src[j] == ' ' || src[j] == '\t')) j++;
            if (j + 1 < n && src[j] == '{' && (src[j + 1] == '%' || src[j + 1] == '#' || src[j + 1] == '-')) i = j;
        }
        put(&a, src, i, i + 1);
        i++;
    }
    /* trim_blocks: the newline right after "%}", "#}" or "-}" */
    for (size_t i = 0; i < a.n; i++) {
        b.p[b.n] = a.p[i];
        b.at[b.n++] = a.at[i];
        if (a.p[i] == '}' && i > 0 && (a.p[i - 1] == '%' || a.p[i - 1] == '#' || a.p[i - 1] == '-') && i + 1 < a.n &&
            a.p[i + 1] == '\n')
            i++;
    }
    /* {% generation %} / {% endgeneration %}: removed; a '-' also removes the whitespace on its side */
    a.n = 0;
    for (size_t i = 0; i < b.n;) {
        if (b.p[i] == '{' && i + 1 < b.n && b.p[i + 1] == '%') {
            size_t j = i + 2;
            const bool l = j < b.n && b.p[j] == '-';
            if (l) j++;
            while (j < b.n && ws(b.p[j])) j++;
            size_t w = j;
            if (w + 3 <= b.n && !memcmp(b.p + w, "end", 3)) w += 3;
            if (w + 10 <= b.n && !memcmp(b.p + w, "generation", 10)) {
                j = w + 10;
                while (j < b.n && ws(b.p[j])) j++;
                const bool r = j < b.n && b.p[j] == '-';
                if (r) j++;
                if (j + 1 < b.n && b.p[j] == '%' && b.p[j + 1] == '}') {
                    if (l)
                        while (a.n && ws(a.p[a.n - 1])) a.n--;
                    j += 2;
                    if (r)
                        while (j < b.n && ws(b.p[j])) j++;
                    i = j;
                    continue;
                }
            }
        }
        a.p[a.n] = b.p[i];
        a.at[a.n++] = b.at[i];
        i++;
    }
    free(b.p);
    free(b.at);
    *out = a;
    return true;
}

typedef struct lexer {
    sprig_jarena *a;
    const char *src;
    pp t;
    size_t i;
    sprig_jtok *tok;
    int n, cap;
    size_t line_off;   /* the forward cursor for line:column */
    int line, col;
    sprig_error *err;
} lexer;

static void where(lexer *L, size_t i, int *line, int *col)
{
    const size_t off = i < L->t.n ? (size_t)L->t.at[i] : (L->t.n ? (size_t)L->t.at[L->t.n - 1] + 1 : 0);
    if (off < L->line_off) {   /* positions only move forward; restart if not */
        L->line_off = 0;
        L->line = 1;
        L->col = 1;
    }
    for (; L->line_off < off; L->line_off++) {
        if (L->src[L->line_off] == '\n') {
            L->line++;
            L->col = 1;
        } else if (((unsigned char)L->src[L->line_off] & 0xc0) != 0x80) L->col++;
    }
    *line = L->line;
    *col = L->col;
}

static sprig_status fail(lexer *L, size_t i, const char *what)
{
    int line, col;
    where(L, i, &line, &col);
    return sprig_err(L->err, SPRIG_E_FORMAT, "chat template %d:%d: %s", line, col, what);
}

static sprig_jtok *push(lexer *L, int kind, size_t at)
{
    if (L->n + 1 >= L->cap) {
        const int cap = L->cap * 2;
        sprig_jtok *t = sprig_jarena_alloc(L->a, sizeof *t * (size_t)cap);
        if (!t) return NULL;
        memcpy(t, L->tok, sizeof *t * (size_t)L->n);
        L->tok = t;
        L->cap = cap;
    }
    sprig_jtok *t = &L->tok[L->n++];
    memset(t, 0, sizeof *t);
    t->kind = (uint8_t)kind;
    where(L, at, &t->line, &t->col);
    return t;
}

/* {%- / {{- / {#-: the whitespace at the end of the text before goes (a text left empty too) */
static void strip_before(lexer *L)
{
    if (!L->n || L->tok[L->n - 1].kind != JT_TEXT) return;
    sprig_jtok *t = &L->tok[L->n - 1];
    size_t m = t->s->n;
    while (m && ws(t->s->p[m - 1])) m--;
    if (!m) L->n--;
    else if (m < t->s->n) t->s = sprig_jstr_new(L->a, t->s->p, m);
}

static void skip_ws(lexer *L)
{
    while (L->i < L->t.n && ws(L->t.p[L->i])) L->i++;
}

static bool starts(const lexer *L, const char *s)
{
    const size_t k = strlen(s);
    return L->i + k <= L->t.n && !memcmp(L->t.p + L->i, s, k);
}

/* a string literal's body up to its closing quote, escapes decoded */
static sprig_status string_lit(lexer *L, size_t at)
{
    const char q = L->t.p[L->i++];
    sprig_jbuf b = { .max = (size_t)1 << 30 };
    for (;;) {
        if (L->i >= L->t.n) { sprig_jbuf_free(&b); return fail(L, at, "a string literal is not closed"); }
        const char c = L->t.p[L->i++];
        if (c == q) break;
        if (c != '\\') { sprig_jbuf_put(&b, &c, 1); continue; }
        if (L->i >= L->t.n) { sprig_jbuf_free(&b); return fail(L, at, "a string literal ends in a backslash"); }
        const char e = L->t.p[L->i++];
        static const char from[] = "ntrbfv'\"\\", to[] = "\n\t\r\b\f\v'\"\\";
        const char *k = strchr(from, e);
        if (e && k) { sprig_jbuf_put(&b, &to[k - from], 1); continue; }
        if (e == 'x' || e == 'u') {   /* \xHH, \uHHHH: the code point as UTF-8 */
            const int len = e == 'x' ? 2 : 4;
            unsigned cp = 0;
            for (int d = 0; d < len; d++) {
                const char h = L->i < L->t.n ? L->t.p[L->i++] : 0;
                const int v = digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (v < 0) { sprig_jbuf_free(&b); return fail(L, at, "a \\x or \\u escape needs hexadecimal digits"); }
                cp = cp * 16 + (unsigned)v;
            }
            char u[4];
            int m = 0;
            if (cp < 0x80) u[m++] = (char)cp;
            else if (cp < 0x800) { u[m++] = (char)(0xc0 | cp >> 6); u[m++] = (char)(0x80 | (cp & 0x3f)); }
            else { u[m++] = (char)(0xe0 | cp >> 12); u[m++] = (char)(0x80 | ((cp >> 6) & 0x3f)); u[m++] = (char)(0x80 | (cp & 0x3f)); }
            sprig_jbuf_put(&b, u, (size_t)m);
            continue;
        }
        sprig_jbuf_free(&b);
        return fail(L, L->i - 2, "unknown escape in a string literal");
    }
    sprig_jtok *t = push(L, JT_STRING, at);
    const sprig_jstr *s = t ? sprig_jstr_new(L->a, b.n ? b.p : "", b.n) : NULL;
    const bool over = b.over;
    sprig_jbuf_free(&b);
    if (!t || !s || over) return sprig_err(L->err, SPRIG_E_NOMEM, "chat template: out of memory");
    t->s = s;
    return SPRIG_OK;
}

/* operators, longest first where one is a prefix of another */
static const char *const ops[] = { "**", "//", "<=", ">=", "==", "!=", "(", ")", "{", "}", "[", "]", ",", ".", ":", "|",
                                   "<", ">", "+", "-", "~", "*", "/", "%", "=" };

sprig_status sprig_jinja_lex(sprig_jarena *a, const char *src, size_t n, sprig_jtok **out, int *count, sprig_error *err)
{
    if (n > ((size_t)1 << 30)) return sprig_err(err, SPRIG_E_FORMAT, "chat template: %zu bytes is too long", n);
    lexer L = { .a = a, .src = src, .cap = 256, .line = 1, .col = 1, .err = err };
    if (!preprocess(src, n, &L.t) || !(L.tok = sprig_jarena_alloc(a, sizeof *L.tok * (size_t)L.cap))) {
        free(L.t.p);
        free(L.t.at);
        return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    }
    sprig_status st = SPRIG_OK;
    int depth = 0;   /* { } nesting inside an expression tag: "}}" closes only at 0 */
    bool in_tag = false;
    while (!st && L.i < L.t.n) {
        const size_t at = L.i;
        if (!in_tag) {   /* text up to the next tag */
            while (L.i < L.t.n && !(L.t.p[L.i] == '{' && L.i + 1 < L.t.n &&
                                    (L.t.p[L.i + 1] == '%' || L.t.p[L.i + 1] == '{' || L.t.p[L.i + 1] == '#')))
                L.i++;
            if (L.i > at) {
                sprig_jtok *t = push(&L, JT_TEXT, at);
                if (!t || !(t->s = sprig_jstr_new(a, L.t.p + at, L.i - at))) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
                continue;
            }
        }
        if (starts(&L, "{#")) {   /* a comment */
            L.i += 2;
            const bool sb = L.i < L.t.n && L.t.p[L.i] == '-';
            size_t e = L.i;
            while (e + 1 < L.t.n && !(L.t.p[e] == '#' && L.t.p[e + 1] == '}')) e++;
            if (e + 1 >= L.t.n) { st = fail(&L, at, "a comment is not closed with #}"); break; }
            const bool sa = e > L.i && L.t.p[e - 1] == '-';
            if (sb) strip_before(&L);
            if (!push(&L, JT_COMMENT, at)) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
            L.i = e + 2;
            if (sa) skip_ws(&L);
            in_tag = false;
            continue;
        }
        if (starts(&L, "{%") || starts(&L, "{{")) {
            const bool stmt = L.t.p[L.i + 1] == '%';
            if (in_tag) { st = fail(&L, at, "a tag opens inside another tag"); break; }
            L.i += 2;
            if (L.i < L.t.n && L.t.p[L.i] == '-') {
                L.i++;
                strip_before(&L);
            }
            if (!push(&L, stmt ? JT_OPEN_STMT : JT_OPEN_EXPR, at)) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
            in_tag = true;
            depth = 0;
            continue;
        }
        skip_ws(&L);
        if (L.i >= L.t.n) break;
        const size_t t0 = L.i;
        const bool dash = L.t.p[L.i] == '-';
        if ((dash && L.i + 2 < L.t.n && ((L.t.p[L.i + 1] == '%' && L.t.p[L.i + 2] == '}') ||
                                            (L.t.p[L.i + 1] == '}' && L.t.p[L.i + 2] == '}' && depth == 0))) ||
            starts(&L, "%}") || (starts(&L, "}}") && depth == 0)) {
            const bool stmt = L.t.p[L.i + (dash ? 1 : 0)] == '%';
            L.i += dash ? 3 : 2;
            if (!push(&L, stmt ? JT_CLOSE_STMT : JT_CLOSE_EXPR, t0)) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
            if (dash) skip_ws(&L);
            in_tag = false;
            continue;
        }
        if (!in_tag) { st = fail(&L, t0, "unexpected text"); break; }
        const char c = L.t.p[L.i];
        if (c == '\'' || c == '"') { st = string_lit(&L, t0); continue; }
        if (digit(c)) {
            size_t j = L.i;
            while (j < L.t.n && digit(L.t.p[j])) j++;
            const bool after_dot = L.n && L.tok[L.n - 1].kind == JT_OP && !strcmp(L.tok[L.n - 1].op, ".");
            const bool fl = !after_dot && j + 1 < L.t.n && L.t.p[j] == '.' && digit(L.t.p[j + 1]);
            if (fl) {
                j++;
                while (j < L.t.n && digit(L.t.p[j])) j++;
            }
            char num[64];
            if (j - L.i >= sizeof num) { st = fail(&L, t0, "a number literal is too long"); break; }
            memcpy(num, L.t.p + L.i, j - L.i);
            num[j - L.i] = 0;
            sprig_jtok *t = push(&L, fl ? JT_FLOAT : JT_INT, t0);
            if (!t) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
            errno = 0;
            if (fl) t->f = strtod(num, NULL);
            else t->i = strtoll(num, NULL, 10);
            if (errno) { st = fail(&L, t0, "a number literal is out of range"); break; }
            L.i = j;
            continue;
        }
        if (word(c)) {
            size_t j = L.i;
            while (j < L.t.n && word(L.t.p[j])) j++;
            sprig_jtok *t = push(&L, JT_NAME, t0);
            if (!t || !(t->s = sprig_jstr_new(a, L.t.p + L.i, j - L.i))) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
            L.i = j;
            continue;
        }
        size_t k = 0;
        for (; k < sizeof ops / sizeof ops[0]; k++)
            if (starts(&L, ops[k])) break;
        if (k == sizeof ops / sizeof ops[0]) {
            char what[64];
            snprintf(what, sizeof what, "unexpected character '%c'", c);
            st = fail(&L, t0, what);
            break;
        }
        sprig_jtok *t = push(&L, JT_OP, t0);
        if (!t) { st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory"); break; }
        strcpy(t->op, ops[k]);
        L.i += strlen(ops[k]);
        if (!strcmp(ops[k], "{")) depth++;
        else if (!strcmp(ops[k], "}")) depth--;
    }
    if (!st && in_tag) st = fail(&L, L.t.n, "the template ends inside a tag");
    if (!st && !push(&L, JT_EOF, L.t.n)) st = sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    if (!st) {
        L.n--;   /* the EOF stays after the count */
        *out = L.tok;
        *count = L.n;
    }
    free(L.t.p);
    free(L.t.at);
    return st;
}
