/*
 * chat/jinja/builtins — the filters, tests, string / dict / list methods and
 * global functions chat templates call, as tables of (name, function):
 * adding one is adding a row.
 *
 * Semantics are Python's (Jinja2 in transformers): strip() and | trim
 * remove Python's whitespace (str.isspace, Unicode included); strip(chars)
 * removes only those characters; split() without a separator splits on
 * runs of whitespace; tojson is transformers' (json.dumps with
 * ensure_ascii=False, ", " / ": " separators, indent). Strings are UTF-8
 * and index by code point.
 */
#include "chat/jinja/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN(name) static bool name(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out)

static bool str_out(sprig_jeval *E, const char *p, size_t n, sprig_jv *out)
{
    *out = sprig_jv_strn(E->a, n ? p : "", n);
    return out->k == JV_STR || sprig_jeval_oom(E);
}

/* a rendered buffer as the result (freed); over its limit: an error naming `what` */
static bool buf_out(sprig_jeval *E, const sprig_jnode *at, sprig_jbuf *b, const char *what, sprig_jv *out)
{
    const bool ok = !b->over && str_out(E, b->n ? b->p : "", b->n, out);
    if (b->over) sprig_jeval_fail(E, at, "%s: the result passes the output limit", what);
    sprig_jbuf_free(b);
    return ok;
}

static bool need_str(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, const char *what)
{
    if (v.k == JV_STR) return true;
    return sprig_jeval_fail(E, at, "%s needs a string, not %s", what, sprig_jv_kind_name(v));
}

/* ---- Python whitespace (str.isspace) over UTF-8 ---- */
static unsigned decode(const char *p, size_t n, size_t i, size_t *len)
{
    const unsigned char c = (unsigned char)p[i];
    if (c < 0x80 || i + 1 >= n) { *len = 1; return c; }
    if ((c & 0xe0) == 0xc0) { *len = 2; return (unsigned)(c & 0x1f) << 6 | ((unsigned char)p[i + 1] & 0x3f); }
    if ((c & 0xf0) == 0xe0 && i + 2 < n) {
        *len = 3;
        return (unsigned)(c & 0x0f) << 12 | (unsigned)((unsigned char)p[i + 1] & 0x3f) << 6 | ((unsigned char)p[i + 2] & 0x3f);
    }
    *len = (c & 0xf8) == 0xf0 && i + 3 < n ? 4 : 1;
    return 0xfffd;
}

