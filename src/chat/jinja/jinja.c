/*
 * chat/jinja/jinja — compile and render (jinja.h): the evaluator of the tree
 * parse.c builds.
 *
 * Scopes follow Jinja's: the template's top level is one frame; a for
 * loop's body runs in a frame of its own (so `set` inside a loop does not
 * leak out of it, which is why templates use namespace()); a macro runs in
 * a frame over the top level. Every statement and loop iteration counts a
 * step; the first error (a limit, raise_exception, a type error) is kept
 * and everything unwinds.
 */
#include "chat/jinja/eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sprig_jinja {
    sprig_jarena *a;
    sprig_jprogram prog;
};

sprig_status sprig_jinja_compile(const char *src, size_t n, sprig_jinja **out, sprig_error *err)
{
    *out = NULL;
    sprig_jinja *t = calloc(1, sizeof *t);
    if (!t || !(t->a = sprig_jarena_create((size_t)1 << 30))) {
        free(t);
        return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    }
    /* Jinja reads \r\n and a lone \r as \n (in text and string literals alike) */
    char *norm = NULL;
    if (memchr(src, '\r', n)) {
        if (!(norm = malloc(n + 1))) {
            sprig_jinja_free(t);
            return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (src[i] == '\r' && i + 1 < n && src[i + 1] == '\n') continue;
            norm[m++] = src[i] == '\r' ? '\n' : src[i];
        }
        src = norm;
        n = m;
    }
    sprig_jtok *tok = NULL;
    int count = 0;
    sprig_status st = sprig_jinja_lex(t->a, src, n, &tok, &count, err);
    free(norm);
    if (!st) st = sprig_jinja_parse(t->a, tok, count, &t->prog, err);
    if (st) {
        sprig_jinja_free(t);
        return st;
    }
    *out = t;
    return SPRIG_OK;
}

void sprig_jinja_free(sprig_jinja *t)
{
    if (!t) return;
    sprig_jarena_free(t->a);
    free(t);
}

bool sprig_jeval_fail(sprig_jeval *E, const sprig_jnode *at, const char *fmt, ...)
{
    if (E->st) return false;
    va_list ap;
    va_start(ap, fmt);
    E->st = sprig_verr(E->err, SPRIG_E_FORMAT, fmt, ap);
    va_end(ap);
    if (at) sprig_err_prefix(E->err, "chat template %d:%d", at->line, at->col);
    else sprig_err_prefix(E->err, "chat template");
    return false;
}

bool sprig_jeval_oom(sprig_jeval *E)
{
    if (!E->st)
        E->st = sprig_err(E->err, SPRIG_E_NOMEM, "chat template: the rendering needs more than its memory limit (%zu bytes)",
                          E->lim.max_memory);
    return false;
}

const sprig_jv *sprig_jarg(const sprig_jargs *a, int i, const char *name)
{
    if (name)
        for (int k = 0; k < a->nk; k++)
            if (!strcmp(a->kn[k]->p, name)) return &a->kv[k];
    return i >= 0 && i < a->n ? &a->v[i] : NULL;
}

sprig_jv sprig_jeval_str(sprig_jeval *E, sprig_jv v)
{
    if (v.k == JV_STR) return v;
    sprig_jbuf b = { .max = E->lim.max_output };
    sprig_jv_print(&b, v);
    sprig_jv s = b.over ? sprig_jv_undef() : sprig_jv_strn(E->a, b.n ? b.p : "", b.n);
    sprig_jbuf_free(&b);
    if (s.k != JV_STR) sprig_jeval_oom(E);
    return s;
}

/* ---- scopes ---- */
static sprig_jv *lookup(sprig_jframe *f, const sprig_jstr *name)
{
    for (; f; f = f->parent) {
        sprig_jv *v = sprig_jdict_get(f->vars, name->p, name->n);
        if (v) return v;
    }
    return NULL;
}

static bool assign(sprig_jeval *E, sprig_jframe *f, const sprig_jstr *name, sprig_jv v)
{
    return sprig_jdict_set(E->a, f->vars, name, v) || sprig_jeval_oom(E);
}

static sprig_jframe *frame(sprig_jeval *E, sprig_jframe *parent)
{
    sprig_jframe *f = sprig_jarena_alloc(E->a, sizeof *f);
    if (!f || !(f->vars = sprig_jdict_new(E->a, 8))) return sprig_jeval_oom(E), NULL;
    f->parent = parent;
    return f;
}

static bool step(sprig_jeval *E, const sprig_jnode *at)
{
    if (E->st) return false;
    if (++E->steps > E->lim.max_steps)
        return sprig_jeval_fail(E, at, "the rendering ran past its step limit (%lld statements and loop iterations)",
                                (long long)E->lim.max_steps);
    if (E->out->over)
        return sprig_jeval_fail(E, at, "the rendering is longer than its output limit (%zu bytes)", E->lim.max_output);
    return true;
}

static sprig_jv eval(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x);
static bool exec(sprig_jeval *E, sprig_jframe *f, const sprig_jnodes *body);

/* ---- strings by code point (Python indexes and slices characters) ---- */
static size_t cp_count(const sprig_jstr *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) n += ((unsigned char)s->p[i] & 0xc0) != 0x80;
    return n;
}

