/*
 * model/moe — mixture-of-experts FFN layers, the shared layer piece every
 * architecture row with routed experts runs (qwen3moe today), with
 * llama.cpp's keys, tensors and arithmetic (src/llama-graph.cpp
 * build_moe_ffn):
 *
 *   logits[E]  = ffn_gate_inp x                    router, [dim, E]
 *   p          = softmax(logits)                   exp(l - max), summed in double, times (float)(1 / sum)
 *   sel[K]     = the K largest p, largest first    top-k (expert_used_count)
 *   w[k]       = p[sel[k]] / max(sum_k p[sel[k]], 2^-14)     renormalised (qwen3moe always)
 *   y          = sum over k in order of w[k] * down_e(silu(gate_e x) * up_e x),  e = sel[k]
 *
 * Expert tensors are [ne0, ne1, E] (ffn_gate_exps / ffn_up_exps [dim,
 * n_ff_exp, E], ffn_down_exps [n_ff_exp, dim, E]); expert e's matrix is the
 * contiguous slice e, bound as its own weight (model.c).
 *
 * A forward of n rows groups its rows by expert: every expert some row
 * selected runs ONE matmul over exactly the rows that chose it, so its
 * weights are read once per forward (llama.cpp's mul_mat_id does the
 * same). Each row's expert outputs are summed in its own slot order, so a
 * row's bits depend neither on the other rows of the batch nor on the
 * thread count (the kernels' own guarantee).
 *
 * Keys: <arch>.expert_count (>= 1), expert_used_count (1..expert_count),
 * expert_feed_forward_length (default: feed_forward_length / expert_used_count,
 * as llama.cpp). What this piece does not do is refused by name:
 * expert_gating_func other than softmax (1), expert_group_count > 1,
 * shared experts (expert_shared_count > 0), expert_weights_norm false and
 * expert_weights_scale other than 1 (llama.cpp's qwen3moe ignores the last
 * two and always renormalises without scaling; a file asking otherwise would
 * run differently in each engine).
 */
#ifndef SPRIG_MODEL_MOE_H
#define SPRIG_MODEL_MOE_H

#include "model/model.h"

struct sprig_arch;

/* Read and check the expert keys into hp (a row with moe: required; a row
 * without: a set expert_count is refused naming the key). After the
 * scalar hyper-parameters (n_ff, n_layer) are read. */
sprig_status sprig_moe_read_hparams(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp, sprig_error *err);

/* The expert layers whose routing a forward records (the first ones): what
 * a speculative round predicts its rows' experts from (spec/routes.h). */
#define SPRIG_MOE_ROUTE_LAYERS 16

/* Scratch for one forward of up to B rows (B = n_batch; no allocation per
 * forward). */
struct sprig_moe_scratch {
    float   *logits;   /* [B][E] router logits, then probabilities */
    int32_t *sel;      /* [B][K] selected experts, best first */
    float   *w;        /* [B][K] their weights */
    int32_t *count;    /* [E + 1] rows per expert, then offsets */
    int32_t *order;    /* [B * K] (row * K + slot), grouped by expert */
    float   *xg;       /* [B][dim] an expert's rows, gathered */
    float   *y;        /* [B][dim] an expert's outputs */
    float   *slot;     /* [B][K][dim] each row's expert outputs, by slot */
    float   *xn2, *rin, *mo;   /* [B][dim] gemma4: the experts' input, the router's, their output */
    float   *ones;     /* [dim] 1.0f: a weightless RMS norm */
    int16_t *route;    /* [B][SPRIG_MOE_ROUTE_LAYERS][K] the last forward's routing at its first expert layers */
    int      route_rows, route_layers, layer_at;   /* its rows, the layers recorded, the next layer's index */
    int      last_experts;   /* distinct experts the last forward's layer ran */
    float    margin;         /* the forward's smallest p_K - p_(K+1) of its last row over the layers (sprig_moe_begin) */
    struct sprig_moe_counters count_all;   /* what the forwards read, cumulative (model.h) */
};
sprig_status sprig_moe_scratch_alloc(struct sprig_moe_scratch *s, const struct sprig_hparams *hp, int B, sprig_error *err);
void sprig_moe_scratch_free(struct sprig_moe_scratch *s);

/* out[n][dim] = the layer's expert FFN of xn[n][dim] (router_in: what the
 * router reads, NULL: xn; gelu: GEGLU experts, else SwiGLU), plus the
 * shared expert where the layer has one. gate, up: [B][max_ff] scratch;
 * act: the activation scratch (act_bytes). */
void sprig_moe_ffn(sprig_pool *pool, const struct sprig_hparams *hp, const struct sprig_layer *L, int n, const float *xn,
                   const float *router_in, bool gelu, float *out, float *gate, float *up, void *act, size_t act_bytes,
                   struct sprig_moe_scratch *s);

/* gemma4's expert layer (llama.cpp's gemma4.cpp): out[n][dim] holds the dense
 * MLP's output of x (the residual after attention); it becomes
 *   post_norm_1(out) + post_norm_2(experts(pre_norm_2(x)))
 * with the router reading rms_norm(x) / sqrt(dim) * ffn_gate_inp.scale and
 * GEGLU experts. */
void sprig_moe_gemma4(sprig_pool *pool, const struct sprig_hparams *hp, const struct sprig_layer *L, int n, const float *x,
                      float *out, float *gate, float *up, void *act, size_t act_bytes, struct sprig_moe_scratch *s);

/* A forward's start and end: the routing margin of its last row (the row
 * whose logits a decode step reads), smallest over the layers, is logged at
 * debug level ("moe: forward of N rows: ... margin M"): where it is tiny two
 * engines may route that token differently, and the oracle test excuses the
 * step as a routing near tie (tests/test-oracle-llamacpp.sh). NULL: no experts. */
void sprig_moe_begin(struct sprig_moe_scratch *s);
void sprig_moe_end(const struct sprig_moe_scratch *s, int n);

/* The weight bytes expert e of layer L reads (its gate, up and down matrices). */
size_t sprig_moe_expert_bytes(const struct sprig_layer *L, int e);

/* How many distinct experts the last sprig_moe_ffn of this scratch ran (statistics). */
int sprig_moe_last_experts(const struct sprig_moe_scratch *s);

#endif
