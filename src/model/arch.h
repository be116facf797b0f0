/*
 * model/arch — the architecture table.
 *
 * One row per architecture: the GGUF `general.architecture` value (also the
 * metadata key prefix), the RoPE pairing, the tensors it needs with their
 * expected shapes, and its forward function. Adding an architecture means
 * adding a row (and a forward file only where its forward really differs:
 * optional per-layer pieces such as q/k/v biases or per-head q/k norms are
 * applied by the shared forward when the row binds them), not editing
 * switches.
 */
#ifndef SPRIG_MODEL_ARCH_H
#define SPRIG_MODEL_ARCH_H

#include "model/model.h"

/* Symbolic dimensions resolved against the hyper-parameters. */
enum sprig_dim {
    SPRIG_D_NONE = 0, SPRIG_D_DIM, SPRIG_D_QDIM, SPRIG_D_KVDIM, SPRIG_D_FF, SPRIG_D_VOCAB,
    SPRIG_D_HEAD,     /* head_dim (per-head q/k norms) */
    SPRIG_D_ROT_HALF, /* n_rot / 2 (RoPE frequency factors) */
    SPRIG_D_ONE,      /* 1 (a scalar weight) */
    SPRIG_D_PL,       /* n_pl (gemma4 per-layer inputs) */
    SPRIG_D_PL_ALL,   /* n_layer * n_pl */
    SPRIG_D_QGDIM,    /* 2 * n_head * head_dim: queries with their output gates (qwen35) */
    SPRIG_D_DIM2,     /* 2 * dim (qwen35's MTP input: embedding and hidden state) */
    SPRIG_D_SSM_CONV, /* the delta-net input: (2 k_heads + v_heads) * state */
    SPRIG_D_SSM_V,    /* v_heads * state */
    SPRIG_D_SSM_VH,   /* v_heads */
    SPRIG_D_SSM_S,    /* state */
    SPRIG_D_SSM_K,    /* conv taps */
    SPRIG_D_FF_EXP,   /* an expert's FFN width (expert_feed_forward_length) */
    SPRIG_D_EXPERTS,  /* expert_count: the third dimension of expert tensors */
    SPRIG_D_FF_EXP2,  /* 2 x the experts' width (a fused ffn_gate_up_exps) */
    SPRIG_D_FF_SHEXP, /* the shared expert's width (expert_shared_feed_forward_length) */
};

/* Where a tensor binds: a vector or small table copied to owned f32 (ne0 x ne1
 * floats) or a matrix (sprig_weight). */
enum sprig_bind { SPRIG_BIND_NORM, SPRIG_BIND_MATRIX,
                  SPRIG_BIND_EXPERTS, /* [ne0, ne1, n_expert]: one matrix per expert, views of the file's slices
                                         (the field is a sprig_weight * array) */
                  SPRIG_BIND_EXPERTS_GU /* a fused [ne0, 2 x F, n_expert]: each slice's first F rows the gate
                                           (the field: exp_gate), the last F the up projection (exp_up) */ };

struct sprig_tensor_spec {
    const char *name;       /* "blk.%d.attn_q.weight" for per-layer tensors */
    bool per_layer;
    bool required;
    enum sprig_bind bind;
    enum sprig_dim ne0, ne1;   /* ne1 == SPRIG_D_NONE: a vector */
    size_t offset;          /* offsetof into sprig_model (global) or struct sprig_layer (per layer) */
    enum sprig_dim ne2;     /* SPRIG_BIND_EXPERTS: SPRIG_D_EXPERTS; else SPRIG_D_NONE */
};

typedef sprig_status (*sprig_forward_fn)(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err);
/* Several sequences' rows in one forward (model.h sprig_forward_multi, arguments checked there). */
typedef sprig_status (*sprig_forward_multi_fn)(sprig_ctx *host, int n_seq, sprig_ctx *const *ctx, const struct sprig_fwd *f,
                                               float *logits, sprig_error *err);

