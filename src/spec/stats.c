/*
 * spec/stats — see stats.h. Counters only move through
 * sprig_stats_record_round (and the session's emission), so the chain and
 * the tree paths are counted by the same code.
 */
#include "spec/stats.h"

#include <string.h>

static const char *const path_names[SPRIG_PATH_COUNT] = {
    [SPRIG_PATH_PLAIN] = "plain", [SPRIG_PATH_CHAIN] = "chain", [SPRIG_PATH_TREE] = "tree",
};

static const char *const stop_names[SPRIG_STOP_COUNT] = {
    [SPRIG_STOP_NONE] = "running", [SPRIG_STOP_BUDGET] = "budget", [SPRIG_STOP_EOS] = "eos",
    [SPRIG_STOP_CONTEXT] = "context", [SPRIG_STOP_CANCEL] = "cancel", [SPRIG_STOP_ERROR] = "error",
};

const char *sprig_path_name(int path) { return path >= 0 && path < SPRIG_PATH_COUNT ? path_names[path] : "?"; }
const char *sprig_stop_name(int stop) { return stop >= 0 && stop < SPRIG_STOP_COUNT ? stop_names[stop] : "?"; }

void sprig_stats_reset(sprig_spec_stats *s, int path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
}

void sprig_stats_record_round(sprig_spec_stats *s, int block, int max_accept, int accepted, bool tree)
{
    int proposed = block - 1;
    s->rounds++;
    if (tree) s->tree_rounds++;
    else s->chain_rounds++;
    s->proposed += proposed;
    s->accepted += accepted;
    if (proposed == 0) s->empty_rounds++;
    else if (accepted == 0) s->zero_accept_rounds++;
    else if (accepted >= max_accept) s->full_accept_rounds++;
    else s->partial_accept_rounds++;
    if (s->block_min == 0 || block < s->block_min) s->block_min = block;
    if (block > s->block_max) s->block_max = block;
}

double sprig_stats_acceptance_rate(const sprig_spec_stats *s)
{
    return s->proposed > 0 ? (double)s->accepted / (double)s->proposed : 0.0;
}

double sprig_stats_emitted_per_verify(const sprig_spec_stats *s)
{
    return s->rounds > 0 ? (double)s->emitted_rounds / (double)s->rounds : 0.0;
}

bool sprig_stats_same_counts(const sprig_spec_stats *a, const sprig_spec_stats *b)
{
    return a->prompt_tokens == b->prompt_tokens && a->rounds == b->rounds && a->proposed == b->proposed &&
           a->accepted == b->accepted && a->emitted == b->emitted && a->emitted_rounds == b->emitted_rounds &&
           a->zero_accept_rounds == b->zero_accept_rounds && a->partial_accept_rounds == b->partial_accept_rounds &&
           a->full_accept_rounds == b->full_accept_rounds && a->empty_rounds == b->empty_rounds &&
           a->block_min == b->block_min && a->block_max == b->block_max;
}

static sprig_status finish(FILE *f, const char *what, sprig_error *err)
{
    if (ferror(f) || fflush(f)) return sprig_err(err, SPRIG_E_IO, "stats: writing the %s failed", what);
    return SPRIG_OK;
}

sprig_status sprig_stats_write_json(const sprig_spec_stats *s, FILE *f, sprig_error *err)
{
    if (!f) return sprig_err(err, SPRIG_E_INVALID_ARG, "stats: FILE is NULL");
    fprintf(f,
            "{\"path\":\"%s\",\"stop\":\"%s\",\"prompt_tokens\":%lld,\"rounds\":%lld,\"chain_rounds\":%lld,"
            "\"tree_rounds\":%lld,\"proposed\":%lld,\"accepted\":%lld,\"emitted\":%lld,\"emitted_rounds\":%lld,"
            "\"emitted_per_verify\":%.6f,\"acceptance_rate\":%.6f,\"zero_accept_rounds\":%lld,"
            "\"partial_accept_rounds\":%lld,\"full_accept_rounds\":%lld,\"empty_rounds\":%lld,\"branch_rounds\":%lld,"
            "\"block_min\":%d,\"block_max\":%d,\"sampled_rounds\":%lld,\"ms\":{\"prefill\":%.3f,\"draft\":%.3f,\"verify\":%.3f,"
            "\"walk\":%.3f,\"finalize\":%.3f,\"emit\":%.3f,\"hook\":%.3f}}\n",
            sprig_path_name(s->path), sprig_stop_name(s->stop), (long long)s->prompt_tokens, (long long)s->rounds,
            (long long)s->chain_rounds, (long long)s->tree_rounds, (long long)s->proposed, (long long)s->accepted,
            (long long)s->emitted, (long long)s->emitted_rounds, sprig_stats_emitted_per_verify(s),
            sprig_stats_acceptance_rate(s), (long long)s->zero_accept_rounds, (long long)s->partial_accept_rounds,
            (long long)s->full_accept_rounds, (long long)s->empty_rounds, (long long)s->branch_rounds, s->block_min, s->block_max, (long long)s->sampled_rounds, s->ms_prefill,
            s->ms_draft, s->ms_verify, s->ms_walk, s->ms_finalize, s->ms_emit, s->ms_hook);
    return finish(f, "JSON statistics", err);
}

sprig_status sprig_stats_print(const sprig_spec_stats *s, FILE *f, sprig_error *err)
{
    if (!f) return sprig_err(err, SPRIG_E_INVALID_ARG, "stats: FILE is NULL");
    fprintf(f, "path %s (%lld chain, %lld tree rounds), stopped on %s\n", sprig_path_name(s->path),
            (long long)s->chain_rounds, (long long)s->tree_rounds, sprig_stop_name(s->stop));
    fprintf(f, "%lld prompt tokens, %lld emitted in %lld rounds: %.3f emitted per verify\n", (long long)s->prompt_tokens,
            (long long)s->emitted, (long long)s->rounds, sprig_stats_emitted_per_verify(s));
    fprintf(f, "proposed %lld, accepted %lld (%.1f%%); rounds zero %lld, partial %lld, full %lld, empty %lld; block %d..%d\n",
            (long long)s->proposed, (long long)s->accepted, 100.0 * sprig_stats_acceptance_rate(s),
            (long long)s->zero_accept_rounds, (long long)s->partial_accept_rounds, (long long)s->full_accept_rounds,
            (long long)s->empty_rounds, s->block_min, s->block_max);
    fprintf(f, "ms: prefill %.2f, draft %.2f, verify %.2f, walk %.2f, finalize %.2f, emit %.2f, hook %.2f\n",
            s->ms_prefill, s->ms_draft, s->ms_verify, s->ms_walk, s->ms_finalize, s->ms_emit, s->ms_hook);
    return finish(f, "statistics summary", err);
}
