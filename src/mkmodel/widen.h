/*
 * widen — embed a small llama model in a larger llama shape without changing
 * what it computes (a function-preserving widening).
 *
 * Why: the real models we can ship (stories260K and its drafters) live in
 * L2 and are compute-bound, so they cannot show what speculative decoding
 * does on the bandwidth-bound models people actually run. A widened target
 * has the cost of the big shape (every kernel reads and multiplies every
 * weight; zeros are not skipped) and the predictions of the small model,
 * so the real drafters keep their real acceptance against it.
 *
 * How (source S into shape T; every T size >= the S size):
 *   hidden dims 0..D_s-1 carry S's residual stream, the rest stay exactly 0;
 *   S's q head h of kv group g sits at T head g*G_t + h%G_s, S's kv head g
 *   at T kv head g, each in dims 0..hd_s-1 of its head; the FFN uses units
 *   0..F_s-1; every other weight is 0. The last L_s layers are S's layers,
 *   the first L_t-L_s are identity blocks (all weights 0: the residual
 *   passes through). Compensations: RMSNorm weights x sqrt(D_s/D_t) and
 *   eps x D_s/D_t (the mean runs over D_t dims); attn_q x sqrt(hd_t/hd_s)
 *   (the score scale is 1/sqrt(hd_t)); rope.dimension_count = hd_t (as
 *   llama.cpp requires) with a rope_freqs tensor that gives S's pairs S's
 *   frequencies (the other pairs rotate zeros). The vocabulary, tokenizer
 *   keys (copied verbatim) and context length are S's.
 * An MTP head of S widens the same way (sprig_widen_mtp_write).
 * The result equals S up to float rounding (and the chosen weight type's
 * quantization); tests/test-widen.c checks logits and greedy tokens.
 */
#ifndef SPRIG_WIDEN_H
#define SPRIG_WIDEN_H

#include "base/err.h"
#include "mkmodel/mkmodel.h"

/* Widen the llama model at src into the shape of p (dim, n_layers, n_heads,
 * n_kv_heads, ffn, type, name; p's vocab, ctx, seed, rope and eps are taken
 * from the source) and write it to out (atomically). INVALID_ARG naming the
 * size when the shape cannot hold the source; FORMAT for a bad source. */
sprig_status sprig_widen_write(const char *src, const struct sprig_mkmodel_params *p, const char *out, sprig_error *err);

/* Widen an MTP assistant head (model/mtp.h) of the source model src into
 * the shape p widens src to, so the head drafts for the widened target as
 * it does for src: its hidden dims and q heads move as the target's, its
 * norms and eps get the same compensations, mtp.target_kv_layer shifts by
 * the identity layers added in front, and its own FFN keeps its units. Its
 * q rotates with the target's RoPE (rope_freqs included), which the head
 * reads from the target. Same refusals as sprig_widen_write, plus a head
 * whose query heads differ from its target's. */
sprig_status sprig_widen_mtp_write(const char *src, const char *head, const struct sprig_mkmodel_params *p, const char *out,
                                   sprig_error *err);

#endif
