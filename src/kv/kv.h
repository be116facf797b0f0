/*
 * kv — the KV cache interface: one vtable, one file per cache kind.
 *
 * A cache holds, per layer, one key row and one value row (n_kv_head*hd
 * elements each) per slot. Slots [0, len) are committed history. A forward of
 * n tokens writes slots [len, len+n) of every layer with sprig_kv_write and
 * then commits them with sprig_kv_commit, so attention during the forward can
 * see the pending rows.
 *
 * Rollback after speculative verification:
 *  - trim(n): drop the last n committed slots (chain rollback).
 *  - gather_positions(slots[]): keep exactly those slots (strictly increasing,
 *    < len) and close up, reindexing EVERY per-slot buffer. Identity is a
 *    no-op; a prefix selection equals trim.
 *  - gather_within_tail(tail_len, kept[]): the cheap per-round form; keeps
 *    offsets kept[] (strictly increasing, < tail_len) of the last tail_len
 *    slots, compacting only the tail in place (cost ~ the verify block, not
 *    the context; the allocation is kept). Equals gather_positions said in
 *    absolute terms.
 *  - A cache that cannot gather refuses with SPRIG_E_REFUSED and a reason
 *    naming the cause; can_gather() asks first. A refusal is a contract: the
 *    caller must not draft a tree this round.
 *
 * The public functions (kv.c) validate every argument and name the bad one,
 * so a cache kind's vtable entries may assume valid arguments.
 */
#ifndef SPRIG_KV_KV_H
#define SPRIG_KV_KV_H

#include "base/err.h"
#include "base/pool.h"
#include "kv/codec.h"
#include "tensor/attention.h"

#include <stdio.h>

typedef struct sprig_kv sprig_kv;

/* Cache modes: what a slot stores for keys and for values (one table row
 * each in kv.c; the numbers are the public enum sprig_kv_type's). */
enum sprig_kv_mode {
    SPRIG_KV_MODE_F32 = 0,
    SPRIG_KV_MODE_F16 = 1,
    SPRIG_KV_MODE_INT8 = 2,            /* int8 + f16 absmax scale per token and head, K and V */
    SPRIG_KV_MODE_TURBO4 = 3,          /* 4-bit rotated codes, K and V (own signs each) */
    SPRIG_KV_MODE_TURBO4_ASYM = 4,     /* K f16, V 4-bit rotated codes */
    SPRIG_KV_MODE_TURBO3_ASYM = 5,     /* K f16, V 3-bit rotated codes */
    SPRIG_KV_MODE_TURBO4_DELEGATED = 6,/* K f16, V: f16 hot ring + 4-bit cold body (kv_delegated.c) */
    SPRIG_KV_MODE_COUNT
};

/* The mode's name ("turbo4-asym"), or NULL for an unknown mode. */
const char *sprig_kv_mode_name(int mode);
/* The mode called `name`, or -1. */
int sprig_kv_mode_from_name(const char *name);
/* "f32|f16|int8|..." for help and error messages. */
const char *sprig_kv_mode_list(void);
/* Set up the key and value codecs of a mode for head size hd; refuses, naming
 * the mode and the head size, what the mode cannot store. */
sprig_status sprig_kv_mode_codecs(int mode, int hd, sprig_kv_codec *kc, sprig_kv_codec *vc, sprig_error *err);
/* Bytes one slot of one layer takes in a mode (keys + values, all kv heads). */
int64_t sprig_kv_mode_slot_bytes(int mode, int n_kv_head, int hd);

struct sprig_kv_params {
    int n_layer;
    int n_ctx;          /* slots */
    int n_kv_head;
    int head_dim;
    int mode;           /* enum sprig_kv_mode */
    int max_batch;      /* optional (0 = 1): the largest forward; the delegated kind needs it */
    int n_head;         /* optional (0 = n_kv_head): query heads, likewise */
    const int *layer_kv_head;   /* optional [n_layer]: per-layer kv heads (0 = the layer keeps no
                                   cache: it reads another layer's); NULL = n_kv_head everywhere */
    const int *layer_hd;        /* optional [n_layer]: per-layer head sizes; NULL = head_dim */
};

/* Whether every layer has n_kv_head heads of head_dim (the per-layer arrays
 * absent or equal to them). Only the ring kind (kv_ring.c) holds layers of
 * different shapes; the other kinds refuse params for which this is false. */
