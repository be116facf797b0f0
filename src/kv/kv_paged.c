/*
 * kv/kv_paged — the paged KV cache: a pool of fixed-size blocks shared by
 * several sequences, and a block table per sequence (the layout a server
 * with many sequences uses).
 *
 * Pool: per layer one key arena and one value arena of n_blocks blocks; a
 * block holds block_slots slots of the mode's records (kv/codec.h), so
 * block b of layer l starts at arena_l + b * block_slots * slot_bytes. Free
 * blocks sit on a stack guarded by a mutex (sequences may live on different
 * threads); a block belongs to at most one sequence at a time.
 *
 * Sequence: logical slot j lives in block table[j / block_slots] at offset
 * j % block_slots. Attention reads through per-layer page arrays
 * (tensor/kvrows.h's paged rows), rebuilt when the table changes. Blocks are
 * taken by sprig_kv_reserve before a forward writes (running out is
 * SPRIG_E_CONTEXT_FULL naming the pool, for that sequence only) and given
 * back as soon as a trim, a gather or a clear leaves them empty.
 *
 * Rollback: the records of a slot (codes and every sidecar) move as one,
 * exactly as in the dense cache; gather_within_tail moves only tail slots,
 * so its cost follows the verify block, not the context.
 *
 * Prefix sharing: a sequence publishes its full blocks under the key of the
 * tokens they hold (kv/prefix.h); a sequence whose tokens start the same way
 * attaches those blocks instead of computing them. A block counts the
 * sequences holding it (ref); one held by two or more, or keyed, is copied
 * (or, held by this sequence alone, unkeyed) before a sequence writes into it
 * (a trim back into a shared prefix, then new tokens): copy on write. A keyed
 * block no sequence holds stays cached on the pool's idle list and is taken
 * back, least recently used first, only when no free block is left; a block
 * a sequence holds is never evicted. Claims let one sequence compute a prefix
 * that others wait for instead of computing it too.
 */
#include "kv/kv.h"
#include "kv/prefix.h"
#include "base/mem.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sprig_kv_pool {
    struct sprig_kv_pool_params p;
    sprig_kv_codec kc, vc;
    int64_t ks, vs;            /* bytes per slot of keys / values (all kv heads) */
    uint8_t **k, **v;          /* [n_layer] -> n_blocks blocks */
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* a claim was given up */
    int *free_stack, n_free;   /* ids of free blocks (unkeyed, held by no sequence) */
    int *ref;                  /* [n_blocks] sequences whose table holds the block */
    sprig_kv_prefix px;        /* keyed blocks; the idle ones are also free to take */
    struct claim { sprig_kv_key key; const void *owner; } claims[SPRIG_KV_POOL_CLAIMS];
    int n_claims;
    struct sprig_kv_pool_stats st;
    int n_seq;                 /* sequences alive */
};

struct kv_paged {
    sprig_kv base;
    sprig_kv_pool *pool;
    int max_blocks;            /* ceil(n_ctx / block_slots) */
    int n_blocks;              /* blocks held: table[0 .. n_blocks) */
    int *table;
    bool *priv_ok;             /* [max_blocks] known to be held by this sequence alone and unkeyed (false: ask the pool) */
    const uint8_t **kpages, **vpages;   /* [n_layer][max_blocks] */
};

/* ------------------------------------------------------------------ pool */

