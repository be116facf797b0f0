/*
 * model — a loaded model (weights + hyper-parameters + tokenizer) and a
 * forward context (KV cache + scratch), with the batched forward the rest of
 * sprig stands on (DESIGN §2).
 *
 * forward(tokens[n], positions[n], mask | NULL, rows wanted) appends n
 * entries to every layer's cache, runs all n tokens as one batch (each weight
 * is read once for the whole batch: that is what makes verifying a draft
 * tree cheap), and returns logits — and optionally the final-norm hidden
 * states — for the requested rows. Positions are RoPE positions (a tree node
 * takes offset + depth). mask NULL = causal. A caller mask is additive,
 * [n][offset + n]: row q is the query at slot offset + q, the first offset
 * columns are the cached history; blocked entries hold -1e9.
 *
 * Architectures are rows of a table (model/arch.c): GGUF key prefix, RoPE
 * pairing, tensor names with their expected shapes, and a forward function.
 */
#ifndef SPRIG_MODEL_H
#define SPRIG_MODEL_H

#include "base/err.h"
#include "base/pool.h"
#include "gguf/gguf.h"
#include "kv/kv.h"
#include "tensor/matmul.h"
#include "tokenizer/tokenizer.h"

#define SPRIG_MAX_LAYERS 512

struct sprig_hparams {
    int   n_vocab;
    int   n_ctx_train;
    int   dim;          /* embedding length */
    int   n_layer;
    int   n_head;       /* the scalar keys; a layer's own shape is in struct sprig_layer */
    int   n_kv_head;
    int   head_dim;     /* <arch>.attention.key_length, else dim / n_head */
    int   n_ff;
    int   n_rot;        /* rotated dims per head (default head_dim) */
    int   head_dim_swa, n_rot_swa;   /* sliding layers' head size and rotated dims (gemma4's _swa keys; else the same) */
    int   n_kv_start;   /* layers [0, n_kv_start) keep a cache; later ones read an earlier layer's (gemma4) */
    int   n_pl;         /* per-layer input width (gemma4 embedding_length_per_layer_input), 0 = none */
    int   max_qdim, max_kvdim, max_hd, max_rot, max_ff;   /* the largest over the layers (scratch sizes) */
    /* gated delta-net layers (qwen35; 0 without): ssm.* keys */
    int   ssm_conv;     /* ssm.conv_kernel K: the causal convolution's taps */
    int   ssm_state;    /* ssm.state_size: a head's key and value size */
    int   ssm_v_heads;  /* ssm.time_step_rank: value heads (one state matrix each) */
    int   ssm_k_heads;  /* ssm.group_count: query/key heads (value head h reads q/k head h % ssm_k_heads) */
    int   n_recurrent;  /* recurrent layers */
    int   n_nextn;      /* MTP blocks after the last layer (qwen35 nextn_predict_layers; not in n_layer) */
    int   rope_sections[4];   /* qwen35's rope.dimension_sections (interleaved multi-section RoPE) */
    float eps;
    float rope_theta;
    float rope_freq_scale;  /* 1 / <arch>.rope.scaling.factor for linear scaling; 1 = none */
    int   rope_mode;    /* SPRIG_ROPE_NORM / SPRIG_ROPE_NEOX */
    float attn_scale;   /* query scale: 1/sqrt(head_dim), or the row's rule (gemma 27B) */
    int   swa_window;   /* sliding layers' window W (0: none); which layers: sprig_layer.window */
    float rope_theta_swa, rope_freq_scale_swa;   /* RoPE of the sliding layers */
    /* mixture-of-experts layers (model/moe.h; 0 without): <arch>.expert_* keys */
    int   n_expert;     /* expert_count E: routed experts per layer */
    int   n_expert_used;/* expert_used_count K: experts each token runs (top-k of the router) */
    int   n_ff_exp;     /* expert_feed_forward_length: an expert's FFN width */
    int   n_ff_shexp;   /* expert_shared_feed_forward_length: the shared expert's width (qwen35moe; 0: none) */
    float final_softcap;    /* logits = c * tanh(logits / c); 0 = none */
    float attn_softcap;     /* attention scores likewise, after the scale (gemma2); 0 = none */
};

