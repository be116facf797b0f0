/*
 * spec/draft_oracle — a drafter for benchmarks only (see drafters.h): it
 * knows the target's greedy continuation (a file of token ids: the prompt
 * as evaluated and what plain greedy decoding emitted after it, as `sprig
 * run --save-ids` writes) and proposes it, corrupted at set rates, so that
 * speed can be measured at a controlled acceptance on synthetic targets
 * whose own drafters would agree with nothing.
 *
 * At a round whose bonus sits at position p, the draft of depth d (1..k-1)
 * is the truth ids[p + d] when every shallower draft was and a draw falls
 * under accept[d-1] (the last rate repeats for deeper drafts); else a wrong
 * token. When a depth's draft is the first wrong one, its runner-up holds
 * the truth with probability `sibling` (a tree's side branch then wins);
 * every other runner-up is wrong. Draws are a fixed function of (seed, p,
 * d), so chain and tree sessions see the same luck at the same position.
 * If the session's history leaves the file (another prompt, a sampled
 * token), nothing is drafted.
 */
#include "spec/drafters.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORACLE_MAX_IDS (1 << 24)

typedef struct oracle_drafter {
    sprig_drafter base;
    int32_t *ids;               /* [n_ids] the recorded sequence */
    int n_ids, n_vocab;
    float accept[SPRIG_TREE_MAX];
    int n_accept;
    float sibling;
    uint64_t seed;
    bool warned;
} oracle_drafter;

/* splitmix64 of (seed, p, d, salt): a uniform in [0, 1) and a wrong token */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static uint64_t draw(const oracle_drafter *o, int p, int d, int salt)
{
    return mix(o->seed ^ mix(((uint64_t)(uint32_t)p << 24) ^ ((uint64_t)d << 4) ^ (uint64_t)salt));
}
static double unit(uint64_t u) { return (double)(u >> 11) * (1.0 / 9007199254740992.0); }
static int32_t wrong(const oracle_drafter *o, int32_t truth, uint64_t u)   /* any token but truth */
{
    return (int32_t)(((uint64_t)truth + 1 + u % (uint64_t)(o->n_vocab - 1)) % (uint64_t)o->n_vocab);
}

static sprig_status or_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    oracle_drafter *o = (oracle_drafter *)d;
    (void)err;
    const int p = c->n_history;   /* the bonus's position */
    bool on = p < o->n_ids && o->ids[p] == c->bonus;
    for (int i = p > 8 ? p - 8 : 0; on && i < p; i++) on = o->ids[i] == c->history[i];
    if (!on) {
        if (!o->warned) SPRIG_LOGW("oracle drafter: the session left the recorded ids at position %d; drafting nothing", p);
        o->warned = true;
        return SPRIG_OK;
    }
    bool truth_so_far = true;
    int n = 0;
    for (int j = 0; j < k - 1 && p + j + 1 < o->n_ids; j++, n++) {
        const int32_t t = o->ids[p + j + 1];
        const float a = o->accept[j < o->n_accept ? j : o->n_accept - 1];
        const bool hit = truth_so_far && unit(draw(o, p, j, 0)) < a;
        out->tokens[j] = hit ? t : wrong(o, t, draw(o, p, j, 1));
        out->margin[j] = 1.0f;
        if (truth_so_far && !hit && unit(draw(o, p, j, 2)) < o->sibling) out->runner_up[j] = t;
        else {
            int32_t r = wrong(o, t, draw(o, p, j, 3));
            out->runner_up[j] = r != out->tokens[j] ? r : wrong(o, t, draw(o, p, j, 4) + 1);
        }
        truth_so_far = hit;
    }
    out->n = n;
    return SPRIG_OK;
}

static void or_destroy(sprig_drafter *d)
{
    oracle_drafter *o = (oracle_drafter *)d;
    if (!o) return;
    free(o->ids);
    free(o);
}

static const struct sprig_drafter_vt oracle_vt = {
    .name = "oracle",
    .draft_block = or_draft_block,
    .destroy = or_destroy,
};

/* "p1,p2,..." -> rates in [0, 1] */
static sprig_status parse_rates(const char *s, float *out, int cap, int *n, sprig_error *err)
{
    *n = 0;
    const char *q = s;
    while (*q) {
        if (*n == cap) return sprig_err(err, SPRIG_E_INVALID_ARG, "oracle_accept: more than %d rates in '%s'", cap, s);
        char *end;
        errno = 0;
        double v = strtod(q, &end);
        if (end == q || errno || !(v >= 0 && v <= 1) || (*end && *end != ','))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "oracle_accept: '%s' is not a list of rates in [0, 1] ('0.9,0.8,0.7')", s);
        out[(*n)++] = (float)v;
        q = *end ? end + 1 : end;
        if (*end && !*q) return sprig_err(err, SPRIG_E_INVALID_ARG, "oracle_accept: '%s' ends with a comma", s);
    }
    if (!*n) return sprig_err(err, SPRIG_E_INVALID_ARG, "oracle_accept: no rates given");
    return SPRIG_OK;
}

