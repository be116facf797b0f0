/*
 * chat/toolcall — a model's tool calls read back out of its text.
 *
 * Each family writes calls its own way, and its chat template shows which:
 * the template that renders an assistant's tool_calls as `<tool_call>{...}`
 * expects its model to answer so. One table row per way (toolcall.c):
 *
 *   hermes       <tool_call>{"name": ..., "arguments": {...}}</tool_call>   Qwen 2.5 / 3, Hermes 2 Pro / 3, SmolLM3, ...
 *   qwen3-coder  <tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call>
 *                                                                           Qwen3-Coder, Qwen 3.5 (values typed by the tool's schema)
 *   llama3       {"name": ..., "parameters": {...}} as the whole reply (after <|python_tag|> or not)
 *                                                                           Llama 3.1 / 3.2 / 3.3
 *   mistral      [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]  or  [TOOL_CALLS]NAME[ARGS]{...}
 *                                                                           Mistral Nemo / Small / Devstral, Ministral
 *   gemma4       <|tool_call>call:NAME{key:value,...}<tool_call|>      Gemma 4 (its own notation: <|"|>strings<|"|>)
 *
 * A row is found from the template's text (the markers it renders), or by
 * name. Parsing splits a finished reply into its content (the text before
 * the calls, and any after them) and its calls, each a name and its
 * arguments as compact JSON text; a reply whose call region does not parse
 * is all content, so nothing the model wrote is lost. For streaming,
 * sprig_toolfmt_find says where calls begin (or may begin: a marker's
 * prefix at the end of the text so far), so content is streamed up to there
 * and the calls are sent when the reply ends.
 */
#ifndef SPRIG_CHAT_TOOLCALL_H
#define SPRIG_CHAT_TOOLCALL_H

#include "base/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sprig_toolfmt;

/* The row whose markers the template text t[n] shows (NULL: none known). */
const struct sprig_toolfmt *sprig_toolfmt_detect(const char *t, size_t n);
/* The row named `name` (NULL: unknown); the names, comma-separated, for messages. */
const struct sprig_toolfmt *sprig_toolfmt_named(const char *name);
const char *sprig_toolfmt_names(void);
const char *sprig_toolfmt_name(const struct sprig_toolfmt *f);
/* Tool call ids this format's templates take: "call_" + 24 alphanumerics, or exactly 9 (Mistral's). */
int sprig_toolfmt_id_len(const struct sprig_toolfmt *f);

/* Where calls begin in text[n]: the offset of the first call's marker; n when there is none. With no complete
 * marker, *held gets the offset from which the text could still become one (a marker's prefix at the end, or for
 * llama3 a reply so far only whitespace or the start of a JSON object); n when none. */
size_t sprig_toolfmt_find(const struct sprig_toolfmt *f, const char *text, size_t n, size_t *held);

/* A finished reply text[n] as content and calls. *calls: a JSON array of {"name": s, "arguments": s} (JSON text),
 * empty when the reply has no well-formed calls; *content: the reply's text outside them (malloc'd, trailing
 * whitespace before the calls trimmed), the whole text when there are none; its first *head_n bytes are the text's
 * first (the rest is text after the calls). tools (the request's, may be NULL) types qwen3-coder's parameter
 * values. false only when out of memory. */
bool sprig_toolfmt_parse(const struct sprig_toolfmt *f, const char *text, size_t n, const json_t *tools, json_t **calls, char **content,
                         size_t *content_n, size_t *head_n);

/* A GBNF grammar whose every text is one call (or, with parallel, one or more) in this format, to the tool named
 * `name` or (NULL) any of tools (OpenAI's tool_choice "required" / a named function). JSON formats take each tool's
 * parameters schema (grammar/schema.h); qwen3-coder's parameter names are the schema's, values free text; gemma4's
 * arguments any object in its notation. *out malloc'd; errors name the tool. */
sprig_status sprig_toolfmt_grammar(const struct sprig_toolfmt *f, const json_t *tools, const char *name, bool parallel, char **out,
                                   sprig_error *err);

#endif
