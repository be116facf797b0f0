/*
 * fuzz/fuzz-model.c — libFuzzer entry point for model loading and the
 * forward pass on hostile files (llama, qwen2, qwen3, qwen3moe, gemma2/3/4 (with
 * experts too), qwen35, qwen35moe; any weight type).
 *
 * Every input is parsed with sprig_gguf_open_memory (no copy, so ASan sees
 * any read outside the buffer) and handed to sprig_model_load_gguf (which
 * owns the GGUF from then on, also on failure). Every refusal must carry an
 * error naming the file. When a model loads, a context is created (16
 * slots, batch 4, one thread; for a quarter of the inputs the default
 * context, sized from the file's context length, as `sprig run` makes it)
 * and two forwards run: a batch of two tokens, then one more token over the
 * cache; token ids come from the input bytes, clamped into the vocabulary.
 * Every argument is valid, so both forwards must succeed and write every
 * logit of every wanted row (NaN is fine: hostile weights may hold
 * anything).
 *
 * Not part of the default build. Build (from the repository root; the whole
 * library, SIMD kernels included, is compiled with the fuzzer's
 * instrumentation into build-fuzz/; clang 14's __builtin_cpu_supports does
 * not know "bmi2", so tensor/attention.c is compiled by cc first, without
 * instrumentation, and make keeps that object):
 *   mkdir -p build-fuzz/src/tensor build
 *   cc -std=c11 -D_GNU_SOURCE -O1 -g -ffp-contract=off -fno-math-errno -Iinclude -Isrc -pthread \
 *       -c -o build-fuzz/src/tensor/attention.o src/tensor/attention.c
 *   make -j2 BUILD=build-fuzz CC=clang-14 OPT=-O1 WERROR= \
 *       EXTRA_CFLAGS='-fsanitize=fuzzer-no-link,address,undefined' build-fuzz/libsprig.a
 *   clang-14 -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz-model.c build-fuzz/libsprig.a -lpcre2-8 -ljansson -lm -pthread -o build/fuzz-model
 * Seeds: tiny files of every arch and weight type (K-quants need rows of
 * 256 to stay K; --vocab 260 keeps them small, 16-450 KB), Llama 3
 * rope_freqs, and the broken files tests/test-arch writes:
 *   mkdir -p build/fuzz-model-corpus && cd build/fuzz-model-corpus
 *   for a in llama qwen2 qwen3; do
 *     for t in f32 f16 q8_0 q4_0; do ../../sprig mkmodel --arch $a --type $t --dim 32 --heads 2 \
 *         --kv-heads 1 --ffn 32 --layers 1 --vocab 260 --ctx 64 -q -o $a-$t.gguf; done
 *     for t in q4_k_m q6_k q5_k_m q2_k q3_k_m; do ../../sprig mkmodel --arch $a --type $t --dim 256 \
 *         --heads 2 --kv-heads 1 --ffn 256 --layers 1 --vocab 260 --ctx 64 -q -o $a-$t.gguf; done
 *   done
 *   ../../sprig mkmodel --rope-scaling llama3 --dim 32 --heads 2 --kv-heads 1 --ffn 32 --layers 1 \
 *       --vocab 260 -q -o llama3-rope.gguf
 *   ../../sprig mkmodel -q --arch gemma2 --dim 32 --heads 2 --kv-heads 1 --ffn 32 --layers 2 --vocab 260 \
 *       --ctx 64 --window 8 -o gemma2.gguf
 *   ../../sprig mkmodel -q --arch gemma3 --dim 32 --heads 2 --kv-heads 1 --ffn 32 --layers 3 --vocab 260 \
 *       --ctx 64 --window 8 --swa-pattern 3 --softcap 5 -o gemma3.gguf
 *   ../../sprig mkmodel -q --arch gemma4 --dim 32 --heads 2 --kv-heads 1 --head-dim 16 --head-dim-swa 8 \
 *       --ffn 32 --layers 4 --vocab 260 --ctx 64 --window 8 --shared-kv 2 --swa-layers sgsg \
 *       --per-layer-embd 4 -o gemma4.gguf
 *   ../../sprig mkmodel -q --arch qwen35 --dim 32 --heads 2 --kv-heads 1 --head-dim 16 --ffn 32 --layers 2 \
 *       --vocab 260 --ctx 64 --ssm-state 8 --mtp -o qwen35.gguf
 *   for t in f32 q8_0; do ../../sprig mkmodel -q --arch qwen3moe --dim 32 --heads 2 --kv-heads 1 --ffn 32 \
 *       --layers 2 --vocab 260 --ctx 64 --experts 4 --experts-used 2 --expert-ffn 16 --type $t -o qwen3moe-$t.gguf; done
 *   ../../sprig mkmodel -q --arch qwen35moe --dim 32 --heads 2 --kv-heads 1 --head-dim 16 --ffn 32 --layers 2 --vocab 260 \
 *       --ctx 64 --ssm-state 8 --mtp --experts 4 --experts-used 2 --expert-ffn 16 --shared-expert-ffn 16 -o qwen35moe.gguf
 *   ../../sprig mkmodel -q --arch gemma4 --dim 32 --heads 2 --kv-heads 1 --head-dim 16 --head-dim-swa 8 --ffn 32 --layers 4 \
 *       --vocab 260 --ctx 64 --window 8 --shared-kv 2 --swa-layers sgsg --per-layer-embd 4 --experts 4 --experts-used 2 \
 *       --expert-ffn 16 -o gemma4moe.gguf
 *   cd ../.. && SPRIG_FUZZ_CORPUS=$PWD/build/fuzz-model-corpus ./build/tests/test-arch
 * Run (UBSan reports stop the run; -rss_limit_mb also bounds one malloc, so
 * a small hostile file that makes the loader or the context allocate
 * gigabytes is reported):
 *   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./build/fuzz-model -max_len=460000 \
 *       -rss_limit_mb=2048 -timeout=30 -max_total_time=600 build/fuzz-model-corpus
 */