static size_t cp_offset(const sprig_jstr *s, size_t k)   /* byte offset of code point k (s->n past the end) */
{
    size_t i = 0;
    for (; i < s->n; i++)
        if (((unsigned char)s->p[i] & 0xc0) != 0x80 && k-- == 0) return i;
    return s->n;
}

sprig_jv sprig_jeval_getattr(sprig_jeval *E, sprig_jv v, const char *name, size_t n)
{
    (void)E;
    if (v.k == JV_DICT) {
        const sprig_jv *r = sprig_jdict_get(v.d, name, n);
        if (r) return *r;
    }
    return sprig_jv_undef();
}

static bool to_index(sprig_jeval *E, const sprig_jnode *at, sprig_jv i, int64_t len, int64_t *out)
{
    if (i.k != JV_INT && i.k != JV_BOOL) return sprig_jeval_fail(E, at, "an index must be an integer, not %s", sprig_jv_kind_name(i));
    int64_t k = i.k == JV_INT ? i.i : i.b;
    if (k < 0) k += len;
    *out = k;
    return true;
}

static sprig_jv item(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, sprig_jv key)
{
    int64_t k = 0;
    switch (v.k) {
    case JV_DICT: {
        const sprig_jv *r = sprig_jdict_find(v.d, key);
        return r ? *r : sprig_jv_undef();
    }
    case JV_LIST:
        if (key.k != JV_INT && key.k != JV_BOOL) return sprig_jv_undef();   /* as Jinja: a subscript that fails is undefined */
        if (!to_index(E, at, key, v.l->n, &k)) return sprig_jv_undef();
        return k >= 0 && k < v.l->n ? v.l->v[k] : sprig_jv_undef();
    case JV_STR: {
        const int64_t len = (int64_t)cp_count(v.s);
        if (key.k != JV_INT && key.k != JV_BOOL) return sprig_jv_undef();
        if (!to_index(E, at, key, len, &k)) return sprig_jv_undef();
        if (k < 0 || k >= len) return sprig_jv_undef();
        const size_t b0 = cp_offset(v.s, (size_t)k), b1 = cp_offset(v.s, (size_t)k + 1);
        sprig_jv r = sprig_jv_strn(E->a, v.s->p + b0, b1 - b0);
        if (r.k != JV_STR) sprig_jeval_oom(E);
        return r;
    }
    default: return sprig_jv_undef();
    }
}

/* Python's slice indices for a sequence of len items */
static bool slice_bounds(sprig_jeval *E, const sprig_jnode *at, sprig_jv lo, sprig_jv hi, sprig_jv stp, int64_t len, int64_t *s0,
                         int64_t *s1, int64_t *st)
{
    *st = 1;
    if (stp.k != JV_NONE && stp.k != JV_UNDEF) {
        if (stp.k != JV_INT) return sprig_jeval_fail(E, at, "a slice step must be an integer");
        if (stp.i == 0) return sprig_jeval_fail(E, at, "a slice step cannot be zero");
        *st = stp.i;
    }
    const bool neg = *st < 0;
    int64_t a = neg ? len - 1 : 0, b = neg ? -1 : len;
    if (lo.k != JV_NONE && lo.k != JV_UNDEF) {
        if (lo.k != JV_INT) return sprig_jeval_fail(E, at, "slice bounds must be integers");
        a = lo.i < 0 ? lo.i + len : lo.i;
        if (a < 0) a = neg ? -1 : 0;
        if (a >= len) a = neg ? len - 1 : len;
    }
    if (hi.k != JV_NONE && hi.k != JV_UNDEF) {
        if (hi.k != JV_INT) return sprig_jeval_fail(E, at, "slice bounds must be integers");
        b = hi.i < 0 ? hi.i + len : hi.i;
        if (b < 0) b = neg ? -1 : 0;
        if (b >= len) b = neg ? len - 1 : len;
    }
    *s0 = a;
    *s1 = b;
    return true;
}

static sprig_jv slice(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, sprig_jv lo, sprig_jv hi, sprig_jv stp)
{
    int64_t a, b, s;
    if (v.k == JV_LIST) {
        if (!slice_bounds(E, at, lo, hi, stp, v.l->n, &a, &b, &s)) return sprig_jv_undef();
        sprig_jlist *l = sprig_jlist_new(E->a, 4);
        if (!l) return sprig_jeval_oom(E), sprig_jv_undef();
        for (int64_t i = a; s > 0 ? i < b : i > b; i += s)
            if (!sprig_jlist_push(E->a, l, v.l->v[i])) return sprig_jeval_oom(E), sprig_jv_undef();
        return sprig_jv_list(l);
    }
    if (v.k == JV_STR) {
        const int64_t len = (int64_t)cp_count(v.s);
        if (!slice_bounds(E, at, lo, hi, stp, len, &a, &b, &s)) return sprig_jv_undef();
        sprig_jbuf o = { .max = v.s->n + 1 };
        for (int64_t i = a; s > 0 ? i < b : i > b; i += s) {
            const size_t b0 = cp_offset(v.s, (size_t)i), b1 = cp_offset(v.s, (size_t)i + 1);
            sprig_jbuf_put(&o, v.s->p + b0, b1 - b0);
        }
        sprig_jv r = sprig_jv_strn(E->a, o.n ? o.p : "", o.n);
        sprig_jbuf_free(&o);
        if (r.k != JV_STR) sprig_jeval_oom(E);
        return r;
    }
    if (v.k == JV_UNDEF) return v;
    sprig_jeval_fail(E, at, "a %s cannot be sliced", sprig_jv_kind_name(v));
    return sprig_jv_undef();
}

