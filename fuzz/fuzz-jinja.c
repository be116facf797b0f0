/*
 * fuzz/fuzz-jinja.c — libFuzzer entry point for the chat template engine
 * (src/chat/jinja: lexer, parser, evaluator): any bytes either fail to
 * compile with a message naming the template (and, for the parser, its
 * line:column), or compile and render a fixed conversation within small
 * limits, failing only with a message.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-jinja.c src/chat/jinja/{builtins,jinja,lex,parse,value}.c src/base/err.c -ljansson -lm \
 *       -o build/fuzz-jinja
 *   mkdir -p build/fuzz-jinja-corpus   (seed it with chat templates, one per file: the shipped
 *                                       families' are in tests/ref/render-chat.mjs's output)
 *   ./build/fuzz-jinja -max_total_time=60 -max_len=8192 build/fuzz-jinja-corpus
 */
#include "chat/jinja/jinja.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *vars;
    if (!vars)
        vars = json_loads("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"},"
                          "{\"role\":\"assistant\",\"content\":\"<think>\\nx\\n</think>\\n\\nyo\",\"tool_calls\":[{\"type\":\"function\","
                          "\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},{\"role\":\"tool\",\"content\":\"42\"}],"
                          "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}],"
                          "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}", 0, NULL);
    sprig_error err = { 0 };
    sprig_jinja *t = NULL;
    if (sprig_jinja_compile((const char *)data, size, &t, &err) != SPRIG_OK) {
        if (t || err.code == SPRIG_OK || strncmp(err.msg, "chat template", 13)) abort();
        return 0;
    }
    const struct sprig_jinja_limits lim = { .max_output = 1 << 16, .max_memory = 1 << 24, .max_steps = 100000, .max_depth = 16, .now = 1 };
    char *out = NULL;
    size_t n = 0;
    const sprig_status st = sprig_jinja_render(t, vars, &lim, &out, &n, &err);
    if (st == SPRIG_OK) {
        if (!out || n > lim.max_output || strlen(out) > n) abort();
    } else if (out || strncmp(err.msg, "chat template", 13)) abort();
    free(out);
    sprig_jinja_free(t);
    return 0;
}