struct sprig_layer {
    float       *attn_norm;   /* [dim] (owned f32 copy) */
    sprig_weight wq;          /* dim -> n_head*head_dim */
    sprig_weight wk;          /* dim -> n_kv_head*head_dim */
    sprig_weight wv;          /* dim -> n_kv_head*head_dim */
    float       *bq;          /* [n_head*head_dim] q bias or NULL (qwen2) */
    float       *bk;          /* [n_kv_head*head_dim] or NULL */
    float       *bv;          /* [n_kv_head*head_dim] or NULL */
    float       *q_norm;      /* [head_dim] per-head RMSNorm of q before RoPE, or NULL (qwen3) */
    float       *k_norm;      /* [head_dim] the same for k, or NULL */
    sprig_weight wo;          /* n_head*head_dim -> dim */
    float       *bo;          /* [dim] output-projection bias or NULL (llama's optional attn_output.bias) */
    float       *attn_post_norm; /* [dim] norm of the attention output before the residual add, or NULL (gemma) */
    float       *ffn_post_norm;  /* [dim] the same for the FFN output, or NULL */
    float       *ffn_norm;    /* [dim] */
    sprig_weight w_gate;      /* dim -> n_ff */
    sprig_weight w_up;        /* dim -> n_ff */
    sprig_weight w_down;      /* n_ff -> dim */
    /* a mixture-of-experts FFN instead of w_gate / w_up / w_down (model/moe.h); router.raw NULL: dense */
    sprig_weight router;      /* dim -> n_expert (ffn_gate_inp): the router's logits */
    sprig_weight *exp_gate;   /* [n_expert] dim -> n_ff_exp, views into ffn_gate_exps [dim, n_ff_exp, E] (or the
                                 first n_ff_exp rows of each slice of a fused ffn_gate_up_exps [dim, 2 n_ff_exp, E]) */
    sprig_weight *exp_up;     /* [n_expert] dim -> n_ff_exp (ffn_up_exps, or the fused slices' last rows); must follow
                                 exp_gate (a fused tensor binds both) */
    sprig_weight *exp_down;   /* [n_expert] n_ff_exp -> dim (ffn_down_exps [n_ff_exp, dim, E]) */
    float       *exp_gate_s, *exp_up_s, *exp_down_s;   /* [n_expert] per-expert output scales (ffn_*_exps.scale), or NULL */
    float       *router_s;    /* [dim] gemma4: the router reads rms_norm(x) / sqrt(dim) * router_s (ffn_gate_inp.scale) */
    float       *ffn_pre_norm2, *ffn_post_norm1, *ffn_post_norm2;   /* [dim] gemma4: the experts' input norm, the dense
                                 MLP's and the experts' output norms (the dense MLP runs beside the experts) */
    float       *sh_gate_inp; /* [dim] the shared expert's gate: out += sigmoid(sh_gate_inp . x) * shared(x), or NULL */
    uint64_t    *exp_touched; /* [(n_expert + 63) / 64] bit e: some forward read expert e since the load (set atomically;
                                 the model's resident experts when they are read in place) */
    sprig_weight sh_gate, sh_up;  /* dim -> n_ff_shexp (ffn_gate_shexp, ffn_up_shexp) */
    sprig_weight sh_down;     /* n_ff_shexp -> dim (ffn_down_shexp) */
    int          window;      /* sliding-window layer: keys at positions > p - window only; 0 = full */
    int          n_head, n_kv_head, head_dim, n_rot, n_ff;   /* this layer's shape */
    int          kv_layer;    /* the layer whose cache it reads: itself, or an earlier one (gemma4 shared KV) */
    bool         v_is_k;      /* no attn_v: V is K's projection (gemma4) */
    float       *out_scale;   /* [1] the layer output's scale, or NULL (gemma4 layer_output_scale) */
    sprig_weight pl_gate;     /* dim -> n_pl, per-layer input gate (gemma4), or raw NULL */
    sprig_weight pl_proj;     /* n_pl -> dim */
    float       *pl_post_norm;/* [dim] */
    /* a gated delta-net layer (qwen35); recurrent = false: an attention layer */
    bool         recurrent;
    bool         attn_gate;   /* wq's output interleaves per head [q | gate]; out *= sigmoid(gate) (qwen35) */
    sprig_weight w_qkv;       /* dim -> conv_dim = 2 key_dim + value_dim (attn_qkv) */
    sprig_weight w_z;         /* dim -> value_dim (attn_gate: the output norm's gate) */
    sprig_weight w_alpha;     /* dim -> v_heads (ssm_alpha) */
    sprig_weight w_beta;      /* dim -> v_heads (ssm_beta) */
    sprig_weight w_ssm_out;   /* value_dim -> dim (ssm_out) */
    float       *conv_w;      /* [conv_dim][K] ssm_conv1d */
    float       *dt_bias;     /* [v_heads] ssm_dt.bias */
    float       *ssm_a;       /* [v_heads] the decay rate (negative: -exp(A_log)) */
    float       *ssm_norm;    /* [state] the gated output norm */
};