bool sprig_kv_params_uniform(const struct sprig_kv_params *p);

/* Where attention reads one layer: records (tensor/kvrows.h) plus the codecs
 * whose rotation the queries / outputs need (sprig_kv_attend applies them). */
typedef struct sprig_kv_view {
    sprig_kvrows k, v;
    sprig_kvrows v_next;   /* v's second segment when v.split is used (the views are
                              values: sprig_kv_view_layer links v.next to it) */
    const sprig_kv_codec *kc, *vc;
    int first;          /* logical slot of row 0: rows hold slots [first, len + pending);
                           0 except on a sliding-window layer that dropped old slots */
} sprig_kv_view;

/* One vtable per cache kind. Optional slots may be NULL (= refuse / nothing
 * extra to do). Entries receive arguments already validated by kv.c, see
 * the len they had before the call, and must not change len: kv.c sets the
 * new len after an entry returns SPRIG_OK. */
struct sprig_kv_vt {
    const char *kind;
    void (*destroy)(sprig_kv *kv);
    void (*write)(sprig_kv *kv, int layer, int n, const float *k, const float *v);   /* at [len, len+n) */
    sprig_kv_view (*view)(const sprig_kv *kv, int layer);
    /* Drop the last n slots (0 <= n <= len). NULL: only len moves. */
    sprig_status (*trim)(sprig_kv *kv, int n, sprig_error *err);
    /* NULL: cannot gather (the reason names the kind). */
    bool (*can_gather)(const sprig_kv *kv, char *reason, size_t cap);
    /* Keep slots[0..n) at [0, n); new len = n. NULL: refuse. */
    sprig_status (*gather_positions)(sprig_kv *kv, const int *slots, int n, sprig_error *err);
    /* Keep tail offsets kept[0..n_kept) at [len-tail_len, len-tail_len+n_kept);
     * new len = len - tail_len + n_kept. NULL: refuse. */
    sprig_status (*gather_within_tail)(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err);
    /* Optional: reset per-kind state when the cache is cleared (len -> 0). */
    void (*clear)(sprig_kv *kv);
    /* Optional: make room for n more slots before they are written (a paged
     * cache takes blocks from its pool); an error names the cause. */
    sprig_status (*reserve)(sprig_kv *kv, int n, sprig_error *err);
    /* Optional: whether the last slots sit in logical order (NULL: always). */
    bool (*tail_in_order)(const sprig_kv *kv);
    /* Optional, for caches whose rows a query reads depending on its
     * position (the delegated hot/cold split): epoch(pos) names what a query
     * at pos sees (equal epochs: the same view), view_at gives that view.
     * sprig_kv_attend runs one attention per distinct epoch of a block. */
    int (*epoch)(const sprig_kv *kv, int pos);
    sprig_kv_view (*view_at)(const sprig_kv *kv, int layer, int epoch);
    /* Optional: [max_batch][n_head*head_dim] floats for the other epochs' outputs. */
    float *(*alt_out)(const sprig_kv *kv);
};

/* Common header every kind embeds first. */
struct sprig_kv {
    const struct sprig_kv_vt *vt;
    struct sprig_kv_params p;
    int len;            /* committed slots */
};

/* Dense cache, one [n_ctx][slot record] buffer per layer for keys and one
 * for values, every mode but the delegated one (kv_dense.c). Validates p,
 * naming the field. */
sprig_kv *sprig_kv_create_dense(const struct sprig_kv_params *p, sprig_error *err);
/* Paged caches (kv_paged.c): fixed-size blocks of block_slots slots from a
 * pool shared by several sequences, a block table per sequence. Every mode
 * but the delegated one. Blocks are taken when a forward reserves room and
 * returned as soon as a trim, a gather or a clear leaves them empty, or the
 * sequence is freed; running out is SPRIG_E_CONTEXT_FULL for the sequence
 * that asked, and never touches another sequence's blocks. The pool is
 * thread-safe; one sequence is used by one thread at a time. */
typedef struct sprig_kv_pool sprig_kv_pool;
struct sprig_kv_pool_params {
    int n_layer, n_kv_head, head_dim, mode;
    int block_slots;    /* slots per block: a power of two in [1, 4096] */
    int n_blocks;       /* blocks in the pool */
};
sprig_kv_pool *sprig_kv_pool_create(const struct sprig_kv_pool_params *p, sprig_error *err);
/* Frees the pool; every sequence on it must have been freed first (a broken
 * invariant otherwise: aborts). */
