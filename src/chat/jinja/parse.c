/*
 * chat/jinja/parse — recursive descent over the tokens (parse.h).
 */
#include "chat/jinja/parse.h"

#include <stdio.h>
#include <string.h>

typedef struct parser {
    sprig_jarena *a;
    const sprig_jtok *t;
    int i, n, depth;
    sprig_error *err;
    sprig_status st;
} parser;

static const sprig_jtok *peek(const parser *P) { return &P->t[P->i]; }
static const sprig_jtok *peek2(const parser *P) { return P->i < P->n ? &P->t[P->i + 1] : &P->t[P->n]; }

static bool fail(parser *P, const sprig_jtok *at, const char *fmt, const char *arg)
{
    if (P->st) return false;
    char what[160];
    snprintf(what, sizeof what, fmt, arg ? arg : "");
    P->st = sprig_err(P->err, SPRIG_E_FORMAT, "chat template %d:%d: %s", at->line, at->col, what);
    return false;
}

static bool oom(parser *P)
{
    if (!P->st) P->st = sprig_err(P->err, SPRIG_E_NOMEM, "chat template: out of memory");
    return false;
}

static bool is_op(const sprig_jtok *t, const char *op) { return t->kind == JT_OP && !strcmp(t->op, op); }
static bool is_name(const sprig_jtok *t, const char *w) { return t->kind == JT_NAME && !strcmp(t->s->p, w); }

static bool accept_op(parser *P, const char *op)
{
    if (!is_op(peek(P), op)) return false;
    P->i++;
    return true;
}

static bool accept_name(parser *P, const char *w)
{
    if (!is_name(peek(P), w)) return false;
    P->i++;
    return true;
}

static bool expect_op(parser *P, const char *op)
{
    if (accept_op(P, op)) return true;
    return fail(P, peek(P), "expected '%s'", op);
}

static sprig_jnode *node(parser *P, int kind, const sprig_jtok *at)
{
    sprig_jnode *x = sprig_jarena_alloc(P->a, sizeof *x);
    if (!x) { oom(P); return NULL; }
    x->kind = (uint8_t)kind;
    x->line = at->line;
    x->col = at->col;
    return x;
}

/* a growing list of nodes (copied into the arena when it grows) */
static bool add(parser *P, sprig_jnodes *l, sprig_jnode *x, int *cap)
{
    if (l->n == *cap) {
        const int c = *cap ? *cap * 2 : 4;
        sprig_jnode **v = sprig_jarena_alloc(P->a, sizeof *v * (size_t)c);
        if (!v) return oom(P);
        if (l->n) memcpy(v, l->v, sizeof *v * (size_t)l->n);
        l->v = v;
        *cap = c;
    }
    l->v[l->n++] = x;
    return true;
}

static bool add_name(parser *P, const sprig_jstr ***names, int *n, int *cap, const sprig_jstr *s)
{
    if (*n == *cap) {
        const int c = *cap ? *cap * 2 : 4;
        const sprig_jstr **v = sprig_jarena_alloc(P->a, sizeof *v * (size_t)c);
        if (!v) return oom(P);
        if (*n) memcpy(v, *names, sizeof *v * (size_t)*n);
        *names = v;
        *cap = c;
    }
    (*names)[(*n)++] = s;
    return true;
}

static sprig_jnode *expr(parser *P);
static sprig_jnode *or_expr(parser *P);
static sprig_jnode *unary(parser *P, bool filters);
static sprig_jnode *primary(parser *P);

static bool keyword(const sprig_jtok *t)
{
    static const char *const kw[] = { "and", "or", "not", "in", "is", "if", "else", "elif", "endif", "for", "endfor",
                                      "set", "endset", "macro", "endmacro", "recursive", NULL };
    if (t->kind != JT_NAME) return false;
    for (int i = 0; kw[i]; i++)
        if (!strcmp(t->s->p, kw[i])) return true;
    return false;
}

