/*
 * chat/jinja/eval — the interpreter's state, shared by the evaluator
 * (jinja.c: statements, expressions, scopes) and the builtins (builtins.c:
 * filters, tests, methods, globals), which are looked up in tables by name.
 * Internal to src/chat/jinja.
 */
#ifndef SPRIG_CHAT_JINJA_EVAL_H
#define SPRIG_CHAT_JINJA_EVAL_H

#include "chat/jinja/jinja.h"
#include "chat/jinja/parse.h"

typedef struct sprig_jframe {
    struct sprig_jframe *parent;
    sprig_jdict *vars;
} sprig_jframe;

typedef struct sprig_jeval {
    sprig_jarena *a;
    sprig_jbuf *out;                 /* where text goes (a macro call or block set swaps it) */
    sprig_jframe *globals;           /* the template's top level (over the given variables); macros run under it */
    struct sprig_jinja_limits lim;
    int64_t steps;
    int depth;
    sprig_error *err;
    sprig_status st;                 /* the first error; everything unwinds once set */
    int brk;                         /* 1 break, 2 continue: pending in the innermost loop */
    sprig_jv block_text;             /* a filter block's rendered body, while its filters run */
} sprig_jeval;

/* the arguments of a call: positional, then keyword */
typedef struct sprig_jargs {
    int n;
    const sprig_jv *v;
    int nk;
    const sprig_jstr *const *kn;
    const sprig_jv *kv;
} sprig_jargs;

typedef bool (*sprig_jfn)(sprig_jeval *E, const sprig_jnode *at, sprig_jv self, const sprig_jargs *args, sprig_jv *out);

/* the filter / test / global named `name`, or NULL; a method of a value of kind k */
sprig_jfn sprig_jinja_filter(const char *name);
sprig_jfn sprig_jinja_test(const char *name);
sprig_jfn sprig_jinja_global(const char *name);
sprig_jfn sprig_jinja_method(int kind, const char *name);

/* fail the rendering at a node: "chat template L:C: message" (kind SPRIG_E_FORMAT) */
bool sprig_jeval_fail(sprig_jeval *E, const sprig_jnode *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool sprig_jeval_oom(sprig_jeval *E);
/* argument i or keyword `name` (NULL: absent) */
const sprig_jv *sprig_jarg(const sprig_jargs *a, int i, const char *name);
/* markupsafe's escape(str(v)): & < > " ' as &amp; &lt; &gt; &#34; &#39;, marked safe (already safe: unchanged) */
sprig_jv sprig_jeval_escape(sprig_jeval *E, sprig_jv v);
/* str(v) into the arena */
sprig_jv sprig_jeval_str(sprig_jeval *E, sprig_jv v);
/* call a macro value with args (used by map / select when given one) */
bool sprig_jeval_call_macro(sprig_jeval *E, const sprig_jnode *at, sprig_jv m, const sprig_jargs *args, sprig_jv *out);
/* the items a for loop takes from v: a list's items, a dict's keys, a string's characters (undefined: none) */
bool sprig_jeval_iter(sprig_jeval *E, const sprig_jnode *at, sprig_jv v, sprig_jlist **out);
/* v.name or v[name] (dict key, then a method-free attribute): undefined when absent */
sprig_jv sprig_jeval_getattr(sprig_jeval *E, sprig_jv v, const char *name, size_t n);

#endif