/* ---- operators ---- */
static bool numeric(sprig_jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }
static double fnum(sprig_jv v) { return v.k == JV_FLOAT ? v.f : v.k == JV_INT ? (double)v.i : v.b; }
static int64_t inum(sprig_jv v) { return v.k == JV_INT ? v.i : v.k == JV_BOOL ? v.b : 0; }

static bool contains(sprig_jeval *E, const sprig_jnode *at, sprig_jv hay, sprig_jv needle, bool *out)
{
    *out = false;
    switch (hay.k) {
    case JV_STR:
        if (needle.k != JV_STR) return sprig_jeval_fail(E, at, "'in <string>' needs a string on the left, not %s", sprig_jv_kind_name(needle));
        if (!needle.s->n) *out = true;
        else
            for (size_t i = 0; i + needle.s->n <= hay.s->n && !*out; i++) *out = !memcmp(hay.s->p + i, needle.s->p, needle.s->n);
        return true;
    case JV_LIST:
        for (int i = 0; i < hay.l->n && !*out; i++) *out = sprig_jv_equal(hay.l->v[i], needle);
        return true;
    case JV_DICT:
        *out = sprig_jdict_find(hay.d, needle) != NULL;
        return true;
    case JV_UNDEF: return true;
    default: return sprig_jeval_fail(E, at, "'in' needs a string, list or dict on the right, not %s", sprig_jv_kind_name(hay));
    }
}

static sprig_jv concat(sprig_jeval *E, const sprig_jstr *a, const sprig_jstr *b)
{
    sprig_jstr *s = sprig_jarena_alloc(E->a, sizeof *s + a->n + b->n + 1);
    if (!s) return sprig_jeval_oom(E), sprig_jv_undef();
    s->n = a->n + b->n;
    memcpy(s->p, a->p, a->n);
    memcpy(s->p + a->n, b->p, b->n);
    return (sprig_jv){ .k = JV_STR, .s = s };
}

static sprig_jv binary(sprig_jeval *E, const sprig_jnode *x, sprig_jv a, sprig_jv b)
{
    const char *op = x->op;
    bool ok = true, r;
    if (!strcmp(op, "==")) return sprig_jv_bool(sprig_jv_equal(a, b));
    if (!strcmp(op, "!=")) return sprig_jv_bool(!sprig_jv_equal(a, b));
    if (!strcmp(op, "<")) { r = sprig_jv_less(a, b, &ok); if (ok) return sprig_jv_bool(r); }
    else if (!strcmp(op, ">")) { r = sprig_jv_less(b, a, &ok); if (ok) return sprig_jv_bool(r); }
    else if (!strcmp(op, "<=")) { r = sprig_jv_less(b, a, &ok); if (ok) return sprig_jv_bool(!r); }
    else if (!strcmp(op, ">=")) { r = sprig_jv_less(a, b, &ok); if (ok) return sprig_jv_bool(!r); }
    else if (!strcmp(op, "in") || !strcmp(op, "!in")) {
        if (!contains(E, x, b, a, &r)) return sprig_jv_undef();
        return sprig_jv_bool(op[0] == '!' ? !r : r);
    } else if (!strcmp(op, "~")) {
        sprig_jv sa = sprig_jeval_str(E, a), sb = sprig_jeval_str(E, b);
        return E->st ? sprig_jv_undef() : concat(E, sa.s, sb.s);
    } else if (!strcmp(op, "+") && a.k == JV_STR && b.k == JV_STR) {
        if (a.safe == b.safe) {
            sprig_jv c = concat(E, a.s, b.s);
            c.safe = a.safe;
            return c;
        }
        sprig_jv ea = a.safe ? a : sprig_jeval_escape(E, a), eb = b.safe ? b : sprig_jeval_escape(E, b);   /* Markup + str */
        if (E->st) return sprig_jv_undef();
        sprig_jv c = concat(E, ea.s, eb.s);
        c.safe = true;
        return c;
    } else if (!strcmp(op, "+") && a.k == JV_LIST && b.k == JV_LIST) {
        sprig_jlist *l = sprig_jlist_new(E->a, a.l->n + b.l->n);
        if (!l) return sprig_jeval_oom(E), sprig_jv_undef();
        for (int i = 0; i < a.l->n; i++) sprig_jlist_push(E->a, l, a.l->v[i]);
        for (int i = 0; i < b.l->n; i++) sprig_jlist_push(E->a, l, b.l->v[i]);
        return sprig_jv_list(l);
    } else if (!strcmp(op, "*") && ((a.k == JV_STR && b.k == JV_INT) || (a.k == JV_INT && b.k == JV_STR))) {
        const sprig_jstr *s = a.k == JV_STR ? a.s : b.s;
        const int64_t k = a.k == JV_INT ? a.i : b.i;
        if (k > 0 && s->n && (uint64_t)k > E->lim.max_output / s->n)
            return sprig_jeval_fail(E, x, "a repeated string would pass the output limit"), sprig_jv_undef();
        sprig_jbuf o = { .max = E->lim.max_output };
        for (int64_t i = 0; i < k; i++) sprig_jbuf_put(&o, s->p, s->n);
        sprig_jv res = sprig_jv_strn(E->a, o.n ? o.p : "", o.n);
        sprig_jbuf_free(&o);
        if (res.k != JV_STR) sprig_jeval_oom(E);
        return res;
    } else if (numeric(a) && numeric(b)) {
        const bool ints = a.k != JV_FLOAT && b.k != JV_FLOAT;
        const int64_t ia = inum(a), ib = inum(b);
        const double fa = fnum(a), fb = fnum(b);
        if (!strcmp(op, "+")) return ints && !__builtin_add_overflow(ia, ib, &(int64_t){ 0 }) ? sprig_jv_int(ia + ib) : sprig_jv_float(fa + fb);
        if (!strcmp(op, "-")) return ints && !__builtin_sub_overflow(ia, ib, &(int64_t){ 0 }) ? sprig_jv_int(ia - ib) : sprig_jv_float(fa - fb);
        if (!strcmp(op, "*")) return ints && !__builtin_mul_overflow(ia, ib, &(int64_t){ 0 }) ? sprig_jv_int(ia * ib) : sprig_jv_float(fa * fb);
        if (!strcmp(op, "/")) {
            if (fb == 0) return sprig_jeval_fail(E, x, "division by zero"), sprig_jv_undef();
            return sprig_jv_float(fa / fb);
        }
        if (!strcmp(op, "//") || !strcmp(op, "%")) {
            if (fb == 0) return sprig_jeval_fail(E, x, "division by zero"), sprig_jv_undef();
            if (ints && !(ia == INT64_MIN && ib == -1)) {   /* Python's floor division and modulo */
                int64_t q = ia / ib, m = ia % ib;
                if (m && ((m < 0) != (ib < 0))) { q--; m += ib; }
                return sprig_jv_int(op[0] == '/' ? q : m);
            }
            const double q = floor(fa / fb);
            return sprig_jv_float(op[0] == '/' ? q : fa - q * fb);
        }
        if (!strcmp(op, "**")) {
            if (ints && ib >= 0) {
                int64_t pw = 1;
                bool over = false;
                for (int64_t i = 0; i < ib && !over; i++) over = __builtin_mul_overflow(pw, ia, &pw);
                if (!over) return sprig_jv_int(pw);
            }
            return sprig_jv_float(pow(fa, fb));
        }
    }
    sprig_jeval_fail(E, x, "'%s' is not defined for %s and %s", op[0] == '!' ? "not in" : op, sprig_jv_kind_name(a), sprig_jv_kind_name(b));
    return sprig_jv_undef();
}