/* qwen35's built-in MTP block (nextn_predict_layers, after the last layer):
 * a full-attention block fed eh_proj([enorm(embedding); hnorm(hidden)]),
 * with its own head when the file has one (else the model's). Loaded and
 * checked with the model; the drafter that runs it is not built yet. */
struct sprig_nextn {
    struct sprig_layer blk;   /* attention, post_attention_norm, FFN (the block's shape: the model's) */
    sprig_weight eh_proj;     /* 2*dim -> dim */
    float *enorm, *hnorm;     /* [dim] */
    sprig_weight embed;       /* [n_vocab][dim] its own embeddings (row lookup), or raw NULL */
    sprig_weight head;        /* dim -> n_vocab, or raw NULL (the model's output) */
    float *head_norm;         /* [dim] or NULL (the model's output_norm) */
};

struct sprig_arch;

typedef struct sprig_model {
    const struct sprig_arch *arch;
    struct sprig_hparams hp;
    sprig_gguf *gguf;             /* owns the mapping the weights view */
    sprig_tokenizer *tok;
    char name[128];               /* general.name */
    sprig_weight tok_embd;        /* [n_vocab][dim] rows (lookup via raw rows) */
    float *out_norm;              /* [dim] */
    float *rope_freqs;            /* [n_rot/2] RoPE frequency divisors (Llama 3 rope_freqs.weight; gemma4: its
                                     global layers' proportional RoPE) or NULL */
    sprig_weight pl_tok_embd;     /* [n_vocab][n_layer*n_pl] per-layer token inputs (gemma4), or raw NULL */
    sprig_weight pl_model_proj;   /* dim -> n_layer*n_pl */
    float *pl_proj_norm;          /* [n_pl] */
    sprig_weight output;          /* dim -> n_vocab (tied: same raw as tok_embd) */
    bool tied_output;
    struct sprig_layer *layers;   /* [n_layer] */
    struct sprig_nextn *nextn;    /* [n_nextn] MTP blocks (qwen35), or NULL */
    int n_nextn;
    size_t weight_bytes;          /* bytes a decode step reads from the weights */
    size_t copied_bytes;          /* weights packed into memory of their own (the file's pages dropped) */
    size_t mapped_bytes;          /* weights read in place from the mapped file (experts, embeddings) */
    double load_ms;               /* wall time of sprig_model_load */
    int64_t n_params;
    struct sprig_gvocab *gvocab;  /* the vocabulary's byte trie for grammars (grammar/match.h), built on first use */
} sprig_model;

/* Load and validate a model (architecture keys, tensors and shapes). */
sprig_status sprig_model_load(const char *path, sprig_model **out, sprig_error *err);
/* Load from an already-open GGUF (ownership of g passes to the model, also on failure). */
sprig_status sprig_model_load_gguf(sprig_gguf *g, sprig_model **out, sprig_error *err);
/* Distinct experts some forward has read since the load, of all there are,
 * and their weight bytes (the resident share of experts read in place). */
