/*
 * model/internal — the forward context's layout, shared by the context
 * allocator (model/context.c) and the per-architecture forward files.
 * Not part of any public interface.
 */
#ifndef SPRIG_MODEL_INTERNAL_H
#define SPRIG_MODEL_INTERNAL_H

#include "model/arch.h"

struct sprig_ctx {
    const sprig_model *m;
    sprig_pool *pool;         /* not owned */
    sprig_kv *kv;             /* owned */
    struct sprig_kv_pool *own_pool;   /* the private pool of a paged cache (kv_block_slots), or NULL */
    int n_batch;
    int n_ctx;
    /* scratch, sized for n_batch rows (B) */
    float *x;                 /* [B][dim]   residual stream */
    float *xn;                /* [B][dim]   normed input of a block */
    float *q;                 /* [B][n_head*hd] */
    float *k;                 /* [B][n_kv_head*hd] */
    float *v;                 /* [B][n_kv_head*hd] */
    float *att;               /* [B][n_head*hd] attention output */
    float *tmp;               /* [B][dim]   projection output */
    float *gate;              /* [B][n_ff] */
    float *up;                /* [B][n_ff] */
    float *hid;               /* [B][dim]   gathered final rows */
    float *rope;              /* [B][n_rot] RoPE cos/sin of the batch positions */
    int32_t *pos;             /* [B] */
    int32_t *tok;             /* [B] a multi-sequence forward's tokens, concatenated */
    void *act;                /* activation quantization scratch */
    size_t act_bytes;
    float *attn_scratch;
    size_t attn_floats;
    /* sliding-window layers (model/band.h) */
    float *rope_swa;          /* [B][n_rot] cos/sin at the sliding layers' theta, or NULL (same as rope) */
    float *band;              /* [B][band_keys] a sliding layer's mask, or NULL (no sliding layer) */
    int64_t band_keys;        /* the most keys a sliding layer reads: its ring's capacity, else n_ctx */
    int spec_slack;           /* the ring's speculative buffer (sprig_ctx_speculative) */
    float *pl;                /* [B][n_layer][n_pl] gemma4's per-layer inputs, or NULL */
    float *pl_tmp;            /* [B][n_pl] */
    float *pl_row;            /* [n_layer * n_pl] one token's per-layer embedding row */
    float *qg;                /* [B][2 * max_qdim] gated attention's queries with their gates, or NULL (no attn_gate layer) */
    float *qgate;             /* [B][max_qdim] the gates */
    float *ones;              /* [max_hd] 1.0f: the weight of a weightless RMSNorm (gemma4's V) */
    struct sprig_rec *rec;    /* gated delta-net states and scratch (qwen35), or NULL */
    struct sprig_moe_scratch *moe;   /* routed experts' scratch (model/moe.h), or NULL (no expert layers) */
};

/* A hybrid model's recurrent side (model/qwen35.c): per layer the
 * convolution's last K-1 inputs and the value heads' state matrices, and
 * the scratch of one forward. */