/* ---- calls ---- */
static bool eval_args(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x, sprig_jargs *out)
{
    sprig_jlist *pos = sprig_jlist_new(E->a, x->args.n);
    sprig_jv *kv = x->kwargs.n ? sprig_jarena_alloc(E->a, sizeof *kv * (size_t)x->kwargs.n) : NULL;
    if (!pos || (x->kwargs.n && !kv)) return sprig_jeval_oom(E);
    for (int i = 0; i < x->args.n && !E->st; i++) {
        const sprig_jnode *y = x->args.v[i];
        if (y && y->kind == JN_STAR) {   /* *list: its items as positional arguments */
            sprig_jv l = eval(E, f, y->a);
            if (E->st) return false;
            if (l.k != JV_LIST) return sprig_jeval_fail(E, y, "*%s: only a list can be spread into arguments", sprig_jv_kind_name(l));
            for (int k = 0; k < l.l->n; k++)
                if (!sprig_jlist_push(E->a, pos, l.l->v[k])) return sprig_jeval_oom(E);
        } else if (!sprig_jlist_push(E->a, pos, y ? eval(E, f, y) : sprig_jv_none())) return sprig_jeval_oom(E);
    }
    for (int i = 0; i < x->kwargs.n; i++) kv[i] = eval(E, f, x->kwargs.v[i]);
    *out = (sprig_jargs){ .n = pos->n, .v = pos->v, .nk = x->kwargs.n, .kn = x->names, .kv = kv };
    return !E->st;
}

/* a macro runs under the template's top level, a call block's `caller` in the frame of its block; `caller` (when
 * not undefined) is bound in the macro's frame */
