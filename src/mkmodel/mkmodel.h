/*
 * mkmodel — write synthetic GGUF models (llama, qwen2, qwen3, qwen3moe, gemma2,
 * gemma3, gemma4, gemma4-assistant, qwen35 layouts) with seeded random weights.
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
 * Architectures (a table in mkmodel.c): `llama` (optionally with Llama 3
 * RoPE scaling: a rope_freqs tensor from the converter's llama3 formula),
 * `qwen2` (q/k/v biases, small random), `qwen3` (per-head q/k norms, random
 * around 1 so a wrong application shows; tied output), `gemma3` (q/k norms,
 * post-attention / post-FFN norms, sliding-window layers by period), `gemma4`
 * (dense, as llama.cpp's gemma4 loader reads it: per-layer sliding flags,
 * head sizes and kv head counts for sliding and global layers, proportional
 * RoPE for the global ones (rope_freqs: 1 for the first quarter of the
 * pairs, 1e30 for the rest, as the converter writes), optional attn_v on
 * global layers, KV shared by the last layers, per-layer token embeddings,
 * a scalar layer_output_scale per layer), `qwen35` (dense Qwen 3.5, the
 * hybrid of gated-delta-net linear-attention layers and gated full-attention
 * layers, optionally with its built-in MTP layer: see below),
 * `gemma4-assistant` (Gemma 4's MTP
 * drafter as llama.cpp's gemma4-assistant loader and its draft-mtp
 * speculator read it, matched to a gemma4 TARGET file: see
 * sprig_mkmodel_target). Keys carry the architecture's prefix. With
 * vocab_from, every tokenizer.* key of another GGUF is copied verbatim and
 * the vocabulary size is its token count.
 *
 * gemma4-assistant (llama.cpp: src/models/gemma4-assistant.cpp; the KV
 * "share" rule in llama-model.cpp; common/speculative.cpp's draft-mtp with
 * ctx_other = the target): the assistant has no K/V of its own; its
 * sliding layers attend over the cache of the target's layer n_layer - 2,
 * its global layers over layer n_layer - 1, viewed with the assistant's own
 * head size and head_count_kv, so those are the target's (key_length(_swa),
 * the kv heads of the layer whose cache it is). The file:
 *   keys: embedding_length A, embedding_length_out D (the target's; llama.cpp
 *     refuses A == D), block_count = nextn_predict_layers = L (llama.cpp
 *     creates the layers blk.0 .. blk.nextn-1), feed_forward_length,
 *     attention.head_count, attention.head_count_kv (i32 per layer),
 *     key/value_length(_swa), rope.dimension_count(_swa), rope.freq_base(_swa),
 *     layer_norm_rms_epsilon, sliding_window, context_length (the target's),
 *     sliding_window_pattern (bool per layer; at least one sliding layer:
 *     llama.cpp's iswa cache asserts one), and the target's tokenizer.* keys;
 *   tensors: token_embd [A, vocab] (the tied output head; the input
 *     embedding is the TARGET's token_embd), output_norm [A],
 *     nextn.pre_projection [2D, A] (over [E_target(t) sqrt(D); h]),
 *     nextn.post_projection [A, D], rope_freqs [global head / 2] when a layer
 *     is global (the gemma4 target's proportional factors), per layer
 *     attn_norm, attn_q [A, heads x head], attn_q_norm [head], attn_output,
 *     post_attention_norm, ffn_norm, ffn_gate / ffn_up [A, ffn], ffn_down,
 *     post_ffw_norm, layer_output_scale [1]; optionally masked_embd_centroids
 *     .weight and masked_embd_ordering, which llama.cpp loads (only with
 *     a single element: it declares them with no shape) and never uses.
 *
 * qwen35 (llama.cpp: src/models/qwen35.cpp load_arch_hparams / load_arch_tensors /
 * the graphs; conversion/qwen.py Qwen3_5TextModel, Qwen3NextModel, _QwenMtpMixin).
 * With N = layers, M = 1 with mtp else 0, S = ssm_state, Hk / Hv = ssm_k_heads /
 * ssm_v_heads, hd = the attention head size:
 *   keys: block_count N + M (llama.cpp's n_layer_all; its n_layer() is
 *     block_count - nextn_predict_layers), nextn_predict_layers M (only with
 *     mtp), context_length, embedding_length, feed_forward_length,
 *     attention.head_count, head_count_kv, key_length = value_length = hd,
 *     rope.dimension_count (the rotated dims, default hd / 4 as the converter's
 *     partial_rotary_factor 0.25), rope.dimension_sections (i32 x 4, required
 *     by llama.cpp; default [ceil(P/3), ceil((P-1)/3), ceil((P-2)/3), 0] with
 *     P = rope.dimension_count / 2, i.e. HF's [11, 11, 10, 0] for P = 32),
 *     rope.freq_base, attention.layer_norm_rms_epsilon, ssm.conv_kernel,
 *     ssm.state_size S, ssm.group_count Hk, ssm.time_step_rank Hv,
 *     ssm.inner_size S x Hv, and either full_attention_interval I (as the
 *     converter writes it: layer i < N is full attention when (i + 1) % I == 0)
 *     or, with recurrent_layers, attention.recurrent_layers (bool x (N + M),
 *     true = linear attention; the MTP layer false). llama.cpp uses RoPE type
 *     IMROPE (interleaved M-RoPE; for text all position components equal,
 *     the fourth is 0) and NEOX-style pairs (i, i + n_rot / 2).
 *   tensors (ne = [in, out]): token_embd [D, V], output_norm [D], output
 *     [D, V] unless tied (the default, as Qwen 3.5 0.8B); every layer
 *     attn_norm, post_attention_norm [D] and ffn_gate / ffn_up [D, F],
 *     ffn_down [F, D]; linear-attention layers attn_qkv [D, 2 S Hk + S Hv]
 *     (rows: q heads, k heads, v heads), attn_gate [D, S Hv] (z), ssm_conv1d
 *     [K, 2 S Hk + S Hv] (F32, never quantized), ssm_dt.bias [Hv], ssm_a [Hv]
 *     (no .weight suffix), ssm_beta, ssm_alpha [D, Hv], ssm_norm [S], ssm_out
 *     [S Hv, D]; full-attention layers attn_q [D, 2 hd heads] (per head hd
 *     query rows then hd gate rows), attn_k, attn_v [D, hd kv_heads],
 *     attn_output [hd heads, D], attn_q_norm, attn_k_norm [hd]; the MTP layer
 *     (blk.N) a full-attention layer plus nextn.eh_proj [2D, D] (input:
 *     [enorm(embedding); hnorm(hidden)]), nextn.enorm, nextn.hnorm,
 *     nextn.shared_head_norm [D] (as the converter writes Qwen 3.5's mtp.*),
 *     and with mtp_head nextn.embed_tokens and nextn.shared_head_head [D, V]
 *     (optional in llama.cpp: it falls back to token_embd / output).
 *   values: the converter stores Qwen's (1 + w) RMS norms as the multiplier
 *     and the gated norm (ssm_norm) as is, so every norm here is a
 *     multiplier, random around 1 (N(1, 0.2)); ssm_a = -exp(A_log), what
 *     llama.cpp multiplies softplus(alpha + dt_bias) by: -exp(N(-1, 0.6)),
 *     within [-2.9, -0.05]; ssm_dt.bias N(0, 0.5); ssm_conv1d N(0, 1/sqrt(3K))
 *     (HF's kaiming-uniform init of a K-tap depthwise conv); matrices N(0, std).
 *     Value head h reads key / query head h % Hk (ggml_gated_delta_net, ggml's
 *     tiled broadcast; the converter reorders HF's grouped v heads to match).
 *   llama.cpp needs a linear-attention and a full-attention layer among the
 *   first N (its hybrid cache aborts without either): validated. Its MTP
 *   drafter (common/speculative.cpp draft-mtp) feeds the MTP layer the pair
 *   (h_p, x_{p+1}) at position p + 1, h_p the target's last hidden state after
 *   output_norm, starting from (0, x_0) at position 0; the MTP layer has its
 *   own KV cache.
 *
 * qwen35moe (llama.cpp: src/models/qwen35moe.cpp): qwen35's layers (its MTP
 * layer too) with qwen3moe's routed experts (split gate / up, as the
 * converter writes them) and a shared expert: ffn_gate_inp_shexp [D] (one
 * gate value per token, sigmoid), ffn_gate_shexp / ffn_up_shexp [D, S],
 * ffn_down_shexp [S, D]; keys as qwen3moe's plus
 * expert_shared_feed_forward_length S.
 *
 * qwen3moe (llama.cpp: src/models/qwen3moe.cpp): qwen3's attention layers
 * (q/k norms, tied output) with routed experts instead of the FFN: keys
 * expert_count E, expert_used_count K, expert_feed_forward_length Fe;
 * tensors per layer ffn_gate_inp [D, E] (F32: llama-quantize never
 * quantizes the router), ffn_gate_exps / ffn_up_exps [D, Fe, E],
 * ffn_down_exps [Fe, D, E] (the experts' matrices back to back).
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
    const char *arch;       /* general.architecture: "llama" (NULL), "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3",
                               "gemma4", "gemma4-assistant", "qwen35", "qwen35moe" */
    int head_dim;           /* 0: dim / heads; else written as <arch>.attention.key_length / value_length
                               (gemma4: the global layers' head size) */
    const char *vocab_from; /* NULL, or a GGUF whose tokenizer.* keys are copied (vocab = its token count) */
    int rope_scaling;       /* enum sprig_mkmodel_rope */
    int output;             /* enum sprig_mkmodel_output */
    float std;              /* matrices ~N(0, std); 0 = 0.02 (bigger makes attention and position matter) */
    int window;             /* gemma3: attention.sliding_window (0: no sliding layers); gemma4: 0 = min(512, ctx) */
    int swa_pattern;        /* gemma3: attention.sliding_window_pattern (every N-th layer global; 0 = 6);
                               gemma4: the default swa_layers' period (0 = 5) */
    float final_softcap;    /* gemma3: final_logit_softcapping (0: key absent); gemma4, gemma2: 0 = 30 */
    float attn_softcap;     /* gemma2: attn_logit_softcapping (0 = 50) */
    /* gemma4 only (0 / NULL / false: the default described) */
    const char *swa_layers; /* one 's' (sliding) or 'g' (global) per layer: attention.sliding_window_pattern;
                               NULL: every swa_pattern-th layer global, the last layer global, and with
                               shared_kv the last KV layer global and the one before it sliding */
    int head_dim_swa;       /* sliding layers' head size, attention.key_length_swa (0: the global one) */
    int n_kv_heads_global;  /* global layers' kv heads (0: n_kv_heads, the sliding layers'); head_count_kv
                               is written per layer */
    int shared_kv;          /* attention.shared_kv_layers: the last N layers reuse the KV of the last
                               KV layer of their kind (no attn_k / attn_v / attn_k_norm) */
    int per_layer_embd;     /* embedding_length_per_layer_input P: per_layer_token_embd [P x layers, vocab]
                               and a gated per-layer input in every layer (0: none) */
    bool no_global_v;       /* no attn_v on global layers (llama.cpp then uses K as V) */
    /* gemma4-assistant only. The assistant's own shape: dim A (0: half the target's, rounded down to
     * a multiple of 32, at least 32), n_layers (0: 2), n_heads (0: the target's), ffn (0: 4 A) and
     * swa_layers (NULL: all sliding but the last, which is global when the target's last layer is;
     * one layer: sliding). vocab, ctx, head_dim, head_dim_swa, n_kv_heads (its sliding layers'),
     * n_kv_heads_global, window, rope_freq_base and rms_eps are overwritten with the target's by
     * sprig_mkmodel_target. */
    const char *target;     /* the gemma4 GGUF the assistant drafts for (required) */
    bool masked_embd;       /* also write masked_embd_centroids.weight and masked_embd_ordering ([1] each) */
    /* qwen35 only (0 / NULL / false: the default described; see above) */
    int ssm_state;          /* ssm.state_size S: the linear-attention key and value head size (0: 32) */
    int ssm_v_heads;        /* ssm.time_step_rank Hv: value heads (0: heads) */
    int ssm_k_heads;        /* ssm.group_count Hk: key / query heads, dividing Hv (0: Hv) */
    int ssm_conv;           /* ssm.conv_kernel K (0: 4) */
    int full_attn_interval; /* full_attention_interval I (0: 4, or the layer count when fewer) */
    const char *recurrent_layers;  /* one 'r' (linear attention) or 'a' (full attention) per layer, written as
                                      attention.recurrent_layers instead of full_attention_interval */
    int n_rot;              /* rope.dimension_count (0: head size / 4, even, at least 2) */
    int rope_sections[4];   /* rope.dimension_sections (all 0: the default described above) */
    bool mtp;               /* append the MTP layer (nextn_predict_layers = 1) */
    /* qwen3moe, qwen35moe only: routed experts instead of the FFN (0: the default described) */
    int n_experts;          /* expert_count E (0: 8) */
    int n_experts_used;     /* expert_used_count K, at most E (0: 2) */
    int expert_ffn;         /* expert_feed_forward_length (0: ffn) */
    int shared_expert_ffn;  /* qwen35moe: expert_shared_feed_forward_length (0: ffn) */
    bool mtp_head;          /* the MTP layer's own nextn.embed_tokens and nextn.shared_head_head */
    bool expert_scales;     /* qwen3moe, qwen35moe: llama.cpp's per-expert output scales ffn_{gate,up,down}_exps.scale
                               [E] on every layer with experts, the MTP layer's included (gemma4 writes
                               ffn_down_exps.scale always) */
    struct sprig_mkmodel_target_facts {   /* filled by sprig_mkmodel_target (dim 0: not yet) */
        int dim, n_layers, n_rot, n_rot_swa;
        float rope_freq_base_swa;
        bool swa_n2, swa_n1;  /* whether the target's layers n_layer - 2 / n_layer - 1 are sliding */
    } tgt;
};

