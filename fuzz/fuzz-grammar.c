/*
 * fuzz/fuzz-grammar.c — libFuzzer entry point for grammars (src/grammar):
 * the first byte picks what the rest is:
 *   even: GBNF text, up to a NUL; what follows the NUL is run through the
 *         compiled grammar byte by byte (states, forced text, accepting)
 *         over a vocabulary of the 256 bytes, and a mask is taken;
 *   odd:  a JSON schema, compiled to GBNF, which must then compile.
 * Any input either fails with a message (the GBNF's naming "grammar", the
 * schema's "schema") or runs within the matcher's bounds.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-grammar.c src/grammar/{gbnf,match,schema}.c src/base/err.c -ljansson -lm -o build/fuzz-grammar
 *   mkdir -p build/fuzz-grammar-corpus   (seed it with tests/data/grammars' files, each after a 0 byte)
 *   ./build/fuzz-grammar -max_total_time=60 -max_len=4096 build/fuzz-grammar-corpus
 */
#include "grammar/gbnf.h"
#include "grammar/match.h"
#include "grammar/schema.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *byte_text(const void *u, int32_t id, size_t *len)
{
    (void)u;
    static char b[256];
    b[id] = (char)id;
    *len = 1;
    return &b[id];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sprig_gvocab *v;
    if (!v) v = sprig_gvocab_create(256, byte_text, NULL, NULL, NULL);
    if (!size || !v) return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    sprig_error err = { 0 };
    if (data[0] & 1) {   /* a JSON schema */
        json_t *s = json_loadb(p, n, JSON_DECODE_ANY, NULL);
        if (!s) return 0;
        char *g = NULL;
        if (sprig_schema_to_gbnf(s, &g, &err) == SPRIG_OK) {
            sprig_gbnf *gb = NULL;
            if (sprig_gbnf_parse(g, strlen(g), &gb, &err) != SPRIG_OK) abort();   /* what the converter writes must compile */
            sprig_gbnf_free(gb);
        } else if (strncmp(err.msg, "schema", 6)) abort();
        free(g);
        json_decref(s);
        return 0;
    }
    const char *nul = memchr(p, 0, n);
    const size_t gl = nul ? (size_t)(nul - p) : n;
    sprig_gbnf *g = NULL;
    if (sprig_gbnf_parse(p, gl, &g, &err) != SPRIG_OK) {
        if (g || strncmp(err.msg, "grammar", 7)) abort();
        return 0;
    }
    sprig_gmatch *m = sprig_gmatch_create(g, v, &err);
    sprig_gbnf_free(g);
    if (!m) return 0;
    int32_t s = sprig_gmatch_start(m);
    char forced[64];
    for (size_t i = gl + 1; nul && i < n && s >= 0; i++) {
        sprig_gmatch_forced_text(m, s, forced, (int)sizeof forced);
        s = sprig_gmatch_advance(m, s, (uint8_t)p[i]);
    }
    sprig_gmatch_accepting(m, s);
    if (s >= 0) sprig_gmatch_mask(m, s, &err);
    sprig_gmatch_free(m);
    return 0;
}