sprig_kv_pool *sprig_kv_pool_create(const struct sprig_kv_pool_params *p, sprig_error *err)
{
    if (!p) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv pool: params is NULL"); return NULL; }
    if (p->block_slots < 1 || p->block_slots > 4096 || (p->block_slots & (p->block_slots - 1))) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv pool: block_slots = %d must be a power of two in [1, 4096]", p->block_slots);
        return NULL;
    }
    if (p->n_blocks < 1 || p->n_blocks > (1 << 24)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv pool: n_blocks = %d must be in [1, %d]", p->n_blocks, 1 << 24);
        return NULL;
    }
    struct sprig_kv_params kp = { .n_layer = p->n_layer, .n_ctx = p->block_slots, .n_kv_head = p->n_kv_head,
                                  .head_dim = p->head_dim, .mode = p->mode };
    if (sprig_kv_params_check(&kp, "kv pool", err)) return NULL;
    if (p->mode == SPRIG_KV_MODE_TURBO4_DELEGATED) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv pool: mode turbo4-delegated keeps a hot ring per sequence and is not paged");
        return NULL;
    }
    sprig_kv_pool *P = calloc(1, sizeof *P);
    if (!P) { sprig_err(err, SPRIG_E_NOMEM, "kv pool: out of memory"); return NULL; }
    P->p = *p;
    if (sprig_kv_mode_codecs(p->mode, p->head_dim, &P->kc, &P->vc, err)) { free(P); return NULL; }
    P->ks = P->kc.rec_bytes * p->n_kv_head;
    P->vs = P->vc.rec_bytes * p->n_kv_head;
    size_t kb, vb, slots;
    if (sprig_mul_ovf((size_t)p->n_blocks, (size_t)p->block_slots, &slots) || sprig_mul_ovf(slots, (size_t)P->ks, &kb) ||
        sprig_mul_ovf(slots, (size_t)P->vs, &vb)) {
        sprig_err(err, SPRIG_E_NOMEM, "kv pool: %d blocks x %d slots overflows a buffer size", p->n_blocks, p->block_slots);
        free(P);
        return NULL;
    }
    pthread_mutex_init(&P->mu, NULL);
    pthread_cond_init(&P->cv, NULL);
    P->k = calloc((size_t)p->n_layer, sizeof *P->k);
    P->v = calloc((size_t)p->n_layer, sizeof *P->v);
    P->free_stack = malloc(sizeof(int) * (size_t)p->n_blocks);
    P->ref = calloc((size_t)p->n_blocks, sizeof *P->ref);
    bool ok = P->k && P->v && P->free_stack && P->ref && !sprig_kv_prefix_init(&P->px, p->n_blocks, NULL);
    for (int l = 0; ok && l < p->n_layer; l++) {
        P->k[l] = sprig_calloc_aligned(kb, 1);
        P->v[l] = sprig_calloc_aligned(vb, 1);
        ok = P->k[l] && P->v[l];
    }
    if (!ok) {
        sprig_kv_pool_free(P);
        sprig_err(err, SPRIG_E_NOMEM, "kv pool: cannot allocate %d layers x %zu bytes", p->n_layer, kb + vb);
        return NULL;
    }
    /* the stack pops low ids first */
    for (int b = 0; b < p->n_blocks; b++) P->free_stack[b] = p->n_blocks - 1 - b;
    P->n_free = p->n_blocks;
    return P;
}

void sprig_kv_pool_free(sprig_kv_pool *P)
{
    if (!P) return;
    SPRIG_ASSERT(P->n_seq == 0);
    for (int l = 0; l < P->p.n_layer; l++) {
        if (P->k) sprig_free_aligned(P->k[l]);
        if (P->v) sprig_free_aligned(P->v[l]);
    }
    free(P->k);
    free(P->v);
    free(P->free_stack);
    free(P->ref);
    sprig_kv_prefix_free(&P->px);
    pthread_cond_destroy(&P->cv);
    pthread_mutex_destroy(&P->mu);
    free(P);
}

int sprig_kv_pool_free_blocks(sprig_kv_pool *P)
{
    pthread_mutex_lock(&P->mu);
    const int n = P->n_free + P->px.n_idle;
    pthread_mutex_unlock(&P->mu);
    return n;
}

int sprig_kv_pool_n_blocks(const sprig_kv_pool *P) { return P->p.n_blocks; }
const struct sprig_kv_pool_params *sprig_kv_pool_params(const sprig_kv_pool *P) { return &P->p; }

/* ------------------------------------------------------------------ sequence */

