/*
 * spec/target_llama — a model forward context as a speculation target
 * (spec/target.h), for every architecture model/ runs with attention layers
 * only (so a tree mask is exact).
 *
 * Chain rounds run a causal batch of [bonus, drafts] and roll back with
 * kv trim. Tree rounds run the nodes as one batch under the ancestor mask
 * with history ([n][offset + n], -1e9 blocked) at RoPE positions
 * offset + depth, and roll back with kv gather_within_tail(path). The
 * forward captures every row's final-norm hidden state; finalize hands the
 * drafters the one at the last kept node (the MTP head's input).
 * Tree rounds are available whenever the cache can gather (asked every round).
 */
#ifndef SPRIG_SPEC_TARGET_LLAMA_H
#define SPRIG_SPEC_TARGET_LLAMA_H

#include "model/model.h"
#include "spec/target.h"

/* ctx is borrowed; max_rows = the largest block or tree the session verifies. */
sprig_target *sprig_model_target_create(sprig_ctx *ctx, int max_rows, sprig_error *err);
void sprig_model_target_free(sprig_target *t);
/* Verify forwards from now on run together with the batch's other members
 * (spec/batch.h); the context must be one of the batch's pool. Tree auto's
 * profile (time_rows) then reaches the rows a shared forward holds (all
 * members' blocks, at most SPRIG_TREE_MAX and the context's batch size):
 * the batch prices its steps' shape from it (sprig_batch_plan). */
struct sprig_batch;
sprig_status sprig_model_target_set_batch(sprig_target *t, struct sprig_batch *b, sprig_error *err);
/* The most rows time_rows measures. */
int sprig_model_target_profile_rows(const sprig_target *t);

#endif
