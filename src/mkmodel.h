/*
 * mkmodel — write synthetic llama GGUF models with seeded random weights.
 *
 * For tests and benchmarks at sizes the fixtures do not cover (a 1B-class
 * model in Q8_0, a tiny model in every weight type). Everything a real
 * llama.cpp file has is there: the llama.* hyper-parameter keys,
 * general.file_type, a valid SentencePiece-style llama vocabulary
 * (<unk> <s> </s>, 256 byte tokens, then '▁'-prefixed and plain lowercase
 * pieces whose every prefix is also a piece, so BPE merges reach them), and
 * tensors with llama.cpp's names and shapes: matrices in the chosen type
 * (or, with a llama.cpp file type such as q4_k_m, in the per-tensor mix
 * llama-quantize would choose: quant_mix.h), norms F32 = 1.0. Matrices are ~N(0, 0.02) (a sum of four uniforms, fast),
 * attn_output and ffn_down scaled by 1/sqrt(2 * layers).
 *
 * Deterministic: each row's random stream is derived from (seed, tensor,
 * row), so the bytes do not depend on the thread count. Tensors are produced
 * while the file is written (the writer's fill callback), so a model is never
 * held in memory whole.
 */
#ifndef SPRIG_MKMODEL_H
#define SPRIG_MKMODEL_H

#include "base/err.h"

#define SPRIG_MKMODEL_MAX_VOCAB (1 << 20)
#define SPRIG_MKMODEL_MAX_LAYERS 512

struct sprig_mkmodel_params {
    int dim, n_layers, n_heads, n_kv_heads, ffn, vocab, ctx;
    int type;               /* matrices: any type sprig quantizes (sprig_type_quantizable) */
    const struct sprig_ftype *ftype;  /* llama.cpp file type whose mix to write (quant_mix.h; its
                                         type must equal `type`); NULL: every matrix in `type` */
    uint64_t seed;
    float rope_freq_base;   /* llama.rope.freq_base */
    float rms_eps;          /* llama.attention.layer_norm_rms_epsilon */
    const char *name;       /* general.name; NULL = "sprig-synthetic" */
    const char *chat_template;  /* tokenizer.chat_template; NULL = none */
    int n_threads;          /* <= 0: all CPUs */
};

/* Fill *p with a named preset ("tiny", "small", "llama-1b"); INVALID_ARG
 * naming the preset if unknown. */
sprig_status sprig_mkmodel_preset(const char *preset, struct sprig_mkmodel_params *p, sprig_error *err);
/* Comma-separated preset names, for help texts. */
const char *sprig_mkmodel_preset_names(void);

/* Check shapes and type (INVALID_ARG naming the parameter). */
sprig_status sprig_mkmodel_validate(const struct sprig_mkmodel_params *p, sprig_error *err);

/* ggml's general.file_type for a weight type; false if it has none. */
bool sprig_mkmodel_file_type(int type, uint32_t *ft);

/* Parameter count of the model p describes (p validated). */
int64_t sprig_mkmodel_n_params(const struct sprig_mkmodel_params *p);

/* Validate and write the model to path (atomically, via path.tmp). */
sprig_status sprig_mkmodel_write(const struct sprig_mkmodel_params *p, const char *path, sprig_error *err);

/* The synthetic vocabulary's piece of token id (UTF-8, NUL-terminated, in buf
 * of at least 64 bytes); returns its length. Ids >= 3 + 256 are pieces. */
size_t sprig_mkmodel_piece(int id, char *buf);

#endif
