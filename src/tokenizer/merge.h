/*
 * tokenizer/merge — the merge loop both encoders share: given a word as a
 * row of token ids, repeatedly merge the adjacent pair that ranks best until
 * no pair merges, leftmost on ties.
 *
 * SentencePiece ("llama"): a pair ranks by the score of the token its two
 * pieces concatenate to (higher first; merges scoring <= -1e30 never happen;
 * control / unknown / unused tokens never take part), llama2.c's rule.
 * BPE ("gpt2", "gemma4"): a pair ranks by its merge's rank in
 * tokenizer.ggml.merges (lower first), Hugging Face's and llama.cpp's rule.
 *
 * Symbols form a doubly linked list and candidate pairs sit in a binary
 * max-heap ordered by (rank, then left position), with stale entries caught
 * by per-symbol version counters: O(n log n) instead of the quadratic rescan,
 * popping exactly the pair the rescan would choose. Ids < 0 (a character with
 * no token, waiting for byte fallback) never merge. The scratch is sized once
 * per encode call, so the loop itself never allocates.
 */
#ifndef SPRIG_TOKENIZER_MERGE_H
#define SPRIG_TOKENIZER_MERGE_H

#include "tokenizer/vocab.h"

struct sprig_merge_scratch {
    struct sprig_msym *s;      /* [cap] */
    struct sprig_mcand *heap;  /* [3 * cap] */
    size_t cap;
};

/* Room for words of up to n symbols. */
sprig_status sprig_merge_reserve(struct sprig_merge_scratch *m, size_t n, sprig_error *err);
void sprig_merge_release(struct sprig_merge_scratch *m);
/* Merges ids[n] in place (n <= the reserved size); returns the new count. */
int sprig_merge_apply(const sprig_tokenizer *t, struct sprig_merge_scratch *m, int32_t *ids, int n);

#endif