static uint8_t *slot_k(const struct kv_paged *s, int l, int j)
{
    const sprig_kv_pool *P = s->pool;
    const int sh = __builtin_ctz((unsigned)P->p.block_slots);
    return P->k[l] + ((int64_t)s->table[j >> sh] * P->p.block_slots + (j & (P->p.block_slots - 1))) * P->ks;
}

static uint8_t *slot_v(const struct kv_paged *s, int l, int j)
{
    const sprig_kv_pool *P = s->pool;
    const int sh = __builtin_ctz((unsigned)P->p.block_slots);
    return P->v[l] + ((int64_t)s->table[j >> sh] * P->p.block_slots + (j & (P->p.block_slots - 1))) * P->vs;
}

static void set_pages(struct kv_paged *s, int b)
{
    const sprig_kv_pool *P = s->pool;
    for (int l = 0; l < P->p.n_layer; l++) {
        s->kpages[(size_t)l * s->max_blocks + b] = b < s->n_blocks ? P->k[l] + (int64_t)s->table[b] * P->p.block_slots * P->ks : NULL;
        s->vpages[(size_t)l * s->max_blocks + b] = b < s->n_blocks ? P->v[l] + (int64_t)s->table[b] * P->p.block_slots * P->vs : NULL;
    }
}

/* A block from the free stack, else the oldest idle keyed one (evicted), else -1. Pool lock held. */
static int take_block(sprig_kv_pool *P)
{
    int b = -1;
    if (P->n_free) b = P->free_stack[--P->n_free];
    else if ((b = sprig_kv_prefix_evict(&P->px)) >= 0) P->st.evicted++;
    if (b >= 0) P->ref[b] = 1;
    return b;
}

/* One holder less: a keyed block nobody holds becomes the newest idle one, an unkeyed one free. Pool lock held. */
static void put_block(sprig_kv_pool *P, int b)
{
    SPRIG_ASSERT(P->ref[b] > 0);
    if (--P->ref[b]) return;
    if (P->px.keyed[b]) sprig_kv_prefix_idle_push(&P->px, b);
    else P->free_stack[P->n_free++] = b;
}

/* Give back every block past the first `keep` (the last first, so a prefix's tail is evicted before its head). */
static void release_from(struct kv_paged *s, int keep)
{
    if (keep >= s->n_blocks) return;
    sprig_kv_pool *P = s->pool;
    pthread_mutex_lock(&P->mu);
    for (int b = s->n_blocks - 1; b >= keep; b--) put_block(P, s->table[b]);
    pthread_mutex_unlock(&P->mu);
    const int old = s->n_blocks;
    s->n_blocks = keep;
    for (int b = keep; b < old; b++) set_pages(s, b);
}

static int blocks_for(const struct kv_paged *s, int slots)
{
    return (slots + s->pool->p.block_slots - 1) / s->pool->p.block_slots;
}

/* Before this sequence writes into its block bi: a block others hold too is copied to a fresh one (copy on
 * write); a keyed block it holds alone is unkeyed (its key would no longer say what it holds). */
static sprig_status make_private(struct kv_paged *s, int bi, sprig_error *err)
{
    sprig_kv_pool *P = s->pool;
    const int b = s->table[bi];
    pthread_mutex_lock(&P->mu);
    if (P->ref[b] == 1) {
        if (P->px.keyed[b]) sprig_kv_prefix_unkey(&P->px, b);
        pthread_mutex_unlock(&P->mu);
        return SPRIG_OK;
    }
    const int nb = take_block(P);
    if (nb < 0) {
        pthread_mutex_unlock(&P->mu);
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "kv pool: out of blocks: writing into a shared block needs a copy and "
                         "none of the pool's %d blocks is free", P->p.n_blocks);
    }
    P->ref[b]--;   /* still held by the others */
    P->st.copied++;
    pthread_mutex_unlock(&P->mu);
    const int64_t bs = P->p.block_slots;
    for (int l = 0; l < P->p.n_layer; l++) {   /* b is read-only while shared: no lock needed to read it */
        memcpy(P->k[l] + nb * bs * P->ks, P->k[l] + b * bs * P->ks, (size_t)(bs * P->ks));
        memcpy(P->v[l] + nb * bs * P->vs, P->v[l] + b * bs * P->vs, (size_t)(bs * P->vs));
    }
    s->table[bi] = nb;
    set_pages(s, bi);
    return SPRIG_OK;
}

