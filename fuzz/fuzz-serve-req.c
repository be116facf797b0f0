/*
 * fuzz/fuzz-serve-req.c — libFuzzer entry point for `sprig serve`'s request
 * bodies (src/serve/request.c, sprig_serve_req_parse), both routes: any bytes either
 * parse into a request whose fields are in range (checked here) or fail
 * with a message and nothing allocated (ASan's leak check sees the rest).
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-serve-req.c src/serve/request.c -ljansson -o build/fuzz-serve-req
 *   mkdir -p build/fuzz-serve-req-corpus
 *   echo '{"messages":[{"role":"user","content":"hi"}],"stop":["a"],"max_tokens":5}' > build/fuzz-serve-req-corpus/chat.json
 *   ./build/fuzz-serve-req -max_total_time=60 build/fuzz-serve-req-corpus
 */
#include "serve/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int chat = 0; chat < 2; chat++) {
        struct sprig_serve_req r;
        char why[256], param[64];
        if (!sprig_serve_req_parse((const char *)data, size, chat, 4096, &r, why, sizeof why, param, sizeof param)) {
            if (!why[0]) abort();
            continue;
        }
        if (chat ? (r.n_msgs < 1 || !r.msgs) : !r.prompt) abort();
        for (int i = 0; i < r.n_msgs; i++)
            if (!r.msgs[i].role || !r.msgs[i].content) abort();
        if (r.max_tokens < 0 || r.max_tokens > 4096 || r.n_stop < 0 || r.n_stop > SPRIG_SERVE_MAX_STOP) abort();
        if (!(r.temperature >= 0 && r.temperature <= 2) || !(r.top_p > 0 && r.top_p <= 1) || r.top_k < 0) abort();
        if (r.top_logprobs < 0 || r.top_logprobs > 20) abort();
        for (int i = 0; i < r.n_stop; i++)
            if (!r.stop[i] || !r.stop[i][0]) abort();
        sprig_serve_req_free(&r);
    }
    return 0;
}
