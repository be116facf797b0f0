/*
 * chat/chat — a model's chat template in whichever form it comes: the
 * Jinja text the file carries (tokenizer.chat_template) or a file given
 * (--chat-template-file), rendered by chat/jinja; or a row of the family
 * table chosen by name (--chat-template NAME, chat/template.h). `sprig run
 * --chat`, `sprig template` and `sprig serve` all render through this.
 *
 * Messages are OpenAI's: a JSON array of objects with "role" and "content"
 * (and whatever else a template reads: tool_calls, reasoning_content, ...);
 * tools a JSON array (or NULL); extra a JSON object of more variables (or
 * NULL), e.g. {"enable_thinking": false}. A template gets messages, tools
 * (when given), add_generation_prompt, bos_token, eos_token and extra's.
 * A tool call's arguments reach it as an object, or as JSON text when the
 * template was found (at load) to concatenate them as text.
 */
#ifndef SPRIG_CHAT_CHAT_H
#define SPRIG_CHAT_CHAT_H

#include "base/err.h"
#include "chat/template.h"
#include "chat/toolcall.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sprig_chat sprig_chat;

/* A family row by name (errors name the known ones). */
sprig_status sprig_chat_from_name(const char *name, sprig_chat **out, sprig_error *err);
/* Jinja text; `source` says where it came from ("tokenizer.chat_template", a path) for messages. */
sprig_status sprig_chat_from_text(const char *text, size_t n, const char *source, sprig_chat **out, sprig_error *err);
void sprig_chat_free(sprig_chat *c);

/* "chatml (chosen with --chat-template)", "Jinja, from tokenizer.chat_template" */
const char *sprig_chat_describe(const sprig_chat *c);
/* The family row (NULL for a Jinja template). */
const struct sprig_chat_family *sprig_chat_family_of(const sprig_chat *c);
/* How the model writes tool calls: found from a Jinja template's markers (chat/toolcall.h), or set (--tool-format
 * NAME); NULL when not known (a family row renders no tools). */
const struct sprig_toolfmt *sprig_chat_toolfmt(const sprig_chat *c);
void sprig_chat_set_toolfmt(sprig_chat *c, const struct sprig_toolfmt *f);

/* The prompt text; *out malloc'd, NUL-terminated. A template's own error
 * (raise_exception) comes back as SPRIG_E_INVALID_ARG with its message. */
sprig_status sprig_chat_apply(const sprig_chat *c, const json_t *messages, const json_t *tools, bool add_generation_prompt,
                              const char *bos, const char *eos, const json_t *extra, char **out, size_t *out_n,
                              sprig_error *err);

#endif
