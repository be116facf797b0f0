/*
 * tokenizer/pretok — BPE pre-tokenizers: the regular expressions that cut text
 * into words before merges run (tokenizer.ggml.pre names the row).
 *
 * Each row holds the expressions exactly as the model's tokenizer.json
 * publishes them (JSON escapes undone), applied in order: every piece the
 * first expression cuts (its matches and the gaps between them, Hugging
 * Face's "Isolated" behaviour) is cut again by the next. They run on PCRE2
 * (UTF + UCP, JIT where available), so the Unicode classes (\p{L}, \p{N},
 * \s, case-insensitive groups) are PCRE2's, not hand-written tables. An
 * unknown name is refused, never replaced by another row.
 */
#ifndef SPRIG_TOKENIZER_PRETOK_H
#define SPRIG_TOKENIZER_PRETOK_H

#include "base/err.h"

#define SPRIG_PRETOK_MAX_REGEX 4

struct sprig_pretok_row {
    const char *name;            /* tokenizer.ggml.pre */
    const char *aliases;         /* other names llama.cpp maps to this row, space-separated */
    const char *regex[SPRIG_PRETOK_MAX_REGEX];   /* NULL-terminated when fewer */
    bool ignore_merges;          /* a word that is itself a token is taken whole (llama3) */
    bool add_bos;                /* BOS added by default when the file does not say (llama3) */
    const char *source;          /* where the expressions come from */
};

/* The rows, for listing and for converters (sprig_pretok_rows()[i], i < n). */
const struct sprig_pretok_row *sprig_pretok_rows(int *n);
/* Row by tokenizer.ggml.pre name or alias; NULL when unknown. */
const struct sprig_pretok_row *sprig_pretok_row_find(const char *name, size_t len);
/* Row whose single expression is exactly regex[len] (a tokenizer.json Split
 * pattern); NULL when none. */
const struct sprig_pretok_row *sprig_pretok_row_by_regex(const char *regex, size_t len);

/* A row compiled for matching; shared read-only by threads. */
typedef struct sprig_pretok sprig_pretok;

/* Compiles the row's expressions; errors name the row, the expression's index
 * and PCRE2's message with the offset. */
sprig_pretok *sprig_pretok_compile(const struct sprig_pretok_row *row, sprig_error *err);
/* Compiles arbitrary expressions (tests, hostile-input checks). */
sprig_pretok *sprig_pretok_compile_regex(const char *name, const char *const *regex, int n, sprig_error *err);
void sprig_pretok_free(sprig_pretok *p);
const struct sprig_pretok_row *sprig_pretok_row_of(const sprig_pretok *p);

/* Cuts text[len] (valid UTF-8) into words, calling fn(user, off, len) for each
 * in order (offsets into text); fn returns false to stop. Returns SPRIG_OK, or
 * an error when matching fails (PCRE2's resource limits) or fn stopped. */
typedef bool (*sprig_pretok_fn)(void *user, size_t off, size_t len);
sprig_status sprig_pretok_split(const sprig_pretok *p, const char *text, size_t len,
                                sprig_pretok_fn fn, void *user, sprig_error *err);

#endif