static sprig_status paged_reserve(sprig_kv *kv, int n, sprig_error *err)
{
    struct kv_paged *s = (struct kv_paged *)kv;
    sprig_kv_pool *P = s->pool;
    const int sh = __builtin_ctz((unsigned)P->p.block_slots);
    const int at = kv->len >> sh;   /* the block the first new slot goes to */
    if (n > 0 && at < s->n_blocks && !s->priv_ok[at]) {   /* it holds earlier slots: private before the write */
        sprig_status st = make_private(s, at, err);
        if (st) return st;
        s->priv_ok[at] = true;
    }
    const int need = blocks_for(s, kv->len + n);
    if (need <= s->n_blocks) return SPRIG_OK;
    pthread_mutex_lock(&P->mu);
    if (P->n_free + P->px.n_idle < need - s->n_blocks) {
        const int nf = P->n_free + P->px.n_idle;
        pthread_mutex_unlock(&P->mu);
        return sprig_err(err, SPRIG_E_CONTEXT_FULL,
                         "kv pool: out of blocks: this sequence holds %d blocks of %d slots and needs %d for %d + %d slots; "
                         "the pool of %d blocks has %d free",
                         s->n_blocks, P->p.block_slots, need, kv->len, n, P->p.n_blocks, nf);
    }
    const int first = s->n_blocks;
    for (int b = first; b < need; b++) s->table[b] = take_block(P);
    pthread_mutex_unlock(&P->mu);
    s->n_blocks = need;
    for (int b = first; b < need; b++) {
        set_pages(s, b);
        s->priv_ok[b] = true;
    }
    return SPRIG_OK;
}

static void drop_claims(struct kv_paged *s)
{
    sprig_kv_pool *P = s->pool;
    pthread_mutex_lock(&P->mu);
    bool any = false;
    for (int i = 0; i < P->n_claims;)
        if (P->claims[i].owner == s) {
            P->claims[i] = P->claims[--P->n_claims];
            any = true;
        } else {
            i++;
        }
    if (any) pthread_cond_broadcast(&P->cv);
    pthread_mutex_unlock(&P->mu);
}

static void paged_destroy(sprig_kv *kv)
{
    struct kv_paged *s = (struct kv_paged *)kv;
    drop_claims(s);
    if (s->table) release_from(s, 0);
    pthread_mutex_lock(&s->pool->mu);
    s->pool->n_seq--;
    pthread_mutex_unlock(&s->pool->mu);
    free(s->table);
    free(s->priv_ok);
    free(s->kpages);
    free(s->vpages);
    free(s);
}

static void paged_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    struct kv_paged *s = (struct kv_paged *)kv;
    const sprig_kv_pool *P = s->pool;
    const int nkv = P->p.n_kv_head, hd = P->p.head_dim;
    SPRIG_ASSERT(blocks_for(s, kv->len + n) <= s->n_blocks);   /* sprig_kv_reserve ran */
    for (int i = 0; i < n; i++) {
        uint8_t *kr = slot_k(s, layer, kv->len + i), *vr = slot_v(s, layer, kv->len + i);
        for (int g = 0; g < nkv; g++) {
            sprig_kv_codec_encode(&P->kc, k + ((size_t)i * nkv + g) * hd, kr + g * P->kc.rec_bytes);
            sprig_kv_codec_encode(&P->vc, v + ((size_t)i * nkv + g) * hd, vr + g * P->vc.rec_bytes);
        }
    }
}