static bool call_macro(sprig_jeval *E, const sprig_jnode *at, sprig_jv m, const sprig_jargs *args, sprig_jv caller, sprig_jv *out)
{
    const sprig_jnode *def = m.m;
    if (E->depth >= E->lim.max_depth)
        return sprig_jeval_fail(E, at, "macro calls nest deeper than the limit (%d)", E->lim.max_depth);
    if (args->n > def->n_names) return sprig_jeval_fail(E, at, "macro '%s' takes %d arguments, %d given", def->name->p, def->n_names, args->n);
    sprig_jframe *f = frame(E, m.env ? (sprig_jframe *)m.env : E->globals);
    if (!f) return false;
    if (caller.k == JV_MACRO && !assign(E, f, caller.m->name, caller)) return false;   /* the call block's name: "caller" */
    for (int p = 0; p < def->n_names; p++) {
        const sprig_jv *v = p < args->n ? &args->v[p] : sprig_jarg(args, -1, def->names[p]->p);
        sprig_jv val = v ? *v : def->args.v[p] ? eval(E, f, def->args.v[p]) : sprig_jv_undef();
        if (!assign(E, f, def->names[p], val)) return false;
    }
    for (int k = 0; k < args->nk; k++) {
        bool known = false;
        for (int p = 0; p < def->n_names; p++) known |= !strcmp(def->names[p]->p, args->kn[k]->p);
        if (!known) return sprig_jeval_fail(E, at, "macro '%s' has no parameter '%s'", def->name->p, args->kn[k]->p);
    }
    sprig_jbuf buf = { .max = E->lim.max_output }, *saved = E->out;
    E->out = &buf;
    E->depth++;
    exec(E, f, &def->body);
    E->depth--;
    E->out = saved;
    E->brk = 0;
    *out = E->st || buf.over ? sprig_jv_undef() : sprig_jv_strn(E->a, buf.n ? buf.p : "", buf.n);
    if (buf.over) sprig_jeval_fail(E, at, "the rendering is longer than its output limit (%zu bytes)", E->lim.max_output);
    sprig_jbuf_free(&buf);
    if (!E->st && out->k != JV_STR) sprig_jeval_oom(E);
    return !E->st;
}

bool sprig_jeval_call_macro(sprig_jeval *E, const sprig_jnode *at, sprig_jv m, const sprig_jargs *args, sprig_jv *out)
{
    return call_macro(E, at, m, args, sprig_jv_undef(), out);
}

static sprig_jv call(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x)
{
    sprig_jargs args;
    const sprig_jnode *c = x->a;
    sprig_jv r = sprig_jv_undef();
    if (c->kind == JN_ATTR) {   /* obj.method(...) (or a macro stored in a dict) */
        sprig_jv self = eval(E, f, c->a);
        if (E->st) return r;
        sprig_jv held = sprig_jeval_getattr(E, self, c->name->p, c->name->n);
        if (held.k == JV_MACRO) {
            if (eval_args(E, f, x, &args)) sprig_jeval_call_macro(E, x, held, &args, &r);
            return r;
        }
        sprig_jfn fn = sprig_jinja_method(self.k, c->name->p);
        if (!fn) {
            sprig_jeval_fail(E, c, "%s has no method '%s'", sprig_jv_kind_name(self), c->name->p);
            return r;
        }
        if (eval_args(E, f, x, &args)) fn(E, x, self, &args, &r);
        return r;
    }
    if (c->kind == JN_NAME) {
        const sprig_jv *m = lookup(f, c->name);
        if (m && m->k == JV_MACRO) {
            if (eval_args(E, f, x, &args)) sprig_jeval_call_macro(E, x, *m, &args, &r);
            return r;
        }
        sprig_jfn fn = !m ? sprig_jinja_global(c->name->p) : m->k == JV_FUNC ? sprig_jinja_global(m->fn) : NULL;
        if (!fn) {
            sprig_jeval_fail(E, c, "'%s' is not a function this engine knows", c->name->p);
            return r;
        }
        if (eval_args(E, f, x, &args)) fn(E, x, sprig_jv_undef(), &args, &r);
        return r;
    }
    const sprig_jv m = eval(E, f, c);   /* any other expression that gives a macro or a function: list[i](...) */
    if (E->st) return r;
    sprig_jfn fn = m.k == JV_FUNC ? sprig_jinja_global(m.fn) : NULL;
    if (m.k != JV_MACRO && !fn) {
        sprig_jeval_fail(E, x, "%s is not callable", sprig_jv_kind_name(m));
        return r;
    }
    if (eval_args(E, f, x, &args)) {
        if (fn) fn(E, x, sprig_jv_undef(), &args, &r);
        else sprig_jeval_call_macro(E, x, m, &args, &r);
    }
    return r;
}