void sprig_model_experts_touched(const sprig_model *m, int64_t *touched, int64_t *total, double *bytes);
void sprig_model_free(sprig_model *m);

/* ---------------------------------------------------------------- context */

struct sprig_ctx_params {
    int n_ctx;        /* KV slots; 0 = min(model context, 4096) */
    int n_batch;      /* largest batch one forward takes; 0 = 64 */
    int kv_mode;      /* enum sprig_kv_mode (kv/kv.h); 0 = f32 */
    struct sprig_kv_pool *kv_pool;   /* non-NULL: the cache is a paged sequence on this shared
                                        pool (its mode and shapes must be the model's; kv_mode
                                        is then the pool's) */
    int kv_block_slots;              /* kv_pool NULL and > 0: a paged cache on a private pool
                                        of blocks this size (a power of two) covering n_ctx */
};

typedef struct sprig_ctx sprig_ctx;

sprig_status sprig_ctx_create(const sprig_model *m, sprig_pool *pool, const struct sprig_ctx_params *p,
                              sprig_ctx **out, sprig_error *err);
void sprig_ctx_free(sprig_ctx *c);

/* Prepare the context for speculation with verify blocks of up to rows
 * tokens: sliding layers' rings get their speculative buffer (kv_ring.c),
 * so verify tails stay in logical order and trees can be gathered; a
 * hybrid's recurrent layers keep what a rollback replays. Not in the round
 * loop (it may allocate). */
sprig_status sprig_ctx_speculative(sprig_ctx *c, int rows, sprig_error *err);
/* Drop the last k tokens (a rejected draft): the cache, and the recurrent
 * states of a hybrid (which can drop only tokens of the last forward,
 * restored exactly by replay; else SPRIG_E_REFUSED naming the layers). */
sprig_status sprig_ctx_trim(sprig_ctx *c, int k, sprig_error *err);
/* Whether a tree batch can be verified and gathered now; if not, reason
 * names the layer (a recurrent layer, or a wrapped sliding-window ring). */
bool sprig_ctx_tree_ok(const sprig_ctx *c, char *reason, size_t cap);
/* Milliseconds the recurrent layers spent on rollback (copies and replays). */
double sprig_ctx_rollback_ms(const sprig_ctx *c);

/* What the context's forwards read from experts, cumulative since it was
 * made (all zero for a dense model): forwards with expert layers, expert
 * layer runs, the distinct experts those runs read (each once per forward,
 * however many rows chose it) and their weight bytes. A session takes
 * differences. */
struct sprig_moe_counters { int64_t forwards, layer_runs, experts, bytes; };
void sprig_ctx_moe_counters(const sprig_ctx *c, struct sprig_moe_counters *out);
/* The last forward's routing: [rows][SPRIG_MOE_ROUTE_LAYERS][k] expert ids at its
 * first `layers` expert layers (model/moe.h); NULL for a dense model. */
const int16_t *sprig_ctx_moe_routes(const sprig_ctx *c, int *rows, int *layers, int *k);

const sprig_model *sprig_ctx_model(const sprig_ctx *c);
sprig_kv  *sprig_ctx_kv(sprig_ctx *c);
sprig_pool *sprig_ctx_pool(sprig_ctx *c);
int sprig_ctx_n_batch(const sprig_ctx *c);
int sprig_ctx_n_ctx(const sprig_ctx *c);

struct sprig_fwd {
    int n;                      /* tokens in the batch, 1..n_batch */
    const int32_t *tokens;      /* [n] */
    const int32_t *pos;         /* [n] RoPE positions, or NULL = kv_len + i */
    const float *mask;          /* [n][kv_len + n] additive, or NULL = causal */
    const int32_t *parents;     /* [n] a tree batch (with its mask): row i's parent row, parents[0] = 0 (the
                                   root follows the cache); for layers that carry a state (recurrent),
                                   which step each node from its parent's. NULL: rows in sequence */
    int n_out;                  /* rows wanted (0 = none) */
    const int32_t *out_rows;    /* [n_out] batch indices; NULL = the last n_out rows */
    float *logits;              /* [n_out][n_vocab] or NULL (with n_logits > 0: [n_logits][n_vocab]) */
    int n_logits;               /* logits only for the last n_logits of the n_out rows; 0 = all */
    float *hidden;              /* [n_out][dim] final-norm hidden or NULL */
    const float *h_in;          /* [n][dim] an MTP block's second input (the target's hidden rows, model/nextn.h);
                                   NULL for a model */
};

