/*
 * spec/ngram — see ngram.h.
 *
 * Index: for each length n in [n_min, n_max] an open-addressing table maps an
 * n-gram to the end position of its most recent occurrence, plus a chain
 * `prev[n][pos]` to the occurrence before it (for alternatives). Entries are
 * verified against the history tokens, so hash collisions cost a probe, never
 * a wrong draft. The n-gram ending at the last token is inserted only when
 * the next token arrives, so a lookup of the current suffix finds earlier
 * occurrences, never itself.
 */
#include "spec/ngram.h"

#include <stdlib.h>
#include <string.h>

struct table {
    int32_t *slot;   /* [cap] end position of the most recent occurrence, -1 = empty */
    int32_t *prev;   /* [capacity] previous occurrence of the n-gram ending at pos, -1 = none */
    uint32_t mask;
};

struct sprig_ngram {
    int n_min, n_max, capacity, len;
    int32_t *hist;                    /* [capacity] */
    struct table t[SPRIG_NGRAM_MAX_N + 1];
};

static uint32_t hash_at(const int32_t *h, int end, int n)
{
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (int i = end - n + 1; i <= end; i++) {
        x ^= (uint32_t)h[i];
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 29;
    }
    return (uint32_t)(x ^ (x >> 32));
}

static bool same(const int32_t *h, int a, int b, int n)
{
    return memcmp(h + a - n + 1, h + b - n + 1, (size_t)n * sizeof *h) == 0;
}

void sprig_ngram_free(sprig_ngram *g)
{
    if (!g) return;
    for (int n = 0; n <= SPRIG_NGRAM_MAX_N; n++) {
        free(g->t[n].slot);
        free(g->t[n].prev);
    }
    free(g->hist);
    free(g);
}

sprig_ngram *sprig_ngram_create(int n_min, int n_max, int capacity, sprig_error *err)
{
    if (n_min < 1 || n_max < n_min || n_max > SPRIG_NGRAM_MAX_N) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "n-gram sizes: [%d, %d] must satisfy 1 <= min <= max <= %d", n_min, n_max, SPRIG_NGRAM_MAX_N);
        return NULL;
    }
    if (capacity < 1 || capacity > (1 << 26)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "n-gram capacity: %d is out of range", capacity);
        return NULL;
    }
    sprig_ngram *g = calloc(1, sizeof *g);
    if (!g) goto oom;
    g->n_min = n_min;
    g->n_max = n_max;
    g->capacity = capacity;
    g->hist = malloc((size_t)capacity * sizeof *g->hist);
    if (!g->hist) goto oom;
    uint32_t cap = 16;
    while (cap < (uint32_t)capacity * 2) cap <<= 1;
    for (int n = n_min; n <= n_max; n++) {
        g->t[n].mask = cap - 1;
        g->t[n].slot = malloc((size_t)cap * sizeof(int32_t));
        g->t[n].prev = malloc((size_t)capacity * sizeof(int32_t));
        if (!g->t[n].slot || !g->t[n].prev) goto oom;
    }
    sprig_ngram_reset(g);
    return g;
oom:
    sprig_ngram_free(g);
    sprig_err(err, SPRIG_E_NOMEM, "n-gram index: out of memory for %d tokens", capacity);
    return NULL;
}

void sprig_ngram_reset(sprig_ngram *g)
{
    g->len = 0;
    for (int n = g->n_min; n <= g->n_max; n++) memset(g->t[n].slot, 0xff, ((size_t)g->t[n].mask + 1) * sizeof(int32_t));
}

int sprig_ngram_len(const sprig_ngram *g) { return g->len; }

/* Slot index holding the n-gram that ends at `end`, or the empty slot where it goes. */
static uint32_t find_slot(const sprig_ngram *g, int n, int end)
{
    const struct table *t = &g->t[n];
    uint32_t i = hash_at(g->hist, end, n) & t->mask;
    while (t->slot[i] >= 0 && !same(g->hist, t->slot[i], end, n)) i = (i + 1) & t->mask;
    return i;
}

static void index_end(sprig_ngram *g, int end)
{
    for (int n = g->n_min; n <= g->n_max; n++) {
        if (end - n + 1 < 0) break;
        uint32_t i = find_slot(g, n, end);
        g->t[n].prev[end] = g->t[n].slot[i];
        g->t[n].slot[i] = end;
    }
}

void sprig_ngram_push(sprig_ngram *g, const int32_t *tok, int n)
{
    for (int i = 0; i < n && g->len < g->capacity; i++) {
        if (g->len > 0) index_end(g, g->len - 1);
        g->hist[g->len++] = tok[i];
    }
}

int sprig_ngram_draft(const sprig_ngram *g, int32_t *out, int k, int32_t *alt, int *alt_at)
{
    if (alt) *alt = -1;
    if (alt_at) *alt_at = -1;
    int L = g->len;
    if (k <= 0 || L < g->n_min + 1) return 0;
    for (int n = g->n_max < L - 1 ? g->n_max : L - 1; n >= g->n_min; n--) {
        int j = g->t[n].slot[find_slot(g, n, L - 1)];
        if (j < 0) continue;
        /* tokens following the occurrence ending at j; past the end the
         * continuation repeats with period (L - 1 - j) */
        for (int m = 0; m < k; m++) {
            int x = j + 1 + m;
            out[m] = x < L ? g->hist[x] : out[x - L];
        }
        if (alt) {
            for (int p = g->t[n].prev[j]; p >= 0; p = g->t[n].prev[p]) {
                if (p + 1 < L && g->hist[p + 1] != out[0]) {
                    *alt = g->hist[p + 1];
                    if (alt_at) *alt_at = 0;
                    break;
                }
            }
        }
        return k;
    }
    return 0;
}