static sprig_kv_view paged_view(const sprig_kv *kv, int layer)
{
    const struct kv_paged *s = (const struct kv_paged *)kv;
    const sprig_kv_pool *P = s->pool;
    const int sh = __builtin_ctz((unsigned)P->p.block_slots);
    return (sprig_kv_view){
        .k = { .fmt = P->kc.fmt, .pages = s->kpages + (size_t)layer * s->max_blocks, .page_shift = sh, .stride = P->ks,
               .head_bytes = P->kc.rec_bytes, .codebook = P->kc.codebook },
        .v = { .fmt = P->vc.fmt, .pages = s->vpages + (size_t)layer * s->max_blocks, .page_shift = sh, .stride = P->vs,
               .head_bytes = P->vc.rec_bytes, .codebook = P->vc.codebook },
        .kc = &P->kc, .vc = &P->vc,
    };
}

static sprig_status paged_trim(sprig_kv *kv, int n, sprig_error *err)
{
    (void)err;
    struct kv_paged *s = (struct kv_paged *)kv;
    release_from(s, blocks_for(s, kv->len - n));
    return SPRIG_OK;
}

static bool paged_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    (void)kv;
    if (reason && cap) reason[0] = 0;
    return true;
}

static sprig_status move_slot(struct kv_paged *s, int dst, int src, sprig_error *err)
{
    if (dst == src) return SPRIG_OK;
    const sprig_kv_pool *P = s->pool;
    const int bi = dst >> __builtin_ctz((unsigned)P->p.block_slots);
    if (!s->priv_ok[bi]) {
        sprig_status st = make_private(s, bi, err);
        if (st) return st;
        s->priv_ok[bi] = true;
    }
    for (int l = 0; l < P->p.n_layer; l++) {
        memcpy(slot_k(s, l, dst), slot_k(s, l, src), (size_t)P->ks);
        memcpy(slot_v(s, l, dst), slot_v(s, l, src), (size_t)P->vs);
    }
    return SPRIG_OK;
}

static sprig_status paged_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    struct kv_paged *s = (struct kv_paged *)kv;
    for (int i = 0; i < n; i++) {
        sprig_status st = move_slot(s, i, slots[i], err);
        if (st) return st;
    }
    release_from(s, blocks_for(s, n));
    return SPRIG_OK;
}

static sprig_status paged_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err)
{
    struct kv_paged *s = (struct kv_paged *)kv;
    const int base = kv->len - tail_len;
    for (int i = 0; i < n_kept; i++) {
        sprig_status st = move_slot(s, base + i, base + kept[i], err);
        if (st) return st;
    }
    release_from(s, blocks_for(s, base + n_kept));
    return SPRIG_OK;
}

static void paged_clear(sprig_kv *kv)
{
    drop_claims((struct kv_paged *)kv);
    release_from((struct kv_paged *)kv, 0);
}

static const struct sprig_kv_vt paged_vt = {
    .kind = "paged",
    .destroy = paged_destroy,
    .write = paged_write,
    .view = paged_view,
    .trim = paged_trim,
    .can_gather = paged_can_gather,
    .gather_positions = paged_gather_positions,
    .gather_within_tail = paged_gather_within_tail,
    .clear = paged_clear,
    .reserve = paged_reserve,
};