/* a macro's or call block's parameters after the '(': name [= default], ... ) */
static bool params(parser *P, sprig_jnode *x)
{
    int cn = 0, cd = 0;
    while (!accept_op(P, ")")) {
        if (x->n_names && !expect_op(P, ",")) return false;
        const sprig_jtok *p = peek(P);
        if (p->kind != JT_NAME) return fail(P, p, "expected a parameter name%s", NULL);
        P->i++;
        sprig_jnode *def = NULL;
        if (accept_op(P, "=") && !(def = expr(P))) return false;
        if (!add_name(P, &x->names, &x->n_names, &cn, p->s) || !add(P, &x->args, def, &cd)) return false;
    }
    return true;
}

/* ( positional, *spread, name=value, ... ) after the '(' */
static bool call_args(parser *P, sprig_jnode *x)
{
    int ca = 0, ck = 0, cn = 0;
    while (!accept_op(P, ")")) {
        if (x->args.n + x->kwargs.n && !expect_op(P, ",")) return false;
        if (accept_op(P, ")")) break;   /* a trailing comma */
        if (peek(P)->kind == JT_NAME && is_op(peek2(P), "=")) {
            if (!add_name(P, &x->names, &x->n_names, &cn, peek(P)->s)) return false;
            P->i += 2;
            sprig_jnode *v = expr(P);
            if (!v || !add(P, &x->kwargs, v, &ck)) return false;
        } else {
            if (x->kwargs.n) return fail(P, peek(P), "a positional argument follows a keyword argument%s", NULL);
            const sprig_jtok *star = peek(P);
            sprig_jnode *s = NULL;
            if (accept_op(P, "*") && !(s = node(P, JN_STAR, star))) return false;   /* f(*list) */
            sprig_jnode *v = expr(P);
            if (v && s) s->a = v, v = s;
            if (!v || !add(P, &x->args, v, &ca)) return false;
        }
    }
    return true;
}

/* postfix: .name, [index], [a:b:c], (args) */
static sprig_jnode *postfix(parser *P, sprig_jnode *x)
{
    for (;;) {
        const sprig_jtok *at = peek(P);
        if (accept_op(P, ".")) {
            const sprig_jtok *nm = peek(P);
            if (nm->kind != JT_NAME && nm->kind != JT_INT) return fail(P, nm, "expected an attribute name after '.'%s", NULL), NULL;
            sprig_jnode *y = node(P, nm->kind == JT_NAME ? JN_ATTR : JN_ITEM, at);
            if (!y) return NULL;
            y->a = x;
            if (nm->kind == JT_NAME) y->name = nm->s;
            else if ((y->b = node(P, JN_LIT, nm))) y->b->lit = sprig_jv_int(nm->i);
            else return NULL;
            P->i++;
            x = y;
        } else if (accept_op(P, "[")) {
            sprig_jnode *lo = NULL, *hi = NULL, *step = NULL;
            bool slice = false;
            if (!is_op(peek(P), ":") && !(lo = expr(P))) return NULL;
            if (accept_op(P, ":")) {
                slice = true;
                if (!is_op(peek(P), "]") && !is_op(peek(P), ":") && !(hi = expr(P))) return NULL;
                if (accept_op(P, ":") && !is_op(peek(P), "]") && !(step = expr(P))) return NULL;
            }
            if (!expect_op(P, "]")) return NULL;
            if (!slice && !lo) return fail(P, at, "an empty subscript%s", NULL), NULL;
            sprig_jnode *y = node(P, slice ? JN_SLICE : JN_ITEM, at);
            if (!y) return NULL;
            y->a = x;
            y->b = lo;
            y->c = hi;
            if (slice) {
                int cap = 0;
                if (!add(P, &y->args, step, &cap)) return NULL;
            }
            x = y;
        } else if (accept_op(P, "(")) {
            sprig_jnode *y = node(P, JN_CALL, at);
            if (!y) return NULL;
            y->a = x;
            if (!call_args(P, y)) return NULL;
            x = y;
        } else return x;
    }
}

