/*
 * kv/prefix — the index of a paged pool's prefix cache: which block holds
 * which token prefix, and which of those no sequence holds (evictable,
 * least recently used first).
 *
 * A full block is keyed by a chained hash of every token from position 0 to
 * its last slot (two independent 64-bit lanes, 128 bits): the same key means
 * the same tokens at the same positions, so the same key and value rows (a
 * row's bits never depend on the batch it was computed in). A map from key
 * to block finds a prefix block by block; a doubly linked list over block ids
 * orders the keyed blocks that no sequence holds, so the pool takes the
 * oldest first when it runs out of free ones.
 *
 * Not thread-safe: the pool's mutex guards it (kv_paged.c).
 */
#ifndef SPRIG_KV_PREFIX_H
#define SPRIG_KV_PREFIX_H

#include "base/err.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sprig_kv_key {
    uint64_t a, b;
} sprig_kv_key;

/* The key before any token (position 0). */
sprig_kv_key sprig_kv_key_start(void);
/* The key after tokens[0..n) follow `prev`. */
sprig_kv_key sprig_kv_key_next(sprig_kv_key prev, const int32_t *tokens, int n);

typedef struct sprig_kv_prefix {
    int n_blocks;
    sprig_kv_key *key;        /* [n_blocks] valid where keyed */
    bool *keyed;              /* [n_blocks] in the map */
    int *map;                 /* [map_mask + 1] block ids, -1 empty (linear probing on key.a) */
    int map_mask;
    int *prev, *next;         /* [n_blocks] the idle list (keyed, held by no sequence); -1 ends */
    bool *idle;               /* [n_blocks] on the idle list */
    int head, tail;           /* oldest, newest idle block (-1: none) */
    int n_idle, n_keyed;
} sprig_kv_prefix;

sprig_status sprig_kv_prefix_init(sprig_kv_prefix *p, int n_blocks, sprig_error *err);
void         sprig_kv_prefix_free(sprig_kv_prefix *p);
/* The block keyed `k`, or -1. */
int          sprig_kv_prefix_find(const sprig_kv_prefix *p, sprig_kv_key k);
/* Key block b (not keyed yet) as k; false when another block has that key already (b stays unkeyed). */
bool         sprig_kv_prefix_insert(sprig_kv_prefix *p, int b, sprig_kv_key k);
/* Forget b's key (and take it off the idle list); nothing when b is not keyed. */
void         sprig_kv_prefix_unkey(sprig_kv_prefix *p, int b);
/* A keyed block no sequence holds any more: the newest idle one. */
void         sprig_kv_prefix_idle_push(sprig_kv_prefix *p, int b);
/* Off the idle list (a sequence holds b again); nothing when b is not on it. */
void         sprig_kv_prefix_idle_remove(sprig_kv_prefix *p, int b);
/* The oldest idle block, unkeyed and off the list (its rows are to be overwritten), or -1. */
int          sprig_kv_prefix_evict(sprig_kv_prefix *p);

#endif
