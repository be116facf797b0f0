/*
 * tokenizer/special — finding special tokens in raw text before encoding.
 *
 * Control, unknown and user-defined tokens are matched as whole strings in
 * the text the caller gives: user-defined ones always (Hugging Face's added
 * tokens), control and unknown ones only when the caller asks for special-
 * token parsing (otherwise "<|im_start|>" typed by a user stays text). The
 * matching follows llama.cpp's order exactly: longer pieces first (then lower
 * ids), each piece's occurrences left to right, never inside a span already
 * taken; a token with lstrip / rstrip swallows the whitespace beside it. The
 * pieces sit in a byte trie, so the text is scanned once whatever the number
 * of special tokens (Gemma 4 and Qwen have hundreds).
 */
#ifndef SPRIG_TOKENIZER_SPECIAL_H
#define SPRIG_TOKENIZER_SPECIAL_H

#include "tokenizer/vocab.h"

struct sprig_special_trie;

/* Builds the trie over t's control / unknown / user-defined tokens (NULL
 * with SPRIG_OK when there are none). */
sprig_status sprig_special_build(const sprig_tokenizer *t, struct sprig_special_trie **out, sprig_error *err);
void sprig_special_free(struct sprig_special_trie *s);

/* Calls fn for each fragment of text[len] in order: raw text (token -1) or a
 * matched special token. fn's status stops the walk. */
typedef sprig_status (*sprig_fragment_fn)(void *user, const char *text, size_t len, int32_t token);
sprig_status sprig_special_partition(const sprig_tokenizer *t, const char *text, size_t len, bool parse_special,
                                     sprig_fragment_fn fn, void *user, sprig_error *err);

#endif