static bool py_space(unsigned c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* is the code point at p[i] one of chars (NULL: whitespace)? */
static bool strip_hit(const char *p, size_t n, size_t i, size_t *len, const sprig_jstr *chars)
{
    const unsigned c = decode(p, n, i, len);
    if (!chars) return py_space(c);
    for (size_t k = 0; k < chars->n;) {
        size_t l;
        if (decode(chars->p, chars->n, k, &l) == c && l == *len && !memcmp(chars->p + k, p + i, l)) return true;
        k += l;
    }
    return false;
}

static bool strip_impl(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out, bool l, bool r)
{
    if (!need_str(E, at, self, "strip")) return false;
    const sprig_jv *c = sprig_jarg(A, 0, "chars");
    const sprig_jstr *chars = c && c->k == JV_STR ? c->s : NULL;
    const char *p = self.s->p;
    size_t b = 0, e = self.s->n, len;
    while (l && b < e && strip_hit(p, e, b, &len, chars)) b += len;
    while (r && e > b) {
        size_t s = e - 1;
        while (s > b && ((unsigned char)p[s] & 0xc0) == 0x80) s--;
        if (!strip_hit(p, e, s, &len, chars)) break;
        e = s;
    }
    return str_out(E, p + b, e - b, out);
}

FN(m_strip) { return strip_impl(E, at, self, A, out, true, true); }
FN(m_lstrip) { return strip_impl(E, at, self, A, out, true, false); }
FN(m_rstrip) { return strip_impl(E, at, self, A, out, false, true); }

/* ASCII case changes (other letters kept): 0 lower, 1 upper, 2 title (each run of letters
 * capitalised, as str.title), 3 capitalize (the first character up, the rest down) */
static bool map_case(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, sprig_jv *out, int mode)
{
    if (!need_str(E, at, self, "a case change")) return false;
    char *t = sprig_jarena_alloc(E->a, self.s->n + 1);
    if (!t) return sprig_jeval_oom(E);
    bool prev_letter = false;
    for (size_t i = 0; i < self.s->n; i++) {
        char c = self.s->p[i];
        const bool lo = c >= 'a' && c <= 'z', up = c >= 'A' && c <= 'Z';
        bool to_up = false, to_lo = false;
        if (mode == 0) to_lo = up;
        else if (mode == 1) to_up = lo;
        else if (mode == 2) { to_up = lo && !prev_letter; to_lo = up && prev_letter; }
        else { to_up = lo && i == 0; to_lo = up && i > 0; }
        if (to_up) c = (char)(c - 32);
        if (to_lo) c = (char)(c + 32);
        t[i] = c;
        prev_letter = lo || up || (unsigned char)c >= 0x80;
    }
    return str_out(E, t, self.s->n, out);
}

FN(m_lower) { return map_case(E, at, self, out, 0); }
FN(m_upper) { return map_case(E, at, self, out, 1); }
FN(m_title) { return map_case(E, at, self, out, 2); }
FN(m_capitalize) { return map_case(E, at, self, out, 3); }

static bool prefix_test(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out, bool end)
{
    if (!need_str(E, at, self, end ? "endswith" : "startswith")) return false;
    const sprig_jv *p = sprig_jarg(A, 0, NULL);
    if (!p) return sprig_jeval_fail(E, at, "%s needs an argument", end ? "endswith" : "startswith");
    const int n = p->k == JV_LIST ? p->l->n : 1;
    for (int i = 0; i < n; i++) {
        const sprig_jv x = p->k == JV_LIST ? p->l->v[i] : *p;
        if (!need_str(E, at, x, end ? "endswith" : "startswith")) return false;
        if (x.s->n <= self.s->n && !memcmp(self.s->p + (end ? self.s->n - x.s->n : 0), x.s->p, x.s->n)) {
            *out = sprig_jv_bool(true);
            return true;
        }
    }
    *out = sprig_jv_bool(false);
    return true;
}

FN(m_startswith) { return prefix_test(E, at, self, A, out, false); }
FN(m_endswith) { return prefix_test(E, at, self, A, out, true); }

static const char *find(const sprig_jstr *h, size_t from, const sprig_jstr *n)
{
    if (!n->n) return h->p + from;
    for (size_t i = from; i + n->n <= h->n; i++)
        if (!memcmp(h->p + i, n->p, n->n)) return h->p + i;
    return NULL;
}

FN(m_split)
{
    if (!need_str(E, at, self, "split")) return false;
    const sprig_jv *sep = sprig_jarg(A, 0, "sep"), *mx = sprig_jarg(A, 1, "maxsplit");
    int64_t max = mx && mx->k == JV_INT ? mx->i : -1;
    sprig_jlist *l = sprig_jlist_new(E->a, 4);
    if (!l) return sprig_jeval_oom(E);
    const char *p = self.s->p;
    const size_t n = self.s->n;
    if (!sep || sep->k == JV_NONE) {   /* runs of whitespace; no empty strings */
        size_t i = 0, len;
        for (;;) {
            while (i < n && py_space(decode(p, n, i, &len))) i += len;
            if (i >= n) break;
            size_t j = i;
            if (max == 0) j = n;
            else
                while (j < n && !py_space(decode(p, n, j, &len))) j += len;
            sprig_jv s = sprig_jv_strn(E->a, p + i, j - i);
            if (s.k != JV_STR || !sprig_jlist_push(E->a, l, s)) return sprig_jeval_oom(E);
            if (max > 0) max--;
            i = j;
        }
    } else {
        if (!need_str(E, at, *sep, "split's separator")) return false;
        if (!sep->s->n) return sprig_jeval_fail(E, at, "split: empty separator");
        size_t i = 0;
        for (;;) {
            const char *hit = max == 0 ? NULL : find(self.s, i, sep->s);
            const size_t j = hit ? (size_t)(hit - p) : n;
            sprig_jv s = sprig_jv_strn(E->a, p + i, j - i);
            if (s.k != JV_STR || !sprig_jlist_push(E->a, l, s)) return sprig_jeval_oom(E);
            if (!hit) break;
            if (max > 0) max--;
            i = j + sep->s->n;
        }
    }
    *out = sprig_jv_list(l);
    return true;
}

static bool replace_impl(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jv *o, const sprig_jv *nw, const sprig_jv *cnt,
                         sprig_jv *out)
{
    if (!need_str(E, at, self, "replace") || !o || !nw || !need_str(E, at, *o, "replace") || !need_str(E, at, *nw, "replace")) return false;
    int64_t left = cnt && cnt->k == JV_INT && cnt->i >= 0 ? cnt->i : INT64_MAX;
    sprig_jbuf b = { .max = E->lim.max_output };
    size_t i = 0;
    if (!o->s->n) {   /* Python: the new text before every character and at the end */
        size_t len;
        while (left-- > 0 && i <= self.s->n) {
            sprig_jbuf_put(&b, nw->s->p, nw->s->n);
            if (i == self.s->n) { i++; break; }
            decode(self.s->p, self.s->n, i, &len);
            sprig_jbuf_put(&b, self.s->p + i, len);
            i += len;
        }
        if (i < self.s->n) sprig_jbuf_put(&b, self.s->p + i, self.s->n - i);
    } else {
        for (const char *h; left > 0 && (h = find(self.s, i, o->s)); left--) {
            sprig_jbuf_put(&b, self.s->p + i, (size_t)(h - self.s->p) - i);
            sprig_jbuf_put(&b, nw->s->p, nw->s->n);
            i = (size_t)(h - self.s->p) + o->s->n;
        }
        sprig_jbuf_put(&b, self.s->p + i, self.s->n - i);
    }
    return buf_out(E, at, &b, "replace", out);
}

/* str.format: {} (numbered in turn), {N} and {name} replaced by str(argument), {{ and }} by braces; a format spec
 * or conversion (after ':' or '!') is refused by name */
FN(m_format)
{
    sprig_jbuf b = { .max = E->lim.max_output };
    const char *p = self.s->p, *end = p + self.s->n;
    int next = 0, numbering = 0;
    while (p < end && !E->st) {
        if ((*p == '{' || *p == '}') && p + 1 < end && p[1] == *p) {
            sprig_jbuf_put(&b, p, 1);
            p += 2;
            continue;
        }
        if (*p == '}') { sprig_jeval_fail(E, at, "format: a single '}' in the format string"); break; }
        if (*p != '{') {
            const char *q = p;
            while (q < end && *q != '{' && *q != '}') q++;
            sprig_jbuf_put(&b, p, (size_t)(q - p));
            p = q;
            continue;
        }
        const char *q = ++p;
        while (q < end && *q != '}' && *q != ':' && *q != '!' && *q != '{') q++;
        if (q >= end || *q != '}') {
            sprig_jeval_fail(E, at, q < end && (*q == ':' || *q == '!') ? "format: format specs and conversions are not supported"
                                                                          : "format: a '{' is not closed");
            break;
        }
        const sprig_jv *v = NULL;
        const int mode = q == p ? 1 : *p >= '0' && *p <= '9' ? 2 : 0;   /* Python refuses {} beside {N} */
        if (mode && numbering && mode != numbering) { sprig_jeval_fail(E, at, "format: cannot switch between {} and {N} numbering"); break; }
        if (mode) numbering = mode;
        if (q == p) v = sprig_jarg(A, next++, NULL);
        else if (*p >= '0' && *p <= '9') {
            int idx = 0;
            for (const char *r = p; r < q && idx < 1000000; r++) idx = *r >= '0' && *r <= '9' ? idx * 10 + (*r - '0') : -1000000;
            v = idx >= 0 ? sprig_jarg(A, idx, NULL) : NULL;
        } else {
            char name[64];
            const size_t n = (size_t)(q - p) < sizeof name ? (size_t)(q - p) : sizeof name - 1;
            memcpy(name, p, n);
            name[n] = 0;
            v = sprig_jarg(A, -1, name);
        }
        if (!v) { sprig_jeval_fail(E, at, "format: no argument for '{%.*s}'", (int)(q - p), p); break; }
        sprig_jv s = sprig_jeval_str(E, *v);
        if (!E->st) sprig_jbuf_put(&b, s.s->p, s.s->n);
        p = q + 1;
    }
    if (E->st) { sprig_jbuf_free(&b); return false; }
    return buf_out(E, at, &b, "format", out);
}

FN(m_replace) { return replace_impl(E, at, self, sprig_jarg(A, 0, "old"), sprig_jarg(A, 1, "new"), sprig_jarg(A, 2, "count"), out); }

FN(m_find)
{
    const sprig_jv *n = sprig_jarg(A, 0, NULL);
    if (!need_str(E, at, self, "find") || !n || !need_str(E, at, *n, "find")) return false;
    const char *h = find(self.s, 0, n->s);
    int64_t cp = -1;
    if (h) {
        cp = 0;
        for (const char *q = self.s->p; q < h; q++) cp += ((unsigned char)*q & 0xc0) != 0x80;
    }
    *out = sprig_jv_int(cp);
    return true;
}

FN(m_count_str)
{
    const sprig_jv *n = sprig_jarg(A, 0, NULL);
    if (!need_str(E, at, self, "count") || !n || !need_str(E, at, *n, "count")) return false;
    int64_t c = 0;
    if (!n->s->n) c = 1 + (int64_t)self.s->n;
    else
        for (const char *h = self.s->p; (h = find(self.s, (size_t)(h - self.s->p), n->s)); h += n->s->n) c++;
    *out = sprig_jv_int(c);
    return true;
}

FN(m_join_str)   /* "sep".join(list) */
{
    const sprig_jv *l = sprig_jarg(A, 0, NULL);
    if (!l || l->k != JV_LIST) return sprig_jeval_fail(E, at, "join needs a list");
    sprig_jbuf b = { .max = E->lim.max_output };
    for (int i = 0; i < l->l->n; i++) {
        if (i) sprig_jbuf_put(&b, self.s->p, self.s->n);
        sprig_jv_print(&b, l->l->v[i]);
    }
    return buf_out(E, at, &b, "join", out);
}

FN(m_splitlines)
{
    if (!need_str(E, at, self, "splitlines")) return false;
    sprig_jlist *l = sprig_jlist_new(E->a, 4);
    if (!l) return sprig_jeval_oom(E);
    size_t i = 0;
    while (i < self.s->n) {
        size_t j = i;
        while (j < self.s->n && self.s->p[j] != '\n' && self.s->p[j] != '\r') j++;
        sprig_jv s = sprig_jv_strn(E->a, self.s->p + i, j - i);
        if (s.k != JV_STR || !sprig_jlist_push(E->a, l, s)) return sprig_jeval_oom(E);
        if (j < self.s->n && self.s->p[j] == '\r' && j + 1 < self.s->n && self.s->p[j + 1] == '\n') j++;
        i = j + 1;
    }
    *out = sprig_jv_list(l);
    return true;
}

/* ---- dict methods ---- */
static bool dict_list(sprig_jeval *E, sprig_jv self, sprig_jv *out, int what)   /* 0 items, 1 keys, 2 values */
{
    sprig_jlist *l = sprig_jlist_new(E->a, self.d->n);
    if (!l) return sprig_jeval_oom(E);
    for (int i = 0; i < self.d->n; i++) {
        sprig_jv k = self.d->k[i], v = k;
        if (what == 0) {
            sprig_jlist *p = sprig_jlist_new(E->a, 2);
            if (!p || !sprig_jlist_push(E->a, p, k) || !sprig_jlist_push(E->a, p, self.d->v[i])) return sprig_jeval_oom(E);
            v = sprig_jv_list(p);
        } else if (what == 2) v = self.d->v[i];
        if (!sprig_jlist_push(E->a, l, v)) return sprig_jeval_oom(E);
    }
    *out = sprig_jv_list(l);
    return true;
}

FN(m_items) { (void)at; (void)A; return dict_list(E, self, out, 0); }
FN(m_keys) { (void)at; (void)A; return dict_list(E, self, out, 1); }
FN(m_values) { (void)at; (void)A; return dict_list(E, self, out, 2); }

FN(m_get)
{
    const sprig_jv *k = sprig_jarg(A, 0, "key"), *d = sprig_jarg(A, 1, "default");
    if (!k) return sprig_jeval_fail(E, at, "get needs a key");
    const sprig_jv *v = sprig_jdict_find(self.d, *k);
    *out = v ? *v : d ? *d : sprig_jv_none();
    return true;
}

/* ---- list methods ---- */
FN(m_append)
{
    const sprig_jv *v = sprig_jarg(A, 0, NULL);
    if (!v) return sprig_jeval_fail(E, at, "append needs an argument");
    if (!sprig_jlist_push(E->a, self.l, *v)) return sprig_jeval_oom(E);
    *out = sprig_jv_none();
    return true;
}

FN(m_index)
{
    const sprig_jv *v = sprig_jarg(A, 0, NULL);
    for (int i = 0; v && i < self.l->n; i++)
        if (sprig_jv_equal(self.l->v[i], *v)) { *out = sprig_jv_int(i); return true; }
    return sprig_jeval_fail(E, at, "list.index: the value is not in the list");
}

/* ---- filters ---- */
static int64_t length_of(sprig_jv v)
{
    int64_t n = 0;
    if (v.k == JV_STR)
        for (size_t i = 0; i < v.s->n; i++) n += ((unsigned char)v.s->p[i] & 0xc0) != 0x80;
    return v.k == JV_LIST ? v.l->n : v.k == JV_DICT ? v.d->n : n;
}

FN(f_length)
{
    if (self.k != JV_STR && self.k != JV_LIST && self.k != JV_DICT && self.k != JV_UNDEF)
        return sprig_jeval_fail(E, at, "length of %s", sprig_jv_kind_name(self));
    *out = sprig_jv_int(length_of(self));
    return true;
}

FN(f_trim)
{
    sprig_jv s = sprig_jeval_str(E, self);
    if (E->st) return false;
    return strip_impl(E, at, s, A, out, true, true);
}

FN(f_string) { (void)at; (void)A; *out = sprig_jeval_str(E, self); return !E->st; }

FN(f_tojson)
{
    const sprig_jv *ind = sprig_jarg(A, 0, "indent");
    const int indent = ind && ind->k == JV_INT && ind->i >= 0 && ind->i <= 64 ? (int)ind->i : -1;
    const sprig_jv *sep = sprig_jarg(A, -1, "separators");   /* (item, key), as json.dumps takes them */
    const char *item_sep = NULL, *key_sep = NULL;
    if (sep && sep->k != JV_NONE) {
        if (sep->k != JV_LIST || sep->l->n != 2 || sep->l->v[0].k != JV_STR || sep->l->v[1].k != JV_STR)
            return sprig_jeval_fail(E, at, "tojson: separators must be a pair of strings");
        item_sep = sep->l->v[0].s->p;
        key_sep = sep->l->v[1].s->p;
    }
    sprig_jbuf b = { .max = E->lim.max_output };
    sprig_jv_tojson(&b, self, indent, item_sep, key_sep, 0);
    return buf_out(E, at, &b, "tojson", out);
}

FN(f_list);

FN(f_join)
{
    const sprig_jv *sep = sprig_jarg(A, 0, "d"), *attr = sprig_jarg(A, 1, "attribute");
    if (self.k == JV_UNDEF) return str_out(E, "", 0, out);
    sprig_jv chars;
    if (self.k == JV_STR) {   /* a string joins its characters */
        sprig_jargs none = { 0 };
        if (!f_list(E, at, self, &none, &chars)) return false;
        self = chars;
    }
    if (self.k != JV_LIST) return sprig_jeval_fail(E, at, "join needs a list, not %s", sprig_jv_kind_name(self));
    const sprig_jlist *items = self.l;
    sprig_jbuf b = { .max = E->lim.max_output };
    for (int i = 0; i < items->n; i++) {
        if (i && sep && sep->k == JV_STR) sprig_jbuf_put(&b, sep->s->p, sep->s->n);
        sprig_jv v = items->v[i];
        if (attr && attr->k == JV_STR) v = sprig_jeval_getattr(E, v, attr->s->p, attr->s->n);
        sprig_jv_print(&b, v);
    }
    return buf_out(E, at, &b, "join", out);
}

FN(f_default)
{
    (void)at;
    const sprig_jv *d = sprig_jarg(A, 0, "default_value"), *boolean = sprig_jarg(A, 1, "boolean");
    const bool use = self.k == JV_UNDEF || (boolean && sprig_jv_truthy(*boolean) && !sprig_jv_truthy(self));
    if (!use) { *out = self; return true; }
    if (d) { *out = *d; return true; }
    return str_out(E, "", 0, out);
}

static bool first_last(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, sprig_jv *out, bool last)
{
    if (self.k == JV_LIST) {
        *out = self.l->n ? self.l->v[last ? self.l->n - 1 : 0] : sprig_jv_undef();
        return true;
    }
    if (self.k == JV_STR) {
        if (!self.s->n) { *out = sprig_jv_undef(); return true; }
        size_t b = 0, e = self.s->n;
        if (last) {
            b = e - 1;
            while (b > 0 && ((unsigned char)self.s->p[b] & 0xc0) == 0x80) b--;
        } else {
            e = 1;
            while (e < self.s->n && ((unsigned char)self.s->p[e] & 0xc0) == 0x80) e++;
        }
        return str_out(E, self.s->p + b, e - b, out);
    }
    if (self.k == JV_UNDEF) { *out = self; return true; }
    return sprig_jeval_fail(E, at, "first / last of %s", sprig_jv_kind_name(self));
}

FN(f_first) { (void)A; return first_last(E, at, self, out, false); }
FN(f_last) { (void)A; return first_last(E, at, self, out, true); }
FN(f_upper) { (void)A; sprig_jv s = sprig_jeval_str(E, self); return !E->st && map_case(E, at, s, out, 1); }
FN(f_lower) { (void)A; sprig_jv s = sprig_jeval_str(E, self); return !E->st && map_case(E, at, s, out, 0); }
FN(f_title) { (void)A; sprig_jv s = sprig_jeval_str(E, self); return !E->st && map_case(E, at, s, out, 2); }
FN(f_capitalize) { (void)A; sprig_jv s = sprig_jeval_str(E, self); return !E->st && map_case(E, at, s, out, 3); }
FN(f_replace)
{
    sprig_jv s = sprig_jeval_str(E, self);
    return !E->st && replace_impl(E, at, s, sprig_jarg(A, 0, "old"), sprig_jarg(A, 1, "new"), sprig_jarg(A, 2, "count"), out);
}
FN(f_safe)
{
    (void)at; (void)A;
    *out = sprig_jeval_str(E, self);
    out->safe = true;
    return !E->st;
}

sprig_jv sprig_jeval_escape(sprig_jeval *E, sprig_jv v)
{
    if (v.k == JV_STR && v.safe) return v;
    const sprig_jv s = sprig_jeval_str(E, v);
    if (E->st) return sprig_jv_undef();
    sprig_jbuf b = { .max = E->lim.max_output };
    size_t run = 0;
    for (size_t i = 0; i < s.s->n; i++) {
        const char c = s.s->p[i];
        const char *r = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;" : c == '\'' ? "&#39;" : NULL;
        if (!r) { run++; continue; }
        sprig_jbuf_put(&b, s.s->p + i - run, run);
        run = 0;
        sprig_jbuf_puts(&b, r);
    }
    sprig_jbuf_put(&b, s.s->p + s.s->n - run, run);
    sprig_jv out = sprig_jv_undef();
    if (!buf_out(E, NULL, &b, "escape", &out)) return sprig_jv_undef();
    out.safe = true;
    return out;
}

FN(f_escape) { (void)at; (void)A; *out = sprig_jeval_escape(E, self); return !E->st; }

FN(f_items)
{
    if (self.k == JV_UNDEF) { sprig_jlist *l = sprig_jlist_new(E->a, 1); *out = sprig_jv_list(l); return l || sprig_jeval_oom(E); }
    if (self.k != JV_DICT) return sprig_jeval_fail(E, at, "items needs a dict, not %s", sprig_jv_kind_name(self));
    return m_items(E, at, self, A, out);
}

FN(f_list)
{
    (void)A;
    if (self.k == JV_LIST) { *out = self; return true; }
    if (self.k == JV_DICT) return dict_list(E, self, out, 1);
    if (self.k == JV_STR) {
        sprig_jlist *l = sprig_jlist_new(E->a, (int)self.s->n);
        if (!l) return sprig_jeval_oom(E);
        for (size_t i = 0; i < self.s->n;) {
            size_t j = i + 1;
            while (j < self.s->n && ((unsigned char)self.s->p[j] & 0xc0) == 0x80) j++;
            sprig_jv c = sprig_jv_strn(E->a, self.s->p + i, j - i);
            if (c.k != JV_STR || !sprig_jlist_push(E->a, l, c)) return sprig_jeval_oom(E);
            i = j;
        }
        *out = sprig_jv_list(l);
        return true;
    }
    return sprig_jeval_fail(E, at, "list of %s", sprig_jv_kind_name(self));
}

FN(f_int)
{
    (void)at;
    const sprig_jv *d = sprig_jarg(A, 0, "default");
    if (self.k == JV_INT) *out = self;
    else if (self.k == JV_BOOL) *out = sprig_jv_int(self.b);
    else if (self.k == JV_FLOAT && isfinite(self.f)) *out = sprig_jv_int((int64_t)self.f);
    else if (self.k == JV_STR) {
        char *end;
        const long long v = strtoll(self.s->p, &end, 10);
        *out = end != self.s->p && !*end ? sprig_jv_int(v) : d ? *d : sprig_jv_int(0);
    } else *out = d ? *d : sprig_jv_int(0);
    return !E->st;
}

FN(f_float)
{
    (void)at; (void)A;
    if (self.k == JV_FLOAT) *out = self;
    else if (self.k == JV_INT || self.k == JV_BOOL) *out = sprig_jv_float(self.k == JV_INT ? (double)self.i : self.b);
    else if (self.k == JV_STR) {
        char *end;
        const double v = strtod(self.s->p, &end);
        *out = sprig_jv_float(end != self.s->p && !*end ? v : 0.0);
    } else *out = sprig_jv_float(0.0);
    return !E->st;
}

FN(f_abs)
{
    (void)A;
    if (self.k == JV_INT) *out = sprig_jv_int(self.i < 0 && self.i != INT64_MIN ? -self.i : self.i);
    else if (self.k == JV_FLOAT) *out = sprig_jv_float(fabs(self.f));
    else return sprig_jeval_fail(E, at, "abs of %s", sprig_jv_kind_name(self));
    return true;
}

FN(f_reverse)
{
    (void)A;
    if (self.k == JV_LIST) {
        sprig_jlist *l = sprig_jlist_new(E->a, self.l->n);
        if (!l) return sprig_jeval_oom(E);
        for (int i = self.l->n - 1; i >= 0; i--) sprig_jlist_push(E->a, l, self.l->v[i]);
        *out = sprig_jv_list(l);
        return true;
    }
    if (self.k == JV_STR) {
        char *t = sprig_jarena_alloc(E->a, self.s->n + 1);
        if (!t) return sprig_jeval_oom(E);
        size_t o = 0;
        for (size_t e = self.s->n; e > 0;) {
            size_t b = e - 1;
            while (b > 0 && ((unsigned char)self.s->p[b] & 0xc0) == 0x80) b--;
            memcpy(t + o, self.s->p + b, e - b);
            o += e - b;
            e = b;
        }
        return str_out(E, t, o, out);
    }
    return sprig_jeval_fail(E, at, "reverse of %s", sprig_jv_kind_name(self));
}

FN(f_indent)
{
    const sprig_jv *w = sprig_jarg(A, 0, "width"), *first = sprig_jarg(A, 1, "first"), *blank = sprig_jarg(A, 2, "blank");
    sprig_jv s = sprig_jeval_str(E, self);
    if (E->st) return false;
    char pad[256];
    size_t np = 4;
    if (w && w->k == JV_INT) np = w->i < 0 ? 0 : w->i > 255 ? 255 : (size_t)w->i;
    else if (w && w->k == JV_STR) np = w->s->n < 255 ? w->s->n : 255;
    if (w && w->k == JV_STR) memcpy(pad, w->s->p, np);
    else memset(pad, ' ', np);
    sprig_jbuf b = { .max = E->lim.max_output };
    size_t i = 0;
    bool line0 = true;
    while (i <= s.s->n) {
        size_t j = i;
        while (j < s.s->n && s.s->p[j] != '\n') j++;
        const bool empty = j == i;
        if ((!line0 || (first && sprig_jv_truthy(*first))) && (!empty || (blank && sprig_jv_truthy(*blank)))) sprig_jbuf_put(&b, pad, np);
        sprig_jbuf_put(&b, s.s->p + i, j - i);
        if (j >= s.s->n) break;
        sprig_jbuf_put(&b, "\n", 1);
        i = j + 1;
        line0 = false;
    }
    return buf_out(E, at, &b, "indent", out);
}

FN(f_unique)
{
    (void)A;
    if (self.k != JV_LIST) return sprig_jeval_fail(E, at, "unique needs a list");
    sprig_jlist *l = sprig_jlist_new(E->a, self.l->n);
    if (!l) return sprig_jeval_oom(E);
    for (int i = 0; i < self.l->n; i++) {
        bool seen = false;
        for (int j = 0; j < l->n && !seen; j++) seen = sprig_jv_equal(l->v[j], self.l->v[i]);
        if (!seen) sprig_jlist_push(E->a, l, self.l->v[i]);
    }
    *out = sprig_jv_list(l);
    return true;
}

/* what select / reject / map / min / max iterate: nothing when the value is false (Jinja's `if value:`), else
 * what a for loop takes from it */
static bool items_of(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, sprig_jlist **out)
{
    if (sprig_jv_truthy(v)) return sprig_jeval_iter(E, at, v, out);
    return (*out = sprig_jlist_new(E->a, 1)) != NULL || sprig_jeval_oom(E);
}

/* tests by name, applied to an item (select / reject / selectattr / rejectattr) */
static bool apply_test(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, const sprig_jargs *A, int first, bool *hit)
{
    const sprig_jv *tn = sprig_jarg(A, first, NULL);
    if (!tn) { *hit = sprig_jv_truthy(v); return true; }
    if (tn->k != JV_STR) return sprig_jeval_fail(E, at, "select: the test name must be a string");
    sprig_jfn fn = sprig_jinja_test(tn->s->p);
    if (!fn) return sprig_jeval_fail(E, at, "unknown test '%s'", tn->s->p);
    const sprig_jargs rest = { .n = A->n - first - 1 > 0 ? A->n - first - 1 : 0, .v = A->v + first + 1 };
    sprig_jv r;
    if (!fn(E, at, v, &rest, &r)) return false;
    *hit = r.b;
    return true;
}

static bool select_impl(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out, bool attr, bool keep)
{
    sprig_jlist *in;
    if (!items_of(E, at, self, &in)) return false;
    const sprig_jv *an = attr ? sprig_jarg(A, 0, NULL) : NULL;
    if (attr && (!an || an->k != JV_STR)) return sprig_jeval_fail(E, at, "selectattr needs an attribute name");
    sprig_jlist *l = sprig_jlist_new(E->a, in->n);
    if (!l) return sprig_jeval_oom(E);
    for (int i = 0; i < in->n; i++) {
        sprig_jv v = attr ? sprig_jeval_getattr(E, in->v[i], an->s->p, an->s->n) : in->v[i];
        bool hit = false;
        if (!apply_test(E, at, v, A, attr ? 1 : 0, &hit)) return false;
        if (hit == keep && !sprig_jlist_push(E->a, l, in->v[i])) return sprig_jeval_oom(E);
    }
    *out = sprig_jv_list(l);
    return true;
}

FN(f_select) { return select_impl(E, at, self, A, out, false, true); }
FN(f_reject) { return select_impl(E, at, self, A, out, false, false); }
FN(f_selectattr) { return select_impl(E, at, self, A, out, true, true); }
FN(f_rejectattr) { return select_impl(E, at, self, A, out, true, false); }

FN(f_map)
{
    sprig_jlist *in;
    if (!items_of(E, at, self, &in)) return false;
    const sprig_jv *attr = sprig_jarg(A, -1, "attribute"), *dflt = sprig_jarg(A, -1, "default"), *fname = sprig_jarg(A, 0, NULL);
    sprig_jfn fn = NULL;
    if (!attr) {
        if (!fname || fname->k != JV_STR) return sprig_jeval_fail(E, at, "map needs attribute= or a filter name");
        if (!(fn = sprig_jinja_filter(fname->s->p))) return sprig_jeval_fail(E, at, "unknown filter '%s'", fname->s->p);
    } else if (attr->k != JV_STR) return sprig_jeval_fail(E, at, "map: attribute must be a string");
    sprig_jlist *l = sprig_jlist_new(E->a, in->n);
    if (!l) return sprig_jeval_oom(E);
    const sprig_jargs rest = { .n = A->n > 1 ? A->n - 1 : 0, .v = A->v + 1 };
    for (int i = 0; i < in->n; i++) {
        sprig_jv v;
        if (attr) {
            v = sprig_jeval_getattr(E, in->v[i], attr->s->p, attr->s->n);
            if (v.k == JV_UNDEF && dflt) v = *dflt;
        } else if (!fn(E, at, in->v[i], &rest, &v)) return false;
        if (!sprig_jlist_push(E->a, l, v)) return sprig_jeval_oom(E);
    }
    *out = sprig_jv_list(l);
    return true;
}

FN(f_sum)
{
    (void)A;
    if (self.k != JV_LIST) return sprig_jeval_fail(E, at, "sum needs a list");
    int64_t si = 0;
    double sf = 0;
    bool fl = false;
    for (int i = 0; i < self.l->n; i++) {
        const sprig_jv v = self.l->v[i];
        if (v.k == JV_FLOAT) { fl = true; sf += v.f; }
        else if (v.k == JV_INT || v.k == JV_BOOL) si += v.k == JV_INT ? v.i : v.b;
        else return sprig_jeval_fail(E, at, "sum of %s", sprig_jv_kind_name(v));
    }
    *out = fl ? sprig_jv_float(sf + (double)si) : sprig_jv_int(si);
    return true;
}

/* min / max (case_sensitive=false, attribute=none): the first smallest / largest item; undefined when empty */
static bool extreme(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out, bool largest)
{
    sprig_jlist *in;
    if (!items_of(E, at, self, &in)) return false;
    const sprig_jv *cs = sprig_jarg(A, 0, "case_sensitive"), *attr = sprig_jarg(A, 1, "attribute");
    const bool sens = cs && sprig_jv_truthy(*cs);
    if (attr && attr->k != JV_STR) return sprig_jeval_fail(E, at, "%s: attribute must be a string", largest ? "max" : "min");
    *out = sprig_jv_undef();
    sprig_jv best_key = sprig_jv_undef();
    for (int i = 0; i < in->n; i++) {
        sprig_jv k = attr ? sprig_jeval_getattr(E, in->v[i], attr->s->p, attr->s->n) : in->v[i];
        if (!sens && k.k == JV_STR && !map_case(E, at, k, &k, 0)) return false;
        bool ok = true;
        if (i && !(largest ? sprig_jv_less(best_key, k, &ok) : sprig_jv_less(k, best_key, &ok)) && ok) continue;
        if (!ok) return sprig_jeval_fail(E, at, "%s: cannot compare %s with %s", largest ? "max" : "min", sprig_jv_kind_name(k), sprig_jv_kind_name(best_key));
        best_key = k;
        *out = in->v[i];
    }
    return true;
}

FN(f_min) { return extreme(E, at, self, A, out, false); }
FN(f_max) { return extreme(E, at, self, A, out, true); }

FN(f_wordcount)
{
    sprig_jv words;
    sprig_jargs none = { 0 };
    (void)A;
    sprig_jv s = sprig_jeval_str(E, self);
    if (E->st || !m_split(E, at, s, &none, &words)) return false;
    *out = sprig_jv_int(words.l->n);
    return true;
}

/* dict | dictsort(case_sensitive=false, by='key', reverse=false): its (key, value) pairs, sorted */
FN(f_dictsort)
{
    if (self.k != JV_DICT) return sprig_jeval_fail(E, at, "dictsort needs a dict, not %s", sprig_jv_kind_name(self));
    const sprig_jv *cs = sprig_jarg(A, 0, "case_sensitive"), *by = sprig_jarg(A, 1, "by"), *rev = sprig_jarg(A, 2, "reverse");
    const bool sens = cs && sprig_jv_truthy(*cs), reverse = rev && sprig_jv_truthy(*rev);
    const bool by_value = by && by->k == JV_STR && !strcmp(by->s->p, "value");
    sprig_jv pairs;
    if (!dict_list(E, self, &pairs, 0)) return false;
    sprig_jv *v = pairs.l->v;
    for (int i = 1; i < pairs.l->n; i++) {   /* insertion sort: stable, as Python's sorted */
        const sprig_jv x = v[i];
        int j = i;
        for (; j > 0; j--) {
            sprig_jv a = v[j - 1].l->v[by_value ? 1 : 0], b = x.l->v[by_value ? 1 : 0];
            sprig_jv la = a, lb = b;
            if (!sens && a.k == JV_STR && !map_case(E, at, a, &la, 0)) return false;
            if (!sens && b.k == JV_STR && !map_case(E, at, b, &lb, 0)) return false;
            bool ok = true;
            const bool after = reverse ? sprig_jv_less(la, lb, &ok) : sprig_jv_less(lb, la, &ok);
            if (!ok) return sprig_jeval_fail(E, at, "dictsort: cannot compare %s with %s", sprig_jv_kind_name(a), sprig_jv_kind_name(b));
            if (!after) break;
            v[j] = v[j - 1];
        }
        v[j] = x;
    }
    *out = pairs;
    return true;
}

/* ---- tests ---- */
#define TEST(name, expr) FN(name) { (void)E; (void)at; (void)A; *out = sprig_jv_bool(expr); return true; }
TEST(t_defined, self.k != JV_UNDEF)
TEST(t_undefined, self.k == JV_UNDEF)
TEST(t_none, self.k == JV_NONE)
TEST(t_string, self.k == JV_STR)
TEST(t_number, self.k == JV_INT || self.k == JV_FLOAT)
TEST(t_integer, self.k == JV_INT)
TEST(t_float, self.k == JV_FLOAT)
TEST(t_boolean, self.k == JV_BOOL)
TEST(t_mapping, self.k == JV_DICT)
TEST(t_iterable, self.k == JV_LIST || self.k == JV_DICT || self.k == JV_STR)
TEST(t_sequence, self.k == JV_LIST || self.k == JV_DICT || self.k == JV_STR)
TEST(t_callable, self.k == JV_MACRO)
TEST(t_true, self.k == JV_BOOL && self.b)
TEST(t_false, self.k == JV_BOOL && !self.b)
TEST(t_odd, self.k == JV_INT && (self.i % 2 != 0))
TEST(t_even, self.k == JV_INT && self.i % 2 == 0)
#undef TEST

static bool compare_test(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *A, sprig_jv *out, const char *op)
{
    const sprig_jv *o = sprig_jarg(A, 0, NULL);
    if (!o) return sprig_jeval_fail(E, at, "the test needs a value to compare with");
    bool ok = true, r;
    if (!strcmp(op, "eq")) r = sprig_jv_equal(self, *o);
    else if (!strcmp(op, "ne")) r = !sprig_jv_equal(self, *o);
    else if (!strcmp(op, "lt")) r = sprig_jv_less(self, *o, &ok);
    else if (!strcmp(op, "gt")) r = sprig_jv_less(*o, self, &ok);
    else if (!strcmp(op, "le")) r = !sprig_jv_less(*o, self, &ok);
    else r = !sprig_jv_less(self, *o, &ok);
    if (!ok) return sprig_jeval_fail(E, at, "cannot compare %s with %s", sprig_jv_kind_name(self), sprig_jv_kind_name(*o));
    *out = sprig_jv_bool(r);
    return true;
}

FN(t_eq) { return compare_test(E, at, self, A, out, "eq"); }
FN(t_ne) { return compare_test(E, at, self, A, out, "ne"); }
FN(t_lt) { return compare_test(E, at, self, A, out, "lt"); }
FN(t_gt) { return compare_test(E, at, self, A, out, "gt"); }
FN(t_le) { return compare_test(E, at, self, A, out, "le"); }
FN(t_ge) { return compare_test(E, at, self, A, out, "ge"); }

FN(t_in)
{
    const sprig_jv *o = sprig_jarg(A, 0, NULL);
    if (!o) return sprig_jeval_fail(E, at, "'in' test needs a container");
    bool hit = false;
    if (o->k == JV_LIST) for (int i = 0; i < o->l->n && !hit; i++) hit = sprig_jv_equal(o->l->v[i], self);
    else if (o->k == JV_DICT) hit = sprig_jdict_find(o->d, self) != NULL;
    else if (o->k == JV_STR && self.k == JV_STR) hit = find(o->s, 0, self.s) != NULL;
    *out = sprig_jv_bool(hit);
    return true;
}

FN(t_divisibleby)
{
    const sprig_jv *o = sprig_jarg(A, 0, NULL);
    if (!o || o->k != JV_INT || !o->i || self.k != JV_INT) return sprig_jeval_fail(E, at, "divisibleby needs integers (and not 0)");
    *out = sprig_jv_bool(self.i % o->i == 0);
    return true;
}

FN(t_sameas)
{
    const sprig_jv *o = sprig_jarg(A, 0, NULL);
    (void)E; (void)at;
    *out = sprig_jv_bool(o && o->k == self.k &&
                         (self.k <= JV_NONE || (self.k == JV_BOOL && self.b == o->b) || (self.k == JV_LIST && self.l == o->l) ||
                          (self.k == JV_DICT && self.d == o->d) || (self.k == JV_INT && self.i == o->i) ||
                          (self.k == JV_STR && self.s == o->s)));
    return true;
}

static bool case_test(sprig_jv self, bool upper)
{
    if (self.k != JV_STR) return false;
    bool cased = false;
    for (size_t i = 0; i < self.s->n; i++) {
        const char c = self.s->p[i];
        if ((upper && c >= 'a' && c <= 'z') || (!upper && c >= 'A' && c <= 'Z')) return false;
        cased |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }
    return cased;
}
FN(t_lower) { (void)E; (void)at; (void)A; *out = sprig_jv_bool(case_test(self, false)); return true; }
FN(t_upper) { (void)E; (void)at; (void)A; *out = sprig_jv_bool(case_test(self, true)); return true; }

/* ---- globals ---- */
FN(g_range)
{
    (void)self;
    int64_t v[3] = { 0, 0, 1 };
    if (A->n < 1 || A->n > 3) return sprig_jeval_fail(E, at, "range takes 1 to 3 integers");
    for (int i = 0; i < A->n; i++) {
        if (A->v[i].k != JV_INT) return sprig_jeval_fail(E, at, "range takes integers, not %s", sprig_jv_kind_name(A->v[i]));
        v[A->n == 1 ? 1 : i] = A->v[i].i;
    }
    if (!v[2]) return sprig_jeval_fail(E, at, "range: the step cannot be zero");
    const int64_t count = v[2] > 0 ? (v[1] > v[0] ? (v[1] - v[0] + v[2] - 1) / v[2] : 0) : (v[0] > v[1] ? (v[0] - v[1] - v[2] - 1) / -v[2] : 0);
    if (count > E->lim.max_steps) return sprig_jeval_fail(E, at, "range of %lld items passes the step limit", (long long)count);
    sprig_jlist *l = sprig_jlist_new(E->a, (int)count);
    if (!l) return sprig_jeval_oom(E);
    for (int64_t i = 0; i < count; i++)
        if (!sprig_jlist_push(E->a, l, sprig_jv_int(v[0] + i * v[2]))) return sprig_jeval_oom(E);
    *out = sprig_jv_list(l);
    return true;
}

static bool make_dict(sprig_jeval *E, const sprig_jargs *A, sprig_jv *out, bool ns)
{
    sprig_jdict *d = sprig_jdict_new(E->a, A->nk);
    if (!d) return sprig_jeval_oom(E);
    if (A->n == 1 && A->v[0].k == JV_DICT)   /* namespace(other_dict) */
        for (int i = 0; i < A->v[0].d->n; i++)
            if (!sprig_jdict_put(E->a, d, A->v[0].d->k[i], A->v[0].d->v[i])) return sprig_jeval_oom(E);
    for (int k = 0; k < A->nk; k++)
        if (!sprig_jdict_set(E->a, d, A->kn[k], A->kv[k])) return sprig_jeval_oom(E);
    *out = sprig_jv_dict(d);
    out->ns = ns;
    return true;
}

FN(g_namespace) { (void)at; (void)self; return make_dict(E, A, out, true); }
FN(g_dict) { (void)at; (void)self; return make_dict(E, A, out, false); }

FN(g_raise_exception)
{
    (void)self; (void)out;
    const sprig_jv *m = sprig_jarg(A, 0, NULL);
    sprig_jv s = m ? sprig_jeval_str(E, *m) : sprig_jv_undef();
    if (E->st) return false;
    E->st = sprig_err(E->err, SPRIG_E_INVALID_ARG, "chat template %d:%d raised: %s", at->line, at->col, s.k == JV_STR ? s.s->p : "");
    return false;
}

FN(g_strftime_now)
{
    (void)self;
    const sprig_jv *f = sprig_jarg(A, 0, NULL);
    if (!f || f->k != JV_STR) return sprig_jeval_fail(E, at, "strftime_now needs a format string");
    struct tm tm;
    char buf[256];
    if (!localtime_r(&E->lim.now, &tm)) return sprig_jeval_fail(E, at, "strftime_now: no local time");
    const size_t n = strftime(buf, sizeof buf, f->s->p, &tm);
    return str_out(E, buf, n, out);
}

/* ---- tables ---- */
struct entry { const char *name; sprig_jfn fn; };

static const struct entry filters[] = {
    { "length", f_length }, { "count", f_length }, { "trim", f_trim }, { "string", f_string }, { "tojson", f_tojson },
    { "join", f_join }, { "default", f_default }, { "d", f_default }, { "first", f_first }, { "last", f_last },
    { "upper", f_upper }, { "lower", f_lower }, { "title", f_title }, { "capitalize", f_capitalize }, { "replace", f_replace },
    { "safe", f_safe }, { "escape", f_escape }, { "e", f_escape }, { "items", f_items }, { "list", f_list }, { "int", f_int }, { "float", f_float }, { "abs", f_abs },
    { "reverse", f_reverse }, { "indent", f_indent }, { "unique", f_unique }, { "select", f_select }, { "reject", f_reject },
    { "selectattr", f_selectattr }, { "rejectattr", f_rejectattr }, { "map", f_map }, { "sum", f_sum },
    { "wordcount", f_wordcount }, { "dictsort", f_dictsort }, { "min", f_min }, { "max", f_max },
};

static const struct entry tests[] = {
    { "defined", t_defined }, { "undefined", t_undefined }, { "none", t_none }, { "string", t_string }, { "number", t_number },
    { "integer", t_integer }, { "float", t_float }, { "boolean", t_boolean }, { "mapping", t_mapping },
    { "iterable", t_iterable }, { "sequence", t_sequence }, { "callable", t_callable }, { "true", t_true }, { "false", t_false },
    { "odd", t_odd }, { "even", t_even }, { "eq", t_eq }, { "equalto", t_eq }, { "==", t_eq }, { "ne", t_ne }, { "!=", t_ne },
    { "lt", t_lt }, { "lessthan", t_lt }, { "gt", t_gt }, { "greaterthan", t_gt }, { "le", t_le }, { "ge", t_ge },
    { "in", t_in }, { "divisibleby", t_divisibleby }, { "sameas", t_sameas }, { "lower", t_lower }, { "upper", t_upper },
};

static const struct entry globals[] = {
    { "range", g_range }, { "namespace", g_namespace }, { "dict", g_dict }, { "raise_exception", g_raise_exception },
    { "strftime_now", g_strftime_now },
};

static const struct entry str_methods[] = {
    { "strip", m_strip }, { "lstrip", m_lstrip }, { "rstrip", m_rstrip }, { "split", m_split }, { "startswith", m_startswith },
    { "endswith", m_endswith }, { "upper", m_upper }, { "lower", m_lower }, { "title", m_title }, { "capitalize", m_capitalize },
    { "replace", m_replace }, { "format", m_format }, { "find", m_find }, { "count", m_count_str }, { "join", m_join_str }, { "splitlines", m_splitlines },
};

static const struct entry dict_methods[] = { { "items", m_items }, { "keys", m_keys }, { "values", m_values }, { "get", m_get } };
static const struct entry list_methods[] = { { "append", m_append }, { "index", m_index } };

static sprig_jfn look(const struct entry *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return t[i].fn;
    return NULL;
}

#define LOOK(t, name) look(t, sizeof t / sizeof t[0], name)
sprig_jfn sprig_jinja_filter(const char *name) { return LOOK(filters, name); }
sprig_jfn sprig_jinja_test(const char *name) { return LOOK(tests, name); }
sprig_jfn sprig_jinja_global(const char *name) { return LOOK(globals, name); }

sprig_jfn sprig_jinja_method(int kind, const char *name)
{
    return kind == JV_STR ? LOOK(str_methods, name) : kind == JV_DICT ? LOOK(dict_methods, name)
         : kind == JV_LIST ? LOOK(list_methods, name) : NULL;
}
