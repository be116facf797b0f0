/*
 * chat/jinja/lex — a chat template's text as tokens.
 *
 * The whitespace rules are transformers' (trim_blocks and lstrip_blocks on,
 * the template's one trailing newline dropped) and the `-` markers of
 * Jinja: `{%-` / `{{-` / `{#-` strip the whitespace before the tag, `-%}` /
 * `-}}` / `-#}` the whitespace after it. The order they are applied in is
 * @huggingface/jinja's (lstrip, then trim, then the markers), which the
 * tests compare against byte for byte. `{% generation %}` and
 * `{% endgeneration %}` (markers for training masks) are removed.
 * Every token records the line and column of the template where it began.
 */
#ifndef SPRIG_CHAT_JINJA_LEX_H
#define SPRIG_CHAT_JINJA_LEX_H

#include "base/err.h"
#include "chat/jinja/value.h"

enum sprig_jtok_kind {
    JT_EOF = 0, JT_TEXT, JT_OPEN_STMT, JT_CLOSE_STMT, JT_OPEN_EXPR, JT_CLOSE_EXPR,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP,
    JT_COMMENT,   /* {# ... #}: kept so the whitespace rules see it; the parser skips it */
};

typedef struct sprig_jtok {
    uint8_t kind;          /* enum sprig_jtok_kind */
    char op[3];            /* JT_OP: "(", "**", "==", ... */
    const sprig_jstr *s;   /* JT_TEXT, JT_NAME, JT_STRING: the text (escapes decoded) */
    int64_t i;             /* JT_INT */
    double f;              /* JT_FLOAT */
    int line, col;         /* 1-based, in the template as given */
} sprig_jtok;

/* The tokens of src[n] (ending with JT_EOF) into the arena; *count excludes
 * the JT_EOF. Errors name the line:column (SPRIG_E_FORMAT). */
sprig_status sprig_jinja_lex(sprig_jarena *a, const char *src, size_t n, sprig_jtok **out, int *count, sprig_error *err);

#endif