/* One batched forward (see top of file). Validates every argument first;
 * on error nothing was appended to the cache. */
sprig_status sprig_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err);

/* Several sequences in ONE forward (a server verifying many sessions'
 * blocks and trees together): ctx[s] runs f[s] exactly as sprig_forward
 * would — its rows read only its own cache and its own block or tree (its
 * mask), so the attention is block-diagonal and each row's bits equal a
 * forward of that sequence alone — while the rows of all sequences share
 * every weight read (embeddings, projections, FFN, output head). The rows
 * sit side by side in host's scratch (host: a context of the same model
 * whose n_batch holds the sum of the n; its cache is not touched). logits:
 * [sum of n_out][n_vocab] scratch for the shared head (the rows are then
 * copied to each f[s].logits). Every argument is checked first (naming the
 * sequence); on an error nothing was appended to any cache. An architecture
 * that runs one sequence per forward (recurrent layers) is refused. */
#define SPRIG_FORWARD_MAX_SEQS 64
sprig_status sprig_forward_multi(sprig_ctx *host, int n_seq, sprig_ctx *const *ctx, const struct sprig_fwd *f, float *logits,
                                 sprig_error *err);
/* The thread pool the context's forwards run on (the caller's threads for a shared host context). */
void sprig_ctx_set_pool(sprig_ctx *c, sprig_pool *pool);

/* After a tree forward of `tail` rows: keep the rows path[n_path] (path[0]
 * = 0, each the next one's parent, strictly increasing), in path order,
 * and drop the rest: the KV cache gathers them, recurrent layers keep the
 * path's final state. For a chain the path is 0..n_path-1. */
sprig_status sprig_ctx_keep_path(sprig_ctx *c, int tail, const int *path, int n_path, sprig_error *err);

/* Feed n tokens (any n) causally in n_batch chunks; logits of the last token
 * into `logits` (may be NULL), its final-norm hidden into `hidden` (may be NULL). */
sprig_status sprig_prefill(sprig_ctx *c, const int32_t *tokens, int n, float *logits, float *hidden, sprig_error *err);
/* The same, with every token's final-norm hidden row into hidden[n][dim]
 * (for an MTP block that reads them all). */
sprig_status sprig_prefill_rows(sprig_ctx *c, const int32_t *tokens, int n, float *logits, float *hidden, sprig_error *err);

/* Prefill shared with the other sequences of a paged cache's pool (kv/kv.h's
 * prefix sharing): the cache holds tokens[0 .. have); feed tokens[have ..
 * to) in chunks of `chunk` tokens ending on block boundaries, attaching what
 * the pool already holds, publishing each chunk as soon as it is computed,
 * and waiting for a chunk another sequence has claimed instead of computing it
 * too (share false: chunks only). No logits. On a cache of another kind:
 * plain chunks. */
struct sprig_shared_prefill {
    int chunk;                  /* tokens a chunk (raised to a whole block when sharing) */
    bool share;
    /* compute n tokens into c's cache (NULL: sprig_prefill on c) */
    sprig_status (*run)(void *user, sprig_ctx *c, const int32_t *tokens, int n, sprig_error *err);
    void (*waiting)(void *user);    /* called before waiting for another sequence's chunk (NULL: nothing) */
    bool (*stop)(void *user);       /* polled before each chunk: true ends early (NULL: never) */
    void *user;
};
/* *held: the slots the cache holds after (to, or less when stopped); *attached
 * (added to): the tokens attached rather than computed. */
sprig_status sprig_prefill_shared(sprig_ctx *c, const int32_t *tokens, int have, int to, const struct sprig_shared_prefill *o,
                                  int *held, int *attached, sprig_error *err);

#endif