/* | filter [args] and is [not] test [args], as many as follow */
static sprig_jnode *filters(parser *P, sprig_jnode *x)
{
    for (;;) {
        const sprig_jtok *at = peek(P);
        if (accept_op(P, "|")) {
            const sprig_jtok *nm = peek(P);
            if (nm->kind != JT_NAME) return fail(P, nm, "expected a filter name after '|'%s", NULL), NULL;
            P->i++;
            sprig_jnode *y = node(P, JN_FILTER, at);
            if (!y) return NULL;
            y->a = x;
            y->name = nm->s;
            if (accept_op(P, "(") && !call_args(P, y)) return NULL;
            x = postfix(P, y);
            if (!x) return NULL;
        } else if (accept_name(P, "is")) {
            const bool neg = accept_name(P, "not");
            const sprig_jtok *nm = peek(P);
            if (nm->kind != JT_NAME) return fail(P, nm, "expected a test name after 'is'%s", NULL), NULL;
            P->i++;
            sprig_jnode *y = node(P, JN_TEST, at);
            if (!y) return NULL;
            y->a = x;
            y->name = nm->s;
            y->neg = neg;
            if (accept_op(P, "(")) {
                if (!call_args(P, y)) return NULL;
            } else {   /* one argument without parentheses: `is divisibleby 3`, `is equalto x` */
                const sprig_jtok *n2 = peek(P);
                if ((n2->kind == JT_NAME && !keyword(n2)) || n2->kind == JT_STRING || n2->kind == JT_INT || n2->kind == JT_FLOAT) {
                    int cap = 0;
                    sprig_jnode *v = primary(P);
                    if (!v || !(v = postfix(P, v)) || !add(P, &y->args, v, &cap)) return NULL;
                }
            }
            x = y;
        } else return x;
    }
}

static sprig_jnode *primary(parser *P)
{
    const sprig_jtok *t = peek(P);
    if (++P->depth > SPRIG_JINJA_MAX_NEST) return fail(P, t, "expressions nest deeper than %s levels", "200"), NULL;
    sprig_jnode *x = NULL;
    switch (t->kind) {
    case JT_STRING: {   /* adjacent literals concatenate */
        sprig_jbuf b = { .max = (size_t)1 << 30 };
        while (peek(P)->kind == JT_STRING) {
            sprig_jbuf_put(&b, peek(P)->s->p, peek(P)->s->n);
            P->i++;
        }
        if ((x = node(P, JN_LIT, t))) {
            x->lit = sprig_jv_strn(P->a, b.n ? b.p : "", b.n);
            if (x->lit.k != JV_STR || b.over) x = NULL, oom(P);
        }
        sprig_jbuf_free(&b);
        break;
    }
    case JT_INT:
    case JT_FLOAT:
        P->i++;
        if ((x = node(P, JN_LIT, t))) x->lit = t->kind == JT_INT ? sprig_jv_int(t->i) : sprig_jv_float(t->f);
        break;
    case JT_NAME: {
        P->i++;
        const char *w = t->s->p;
        if (!strcmp(w, "true") || !strcmp(w, "True") || !strcmp(w, "false") || !strcmp(w, "False")) {
            if ((x = node(P, JN_LIT, t))) x->lit = sprig_jv_bool(w[0] == 't' || w[0] == 'T');
        } else if (!strcmp(w, "none") || !strcmp(w, "None")) {
            if ((x = node(P, JN_LIT, t))) x->lit = sprig_jv_none();
        } else if ((x = node(P, JN_NAME, t))) x->name = t->s;
        break;
    }
    case JT_OP:
        if (accept_op(P, "(")) {   /* (expr) or a tuple */
            sprig_jnode *first = is_op(peek(P), ")") ? NULL : expr(P);
            if (!first && P->st) break;
            if (first && accept_op(P, ")")) { x = first; break; }
            if (!(x = node(P, JN_TUPLE, t))) break;
            int cap = 0;
            if (first && !add(P, &x->body, first, &cap)) { x = NULL; break; }
            while (!accept_op(P, ")")) {
                if (!expect_op(P, ",")) { x = NULL; break; }
                if (accept_op(P, ")")) break;
                sprig_jnode *v = expr(P);
                if (!v || !add(P, &x->body, v, &cap)) { x = NULL; break; }
            }
        } else if (accept_op(P, "[")) {
            if (!(x = node(P, JN_LIST, t))) break;
            int cap = 0;
            while (!accept_op(P, "]")) {
                if (x->body.n && !expect_op(P, ",")) { x = NULL; break; }
                if (accept_op(P, "]")) break;
                sprig_jnode *v = expr(P);
                if (!v || !add(P, &x->body, v, &cap)) { x = NULL; break; }
            }
        } else if (accept_op(P, "{")) {
            if (!(x = node(P, JN_DICT, t))) break;
            int ck = 0, cv = 0;
            while (!accept_op(P, "}")) {
                if (x->body.n && !expect_op(P, ",")) { x = NULL; break; }
                if (accept_op(P, "}")) break;
                sprig_jnode *k = expr(P), *v = NULL;
                if (!k || !expect_op(P, ":") || !(v = expr(P)) || !add(P, &x->body, k, &ck) || !add(P, &x->orelse, v, &cv)) {
                    x = NULL;
                    break;
                }
            }
        } else fail(P, t, "unexpected '%s'", t->op);
        break;
    case JT_EOF: fail(P, t, "the template ends inside an expression%s", NULL); break;
    default: fail(P, t, "expected an expression%s", NULL); break;
    }
    P->depth--;
    return x;
}

