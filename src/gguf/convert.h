/*
 * convert — import a karpathy llama2.c checkpoint and tokenizer into GGUF.
 *
 * Checkpoint (legacy llama2.c export, little endian):
 *   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *   f32 token_embedding [vocab][dim]
 *       rms_att [L][dim], wq [L][dim][dim], wk [L][kv_dim][dim], wv [L][kv_dim][dim],
 *       wo [L][dim][dim], rms_ffn [L][dim], w1 [L][hidden][dim], w2 [L][dim][hidden],
 *       w3 [L][hidden][dim], rms_final [dim],
 *       freq_cis_real [seq_len][head/2], freq_cis_imag [seq_len][head/2]  (skipped)
 *       wcls [vocab][dim]       only when vocab_size < 0 (unshared classifier)
 *   The file must be consumed exactly.
 * Tokenizer (llama2.c tokenizer.bin): u32 max_token_length, then per token
 *   f32 score, u32 len, len bytes; exactly |vocab_size| tokens.
 *
 * Output: the layout llama.cpp's llama2.c converter produces (the
 * stories260K.gguf fixture): the same keys in the same order and types, all
 * tensors F32 in the same order, output.weight = a copy of the embedding
 * when it is shared; ids 0/1/2 become <unk>/<s>/</s>, spaces become U+2581.
 * Row-major [out][in] matrices are already ggml's ne = [in, out].
 */
#ifndef SPRIG_CONVERT_H
#define SPRIG_CONVERT_H

#include "base/err.h"

#define SPRIG_LLAMA2C_MAX_LAYERS 512

struct sprig_llama2c_config {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    bool shared_classifier;   /* vocab_size > 0 in the file */
    int32_t n_vocab;          /* |vocab_size| */
    int32_t head_size, kv_dim;
    uint64_t n_floats;        /* weights after the header, freq_cis and wcls included */
};

/* Validate a checkpoint's 28-byte header against the file size (overflow-
 * checked; the file must hold exactly the weights the header implies).
 * `name` is used in messages. */
sprig_status sprig_llama2c_parse_header(const void *data, size_t size, const char *name,
                                        struct sprig_llama2c_config *cfg, sprig_error *err);

struct sprig_convert_opts {
    uint32_t context_length;  /* llama.context_length; 0 = the checkpoint's seq_len */
    const char *name;         /* general.name; NULL = "llama" */
};

/* MODEL.bin + TOKENIZER.bin -> OUT.gguf (written atomically). opts may be NULL. */
sprig_status sprig_convert_llama2c(const char *model_path, const char *tokenizer_path, const char *out_path,
                                   const struct sprig_convert_opts *opts, sprig_error *err);

#endif
