/*
 * spec/stats — per-session decoding statistics (DESIGN §6, §8).
 *
 * One record per verify round: proposed counts block_size - 1 (tree nodes
 * minus the root), accepted counts the drafts on the accepted path. A round
 * is "empty" when nothing was proposed (plain decoding, or a drafter with
 * nothing to say), "zero" when nothing was accepted, "full" when the
 * deepest possible path was accepted (a chain's whole block; a tree's max
 * depth), "partial" otherwise; so zero + partial + full + empty == rounds.
 * Derived: acceptance rate = accepted / proposed, emitted per verify =
 * tokens emitted by rounds / rounds (the prefill's first token is not a
 * verify). `path` says what actually ran — "plain", "chain", or "tree" once
 * any tree round ran — so "the flag was set" is never mistaken for "the
 * tree path ran". Writers: one JSON object, or a short human summary.
 */
#ifndef SPRIG_SPEC_STATS_H
#define SPRIG_SPEC_STATS_H

#include "base/err.h"

#include <stdio.h>

enum sprig_path { SPRIG_PATH_PLAIN = 0, SPRIG_PATH_CHAIN, SPRIG_PATH_TREE, SPRIG_PATH_COUNT };

enum sprig_stop {
    SPRIG_STOP_NONE = 0,   /* still running (or never started) */
    SPRIG_STOP_BUDGET,     /* max_tokens emitted */
    SPRIG_STOP_EOS,        /* the target emitted an end-of-sequence token */
    SPRIG_STOP_CONTEXT,    /* the target cache is full */
    SPRIG_STOP_CANCEL,     /* the token callback asked to stop */
    SPRIG_STOP_ERROR,      /* a call failed; the session's error says why */
    SPRIG_STOP_COUNT
};

typedef struct sprig_spec_stats {
    int path;                          /* enum sprig_path */
    int stop;                          /* enum sprig_stop */
    int64_t prompt_tokens;
    int64_t cached_tokens;             /* of them, already in the target's cache (a previous generation's prefix) */
    int64_t rounds, chain_rounds, tree_rounds;
    int64_t proposed, accepted;
    int64_t emitted;                   /* tokens delivered, the prefill's first token included */
    int64_t emitted_rounds;            /* tokens delivered by verify rounds */
    int64_t zero_accept_rounds, partial_accept_rounds, full_accept_rounds, empty_rounds;
    int64_t grammar_pruned;            /* draft nodes the grammar refused, cut before the verify */
    int64_t grammar_forced;            /* tokens of forced text put into verify blocks */
    int64_t grammar_forced_rounds;     /* rounds whose verify block got forced text */
    int64_t branch_rounds;             /* tree rounds whose accepted path left the first chain (the
                                          root's first child, its first child, ...): a side branch held
                                          what the target chose */
    int block_min, block_max;          /* verified block sizes seen (0 before any round) */
    int64_t sampled_rounds;            /* rounds with drafts drawn from q (spec/draftq.h) */
    double ms_prefill, ms_draft, ms_verify, ms_walk, ms_finalize, ms_emit, ms_hook;
    double ms_profile;                 /* tree auto's one-time cost profile (not decoding) */
} sprig_spec_stats;

void sprig_stats_reset(sprig_spec_stats *s, int path);
/* One verify round of `block` rows; max_accept = the most drafts a path
 * through it could accept (chain: block - 1; tree: max depth). */
void sprig_stats_record_round(sprig_spec_stats *s, int block, int max_accept, int accepted, bool tree);

double sprig_stats_acceptance_rate(const sprig_spec_stats *s);    /* 0 when nothing was proposed */
double sprig_stats_emitted_per_verify(const sprig_spec_stats *s); /* 0 before any round */
const char *sprig_path_name(int path);                            /* "plain" / "chain" / "tree" / "?" */
const char *sprig_stop_name(int stop);                            /* "running" / "budget" / ... / "?" */

/* The counters of two sessions agree (timings, path and stop are ignored). */
bool sprig_stats_same_counts(const sprig_spec_stats *a, const sprig_spec_stats *b);

/* One JSON object (and a newline) with every field; SPRIG_E_IO if the write fails. */
sprig_status sprig_stats_write_json(const sprig_spec_stats *s, FILE *f, sprig_error *err);
/* A few human-readable lines. */
sprig_status sprig_stats_print(const sprig_spec_stats *s, FILE *f, sprig_error *err);

#endif