static sprig_jnode *unary(parser *P, bool with_filters)
{
    const sprig_jtok *t = peek(P);
    sprig_jnode *x;
    if (++P->depth > SPRIG_JINJA_MAX_NEST) return fail(P, t, "expressions nest deeper than %s levels", "200"), NULL;
    if (accept_op(P, "-") || accept_op(P, "+")) {
        if ((x = node(P, is_op(t, "-") ? JN_NEG : JN_POS, t)) && !(x->a = unary(P, false))) x = NULL;
    } else {
        x = primary(P);
        if (x) x = postfix(P, x);
    }
    if (x && with_filters) x = filters(P, x);
    P->depth--;
    return x;
}

static sprig_jnode *binary(parser *P, sprig_jnode *a, const sprig_jtok *at, const char *op, sprig_jnode *b)
{
    if (!a || !b) return NULL;
    sprig_jnode *x = node(P, JN_BINARY, at);
    if (!x) return NULL;
    snprintf(x->op, sizeof x->op, "%s", op);
    x->a = a;
    x->b = b;
    return x;
}

static sprig_jnode *power(parser *P)
{
    sprig_jnode *x = unary(P, true);
    while (x && is_op(peek(P), "**")) {
        const sprig_jtok *at = peek(P);
        P->i++;
        x = binary(P, x, at, "**", unary(P, true));
    }
    return x;
}

static sprig_jnode *mult(parser *P)
{
    sprig_jnode *x = power(P);
    while (x) {
        const sprig_jtok *at = peek(P);
        const char *op = is_op(at, "*") ? "*" : is_op(at, "/") ? "/" : is_op(at, "//") ? "//" : is_op(at, "%") ? "%" : NULL;
        if (!op) break;
        P->i++;
        x = binary(P, x, at, op, power(P));
    }
    return x;
}

static sprig_jnode *additive(parser *P)
{
    sprig_jnode *x = mult(P);
    while (x) {
        const sprig_jtok *at = peek(P);
        const char *op = is_op(at, "+") ? "+" : is_op(at, "-") ? "-" : NULL;
        if (!op) break;
        P->i++;
        x = binary(P, x, at, op, mult(P));
    }
    return x;
}

static sprig_jnode *concat(parser *P)
{
    sprig_jnode *x = additive(P);
    while (x && is_op(peek(P), "~")) {
        const sprig_jtok *at = peek(P);
        P->i++;
        x = binary(P, x, at, "~", additive(P));
    }
    return x;
}

static sprig_jnode *compare(parser *P)
{
    sprig_jnode *x = concat(P);
    while (x) {
        const sprig_jtok *at = peek(P);
        static const char *const cmp[] = { "==", "!=", "<", "<=", ">", ">=" };
        const char *op = NULL;
        for (int i = 0; i < 6; i++)
            if (is_op(at, cmp[i])) op = cmp[i];
        if (op) P->i++;
        else if (is_name(at, "in")) { op = "in"; P->i++; }
        else if (is_name(at, "not") && is_name(peek2(P), "in")) { op = "!in"; P->i += 2; }
        else break;
        x = binary(P, x, at, op, concat(P));
    }
    return x;
}