struct sprig_rec {
    float *conv;              /* [n_layer][(K-1) * conv_dim] the live states (one of cbuf / sbuf) */
    float *S;                 /* [n_layer][v_heads * state * state] */
    float *cbuf[3], *sbuf[3]; /* the state buffers: [0] always, [1] and [2] with rollback */
    int live, pre, s1;        /* which buffer is live; before the last block; after its first token */
    int64_t conv_stride, S_stride;
    int len;                  /* tokens folded into the states: equals the cache length between forwards */
    float *qkv;               /* [B][conv_dim] */
    float *z;                 /* [B][v_heads * state] the output norm's gate */
    float *alpha, *beta;      /* [B][v_heads] */
    float *o;                 /* [B][v_heads * state] */
    /* rollback (sprig_ctx_speculative turns it on): a forward of at most keep_rows tokens
     * steps its first token out of place from the live buffer into a second, its second
     * token into a third, the rest in place there — so the states before the block and
     * after its first token survive untouched — and keeps the block's recurrent inputs.
     * A trim keeping none or one token of the block just makes that buffer live; keeping
     * more replays from the one-token states: no copies, and no work for the commonest
     * rejection (only the bonus token kept) */
    int keep_rows;            /* 0: off */
    int last_n;               /* tokens of the last forward that can be rolled back (0: none) */
    float *in_qkv;            /* [n_layer][keep_rows][conv_dim] the raw delta-net inputs */
    float *in_ab;             /* [n_layer][keep_rows][2 * v_heads] alpha, beta */
    /* trees: the main chain (the root, then each main node's first child) steps as a
     * chain does (root into the second buffer, the rest into the third, in place); a
     * side node steps from its parent's state into its own slot of one layer's scratch
     * (reused by every layer: memory is side nodes x one layer's state, never nodes x
     * layers), the side subtrees of a main node right after it, before the main chain
     * moves on. Keeping the whole main chain keeps the third buffer, as a chain does;
     * any other path is replayed from the root's state with the inputs kept */
    float *node_conv;         /* [keep_rows][conv_stride] */
    float *node_S;            /* [keep_rows][S_stride] */
    int32_t *parent;          /* [keep_rows] the last forward's row parents (root: -1; a chain: i - 1) */
    int32_t *order;           /* [keep_rows] the rows in stepping order */
    int32_t *slot;            /* [keep_rows] where a row's state goes: -1 second buffer, -2 third, else scratch */
    int32_t *main;            /* [keep_rows] the main chain's rows */
    int n_main;
    bool tree;                /* the last forward was a tree: only a path keeps its rows */
    double rollback_ms;       /* time spent copying and replaying (statistics) */
};
sprig_status sprig_rec_create(sprig_ctx *c, sprig_error *err);
void sprig_rec_free(struct sprig_rec *r);
/* Turn rollback on for blocks of up to rows tokens (allocates; not in the round loop). */
sprig_status sprig_rec_keep(sprig_ctx *c, int rows, sprig_error *err);
/* Keep rows[0..keep-1] of the last forward (keep <= its rows; rows[0] = 0,
 * each row the next one's parent; rows NULL: 0 .. keep-1) and drop the rest from the recurrent
 * states: the state before the block or after its first row is made live,
 * else the rows are replayed from the first row's state. */
sprig_status sprig_rec_keep_rows(sprig_ctx *c, const int *rows, int keep, sprig_error *err);

/* qwen35's pieces, shared with its MTP block (model/nextn.c): the RoPE
 * table of the batch positions (multi-section) into c->rope, and one block
 * (norm, delta-net or gated attention on layer l's cache, FFN) on the n rows
 * of c->x; len = cached tokens before the batch; mask: the attention mask
 * of a tree batch, or NULL (causal). */
void sprig_qwen35_rope(sprig_ctx *c, const int32_t *pos, int n);
void sprig_qwen35_block(sprig_ctx *c, const struct sprig_layer *L, int l, int n, int len, const int32_t *pos, const float *mask);

/* The end of every forward: the wanted rows of c->x through the final norm
 * (f->hidden) and the output head (f->logits, soft-capped where the model
 * says). */
void sprig_forward_head(sprig_ctx *c, const struct sprig_fwd *f);

/* Test hook: false makes sliding layers take a caller's mask as it is,
 * without intersecting it with the window band (the defect the band fixes;
 * a test proves speculation then differs from plain decoding). Returns the
 * previous value. */
bool sprig_band_set_enabled(bool on);

/* The least floats (rows x row length) for which a row-wise op of the llama
 * forward (norms, residual adds, RoPE, SwiGLU) is split across the pool's
 * threads; negative restores the default. Returns the previous value. For
 * tests (0: split every op). */
int64_t sprig_llama_rowwise_split_min(int64_t floats);

#endif