/* ---- expressions ---- */
static sprig_jv eval(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x)
{
    sprig_jv r = sprig_jv_undef();
    if (E->st) return r;
    switch (x->kind) {
    case JN_LIT: return x->lit;
    case JN_NAME: {
        const sprig_jv *v = lookup(f, x->name);
        if (v) return *v;
        if (sprig_jinja_global(x->name->p)) return (sprig_jv){ .k = JV_FUNC, .fn = x->name->p };
        return r;
    }
    case JN_LIST:
    case JN_TUPLE: {
        sprig_jlist *l = sprig_jlist_new(E->a, x->body.n);
        if (!l) return sprig_jeval_oom(E), r;
        for (int i = 0; i < x->body.n; i++)
            if (!sprig_jlist_push(E->a, l, eval(E, f, x->body.v[i]))) return sprig_jeval_oom(E), r;
        return sprig_jv_list(l);
    }
    case JN_DICT: {
        sprig_jdict *d = sprig_jdict_new(E->a, x->body.n);
        if (!d) return sprig_jeval_oom(E), r;
        for (int i = 0; i < x->body.n; i++) {
            sprig_jv k = eval(E, f, x->body.v[i]), v = eval(E, f, x->orelse.v[i]);
            if (E->st) return r;
            if (!sprig_jv_hashable(k)) return sprig_jeval_fail(E, x->body.v[i], "a dict key cannot be a %s", sprig_jv_kind_name(k)), r;
            if (!sprig_jdict_put(E->a, d, k, v)) return sprig_jeval_oom(E), r;
        }
        return sprig_jv_dict(d);
    }
    case JN_ATTR: {
        sprig_jv v = eval(E, f, x->a);
        return sprig_jeval_getattr(E, v, x->name->p, x->name->n);
    }
    case JN_ITEM: {
        sprig_jv v = eval(E, f, x->a), k = eval(E, f, x->b);
        return E->st ? r : item(E, x, v, k);
    }
    case JN_SLICE: {
        sprig_jv v = eval(E, f, x->a);
        sprig_jv lo = x->b ? eval(E, f, x->b) : sprig_jv_none(), hi = x->c ? eval(E, f, x->c) : sprig_jv_none();
        sprig_jv st = x->args.v[0] ? eval(E, f, x->args.v[0]) : sprig_jv_none();
        return E->st ? r : slice(E, x, v, lo, hi, st);
    }
    case JN_CALL: return call(E, f, x);
    case JN_FILTER:
    case JN_TEST: {
        sprig_jv v = x->a ? eval(E, f, x->a) : E->block_text;   /* a filter block's chain starts at its text */
        sprig_jargs args;
        if (E->st || !eval_args(E, f, x, &args)) return r;
        sprig_jfn fn = x->kind == JN_FILTER ? sprig_jinja_filter(x->name->p) : sprig_jinja_test(x->name->p);
        if (!fn) return sprig_jeval_fail(E, x, "unknown %s '%s'", x->kind == JN_FILTER ? "filter" : "test", x->name->p), r;
        if (!fn(E, x, v, &args, &r)) return sprig_jv_undef();
        if (x->kind == JN_TEST && x->neg) r.b = !r.b;
        return r;
    }
    case JN_NEG:
    case JN_POS: {
        sprig_jv v = eval(E, f, x->a);
        if (E->st) return r;
        if (v.k == JV_INT) return x->kind == JN_NEG && v.i != INT64_MIN ? sprig_jv_int(-v.i) : v;
        if (v.k == JV_FLOAT) return sprig_jv_float(x->kind == JN_NEG ? -v.f : v.f);
        if (v.k == JV_BOOL) return sprig_jv_int(x->kind == JN_NEG ? -(int64_t)v.b : v.b);
        return sprig_jeval_fail(E, x, "unary %c needs a number, not %s", x->kind == JN_NEG ? '-' : '+', sprig_jv_kind_name(v)), r;
    }
    case JN_NOT: return sprig_jv_bool(!sprig_jv_truthy(eval(E, f, x->a)));
    case JN_AND: {   /* Python's: the first falsy operand, else the last */
        sprig_jv a = eval(E, f, x->a);
        return sprig_jv_truthy(a) ? eval(E, f, x->b) : a;
    }
    case JN_OR: {
        sprig_jv a = eval(E, f, x->a);
        return sprig_jv_truthy(a) ? a : eval(E, f, x->b);
    }
    case JN_BINARY: {
        sprig_jv a = eval(E, f, x->a), b = eval(E, f, x->b);
        return E->st ? r : binary(E, x, a, b);
    }
    case JN_COND:
        if (sprig_jv_truthy(eval(E, f, x->a))) return eval(E, f, x->b);
        return x->c ? eval(E, f, x->c) : r;
    default:
        sprig_jeval_fail(E, x, "not an expression");
        return r;
    }
}

/* ---- statements ---- */
bool sprig_jeval_iter(sprig_jeval *E, const sprig_jnode *at, sprig_jv it, sprig_jlist **out)
{
    *out = NULL;
    if (it.k == JV_LIST) { *out = it.l; return true; }
    sprig_jlist *l = sprig_jlist_new(E->a, 8);
    if (!l) return sprig_jeval_oom(E);
    if (it.k == JV_DICT) {   /* a dict iterates over its keys */
        for (int i = 0; i < it.d->n; i++)
            if (!sprig_jlist_push(E->a, l, it.d->k[i])) return sprig_jeval_oom(E);
    } else if (it.k == JV_STR) {   /* a string over its characters */
        for (size_t i = 0; i < it.s->n;) {
            size_t j = i + 1;
            while (j < it.s->n && ((unsigned char)it.s->p[j] & 0xc0) == 0x80) j++;
            sprig_jv c = sprig_jv_strn(E->a, it.s->p + i, j - i);
            if (c.k != JV_STR || !sprig_jlist_push(E->a, l, c)) return sprig_jeval_oom(E);
            i = j;
        }
    } else if (it.k != JV_UNDEF)
        return sprig_jeval_fail(E, at, "a %s cannot be iterated", sprig_jv_kind_name(it));
    *out = l;
    return true;
}

static bool unpack(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *at, const sprig_jstr *const *names, int n, sprig_jv v)
{
    if (n == 1) return assign(E, f, names[0], v);
    if (v.k != JV_LIST || v.l->n != n)
        return sprig_jeval_fail(E, at, "cannot unpack %s into %d names", sprig_jv_kind_name(v), n);
    for (int i = 0; i < n; i++)
        if (!assign(E, f, names[i], v.l->v[i])) return false;
    return true;
}