sprig_status sprig_oracle_parse_ids(const char *text, size_t len, const char *name, int n_vocab, int32_t **out, int *n_out,
                                    sprig_error *err)
{
    *out = NULL;
    *n_out = 0;
    int32_t *ids = NULL;
    int n = 0, cap = 0;
    size_t i = 0;
    char num[32];
    for (;;) {
        while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) i++;
        if (i == len) break;
        size_t j = i;
        while (j < len && j - i < sizeof num - 1 && text[j] >= '0' && text[j] <= '9') j++;
        if (j == i || (j < len && !(text[j] == ' ' || text[j] == '\n' || text[j] == '\t' || text[j] == '\r')) || j - i > 10) {
            free(ids);
            return sprig_err(err, SPRIG_E_FORMAT, "%s: after %d ids: not a token id (decimal digits separated by white space)", name, n);
        }
        memcpy(num, text + i, j - i);
        num[j - i] = 0;
        const long long v = strtoll(num, NULL, 10);   /* at most 10 digits: no overflow */
        if (v >= n_vocab) {
            free(ids);
            return sprig_err(err, SPRIG_E_FORMAT, "%s: id %d = %lld is outside the vocabulary [0, %d)", name, n, v, n_vocab);
        }
        if (n == ORACLE_MAX_IDS) { free(ids); return sprig_err(err, SPRIG_E_FORMAT, "%s: more than %d ids", name, ORACLE_MAX_IDS); }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            int32_t *g = realloc(ids, (size_t)cap * sizeof *g);
            if (!g) { free(ids); return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory for %d ids", name, cap); }
            ids = g;
        }
        ids[n++] = (int32_t)v;
        i = j;
    }
    if (n < 2) {
        free(ids);
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %d ids (a prompt and its continuation are needed)", name, n);
    }
    *out = ids;
    *n_out = n;
    return SPRIG_OK;
}

sprig_drafter *sprig_draft_oracle_create(const char *path, int n_vocab, const char *accept, float sibling, uint64_t seed,
                                         sprig_error *err)
{
    if (n_vocab < 2) { sprig_err(err, SPRIG_E_INVALID_ARG, "oracle drafter: a vocabulary of %d tokens", n_vocab); return NULL; }
    if (!(sibling >= 0 && sibling <= 1)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "oracle_sibling: %g is not a rate in [0, 1]", (double)sibling);
        return NULL;
    }
    oracle_drafter *o = calloc(1, sizeof *o);
    if (!o) { sprig_err(err, SPRIG_E_NOMEM, "oracle drafter: out of memory"); return NULL; }
    o->base.vt = &oracle_vt;
    o->n_vocab = n_vocab;
    o->sibling = sibling;
    o->seed = seed;
    if (parse_rates(accept && *accept ? accept : "0.8", o->accept, SPRIG_TREE_MAX, &o->n_accept, err)) { free(o); return NULL; }
    FILE *f = fopen(path, "rb");
    if (!f) {
        sprig_err(err, SPRIG_E_IO, "oracle drafter: cannot open '%s': %s", path, strerror(errno));
        free(o);
        return NULL;
    }
    /* the whole file (at most 11 bytes per id of ORACLE_MAX_IDS), then the ids */
    const size_t limit = (size_t)ORACLE_MAX_IDS * 12;
    size_t len = 0, cap = 0;
    char *text = NULL;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            char *g = cap <= limit ? realloc(text, cap) : NULL;
            if (!g) { sprig_err(err, cap <= limit ? SPRIG_E_NOMEM : SPRIG_E_FORMAT, "%s: too large for an ids file", path); break; }
            text = g;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    const bool read_ok = !ferror(f) && len < cap;
    fclose(f);
    if (!read_ok) {
        if (text && err && err->code == SPRIG_OK) sprig_err(err, SPRIG_E_IO, "%s: read error", path);
        free(text);
        or_destroy(&o->base);
        return NULL;
    }
    sprig_status st = sprig_oracle_parse_ids(text, len, path, n_vocab, &o->ids, &o->n_ids, err);
    free(text);
    if (st) { or_destroy(&o->base); return NULL; }
    return &o->base;
}