sprig_kv *sprig_kv_create_paged(sprig_kv_pool *P, int n_ctx, sprig_error *err)
{
    if (!P) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv paged: pool is NULL"); return NULL; }
    if (n_ctx < 1 || n_ctx > (1 << 24)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv paged: n_ctx = %d must be in [1, %d]", n_ctx, 1 << 24);
        return NULL;
    }
    struct kv_paged *s = calloc(1, sizeof *s);
    if (!s) { sprig_err(err, SPRIG_E_NOMEM, "kv paged: out of memory"); return NULL; }
    s->base.vt = &paged_vt;
    s->base.p = (struct sprig_kv_params){ .n_layer = P->p.n_layer, .n_ctx = n_ctx, .n_kv_head = P->p.n_kv_head,
                                          .head_dim = P->p.head_dim, .mode = P->p.mode };
    s->pool = P;
    s->max_blocks = (n_ctx + P->p.block_slots - 1) / P->p.block_slots;
    s->table = calloc((size_t)s->max_blocks, sizeof *s->table);
    s->priv_ok = calloc((size_t)s->max_blocks, sizeof *s->priv_ok);
    s->kpages = calloc((size_t)s->max_blocks * (size_t)P->p.n_layer, sizeof *s->kpages);
    s->vpages = calloc((size_t)s->max_blocks * (size_t)P->p.n_layer, sizeof *s->vpages);
    pthread_mutex_lock(&P->mu);
    P->n_seq++;
    pthread_mutex_unlock(&P->mu);
    if (!s->table || !s->priv_ok || !s->kpages || !s->vpages) {
        paged_destroy(&s->base);
        sprig_err(err, SPRIG_E_NOMEM, "kv paged: out of memory for a table of %d blocks", s->max_blocks);
        return NULL;
    }
    return &s->base;
}

sprig_kv_pool *sprig_kv_paged_pool(const sprig_kv *kv)
{
    return kv && kv->vt == &paged_vt ? ((const struct kv_paged *)kv)->pool : NULL;
}

int sprig_kv_paged_blocks(const sprig_kv *kv)
{
    return kv->vt == &paged_vt ? ((const struct kv_paged *)kv)->n_blocks : 0;
}

/* ------------------------------------------------------------------ prefix sharing */

static struct kv_paged *as_paged(sprig_kv *kv) { return kv && kv->vt == &paged_vt ? (struct kv_paged *)kv : NULL; }

/* The key of tokens[0 .. (k+1) * block_slots): the chain through block k. */
static sprig_kv_key key_through(const sprig_kv_pool *P, const int32_t *tokens, int k)
{
    sprig_kv_key key = sprig_kv_key_start();
    for (int i = 0; i <= k; i++) key = sprig_kv_key_next(key, tokens + (size_t)i * P->p.block_slots, P->p.block_slots);
    return key;
}

int sprig_kv_paged_share(sprig_kv *kv, const int32_t *tokens, int n)
{
    struct kv_paged *s = as_paged(kv);
    if (!s || !tokens || n < 0) return kv ? kv->len : 0;
    sprig_kv_pool *P = s->pool;
    const int bs = P->p.block_slots;
    if (kv->len % bs || s->n_blocks * bs != kv->len) return kv->len;   /* only onto whole blocks */
    int last = n / bs;   /* full blocks of the tokens */
    if (last > kv->p.n_ctx / bs) last = kv->p.n_ctx / bs;
    sprig_kv_key key = sprig_kv_key_start();
    int k = 0;
    for (; k < s->n_blocks; k++) key = sprig_kv_key_next(key, tokens + (size_t)k * bs, bs);
    const int first = k;
    pthread_mutex_lock(&P->mu);
    for (; k < last; k++) {
        key = sprig_kv_key_next(key, tokens + (size_t)k * bs, bs);
        const int b = sprig_kv_prefix_find(&P->px, key);
        if (b < 0) break;
        if (P->ref[b]++ == 0) sprig_kv_prefix_idle_remove(&P->px, b);
        s->table[k] = b;
        s->priv_ok[k] = false;
        P->st.hit_blocks++;
    }
    pthread_mutex_unlock(&P->mu);
    s->n_blocks = k;
    for (int i = first; i < k; i++) set_pages(s, i);
    kv->len = k * bs;
    return kv->len;
}

