/*
 * grammar/gbnf — llama.cpp's GBNF grammar text compiled to rules of
 * elements (the form grammar/match runs).
 *
 * The language (llama.cpp's grammars/README): `name ::= alternatives`, one
 * rule per line (newlines inside parentheses and after '|' continue it);
 * "literals" with \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH escapes,
 * [character classes] with ranges and ^ negation, `.` (any character),
 * rule references, ( groups ), postfix * + ? {m} {m,} {m,n}; # comments.
 * Matching is over Unicode code points. `root` is where matching starts.
 * Refused with the rule and line:column named: undefined rules, a missing
 * root, left recursion (a rule that can reach itself before consuming a
 * character, which would never terminate), token references (<...>),
 * repetition bounds past 10,000, more than 100,000 elements.
 *
 * Compiled form: every rule is its alternatives in one element array,
 * separated by GE_ALT and ended by GE_END. A character element (GE_CHAR,
 * GE_CHAR_NOT) is followed by its GE_CHAR_ALT / GE_CHAR_RNG_UPPER extras;
 * GE_ANY matches any code point. Repetitions become helper rules
 * (x* as `r ::= x r |`).
 */
#ifndef SPRIG_GRAMMAR_GBNF_H
#define SPRIG_GRAMMAR_GBNF_H

#include "base/err.h"

#include <stdint.h>

enum sprig_gelem_type {
    GE_END = 0,         /* end of a rule */
    GE_ALT,             /* start of another alternative */
    GE_RULE,            /* value: the rule referenced */
    GE_CHAR,            /* value: a code point (a class's first member) */
    GE_CHAR_NOT,        /* value: a negated class's first member */
    GE_CHAR_RNG_UPPER,  /* value: the upper end of the range the previous element starts */
    GE_CHAR_ALT,        /* value: another member of the class */
    GE_ANY,             /* any code point */
};

typedef struct sprig_gelem {
    uint32_t type;      /* enum sprig_gelem_type */
    uint32_t value;
} sprig_gelem;

typedef struct sprig_gbnf {
    sprig_gelem *e;     /* [n_e] all rules' elements */
    int n_e;
    int32_t *rule;      /* [n_rules] where each rule's elements start in e */
    char **names;       /* [n_rules] (helper rules: "name_N") */
    int n_rules;
    int root;
} sprig_gbnf;

/* Compile text[n]. Errors: SPRIG_E_INVALID_ARG "grammar L:C: ..." naming the rule. */
sprig_status sprig_gbnf_parse(const char *text, size_t n, sprig_gbnf **out, sprig_error *err);
void sprig_gbnf_free(sprig_gbnf *g);

#endif