static sprig_jv loop_var(sprig_jeval *E, const sprig_jlist *items, int i)
{
    static const char *const keys[] = { "index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem" };
    sprig_jdict *d = sprig_jdict_new(E->a, 9);
    if (!d) return sprig_jeval_oom(E), sprig_jv_undef();
    const int n = items->n;
    const sprig_jv v[] = { sprig_jv_int(i + 1), sprig_jv_int(i), sprig_jv_int(n - i), sprig_jv_int(n - i - 1), sprig_jv_bool(i == 0),
                           sprig_jv_bool(i == n - 1), sprig_jv_int(n), i > 0 ? items->v[i - 1] : sprig_jv_undef(),
                           i + 1 < n ? items->v[i + 1] : sprig_jv_undef() };
    for (int k = 0; k < 9; k++) {
        const sprig_jstr *key = sprig_jstr_new(E->a, keys[k], strlen(keys[k]));
        if (!key || !sprig_jdict_set(E->a, d, key, v[k])) return sprig_jeval_oom(E), sprig_jv_undef();
    }
    return sprig_jv_dict(d);
}

static bool exec_for(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x)
{
    sprig_jlist *all;
    if (!sprig_jeval_iter(E, x, eval(E, f, x->a), &all)) return false;
    sprig_jframe *body = frame(E, f);
    if (!body) return false;
    sprig_jlist *items = all;
    if (x->b) {   /* for ... if cond: the filter runs first, loop.* counts what passed */
        if (!(items = sprig_jlist_new(E->a, all->n))) return sprig_jeval_oom(E);
        for (int i = 0; i < all->n; i++) {
            if (!step(E, x) || !unpack(E, body, x, x->names, x->n_names, all->v[i])) return false;
            if (sprig_jv_truthy(eval(E, body, x->b)) && !sprig_jlist_push(E->a, items, all->v[i])) return sprig_jeval_oom(E);
        }
    }
    const sprig_jstr *lname = sprig_jstr_new(E->a, "loop", 4);
    if (!lname) return sprig_jeval_oom(E);
    for (int i = 0; i < items->n; i++) {
        if (!step(E, x)) return false;
        sprig_jframe *it = frame(E, f);   /* each iteration's own frame: sets inside do not leak */
        if (!it || !unpack(E, it, x, x->names, x->n_names, items->v[i]) || !assign(E, it, lname, loop_var(E, items, i))) return false;
        exec(E, it, &x->body);
        if (E->st) return false;
        if (E->brk == 1) { E->brk = 0; break; }
        E->brk = 0;
    }
    if (!items->n) return exec(E, f, &x->orelse);
    return !E->st;
}

/* a block set's or filter block's body rendered into a string of its own */
static bool render_body(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x, sprig_jv *text)
{
    sprig_jbuf buf = { .max = E->lim.max_output }, *saved = E->out;
    E->out = &buf;
    exec(E, f, &x->body);
    E->out = saved;
    *text = E->st || buf.over ? sprig_jv_undef() : sprig_jv_strn(E->a, buf.n ? buf.p : "", buf.n);
    const bool over = buf.over;
    sprig_jbuf_free(&buf);
    if (over) return sprig_jeval_fail(E, x, "the rendering is longer than its output limit (%zu bytes)", E->lim.max_output);
    if (E->st) return false;
    return text->k == JV_STR || sprig_jeval_oom(E);
}

static bool exec_one(sprig_jeval *E, sprig_jframe *f, const sprig_jnode *x)
{
    if (!step(E, x)) return false;
    switch (x->kind) {
    case JN_TEXT: sprig_jbuf_put(E->out, x->lit.s->p, x->lit.s->n); return true;
    case JN_OUTPUT: {
        sprig_jv v = eval(E, f, x->a);
        if (E->st) return false;
        sprig_jv_print(E->out, v);
        return true;
    }
    case JN_IF:
        if (sprig_jv_truthy(eval(E, f, x->a))) return exec(E, f, &x->body);
        return E->st ? false : exec(E, f, &x->orelse);
    case JN_FOR: return exec_for(E, f, x);
    case JN_SET: {
        sprig_jv v = eval(E, f, x->a);
        if (E->st) return false;
        if (x->b) {   /* ns.attr = v */
            sprig_jv *ns = lookup(f, x->b->name);
            if (!ns || ns->k != JV_DICT || !ns->ns)
                return sprig_jeval_fail(E, x, "'%s' is not a namespace (set %s.%s needs namespace())", x->b->name->p, x->b->name->p, x->name->p);
            return sprig_jdict_set(E->a, ns->d, x->name, v) || sprig_jeval_oom(E);
        }
        return unpack(E, f, x, x->names, x->n_names, v);
    }
    case JN_SET_BLOCK: {
        sprig_jv v;
        return render_body(E, f, x, &v) && assign(E, f, x->names[0], v);
    }
    case JN_MACRO: {
        sprig_jv m = { .k = JV_MACRO, .m = x };
        return assign(E, f, x->name, m);
    }
    case JN_CALL_BLOCK: {   /* the macro called with `caller` = this block's body, run where the block stands */
        const sprig_jv m = eval(E, f, x->a->a);
        if (E->st) return false;
        if (m.k != JV_MACRO) return sprig_jeval_fail(E, x->a, "a call block calls a macro, not %s", sprig_jv_kind_name(m));
        const sprig_jv caller = { .k = JV_MACRO, .m = x, .env = f };
        sprig_jargs args;
        sprig_jv r;
        if (!eval_args(E, f, x->a, &args) || !call_macro(E, x, m, &args, caller, &r)) return false;
        sprig_jv_print(E->out, r);
        return true;
    }
    case JN_FILTER_BLOCK: {
        sprig_jv text;
        if (!render_body(E, f, x, &text)) return false;
        const sprig_jv saved_text = E->block_text;
        E->block_text = text;
        sprig_jv v = eval(E, f, x->a);
        E->block_text = saved_text;
        if (E->st) return false;
        sprig_jv_print(E->out, v);
        return true;
    }
    case JN_BREAK: E->brk = 1; return true;
    case JN_CONTINUE: E->brk = 2; return true;
    default: return sprig_jeval_fail(E, x, "not a statement");
    }
}

