/*
 * model/assistant — Gemma 4's published MTP "assistant" (GGUF architecture
 * gemma4-assistant, as llama.cpp loads it): a small model that drafts from
 * a gemma4 TARGET's state and reads the target's KV cache, keeping none.
 *
 * Inputs of a round: h = the target's final-norm hidden state of the row
 * that predicted the bonus token t, n_past = the target's cached tokens (t
 * sits at position n_past). One step:
 *   x = [E_target[t] * sqrt(dim_target) ; h]          (2 * dim_target)
 *   z = W_pre x                                        (dim, the assistant's)
 *   per layer l (no K, no V):
 *     q = RoPE_{n_past}(RMSNorm_head(W_q RMSNorm(z) a_l) q_l)   (sliding or global RoPE)
 *     z' = z + RMSNorm(W_o Attn(q, target cache)) p_l
 *     z  = (z' + RMSNorm(W_down geglu(RMSNorm(z') f_l)) pf_l) * s_l
 *   n = RMSNorm(z) out_norm
 *   logits = E_assistant n          (its own, tied output head)
 *   h' = W_post n                   (dim_target: the next step's h)
 * A sliding layer reads the target's layer n_layer - 2 (through its shared-
 * KV mapping), a global one layer n_layer - 1 (llama.cpp's rule), under the
 * window band of a query at n_past; queries are unscaled (Gemma 4). Every
 * step of a round uses the same position n_past and the same cache
 * (llama.cpp and transformers do: the assistant never sees its own drafts
 * through attention, only through h and t).
 */
#ifndef SPRIG_MODEL_ASSISTANT_H
#define SPRIG_MODEL_ASSISTANT_H

#include "model/model.h"

typedef struct sprig_assistant sprig_assistant;
typedef struct sprig_assistant_state sprig_assistant_state;

/* Whether the GGUF at path declares general.architecture gemma4-assistant
 * (false for anything unreadable: the caller's loader then names the error). */
bool sprig_assistant_file_is(const char *path);

/* Load an assistant and check it fits `target` (a gemma4 model): every
 * mismatch is an error naming the key or tensor and both values. */
sprig_status sprig_assistant_load(const char *path, const sprig_model *target, sprig_assistant **out, sprig_error *err);
void sprig_assistant_free(sprig_assistant *a);

/* Scratch for one step (no allocation per step); max_keys: the target context. */
sprig_assistant_state *sprig_assistant_state_create(const sprig_assistant *a, int max_keys, sprig_error *err);
void sprig_assistant_state_free(sprig_assistant_state *s);

/* One draft step at position n_past = sprig_kv_len(kv) of the target's
 * cache kv. h_in[dim_target] -> h_out[dim_target] (may alias);
 * logits[n_vocab]. */
sprig_status sprig_assistant_step(const sprig_assistant *a, sprig_assistant_state *s, sprig_pool *pool, const sprig_kv *kv,
                                  const float *h_in, int32_t token, float *h_out, float *logits, sprig_error *err);

#endif