enum sprig_mkmodel_rope { SPRIG_MKMODEL_ROPE_NONE = 0, SPRIG_MKMODEL_ROPE_LLAMA3 = 1 };
enum sprig_mkmodel_output { SPRIG_MKMODEL_OUTPUT_DEFAULT = 0, SPRIG_MKMODEL_OUTPUT_UNTIED, SPRIG_MKMODEL_OUTPUT_TIED };

/* Comma-separated architecture names mkmodel writes, for help texts. */
const char *sprig_mkmodel_arch_names(void);

/* The vocabulary size of vocab_from (its tokenizer.ggml.tokens count), for
 * p->vocab before validating; errors name the file and key. */
sprig_status sprig_mkmodel_vocab_from(const char *path, int *n_vocab, sprig_error *err);

/* gemma4-assistant: read p->target (a gemma4 GGUF; errors name the file and
 * key) and fill the target-derived fields of *p (see the struct) and the
 * defaults of the zero shape fields. INVALID_ARG when the file is not a
 * gemma4 model; the shape is checked by sprig_mkmodel_validate. Idempotent;
 * sprig_mkmodel_write calls it itself. */
sprig_status sprig_mkmodel_target(struct sprig_mkmodel_params *p, sprig_error *err);

/* Fill *p with a named preset ("tiny", "small", "llama-1b", "qwen3-0.6b", "qwen3-1.7b", "gemma3-1b",
 * "qwen35-0.8b", "qwen3moe-a3b"); INVALID_ARG
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