#include "model/model.h"
#include "base/pool.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must_name_file(const sprig_error *err, const char *prefix)
{
    if (err->code == SPRIG_OK || strncmp(err->msg, prefix, strlen(prefix))) {
        fprintf(stderr, "error %d does not name the file: '%s'\n", err->code, err->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sprig_error err;
    memset(&err, 0, sizeof err);
    sprig_gguf *g = sprig_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) {
        must_name_file(&err, "fuzz.gguf: ");
        return 0;
    }
    sprig_model *m = NULL;
    memset(&err, 0, sizeof err);
    if (sprig_model_load_gguf(g, &m, &err) != SPRIG_OK) {   /* g is the model's now, freed on failure */
        if (m) abort();
        must_name_file(&err, "fuzz.gguf: ");
        return 0;
    }
    if (!m || m->hp.n_vocab < 1) abort();

    sprig_pool *pool = sprig_pool_create(1, NULL);
    if (!pool) abort();
    /* a quarter of the inputs take the default context (the file's context
     * length, at most 4096 slots; batch 64): what `sprig run` allocates */
    struct sprig_ctx_params cp = { .n_ctx = size % 4 == 0 ? 0 : 16, .n_batch = size % 4 == 0 ? 0 : 4,
                                   .kv_mode = size % 2 ? SPRIG_KV_MODE_F16 : SPRIG_KV_MODE_F32 };
    sprig_ctx *c = NULL;
    memset(&err, 0, sizeof err);
    if (sprig_ctx_create(m, pool, &cp, &c, &err) != SPRIG_OK) {
        /* a loaded model whose context cannot be made must say why */
        if (err.code == SPRIG_OK || !err.msg[0]) abort();
        sprig_pool_free(pool);
        sprig_model_free(m);
        return 0;
    }
    const int nv = m->hp.n_vocab;
    int32_t tok[3];
    for (int i = 0; i < 3; i++) {
        uint32_t b = size > (size_t)i ? data[size - 1 - (size_t)i] : 0;
        tok[i] = (int32_t)(b * 2654435761u % (uint32_t)nv);
    }
    float *logits = malloc(2 * (size_t)nv * sizeof *logits);
    float *hidden = malloc(2 * (size_t)m->hp.dim * sizeof *hidden);
    if (!logits || !hidden) abort();
    /* sentinel bit patterns the forward must overwrite */
    memset(logits, 0xA5, 2 * (size_t)nv * sizeof *logits);
    struct sprig_fwd f = { .n = 2, .tokens = tok, .n_out = 2, .logits = logits, .hidden = hidden };
    memset(&err, 0, sizeof err);
    if (sprig_forward(c, &f, &err) != SPRIG_OK) {   /* every argument is valid: it must run */
        fprintf(stderr, "forward refused: %s\n", err.msg);
        abort();
    }
    uint32_t sentinel;
    memset(&sentinel, 0xA5, sizeof sentinel);
    for (size_t i = 0; i < 2 * (size_t)nv; i++) {
        uint32_t bits;
        memcpy(&bits, &logits[i], sizeof bits);
        if (bits == sentinel) abort();
    }
    volatile float sink = logits[0] + hidden[0];
    int32_t pos = 7;   /* a later position over the cached two */
    struct sprig_fwd f2 = { .n = 1, .tokens = tok + 2, .pos = &pos, .n_out = 1, .logits = logits };
    if (sprig_forward(c, &f2, &err) != SPRIG_OK) abort();
    sink += logits[nv - 1];
    (void)sink;
    free(logits);
    free(hidden);
    sprig_ctx_free(c);
    sprig_pool_free(pool);
    sprig_model_free(m);
    return 0;
}
