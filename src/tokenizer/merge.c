/*
 * tokenizer/merge — the shared merge loop (see merge.h).
 */
#include "tokenizer/merge.h"

#include <stdlib.h>

/* SentencePiece merges whose token scores this low (or lower) never happen (llama2.c rule). */
#define MERGE_SCORE_FLOOR (-1e30)

struct sprig_msym {
    int32_t id;
    int32_t prev, next;     /* -1 at the ends */
    uint32_t ver;           /* bumped whenever id changes; UINT32_MAX when merged away */
};

struct sprig_mcand {
    double key;             /* larger merges first: SPM score, or -rank for BPE */
    int32_t left, right;
    int32_t id;             /* merged token */
    uint32_t vl, vr;        /* versions of left and right when pushed */
};

sprig_status sprig_merge_reserve(struct sprig_merge_scratch *m, size_t n, sprig_error *err)
{
    if (n <= m->cap) return SPRIG_OK;
    if (n > ((size_t)1 << 30)) return sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: a word of %zu symbols is too long", n);
    size_t cap = n < 64 ? 64 : n;
    struct sprig_msym *s = realloc(m->s, cap * sizeof *s);
    if (s) m->s = s;
    struct sprig_mcand *h = s ? realloc(m->heap, 3 * cap * sizeof *h) : NULL;
    if (h) m->heap = h;
    if (!s || !h) return sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory for a word of %zu symbols", n);
    m->cap = cap;
    return SPRIG_OK;
}

void sprig_merge_release(struct sprig_merge_scratch *m)
{
    free(m->s);
    free(m->heap);
    m->s = NULL; m->heap = NULL; m->cap = 0;
}

struct run {
    const sprig_tokenizer *t;
    struct sprig_msym *s;
    struct sprig_mcand *heap;
    size_t n_heap;
};

/* Does a come before b (higher key, then further left)? */
static inline bool before(const struct sprig_mcand *a, const struct sprig_mcand *b)
{
    if (a->key != b->key) return a->key > b->key;
    return a->left < b->left;
}

static void push(struct run *r, const struct sprig_mcand *c)
{
    size_t i = r->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(c, &r->heap[p])) break;
        r->heap[i] = r->heap[p];
        i = p;
    }
    r->heap[i] = *c;
}

static struct sprig_mcand pop(struct run *r)
{
    struct sprig_mcand top = r->heap[0];
    struct sprig_mcand last = r->heap[--r->n_heap];
    size_t n = r->n_heap, i = 0;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const struct sprig_mcand *bc = &last;
        if (l < n && before(&r->heap[l], bc)) { best = l; bc = &r->heap[l]; }
        if (l + 1 < n && before(&r->heap[l + 1], bc)) best = l + 1;
        if (best == i) break;
        r->heap[i] = r->heap[best];
        i = best;
    }
    if (n) r->heap[i] = last;
    return top;
}

static void try_pair(struct run *r, int32_t l, int32_t rr)
{
    if (l < 0 || rr < 0) return;
    const sprig_tokenizer *t = r->t;
    int32_t a = r->s[l].id, b = r->s[rr].id;
    if (a < 0 || b < 0) return;
    struct sprig_mcand c = { .left = l, .right = rr, .vl = r->s[l].ver, .vr = r->s[rr].ver };
    if (t->kind->bpe) {
        uint32_t rank;
        if (!sprig_vocab_merge(t, a, b, &rank, &c.id)) return;
        c.key = -(double)rank;
    } else {
        if (!sprig_vocab_encodable(t, a) || !sprig_vocab_encodable(t, b)) return;
        int m = sprig_vocab_find2(t, t->blob + t->piece_off[a], t->piece_len[a], t->blob + t->piece_off[b], t->piece_len[b]);
        if (m < 0 || !((double)t->scores[m] > MERGE_SCORE_FLOOR)) return;
        c.id = m;
        c.key = t->scores[m];
    }
    push(r, &c);
}

int sprig_merge_apply(const sprig_tokenizer *t, struct sprig_merge_scratch *m, int32_t *ids, int n)
{
    if (n < 2) return n;
    SPRIG_ASSERT((size_t)n <= m->cap);
    struct run r = { .t = t, .s = m->s, .heap = m->heap };
    for (int32_t i = 0; i < n; i++) r.s[i] = (struct sprig_msym){ .id = ids[i], .prev = i - 1, .next = i + 1 < n ? i + 1 : -1 };
    /* the heap holds at most n - 1 initial pairs plus 2 per merge (< n merges) */
    for (int32_t i = 0; i + 1 < n; i++) try_pair(&r, i, i + 1);
    while (r.n_heap) {
        struct sprig_mcand c = pop(&r);
        struct sprig_msym *l = &r.s[c.left], *rs = &r.s[c.right];
        if (l->ver != c.vl || rs->ver != c.vr || l->next != c.right) continue;   /* stale */
        l->id = c.id;
        l->ver++;
        l->next = rs->next;
        if (rs->next >= 0) r.s[rs->next].prev = c.left;
        rs->ver = UINT32_MAX;
        try_pair(&r, l->prev, c.left);
        try_pair(&r, c.left, l->next);
    }
    int k = 0;
    for (int32_t i = 0; i >= 0; i = r.s[i].next) ids[k++] = r.s[i].id;
    return k;
}
