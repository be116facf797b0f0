/*
 * fuzz/fuzz-oracle.c — libFuzzer entry point for the oracle drafter's ids
 * file (spec/draft_oracle.c, sprig_oracle_parse_ids): any bytes either
 * parse into ids below the vocabulary (each checked here) or fail with a
 * message naming the file.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-oracle.c src/spec/draft_oracle.c src/base/err.c src/base/log.c -lm -pthread \
 *       -o build/fuzz-oracle
 *   mkdir -p build/fuzz-oracle-corpus && echo "1 403 407 261" > build/fuzz-oracle-corpus/ids.txt
 *   ./build/fuzz-oracle -max_total_time=60 build/fuzz-oracle-corpus
 */
#include "spec/drafters.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sprig_error err = { 0 };
    int32_t *ids = NULL;
    int n = 0;
    const int n_vocab = 512;
    if (sprig_oracle_parse_ids((const char *)data, size, "fuzz.txt", n_vocab, &ids, &n, &err) != SPRIG_OK) {
        if (ids || err.code == SPRIG_OK || strncmp(err.msg, "fuzz.txt: ", 10)) abort();
        return 0;
    }
    if (n < 2) abort();
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab) abort();
    free(ids);
    return 0;
}