static sprig_jnode *not_expr(parser *P)
{
    const sprig_jtok *t = peek(P);
    if (!accept_name(P, "not")) return compare(P);
    if (++P->depth > SPRIG_JINJA_MAX_NEST) return fail(P, t, "expressions nest deeper than %s levels", "200"), NULL;
    sprig_jnode *x = node(P, JN_NOT, t);
    if (x && !(x->a = not_expr(P))) x = NULL;
    P->depth--;
    return x;
}

static sprig_jnode *and_expr(parser *P)
{
    sprig_jnode *x = not_expr(P);
    while (x && is_name(peek(P), "and")) {
        const sprig_jtok *at = peek(P);
        P->i++;
        sprig_jnode *y = node(P, JN_AND, at), *b = not_expr(P);
        if (!y || !b) return NULL;
        y->a = x;
        y->b = b;
        x = y;
    }
    return x;
}

static sprig_jnode *or_expr(parser *P)
{
    sprig_jnode *x = and_expr(P);
    while (x && is_name(peek(P), "or")) {
        const sprig_jtok *at = peek(P);
        P->i++;
        sprig_jnode *y = node(P, JN_OR, at), *b = and_expr(P);
        if (!y || !b) return NULL;
        y->a = x;
        y->b = b;
        x = y;
    }
    return x;
}

/* a if c else b (else optional: undefined) */
static sprig_jnode *expr(parser *P)
{
    sprig_jnode *x = or_expr(P);
    while (x && is_name(peek(P), "if")) {
        const sprig_jtok *at = peek(P);
        P->i++;
        sprig_jnode *y = node(P, JN_COND, at);
        if (!y || !(y->a = or_expr(P))) return NULL;
        y->b = x;
        if (accept_name(P, "else") && !(y->c = or_expr(P))) return NULL;
        x = y;
    }
    return x;
}

/* expr, or a bare tuple `a, b` (for / set targets use names instead) */
static sprig_jnode *expr_or_tuple(parser *P)
{
    const sprig_jtok *t = peek(P);
    sprig_jnode *x = expr(P);
    if (!x || !is_op(peek(P), ",")) return x;
    sprig_jnode *tu = node(P, JN_TUPLE, t);
    int cap = 0;
    if (!tu || !add(P, &tu->body, x, &cap)) return NULL;
    while (accept_op(P, ",")) {
        sprig_jnode *v = expr(P);
        if (!v || !add(P, &tu->body, v, &cap)) return NULL;
    }
    return tu;
}

static bool close_stmt(parser *P)
{
    if (peek(P)->kind == JT_CLOSE_STMT) {
        P->i++;
        return true;
    }
    return fail(P, peek(P), "expected '%%}'%s", NULL);
}

/* names separated by commas (for / set targets) */
static bool target_names(parser *P, sprig_jnode *x)
{
    int cap = 0;
    do {
        const sprig_jtok *t = peek(P);
        if (t->kind != JT_NAME || keyword(t)) return fail(P, t, "expected a variable name%s", NULL);
        if (!add_name(P, &x->names, &x->n_names, &cap, t->s)) return false;
        P->i++;
    } while (accept_op(P, ","));
    return true;
}

static bool block(parser *P, sprig_jnodes *out, const char *const *ends, const char **ended);