void           sprig_kv_pool_free(sprig_kv_pool *pool);
int            sprig_kv_pool_free_blocks(sprig_kv_pool *pool);
int            sprig_kv_pool_n_blocks(const sprig_kv_pool *pool);
const struct sprig_kv_pool_params *sprig_kv_pool_params(const sprig_kv_pool *pool);
/* A sequence of at most n_ctx slots on the pool (no block is taken yet). */
sprig_kv      *sprig_kv_create_paged(sprig_kv_pool *pool, int n_ctx, sprig_error *err);
/* Blocks a paged sequence holds (0 for other kinds). */
int            sprig_kv_paged_blocks(const sprig_kv *kv);
/* The pool of a paged sequence (NULL for other kinds). */
sprig_kv_pool *sprig_kv_paged_pool(const sprig_kv *kv);

/* Prefix sharing on a pool (see kv_paged.c). Every call names the tokens the
 * sequence's slots hold from position 0 (tokens[0 .. len) must be what its
 * first len slots hold); a cache of another kind is left alone. */
/* Attach the pool's keyed blocks that continue this sequence (its len a whole
 * number of blocks) for the full blocks of tokens[0..n); returns the new len. */
int  sprig_kv_paged_share(sprig_kv *kv, const int32_t *tokens, int n);
/* The slots of tokens[0..n)'s prefix the pool holds keyed (whole blocks from position 0); attaches nothing. */
int  sprig_kv_paged_lookup(const sprig_kv *kv, const int32_t *tokens, int n);
/* Key the sequence's full blocks of tokens[0..n) (n <= len) for others to
 * share; returns the blocks newly keyed. */
int  sprig_kv_paged_publish(sprig_kv *kv, const int32_t *tokens, int n);
/* About to compute the block that starts at len (tokens[0..n) say what the
 * whole prefix will be): GO (claimed for this sequence, or nothing to claim),
 * CACHED (the pool holds it now: share again) or WAIT (another sequence
 * computes it: sprig_kv_pool_wait, then ask again). Claims end with unclaim,
 * clear or free. */
enum { SPRIG_KV_CLAIM_GO = 0, SPRIG_KV_CLAIM_CACHED = 1, SPRIG_KV_CLAIM_WAIT = 2 };
#define SPRIG_KV_POOL_CLAIMS 64
int  sprig_kv_paged_claim(sprig_kv *kv, const int32_t *tokens, int n);
void sprig_kv_paged_unclaim(sprig_kv *kv);
/* Wait until a claim is given up, or ms milliseconds. */
void sprig_kv_pool_wait(sprig_kv_pool *pool, int ms);
struct sprig_kv_pool_stats {
    int64_t hit_blocks;       /* keyed blocks attached by share (rows not computed again) */
    int64_t published;        /* blocks keyed */
    int64_t evicted;          /* idle keyed blocks taken back for new rows */
    int64_t copied;           /* blocks copied before a write (copy on write) */
    int n_blocks, free_blocks;
    int cached_blocks;        /* keyed now */
    int idle_blocks;          /* keyed, held by no sequence (evictable) */
    int shared_blocks;        /* held by two or more sequences now */
};
void sprig_kv_pool_get_stats(sprig_kv_pool *pool, struct sprig_kv_pool_stats *out);

/* Sliding-window caches (kv_ring.c): per layer either the full history
 * (window 0) or the last `window` slots in a rotating buffer. A sliding layer
 * holds window - 1 + max_batch slots, enough for a forward of up to max_batch
 * tokens to see its whole window; it wraps around (a ring) until
 * sprig_kv_ring_set_buffer turns on the speculative buffer: then it keeps
 * logical order and compacts from the front (dropping slots no future query
 * can see) instead of wrapping, so a verify block's tail stays in order and
 * can be gathered. Once a ring has wrapped, gathers are refused by name
 * (can_gather says which layer), and so is a trim that would need dropped
 * slots. */
sprig_kv *sprig_kv_create_ring(const struct sprig_kv_params *p, const int *windows, int max_batch, sprig_error *err);
/* Turn the speculative buffer of `slack` extra slots on (0: off): converts
 * every sliding layer to logical order (keeping what a query can still see)
 * and reallocates once. Not in the round loop. */