enum sprig_ffn_act { SPRIG_FFN_SILU = 0, SPRIG_FFN_GELU };

/* Sliding-window (local attention) layers, as llama.cpp reads them for the
 * row: <arch>.attention.sliding_window (the window W; a key the row reads),
 * <arch>.attention.sliding_window_pattern (a period P — layer l slides when
 * l % P < P - 1, P = 0: every layer — or a per-layer array of booleans),
 * <arch>.rope.freq_base_swa. A row with period 0 has no sliding layers and
 * refuses a file that sets a window. */
struct sprig_swa_rule {
    int period;            /* default pattern period when the file has none; 0 = no sliding layers;
                              -1 = the file must give the per-layer array (and the window) */
    bool own_rope;         /* local layers default to theta 10000 and no linear scaling (gemma3);
                              false: to the global layers' theta and scaling (gemma2) */
    int attn_scale_dim_layers;   /* a model of this many layers scales queries by
                              1/sqrt(dim / n_head) instead of 1/sqrt(head_dim) (the 27B
                              shapes; llama.cpp's rule); 0 = never */
    int window;            /* the window when the file has no sliding_window key (gemma2: 4096);
                              0 = no sliding layers without the key */
};

/* Logit soft-capping: c * tanh(x / c) of the final logits and/or of the
 * attention scores, from <arch>.final_logit_softcapping and
 * <arch>.attn_logit_softcapping. A default of 0 with `reads` false: the key
 * is refused when set; with `reads` true: capping only when the key is
 * present (gemma3, gemma4); a positive default applies without the key
 * (gemma2: 30 and 50). */
struct sprig_softcap_rule {
    bool final_reads, attn_reads;
    float final_default, attn_default;
};

struct sprig_arch {
    const char *name;
    int rope_mode;
    const struct sprig_tensor_spec *tensors;
    int n_tensors;
    sprig_forward_fn forward;
    int ffn_act;            /* enum sprig_ffn_act: the gated FFN's activation */
    bool embed_scale;       /* token embeddings multiplied by sqrt(dim) (gemma) */
    struct sprig_swa_rule swa;
    struct sprig_softcap_rule softcap;
    bool hybrid;            /* qwen35: gated delta-net layers (ssm.* keys; attention.recurrent_layers
                               or full_attention_interval) between gated attention layers */
    const struct sprig_tensor_spec *nextn_tensors;   /* the MTP blocks' tensors (offsets into struct sprig_nextn), or NULL */
    int n_nextn_tensors;
    bool layer_shapes;      /* gemma4: per-layer head counts and FFN sizes (arrays), the sliding layers'
                               own head size (attention.key_length_swa, rope.dimension_count_swa),
                               shared-KV layers (attention.shared_kv_layers), per-layer inputs,
                               V RMS-normed without weight (or K's projection when attn_v is
                               absent), queries unscaled (the q/k norms carry the scale) */
    sprig_forward_multi_fn forward_multi;   /* NULL: one sequence per forward (a hybrid's recurrent states) */
    bool moe;               /* mixture-of-experts FFNs (model/moe.h): reads the expert_* keys; a row without
                               refuses a file that sets expert_count */
    bool moe_shared;        /* with a gated shared expert beside the routed ones (qwen35moe) */
    bool moe_optional;      /* experts only where a layer has a router (gemma4: dense files have no expert keys) */
};

const struct sprig_arch *sprig_arch_find(const char *name, size_t len);
/* The table's names, comma-separated ("llama, qwen2, qwen3"), into buf
 * (truncated to cap), for messages. */
void sprig_arch_names(char *buf, size_t cap);

/* Forward functions, one file per architecture. */
sprig_status sprig_llama_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err);
sprig_status sprig_llama_forward_multi(sprig_ctx *host, int n_seq, sprig_ctx *const *ctx, const struct sprig_fwd *f,
                                       float *logits, sprig_error *err);
sprig_status sprig_qwen35_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err);

#endif
