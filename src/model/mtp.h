/*
 * model/mtp — the MTP "assistant" head: drafts tokens from the TARGET's state
 * instead of running a separate model (../shared/models/README.md, drafter B).
 *
 * Inputs at a round: h = the target's final-norm output at the last accepted
 * position p, t = the bonus token the target predicted for p+1, and the
 * target's layer-`kv_layer` K (post-RoPE, as cached) and V for slots 0..p.
 * One step:
 *   x = [E[t] ; h]                     (2*dim; E = target token_embd)
 *   z = W_pre x                        (dim)
 *   per head layer l: z += W_o,l Attn(RoPE_p(W_q,l RMSNorm(z) a_l), K, V)
 *                     z += W_down,l (silu(W_gate,l m) * W_up,l m),  m = RMSNorm(z) f_l
 *   h' = W_post (RMSNorm(z) final_norm)
 *   logits = W_out (RMSNorm(h') out_norm)   (target's output_norm + output)
 * The next step uses h = h' (raw) and t = the drafted token, at the same
 * position p and the same K/V. There is no drafter KV cache.
 */
#ifndef SPRIG_MODEL_MTP_H
#define SPRIG_MODEL_MTP_H

#include "model/model.h"

typedef struct sprig_mtp sprig_mtp;

/* Load a head and check it fits `target` (dimensions, heads, KV layer,
 * vocabulary); every mismatch is an error naming both values. */
sprig_status sprig_mtp_load(const char *path, const sprig_model *target, sprig_mtp **out, sprig_error *err);
void sprig_mtp_free(sprig_mtp *h);
int  sprig_mtp_kv_layer(const sprig_mtp *h);
/* The head's file (its keys and tensors), valid while h lives. */
const sprig_gguf *sprig_mtp_gguf(const sprig_mtp *h);

/* Scratch for one step, owned by the caller's drafter (no allocation per step). */
typedef struct sprig_mtp_state sprig_mtp_state;
sprig_mtp_state *sprig_mtp_state_create(const sprig_mtp *h, int max_keys, sprig_error *err);
void sprig_mtp_state_free(sprig_mtp_state *s);

/* One draft step. h_in[dim] -> h_out[dim] (may alias), logits[n_vocab].
 * `kv` is the target's cache; slots 0..p of layer kv_layer are attended. */
sprig_status sprig_mtp_step(const sprig_mtp *h, sprig_mtp_state *s, sprig_pool *pool, const sprig_kv *kv,
                            const float *h_in, int32_t token, int p, float *h_out, float *logits, sprig_error *err);

/* n independent steps at once (1 <= n <= SPRIG_MTP_MAX_ROWS), all at the
 * same position p: h_in[n][dim] -> h_out[n][dim] (may alias), tokens[n],
 * logits[n][n_vocab]. The matrices are read once for the n rows (a dynamic
 * tree's depth); each row's bits are those of a one-row step. */
#define SPRIG_MTP_MAX_ROWS 8
sprig_status sprig_mtp_step_rows(const sprig_mtp *h, sprig_mtp_state *s, sprig_pool *pool, const sprig_kv *kv,
                                 const float *h_in, const int32_t *tokens, int n, int p, float *h_out, float *logits,
                                 sprig_error *err);

#endif