sprig_status sprig_kv_ring_set_buffer(sprig_kv *kv, int slack, sprig_error *err);
/* Whether the last slots of every layer sit in logical order (a verify tail
 * can be gathered); true for dense and paged caches. */
bool sprig_kv_tail_is_in_logical_order(const sprig_kv *kv);

/* The delegated cache (kv_delegated.c, mode turbo4-delegated): f16 keys;
 * values as 4-bit rotated codes for old slots and rotated f16 rows in a hot
 * ring for recent ones. Which a query reads is a function of its position
 * only, so verify blocks and plain decoding read the same bits. */
sprig_kv *sprig_kv_create_delegated(const struct sprig_kv_params *p, sprig_error *err);

/* The cache a mode uses (dense, or the delegated hot/cold cache). */
sprig_kv *sprig_kv_create(const struct sprig_kv_params *p, sprig_error *err);
/* Validate p (shared by every kind), naming the field. */
sprig_status sprig_kv_params_check(const struct sprig_kv_params *p, const char *who, sprig_error *err);
void      sprig_kv_free(sprig_kv *kv);

static inline int sprig_kv_len(const sprig_kv *kv) { return kv->len; }
static inline int sprig_kv_capacity(const sprig_kv *kv) { return kv->p.n_ctx; }
const char *sprig_kv_kind(const sprig_kv *kv);

/* Write n pending rows of one layer (k, v: [n][kv_dim] f32) at [len, len+n).
 * Precondition: 0 <= layer < n_layer, len + n <= capacity (the caller
 * checked; a violation is a broken invariant and aborts). */
void          sprig_kv_write(sprig_kv *kv, int layer, int n, const float *k, const float *v);
sprig_kv_view sprig_kv_view_layer(const sprig_kv *kv, int layer);
/* Attention of the queries q[n][n_head*hd] at positions pos[n] (NULL: len,
 * len+1, ...) against layer `layer` (a->q, a->kr and a->vr are filled in;
 * the other fields are the caller's): where the mode stores rotated rows, q
 * is rotated into the key codec's basis IN PLACE first and a->out back from
 * the value codec's basis after. */
void          sprig_kv_attend(sprig_pool *pool, const sprig_kv *kv, int layer, float *q, const int32_t *pos,
                              sprig_attn_args *a);
/* Room for n more slots: SPRIG_E_CONTEXT_FULL past the capacity or when a
 * pooled cache's pool has no block left (naming it); call before writing. */
sprig_status  sprig_kv_reserve(sprig_kv *kv, int n, sprig_error *err);
/* len += n after every layer was written (same precondition). */
void          sprig_kv_commit(sprig_kv *kv, int n);

/* Drop the last n slots; 0 <= n <= len, else SPRIG_E_INVALID_ARG. */
sprig_status sprig_kv_trim(sprig_kv *kv, int n, sprig_error *err);
/* Can this cache gather now? If not, reason (may be NULL) names the cause. */
bool         sprig_kv_can_gather(const sprig_kv *kv, char *reason, size_t cap);
/* slots[n]: strictly increasing, each in [0, len); n in [0, len]. */
sprig_status sprig_kv_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err);
/* tail_len in [0, len]; kept[n_kept]: strictly increasing, each in [0, tail_len). */
sprig_status sprig_kv_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err);
/* Forget every slot (len = 0); the allocation is kept. */
void         sprig_kv_clear(sprig_kv *kv);

/* Stored rows as bytes (the prompt cache file): a slot of one layer is its key
 * records then its value records, every kv head, exactly as the mode stores
 * them; the rows of slots [0, n) are layer by layer, slot by slot. Only the
 * dense and paged kinds (the ring and the delegated cache refuse by name). */
bool         sprig_kv_rows_portable(const sprig_kv *kv, char *why, size_t cap);
/* Bytes one slot of one layer takes there. */
int64_t      sprig_kv_row_bytes(const sprig_kv *kv);
/* Write rows [0, n) (n <= len) to f; false on a write error. */
bool         sprig_kv_rows_save(const sprig_kv *kv, int n, FILE *f);
/* Replace the cache's contents by n slots of rows from src (n_layer * n *
 * row_bytes bytes, as sprig_kv_rows_save wrote them); len = n. */
sprig_status sprig_kv_rows_load(sprig_kv *kv, int n, const uint8_t *src, size_t len, sprig_error *err);

#endif
