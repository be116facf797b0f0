/*
 * fuzz/fuzz-toolcall.c — libFuzzer entry point for reading tool calls out of
 * a reply (src/chat/toolcall): the first byte picks the format (gemma4,
 * qwen3-coder, hermes, mistral-v11, mistral, llama3), the rest is the
 * reply. Parsing must split any bytes into content and calls without
 * reading past them; every call has a name and arguments that are a JSON
 * object's text; the streaming offsets stay within the text; and the
 * format's tool_choice grammar compiles.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-toolcall.c src/chat/toolcall.c src/grammar/{gbnf,schema}.c src/base/err.c -ljansson -lm \
 *       -o build/fuzz-toolcall
 *   ./build/fuzz-toolcall -max_total_time=60 -max_len=4096 build/fuzz-toolcall-corpus
 */
#include "chat/toolcall.h"
#include "grammar/gbnf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = { "gemma4", "qwen3-coder", "hermes", "mistral-v11", "mistral", "llama3" };
    static json_t *tools;
    if (!tools)
        tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":"
                           "{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"a\"]}}}]", 0, NULL);
    if (!size) return 0;
    const struct sprig_toolfmt *f = sprig_toolfmt_named(names[data[0] % 6]);
    const char *text = (const char *)data + 1;
    const size_t n = size - 1;
    size_t held = 0;
    const size_t at = sprig_toolfmt_find(f, text, n, &held);
    if (at > n || held > n) abort();
    json_t *calls = NULL;
    char *content = NULL;
    size_t cn = 0, head = 0;
    if (!sprig_toolfmt_parse(f, text, n, tools, &calls, &content, &cn, &head)) return 0;
    if (cn > n || head > cn) abort();
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        const char *name = json_string_value(json_object_get(c, "name")), *args = json_string_value(json_object_get(c, "arguments"));
        json_t *a = args ? json_loads(args, JSON_ALLOW_NUL, NULL) : NULL;
        if (!name || !*name || !json_is_object(a)) abort();
        json_decref(a);
    }
    json_decref(calls);
    free(content);
    if (data[0] < 6) {   /* now and then: the format's grammar for tool_choice "required" */
        char *g = NULL;
        sprig_error err = { 0 };
        if (sprig_toolfmt_grammar(f, tools, NULL, data[0] & 1, &g, &err) != SPRIG_OK) abort();
        sprig_gbnf *gb = NULL;
        if (sprig_gbnf_parse(g, strlen(g), &gb, &err) != SPRIG_OK) abort();
        sprig_gbnf_free(gb);
        free(g);
    }
    return 0;
}