static bool exec(sprig_jeval *E, sprig_jframe *f, const sprig_jnodes *body)
{
    for (int i = 0; i < body->n && !E->st && !E->brk; i++) exec_one(E, f, body->v[i]);
    return !E->st;
}

/* ---- JSON in ---- */
static sprig_jv from_json(sprig_jeval *E, const json_t *j, int depth)
{
    if (depth > 256) return sprig_jeval_fail(E, NULL, "the variables nest deeper than 256 levels"), sprig_jv_undef();
    switch (json_typeof(j)) {
    case JSON_NULL: return sprig_jv_none();
    case JSON_TRUE: return sprig_jv_bool(true);
    case JSON_FALSE: return sprig_jv_bool(false);
    case JSON_INTEGER: return sprig_jv_int((int64_t)json_integer_value(j));
    case JSON_REAL: return sprig_jv_float(json_real_value(j));
    case JSON_STRING: {
        sprig_jv s = sprig_jv_strn(E->a, json_string_value(j), json_string_length(j));
        if (s.k != JV_STR) sprig_jeval_oom(E);
        return s;
    }
    case JSON_ARRAY: {
        sprig_jlist *l = sprig_jlist_new(E->a, (int)json_array_size(j));
        if (!l) return sprig_jeval_oom(E), sprig_jv_undef();
        for (size_t i = 0; i < json_array_size(j) && !E->st; i++)
            if (!sprig_jlist_push(E->a, l, from_json(E, json_array_get(j, i), depth + 1))) return sprig_jeval_oom(E), sprig_jv_undef();
        return sprig_jv_list(l);
    }
    case JSON_OBJECT: {
        sprig_jdict *d = sprig_jdict_new(E->a, (int)json_object_size(j));
        if (!d) return sprig_jeval_oom(E), sprig_jv_undef();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            const sprig_jstr *key = sprig_jstr_new(E->a, k, strlen(k));
            if (!key || !sprig_jdict_set(E->a, d, key, from_json(E, v, depth + 1))) return sprig_jeval_oom(E), sprig_jv_undef();
        }
        return sprig_jv_dict(d);
    }
    default: return sprig_jv_undef();
    }
}

sprig_status sprig_jinja_render(const sprig_jinja *t, const json_t *vars, const struct sprig_jinja_limits *lim, char **out,
                                size_t *out_n, sprig_error *err)
{
    *out = NULL;
    if (out_n) *out_n = 0;
    if (vars && !json_is_object(vars)) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat template: the variables must be a JSON object");
    sprig_jeval E = { .err = err };
    if (lim) E.lim = *lim;
    if (!E.lim.max_output) E.lim.max_output = (size_t)16 << 20;
    if (!E.lim.max_memory) E.lim.max_memory = (size_t)256 << 20;
    if (!E.lim.max_steps) E.lim.max_steps = 10000000;
    if (!E.lim.max_depth) E.lim.max_depth = 64;
    if (!E.lim.now) E.lim.now = time(NULL);
    if (!(E.a = sprig_jarena_create(E.lim.max_memory))) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    sprig_jbuf buf = { .max = E.lim.max_output };
    E.out = &buf;
    sprig_jframe *given = frame(&E, NULL);   /* the variables, under the template's own top level */
    if (given && vars) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)vars, k, v) {
            const sprig_jstr *key = sprig_jstr_new(E.a, k, strlen(k));
            sprig_jv val = from_json(&E, v, 0);
            if (E.st || !key || !assign(&E, given, key, val)) break;
        }
    }
    if (!E.st && given && (E.globals = frame(&E, given))) exec(&E, E.globals, &t->prog.body);
    if (!E.st && buf.over) sprig_jeval_fail(&E, NULL, "the rendering is longer than its output limit (%zu bytes)", E.lim.max_output);
    sprig_jarena_free(E.a);
    if (E.st) {
        sprig_jbuf_free(&buf);
        return E.st;
    }
    if (!buf.p) buf.p = calloc(1, 1);
    if (!buf.p) return sprig_err(err, SPRIG_E_NOMEM, "chat template: out of memory");
    *out = buf.p;
    if (out_n) *out_n = buf.n;
    return SPRIG_OK;
}