static sprig_jnode *statement(parser *P)
{
    const sprig_jtok *open = peek(P);
    P->i++;   /* {% */
    const sprig_jtok *kw = peek(P);
    if (kw->kind != JT_NAME) return fail(P, kw, "expected a statement name%s", NULL), NULL;
    const char *w = kw->s->p;
    P->i++;
    if (++P->depth > SPRIG_JINJA_MAX_NEST) return fail(P, kw, "blocks nest deeper than %s levels", "200"), NULL;
    sprig_jnode *x = NULL;
    if (!strcmp(w, "if")) {
        x = node(P, JN_IF, open);
        if (!x || !(x->a = expr(P)) || !close_stmt(P)) return NULL;
        static const char *const ends[] = { "elif", "else", "endif", NULL };
        const char *ended = NULL;
        if (!block(P, &x->body, ends, &ended)) return NULL;
        sprig_jnode *cur = x;
        while (!strcmp(ended, "elif")) {   /* elif: an if in the else branch */
            sprig_jnode *y = node(P, JN_IF, peek(P));
            int cap = 0;
            if (!y || !(y->a = expr(P)) || !close_stmt(P) || !block(P, &y->body, ends, &ended) || !add(P, &cur->orelse, y, &cap))
                return NULL;
            cur = y;
        }
        if (!strcmp(ended, "else")) {
            static const char *const end2[] = { "endif", NULL };
            if (!close_stmt(P) || !block(P, &cur->orelse, end2, &ended)) return NULL;
        }
        if (!close_stmt(P)) return NULL;
    } else if (!strcmp(w, "for")) {
        x = node(P, JN_FOR, open);
        if (!x || !target_names(P, x)) return NULL;
        if (!accept_name(P, "in")) return fail(P, peek(P), "expected 'in' in a for loop%s", NULL), NULL;
        if (!(x->a = or_expr(P))) return NULL;   /* the iterable (its own `if` is the loop filter) */
        if (accept_name(P, "if") && !(x->b = expr(P))) return NULL;
        if (is_name(peek(P), "recursive")) return fail(P, peek(P), "recursive for loops are not supported%s", NULL), NULL;
        if (!close_stmt(P)) return NULL;
        static const char *const ends[] = { "else", "endfor", NULL };
        const char *ended = NULL;
        if (!block(P, &x->body, ends, &ended)) return NULL;
        if (!strcmp(ended, "else")) {
            static const char *const end2[] = { "endfor", NULL };
            if (!close_stmt(P) || !block(P, &x->orelse, end2, &ended)) return NULL;
        }
        if (!close_stmt(P)) return NULL;
    } else if (!strcmp(w, "set")) {
        x = node(P, JN_SET, open);
        if (!x) return NULL;
        const sprig_jtok *t = peek(P);
        if (t->kind == JT_NAME && is_op(peek2(P), ".")) {   /* ns.attr = value */
            P->i += 2;
            if (peek(P)->kind != JT_NAME) return fail(P, peek(P), "expected an attribute name%s", NULL), NULL;
            if (!(x->b = node(P, JN_NAME, t))) return NULL;
            x->b->name = t->s;
            x->name = peek(P)->s;
            P->i++;
        } else if (!target_names(P, x)) return NULL;
        if (accept_op(P, "=")) {
            if (!(x->a = expr_or_tuple(P)) || !close_stmt(P)) return NULL;
        } else {   /* {% set name %}...{% endset %} */
            if (x->b || x->n_names != 1) return fail(P, peek(P), "expected '=' in a set%s", NULL), NULL;
            x->kind = JN_SET_BLOCK;
            static const char *const ends[] = { "endset", NULL };
            const char *ended = NULL;
            if (!close_stmt(P) || !block(P, &x->body, ends, &ended) || !close_stmt(P)) return NULL;
        }
    } else if (!strcmp(w, "macro")) {
        x = node(P, JN_MACRO, open);
        const sprig_jtok *nm = peek(P);
        if (!x || nm->kind != JT_NAME) return fail(P, nm, "expected a macro name%s", NULL), NULL;
        x->name = nm->s;
        P->i++;
        if (!expect_op(P, "(") || !params(P, x)) return NULL;
        static const char *const ends[] = { "endmacro", NULL };
        const char *ended = NULL;
        if (!close_stmt(P) || !block(P, &x->body, ends, &ended) || !close_stmt(P)) return NULL;
    } else if (!strcmp(w, "call")) {   /* {% call [(params)] macro(args) %}body{% endcall %} */
        x = node(P, JN_CALL_BLOCK, open);
        if (!x || !(x->name = sprig_jstr_new(P->a, "caller", 6))) return oom(P), NULL;
        if (accept_op(P, "(") && !params(P, x)) return NULL;
        const sprig_jtok *at = peek(P);
        if (!(x->a = expr(P))) return NULL;
        if (x->a->kind != JN_CALL) return fail(P, at, "a call block calls a macro: expected name(arguments)%s", NULL), NULL;
        static const char *const ends[] = { "endcall", NULL };
        const char *ended = NULL;
        if (!close_stmt(P) || !block(P, &x->body, ends, &ended) || !close_stmt(P)) return NULL;
    } else if (!strcmp(w, "filter")) {   /* {% filter f(args) | g %}...{% endfilter %}: the filters applied to the block's text */
        x = node(P, JN_FILTER_BLOCK, open);
        if (!x) return NULL;
        sprig_jnode *chain = NULL;
        do {
            const sprig_jtok *nm = peek(P);
            if (nm->kind != JT_NAME) return fail(P, nm, "expected a filter name%s", NULL), NULL;
            P->i++;
            sprig_jnode *y = node(P, JN_FILTER, nm);
            if (!y) return NULL;
            y->a = chain;
            y->name = nm->s;
            if (accept_op(P, "(") && !call_args(P, y)) return NULL;
            chain = y;
        } while (accept_op(P, "|"));
        x->a = chain;
        static const char *const ends[] = { "endfilter", NULL };
        const char *ended = NULL;
        if (!close_stmt(P) || !block(P, &x->body, ends, &ended) || !close_stmt(P)) return NULL;
    } else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
        if (!(x = node(P, w[0] == 'b' ? JN_BREAK : JN_CONTINUE, open)) || !close_stmt(P)) return NULL;
    } else {
        return fail(P, kw, "the statement '%s' is not supported", w), NULL;
    }
    P->depth--;
    return x;
}

