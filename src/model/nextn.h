/*
 * model/nextn — qwen35's built-in MTP block (nextn_predict_layers, the
 * tensors blk.N.nextn.* after the last layer) run as llama.cpp's MTP graph:
 * a model of one gated-attention block with its own KV cache, whose input
 * at position p is a pair (token x_p, hidden h_{p-1}):
 *   e = RMSNorm(E[x_p]) enorm            (E = nextn.embed_tokens, else the target's)
 *   x = W_eh [e ; RMSNorm(h_{p-1}) hnorm] (2*dim -> dim)
 *   x = the qwen35 attention block on x (q/k norms, multi-section RoPE at p,
 *       sigmoid output gate; post_attention_norm, SwiGLU FFN)
 *   h' = RMSNorm(x) head_norm            (shared_head_norm, else output_norm)
 *   logits = W_head h'                   (shared_head_head, else output)
 * h_{p-1} is the target's final-norm hidden row of position p-1 (zeros at
 * p = 0). The cache must hold one entry per target position, each fed the
 * target's true hidden row (prefill and every accepted row); a draft step
 * at the next position feeds the block's own h' instead, so the drafter
 * trims those entries off after the round and refeeds the positions the
 * target accepted. The block is a view over the target's weights (nothing
 * copied) with a cache of the target's context.
 */
#ifndef SPRIG_MODEL_NEXTN_H
#define SPRIG_MODEL_NEXTN_H

#include "model/model.h"

typedef struct sprig_nextn_ctx sprig_nextn_ctx;

/* A context for the target's MTP block (the first, as llama.cpp); n_ctx
 * slots, batches of up to n_batch pairs. Refused, naming the key, when the
 * target has no MTP block. */
sprig_status sprig_nextn_create(const sprig_model *target, sprig_pool *pool, int n_ctx, int n_batch, sprig_nextn_ctx **out,
                                sprig_error *err);
void sprig_nextn_free(sprig_nextn_ctx *x);

/* Positions held (the next pair goes at this position). */
int sprig_nextn_len(const sprig_nextn_ctx *x);
int sprig_nextn_n_batch(const sprig_nextn_ctx *x);

/* Feed n pairs (tokens[i], h[i][dim]) at positions len .. len + n - 1 (1 <=
 * n <= n_batch). The last pair's h' into h_out[dim] and its logits into
 * logits[n_vocab] (either may be NULL). */
sprig_status sprig_nextn_feed(sprig_nextn_ctx *x, const int32_t *tokens, const float *h, int n, float *h_out, float *logits,
                              sprig_error *err);

/* Keep the first len positions (len <= sprig_nextn_len). */
sprig_status sprig_nextn_trim(sprig_nextn_ctx *x, int len, sprig_error *err);

#endif
