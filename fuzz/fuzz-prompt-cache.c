/*
 * fuzz/fuzz-prompt-cache.c — libFuzzer entry point for the prompt cache
 * file's parser (api/pcache.c, sprig_pcache_parse): any bytes are either
 * refused with a message, or parse into sections that lie inside the buffer
 * with exactly n_layer * n_tokens * row_bytes bytes of rows, one after the
 * other, ending 8 bytes (the checksum) before the buffer does. Each input is
 * parsed as it is and again with its checksum made right, so the fuzzer gets
 * past the checksum into the layout.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-prompt-cache.c src/api/pcache.c src/base/err.c src/base/log.c -o build/fuzz-prompt-cache
 *   mkdir -p build/fuzz-prompt-cache-corpus
 *   ./sprig run -m ../shared/models/stories260K.gguf -p "Once" -n 4 --prompt-cache build/fuzz-prompt-cache-corpus/one.bin
 *   ./build/fuzz-prompt-cache -max_total_time=60 build/fuzz-prompt-cache-corpus
 */
#include "api/pcache.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *buf, size_t len)
{
    sprig_pcache pc;
    sprig_error err = { 0 };
    if (sprig_pcache_parse(buf, len, &pc, &err) != SPRIG_OK) {
        if (!err.msg[0]) abort();   /* a refusal always says why */
        return;
    }
    if (pc.n_sections < 1 || pc.n_sections > SPRIG_PCACHE_MAX_SECTIONS) abort();
    if (pc.id < (const char *)buf || pc.id + pc.id_len > (const char *)buf + len) abort();
    const uint8_t *end = buf + len - 8, *prev = (const uint8_t *)pc.id + pc.id_len;
    for (int i = 0; i < pc.n_sections; i++) {
        const sprig_pcache_section *s = &pc.sec[i];
        if (s->n_tokens < 0 || s->n_layer < 1 || s->row_bytes < 1) abort();
        if ((const uint8_t *)s->tokens < prev || (const uint8_t *)(s->tokens + s->n_tokens) > end) abort();
        if ((uint64_t)s->rows_len != (uint64_t)s->n_layer * (uint64_t)s->n_tokens * s->row_bytes) abort();
        if (s->rows < (const uint8_t *)(s->tokens + s->n_tokens) || s->rows + s->rows_len > end) abort();
        int32_t t = 0;
        for (int k = 0; k < s->n_tokens; k++) memcpy(&t, s->tokens + k, sizeof t);   /* readable */
        (void)t;
        prev = s->rows + s->rows_len;
    }
    if (prev != end) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    if (size >= 16) {   /* the same bytes with a right checksum */
        uint8_t *copy = malloc(size);
        if (!copy) return 0;
        memcpy(copy, data, size);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < size - 8; i++) h = (h ^ copy[i]) * 0x100000001b3ull;
        memcpy(copy + size - 8, &h, 8);
        check(copy, size);
        free(copy);
    }
    return 0;
}
