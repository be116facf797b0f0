/*
 * fuzz/fuzz-gguf.c — libFuzzer entry point for the GGUF reader.
 *
 * Every input is parsed with sprig_gguf_open_memory (no copy, so ASan sees
 * any read outside the buffer); when it parses, every accessor is exercised:
 * each kv is formatted and read through every typed getter, every array
 * element is fetched, every tensor's first and last data byte is touched, and
 * the last row of every tensor of a type sprig reads is dequantized (the
 * block formats' reference to_f32 on hostile bytes).
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iinclude -Isrc fuzz/fuzz-gguf.c src/gguf/gguf.c src/base/err.c src/base/log.c \
 *       src/base/mmap.c src/tensor/types.c src/tensor/quant.c -lm -o build/fuzz-gguf
 *   mkdir -p build/fuzz-corpus
 *   ./sprig mkmodel --type q4_0 --dim 32 --heads 2 --kv-heads 1 --ffn 32 --layers 1 \
 *       --vocab 260 -q -o build/fuzz-corpus/tiny.gguf
 *   head -c 14176 ../shared/models/stories260K.gguf > build/fuzz-corpus/stories-header.gguf
 *   ./sprig mkmodel --arch qwen3 --head-dim 16 --dim 16 --heads 2 --kv-heads 1 --ffn 32 --layers 1 \
 *       --vocab 260 -q -o build/fuzz-corpus/qwen3.gguf
 *   SPRIG_FUZZ_CORPUS=$PWD/build/fuzz-corpus ./build/tests/test-arch   # broken qwen2/qwen3/Llama 3 files
 *   ./build/fuzz-gguf -max_total_time=60 -max_len=65536 build/fuzz-corpus
 */
#include "gguf/gguf.h"
#include "tensor/types.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sprig_error err;
    sprig_gguf *g = sprig_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) {
        if (err.code == SPRIG_OK || strncmp(err.msg, "fuzz.gguf: ", 11)) abort();   /* every failure names the file */
        return 0;
    }
    char buf[1024];
    volatile uint64_t sink = 0;
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
        const char *key = sprig_gguf_kv_key(g, i);
        if (sprig_gguf_find_kv(g, key) != i) abort();
        sprig_gguf_kv_format(g, i, buf, sizeof buf);
        uint32_t u; int64_t s; float f; bool b; const char *str; size_t len; int et; uint64_t n;
        sprig_gguf_get_u32(g, key, &u, true, &err);
        sprig_gguf_get_i64(g, key, &s, true, &err);
        sprig_gguf_get_f32(g, key, &f, true, &err);
        sprig_gguf_get_bool(g, key, &b, true, &err);
        if (sprig_gguf_get_str(g, key, &str, &len, true, &err) == SPRIG_OK && len) sink += (uint8_t)str[len - 1];
        if (sprig_gguf_get_arr(g, key, &et, &n, true, &err) == SPRIG_OK) {
            for (uint64_t k = 0; k < n && k < 4096; k++) {
                if (et == SPRIG_GGUF_STR) {
                    const char *e = sprig_gguf_arr_str(g, i, k, &len);
                    if (!e) abort();
                    if (len) sink += (uint8_t)e[len - 1];
                } else {
                    sink += (uint64_t)sprig_gguf_arr_int(g, i, k);
                    sink += (uint64_t)sprig_gguf_arr_f32(g, i, k);
                }
            }
        }
    }
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        if (sprig_gguf_find_tensor(g, t->name) != t) abort();
        const uint8_t *d = t->data;
        sink += d[0] + d[t->nbytes - 1];
        const struct sprig_type_traits *tt = sprig_type_traits(t->type);
        size_t rb;
        if (tt && tt->to_f32 && t->ne[0] <= (1 << 20) && sprig_row_bytes(t->type, t->ne[0], &rb) && rb <= t->nbytes) {
            float *row = malloc((size_t)t->ne[0] * sizeof *row);
            if (!row) abort();
            tt->to_f32(d + t->nbytes - rb, row, t->ne[0]);
            sink += (uint64_t)(row[t->ne[0] - 1] != 0);
            free(row);
        }
    }
    (void)sink;
    sprig_gguf_close(g);
    return 0;
}
