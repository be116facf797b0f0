/*
 * fuzz/fuzz-profile.c — libFuzzer entry point for tree auto's profile cache
 * file (spec/profile.c, sprig_profile_parse): any bytes either parse into
 * sizes in (0, SPRIG_TREE_MAX] with times in [1e-6, 1e7] ms and at least one
 * sample each, ascending, the largest returned, and format back to the same
 * sizes and counts; or are a miss (0) with nothing loaded.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   make libsprig.a
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-profile.c src/spec/profile.c src/spec/shape.c src/spec/costs.c src/spec/routes.c \
 *       src/spec/dyntree.c src/spec/tree.c libsprig.a -lpcre2-8 -ljansson -lm -pthread -o build/fuzz-profile
 *   mkdir -p build/fuzz-profile-corpus
 *   printf 'sprig-profile 2\nkey k\nt 1 2.5 2\nt 4 3 17\n' > build/fuzz-profile-corpus/one.txt
 *   ./build/fuzz-profile -max_total_time=60 build/fuzz-profile-corpus
 */
#include "spec/profile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double prof[SPRIG_TREE_MAX + 1];
    int64_t samples[SPRIG_TREE_MAX + 1];
    const int last = sprig_profile_parse((const char *)data, size, "k", prof, samples);
    if (last < 0 || last > SPRIG_TREE_MAX) abort();
    int prev = 0;
    for (int n = 0; n <= SPRIG_TREE_MAX; n++) {
        if (prof[n] == 0) continue;
        if (n == 0 || !(prof[n] > 0) || !isfinite(prof[n]) || n <= prev || samples[n] < 1) abort();
        prev = n;
    }
    if (prev != last) abort();
    if (last) {   /* what was read formats and parses back to the same sizes */
        char buf[8192];
        double again[SPRIG_TREE_MAX + 1];
        int64_t s2[SPRIG_TREE_MAX + 1];
        int len = sprig_profile_format(prof, samples, "k", buf, sizeof buf);
        if (len <= 0 || (size_t)len >= sizeof buf || sprig_profile_parse(buf, (size_t)len, "k", again, s2) != last) abort();
        for (int n = 0; n <= SPRIG_TREE_MAX; n++)
            if ((again[n] > 0) != (prof[n] > 0) || s2[n] != samples[n]) abort();
    }
    return 0;
}