int sprig_kv_paged_lookup(const sprig_kv *kv, const int32_t *tokens, int n)
{
    const struct kv_paged *s = kv && kv->vt == &paged_vt ? (const struct kv_paged *)kv : NULL;
    if (!s || !tokens || n < 0) return 0;
    sprig_kv_pool *P = s->pool;
    const int bs = P->p.block_slots;
    int last = n / bs;
    if (last > kv->p.n_ctx / bs) last = kv->p.n_ctx / bs;
    sprig_kv_key key = sprig_kv_key_start();
    int k = 0;
    pthread_mutex_lock(&P->mu);
    for (; k < last; k++) {
        key = sprig_kv_key_next(key, tokens + (size_t)k * bs, bs);
        if (sprig_kv_prefix_find(&P->px, key) < 0) break;
    }
    pthread_mutex_unlock(&P->mu);
    return k * bs;
}

int sprig_kv_paged_publish(sprig_kv *kv, const int32_t *tokens, int n)
{
    struct kv_paged *s = as_paged(kv);
    if (!s || !tokens || n < 0) return 0;
    sprig_kv_pool *P = s->pool;
    const int bs = P->p.block_slots;
    if (n > kv->len) n = kv->len;
    const int last = n / bs;
    int added = 0;
    sprig_kv_key key = sprig_kv_key_start();
    pthread_mutex_lock(&P->mu);
    for (int k = 0; k < last; k++) {
        key = sprig_kv_key_next(key, tokens + (size_t)k * bs, bs);
        const int b = s->table[k];
        if (P->px.keyed[b]) continue;   /* shared from the pool or published before: keyed by these tokens */
        if (sprig_kv_prefix_insert(&P->px, b, key)) {
            s->priv_ok[k] = false;
            added++;
        }
    }
    P->st.published += added;
    pthread_mutex_unlock(&P->mu);
    return added;
}

int sprig_kv_paged_claim(sprig_kv *kv, const int32_t *tokens, int n)
{
    struct kv_paged *s = as_paged(kv);
    if (!s || !tokens) return SPRIG_KV_CLAIM_GO;
    sprig_kv_pool *P = s->pool;
    const int bs = P->p.block_slots;
    const int k = kv->len / bs;
    if (kv->len % bs || (int64_t)(k + 1) * bs > n) return SPRIG_KV_CLAIM_GO;   /* no whole block to compute */
    const sprig_kv_key key = key_through(P, tokens, k);
    int r = SPRIG_KV_CLAIM_GO;
    pthread_mutex_lock(&P->mu);
    if (sprig_kv_prefix_find(&P->px, key) >= 0) {
        r = SPRIG_KV_CLAIM_CACHED;
    } else {
        for (int i = 0; i < P->n_claims; i++)
            if (P->claims[i].key.a == key.a && P->claims[i].key.b == key.b)
                r = P->claims[i].owner == s ? SPRIG_KV_CLAIM_GO : SPRIG_KV_CLAIM_WAIT;
        if (r == SPRIG_KV_CLAIM_GO && P->n_claims < SPRIG_KV_POOL_CLAIMS) P->claims[P->n_claims++] = (struct claim){ key, s };
    }
    pthread_mutex_unlock(&P->mu);
    return r;
}

void sprig_kv_paged_unclaim(sprig_kv *kv)
{
    struct kv_paged *s = as_paged(kv);
    if (s) drop_claims(s);
}

void sprig_kv_pool_wait(sprig_kv_pool *P, int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (long)ms * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&P->mu);
    pthread_cond_timedwait(&P->cv, &P->mu, &t);
    pthread_mutex_unlock(&P->mu);
}

void sprig_kv_pool_get_stats(sprig_kv_pool *P, struct sprig_kv_pool_stats *out)
{
    pthread_mutex_lock(&P->mu);
    *out = P->st;
    out->n_blocks = P->p.n_blocks;
    out->free_blocks = P->n_free;
    out->cached_blocks = P->px.n_keyed;
    out->idle_blocks = P->px.n_idle;
    int shared = 0;
    for (int b = 0; b < P->p.n_blocks; b++) shared += P->ref[b] > 1;
    out->shared_blocks = shared;
    pthread_mutex_unlock(&P->mu);
}
