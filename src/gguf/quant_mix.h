/*
 * quant_mix — llama.cpp's file types ("mostly Q4_K_M", ...) and its
 * per-tensor choice of weight type, as llama-quantize makes it without an
 * importance matrix, so that a file sprig writes (mkmodel, converters) has
 * the types, general.file_type and (with tensor/quant.c) the bytes that
 * llama-quantize would give it.
 *
 * A file type names a default type and whether tensors get the mix: in a
 * mix, output.weight (and token_embd.weight when the output is tied to it)
 * becomes Q6_K, attn_v / ffn_down get more bits in the layers
 * use_more_bits picks (the first and last eighth and every third between),
 * Q2_K/Q3_K bump attn_output, 8-expert and 70B models bump attn_v, ... —
 * the rules are rows of a table in quant_mix.c. The plain type names f32,
 * f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 are "pure": every matrix in that
 * type (llama-quantize --pure; sprig's mkmodel has always written Q4_0 so).
 * q3_k, q4_k, q5_k are llama-quantize's aliases of q3_k_m, q4_k_m, q5_k_m.
 * Q2_K_S and the IQ types need an importance matrix and are not offered;
 * Falcon's exceptions are left out (sprig has no Falcon).
 *
 * In every case a matrix whose rows are not a whole number of blocks falls
 * back as llama.cpp does (Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1,
 * Q6_K -> Q8_0, then F16), e.g. Qwen2.5-0.5B's rows of 896. Vectors,
 * norms and the other tensors llama.cpp never quantizes keep their type.
 */
#ifndef SPRIG_QUANT_MIX_H
#define SPRIG_QUANT_MIX_H

#include <stdbool.h>
#include <stdint.h>

struct sprig_ftype {
    const char *name;    /* "q4_k_m" */
    uint32_t ftype;      /* llama.cpp's LLAMA_FTYPE_* (general.file_type) */
    int type;            /* default matrix type (enum sprig_type) */
    bool mix;            /* llama.cpp's per-tensor mix; false: pure */
};

/* NULL when unknown (case-insensitive). */
const struct sprig_ftype *sprig_ftype_find(const char *name);
/* "f32, f16, ..." for help texts and messages. */
const char *sprig_ftype_names(void);

/* What the mix needs to know about the model. */
struct sprig_qmix_model {
    const char *arch;    /* general.architecture */
    int n_layer, n_head, n_head_kv, n_expert;
    bool tied;           /* no output.weight: token_embd is the output */
    int n_attn_v;        /* attn_v / attn_qkv / attn_kv_b tensors (0: n_layer) */
};

struct sprig_qmix {
    const struct sprig_ftype *ft;
    bool pure;
    struct sprig_qmix_model m;
    bool is_70b;
    int i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;   /* tensors of each kind seen so far */
};

/* Start a file: pure forces every matrix to ft->type (llama-quantize --pure). */
void sprig_qmix_init(struct sprig_qmix *q, const struct sprig_ftype *ft, bool pure, const struct sprig_qmix_model *m);

/* The type of the next tensor (src_type: what it is now, kept when it is
 * not to be quantized). Call once per tensor in llama.cpp's order: by
 * layer number (tensors outside blk.N first), then by name; the counters
 * behind "first eighth of the layers" advance per call. */
int sprig_qmix_type(struct sprig_qmix *q, const char *name, int n_dims, int64_t ne0, int src_type);

/* llama.cpp's tensor order for sprig_qmix_type (a qsort comparator on
 * const char * const *). */
int sprig_qmix_cmp_names(const void *a, const void *b);

#endif
