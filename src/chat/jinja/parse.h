/*
 * chat/jinja/parse — a chat template's tokens as a tree of statements and
 * expressions.
 *
 * Statements: text, {{ output }}, if / elif / else, for (one name or a
 * tuple of names, an optional `if` filter, `else`, loop.* inside), set (a
 * name, a tuple of names, a namespace attribute, or a block), macro, call
 * blocks ({% call [(params)] m(args) %}body{% endcall %}: the body is `caller`),
 * break / continue, filter blocks ({% filter trim %}...{% endfilter %}). Expressions follow Jinja's precedence: a if c else b,
 * or, and, not, comparisons and `in` / `not in`, ~, + -, * / // %, **,
 * unary - +, then postfix attribute / item / slice / call (positional
 * arguments may be spread with *list), filters (|) and tests (is [not]).
 * Anything else (include,
 * extends, raw, ...) is refused here, at load, naming it and its
 * line:column; so is nesting deeper than SPRIG_JINJA_MAX_NEST.
 */
#ifndef SPRIG_CHAT_JINJA_PARSE_H
#define SPRIG_CHAT_JINJA_PARSE_H

#include "chat/jinja/lex.h"

#define SPRIG_JINJA_MAX_NEST 200

enum sprig_jnode_kind {
    /* statements */
    JN_TEXT = 1, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_CALL_BLOCK, JN_BREAK, JN_CONTINUE, JN_FILTER_BLOCK,
    /* expressions */
    JN_LIT, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_BINARY, JN_COND, JN_STAR,
};

typedef struct sprig_jnode sprig_jnode;
typedef struct sprig_jnodes { sprig_jnode **v; int n; } sprig_jnodes;

struct sprig_jnode {
    uint8_t kind;              /* enum sprig_jnode_kind */
    char op[4];                /* JN_BINARY: "+", "==", "in", "not in" (as "!in"), ... */
    bool neg;                  /* JN_TEST: `is not` */
    int line, col;
    const sprig_jstr *name;    /* JN_NAME, JN_ATTR, JN_FILTER, JN_TEST, JN_MACRO, JN_SET(_BLOCK) target (or its attribute) */
    sprig_jv lit;              /* JN_LIT */
    sprig_jnode *a, *b, *c;    /* JN_IF / JN_COND: test, (then), (else); JN_FOR: iterable, loop filter;
                                  JN_ATTR / JN_ITEM / JN_SLICE / JN_CALL / JN_FILTER / JN_TEST: a = the object
                                  (JN_ITEM b = index; JN_SLICE a[b:c], step in args.v[0]); binary: a, b;
                                  JN_SET: a = value, b = the namespace when the target is ns.attr; JN_OUTPUT: a;
                                  JN_CALL_BLOCK: a = the JN_CALL of the macro; JN_STAR: a = the spread list;
                                  JN_FILTER_BLOCK: a = the filter chain (JN_FILTER nodes whose innermost object
                                  is NULL: the block's text) */
    sprig_jnodes body, orelse; /* JN_IF, JN_FOR, JN_MACRO, JN_CALL_BLOCK, JN_SET_BLOCK: statements; JN_LIST / JN_TUPLE: items
                                  (body); JN_DICT: keys (body), values (orelse) */
    sprig_jnodes args;         /* JN_CALL / JN_FILTER / JN_TEST: positional arguments; JN_MACRO, JN_CALL_BLOCK: defaults
                                  (NULL for none); JN_SLICE: its step (or none) */
    sprig_jnodes kwargs;       /* JN_CALL / JN_FILTER / JN_TEST: keyword values */
    const sprig_jstr **names;  /* JN_FOR / JN_SET: the target names; JN_MACRO, JN_CALL_BLOCK: parameters; calls: kwarg names */
    int n_names;
};

typedef struct sprig_jprogram { sprig_jnodes body; } sprig_jprogram;

/* The program of tokens tok[n] (+ JT_EOF), nodes in the arena. */
sprig_status sprig_jinja_parse(sprig_jarena *a, const sprig_jtok *tok, int n, sprig_jprogram *out, sprig_error *err);

#endif