/* statements until {% end %} for one of ends (NULL: the end of the template); *ended = which */
static bool block(parser *P, sprig_jnodes *out, const char *const *ends, const char **ended)
{
    int cap = 0;
    for (;;) {
        const sprig_jtok *t = peek(P);
        if (t->kind == JT_EOF) {
            if (!ends) return true;
            int last = 0;
            while (ends[last + 1]) last++;
            return fail(P, t, "the template ends before '{%% %s %%}'", ends[last]);
        }
        sprig_jnode *x = NULL;
        if (t->kind == JT_COMMENT) {
            P->i++;
            continue;
        }
        if (t->kind == JT_TEXT) {
            if ((x = node(P, JN_TEXT, t))) x->lit = (sprig_jv){ .k = JV_STR, .s = t->s };
            P->i++;
        } else if (t->kind == JT_OPEN_EXPR) {
            P->i++;
            if ((x = node(P, JN_OUTPUT, t)) && !(x->a = expr_or_tuple(P))) x = NULL;
            if (x && peek(P)->kind != JT_CLOSE_EXPR) x = NULL, fail(P, peek(P), "expected '}}'%s", NULL);
            if (x) P->i++;
        } else if (t->kind == JT_OPEN_STMT) {
            const sprig_jtok *kw = peek2(P);
            for (int e = 0; ends && ends[e] && kw->kind == JT_NAME; e++)
                if (!strcmp(kw->s->p, ends[e])) {
                    P->i += 2;
                    *ended = ends[e];
                    return true;
                }
            if (kw->kind == JT_NAME && (!strncmp(kw->s->p, "end", 3) || !strcmp(kw->s->p, "elif") || !strcmp(kw->s->p, "else")))
                return fail(P, kw, "unexpected '%s'", kw->s->p);
            x = statement(P);
        } else return fail(P, t, "unexpected token%s", NULL);
        if (!x) return P->st ? false : oom(P);
        if (!add(P, out, x, &cap)) return false;
    }
}

sprig_status sprig_jinja_parse(sprig_jarena *a, const sprig_jtok *tok, int n, sprig_jprogram *out, sprig_error *err)
{
    parser P = { .a = a, .t = tok, .n = n, .err = err };
    memset(out, 0, sizeof *out);
    if (!block(&P, &out->body, NULL, NULL) && !P.st) P.st = sprig_err(err, SPRIG_E_INTERNAL, "chat template: parse failed");
    return P.st;
}
