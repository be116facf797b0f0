/*
 * chat/jinja/jinja — a chat template engine: compile the Jinja text a model
 * file carries (tokenizer.chat_template) once, render it for a
 * conversation as often as needed.
 *
 * What it covers is what real chat templates use (parse.h lists the
 * statements; builtins.c the filters, tests, methods and globals). Its
 * reference is transformers' rendering (Python's Jinja2 in a sandbox with
 * trim_blocks and lstrip_blocks), checked byte for byte against
 * @huggingface/jinja in tests/test-jinja.c; where the two differ (str.strip
 * with an argument, float printing) Python's meaning is taken and the test
 * says so.
 *
 * Hostile templates: a construct outside that set fails compile, naming it
 * and its line:column; rendering is bounded by sprig_jinja_limits (output
 * bytes, memory, steps, call depth) and stops with an error naming the
 * limit. The template's raise_exception(msg) fails the rendering with
 * SPRIG_E_INVALID_ARG and the message ("roles must alternate ...").
 */
#ifndef SPRIG_CHAT_JINJA_H
#define SPRIG_CHAT_JINJA_H

#include "base/err.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct sprig_jinja sprig_jinja;

struct sprig_jinja_limits {
    size_t max_output;     /* bytes rendered (0: 16 MiB) */
    size_t max_memory;     /* bytes of values a rendering may hold (0: 256 MiB) */
    int64_t max_steps;     /* statements run and loop iterations (0: 10 million) */
    int max_depth;         /* macro calls and nested renderings (0: 64) */
    time_t now;            /* strftime_now's time (0: the current time) */
};

sprig_status sprig_jinja_compile(const char *src, size_t n, sprig_jinja **out, sprig_error *err);
void sprig_jinja_free(sprig_jinja *t);

/* Render with vars (a JSON object: its keys are the template's variables,
 * e.g. messages, tools, add_generation_prompt, bos_token, eos_token). On
 * success *out is a malloc'd NUL-terminated string of *out_n bytes. */
sprig_status sprig_jinja_render(const sprig_jinja *t, const json_t *vars, const struct sprig_jinja_limits *lim, char **out,
                                size_t *out_n, sprig_error *err);

#endif
