/*
 * kv/prefix — see prefix.h. The map probes linearly on the key's first lane
 * and deletes by shifting back (no tombstones), so a long-running server's
 * lookups stay as short as the load factor (at most one half) makes them.
 */
#include "kv/prefix.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fmix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

sprig_kv_key sprig_kv_key_start(void) { return (sprig_kv_key){ 0x736f6d6570736575ULL, 0x646f72616e646f6dULL }; }

sprig_kv_key sprig_kv_key_next(sprig_kv_key k, const int32_t *tokens, int n)
{
    for (int i = 0; i < n; i++) {
        const uint64_t t = (uint64_t)(uint32_t)tokens[i];
        k.a = fmix(k.a ^ (t + 0x9e3779b97f4a7c15ULL));
        k.b = fmix(k.b + t * 0xbf58476d1ce4e5b9ULL + 0x94d049bb133111ebULL);
    }
    return k;
}

sprig_status sprig_kv_prefix_init(sprig_kv_prefix *p, int n_blocks, sprig_error *err)
{
    memset(p, 0, sizeof *p);
    int cap = 16;
    while (cap < 2 * n_blocks) cap *= 2;
    p->n_blocks = n_blocks;
    p->map_mask = cap - 1;
    p->key = calloc((size_t)n_blocks, sizeof *p->key);
    p->keyed = calloc((size_t)n_blocks, sizeof *p->keyed);
    p->idle = calloc((size_t)n_blocks, sizeof *p->idle);
    p->prev = malloc((size_t)n_blocks * sizeof *p->prev);
    p->next = malloc((size_t)n_blocks * sizeof *p->next);
    p->map = malloc((size_t)cap * sizeof *p->map);
    if (!p->key || !p->keyed || !p->idle || !p->prev || !p->next || !p->map) {
        sprig_kv_prefix_free(p);
        return sprig_err(err, SPRIG_E_NOMEM, "kv prefix cache: out of memory for %d blocks", n_blocks);
    }
    for (int i = 0; i < cap; i++) p->map[i] = -1;
    p->head = p->tail = -1;
    return SPRIG_OK;
}

void sprig_kv_prefix_free(sprig_kv_prefix *p)
{
    free(p->key);
    free(p->keyed);
    free(p->idle);
    free(p->prev);
    free(p->next);
    free(p->map);
    memset(p, 0, sizeof *p);
}

static bool same(sprig_kv_key x, sprig_kv_key y) { return x.a == y.a && x.b == y.b; }

int sprig_kv_prefix_find(const sprig_kv_prefix *p, sprig_kv_key k)
{
    for (uint64_t i = k.a & (uint64_t)p->map_mask;; i = (i + 1) & (uint64_t)p->map_mask) {
        const int b = p->map[i];
        if (b < 0) return -1;
        if (same(p->key[b], k)) return b;
    }
}

bool sprig_kv_prefix_insert(sprig_kv_prefix *p, int b, sprig_kv_key k)
{
    if (p->keyed[b] || sprig_kv_prefix_find(p, k) >= 0) return false;
    uint64_t i = k.a & (uint64_t)p->map_mask;
    while (p->map[i] >= 0) i = (i + 1) & (uint64_t)p->map_mask;
    p->map[i] = b;
    p->key[b] = k;
    p->keyed[b] = true;
    p->n_keyed++;
    return true;
}

void sprig_kv_prefix_unkey(sprig_kv_prefix *p, int b)
{
    if (!p->keyed[b]) return;
    sprig_kv_prefix_idle_remove(p, b);
    const uint64_t mask = (uint64_t)p->map_mask;
    uint64_t i = p->key[b].a & mask;
    while (p->map[i] != b) i = (i + 1) & mask;
    /* backward-shift deletion: move up every later entry of the run that may sit at i */
    for (uint64_t j = (i + 1) & mask; p->map[j] >= 0; j = (j + 1) & mask) {
        const uint64_t home = p->key[p->map[j]].a & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {   /* i lies between home and j: the entry may move to i */
            p->map[i] = p->map[j];
            i = j;
        }
    }
    p->map[i] = -1;
    p->keyed[b] = false;
    p->n_keyed--;
}

void sprig_kv_prefix_idle_push(sprig_kv_prefix *p, int b)
{
    if (p->idle[b]) return;
    p->idle[b] = true;
    p->prev[b] = p->tail;
    p->next[b] = -1;
    if (p->tail >= 0) p->next[p->tail] = b;
    else p->head = b;
    p->tail = b;
    p->n_idle++;
}

void sprig_kv_prefix_idle_remove(sprig_kv_prefix *p, int b)
{
    if (!p->idle[b]) return;
    if (p->prev[b] >= 0) p->next[p->prev[b]] = p->next[b];
    else p->head = p->next[b];
    if (p->next[b] >= 0) p->prev[p->next[b]] = p->prev[b];
    else p->tail = p->prev[b];
    p->idle[b] = false;
    p->n_idle--;
}

int sprig_kv_prefix_evict(sprig_kv_prefix *p)
{
    const int b = p->head;
    if (b < 0) return -1;
    sprig_kv_prefix_unkey(p, b);   /* also off the idle list */
    return b;
}
