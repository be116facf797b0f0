/*
 * tokenizer/spm — SentencePiece-style BPE encoding ("llama" vocabularies).
 *
 * The text gets a dummy-prefix space (when add_space_prefix and the text is
 * not empty), every ' ' becomes '▁', and each character (well-formed UTF-8
 * sequence, or a lone byte of an ill-formed one) becomes the token of that
 * piece or, failing that, one byte token per byte. Then, as long as some
 * adjacent pair's concatenated pieces form an encodable token with score
 * > -1e30, the pair whose merged token has the highest score is merged,
 * leftmost on ties.
 *
 * That rule is the quadratic rescan of llama2.c; here the symbols form a
 * doubly linked list and candidate pairs sit in a binary max-heap ordered by
 * (score, then left position), with stale entries detected by per-symbol
 * version counters. Symbols keep their original index and the list keeps
 * index order, so "leftmost" is "smallest left index" and the heap pops
 * exactly the pair the rescan would choose: O(n log n) instead of O(n^2).
 */
#include "tokenizer/vocab.h"

#include <stdlib.h>
#include <string.h>

/* Merges whose token scores this low (or lower) never happen (llama2.c rule). */
#define MERGE_SCORE_FLOOR (-1e30)

static const char SPACE_MARK[3] = { '\xE2', '\x96', '\x81' };

struct sym {
    int32_t id;
    int32_t prev, next;     /* -1 at the ends */
    uint32_t ver;           /* bumped whenever id changes; UINT32_MAX when merged away */
};

struct cand {
    float score;
    int32_t left, right;
    int32_t id;             /* merged token */
    uint32_t vl, vr;        /* versions of left and right when pushed */
};

struct enc {
    const sprig_tokenizer *t;
    struct sym *s;          /* [n_sym] */
    int32_t n_sym;
    struct cand *heap;      /* [heap_cap] */
    size_t n_heap, heap_cap;
};

/* Does a come before b in the heap (higher score, then further left)? */
static inline bool cand_before(const struct cand *a, const struct cand *b)
{
    if (a->score != b->score) return a->score > b->score;
    return a->left < b->left;
}

/* Returns false when the heap could not grow (out of memory). */
static bool heap_push(struct enc *e, const struct cand *c)
{
    if (e->n_heap == e->heap_cap) {
        size_t cap = e->heap_cap * 2;
        struct cand *h = realloc(e->heap, cap * sizeof *h);
        if (!h) return false;
        e->heap = h;
        e->heap_cap = cap;
    }
    size_t i = e->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(c, &e->heap[p])) break;
        e->heap[i] = e->heap[p];
        i = p;
    }
    e->heap[i] = *c;
    return true;
}

static struct cand heap_pop(struct enc *e)
{
    struct cand top = e->heap[0];
    struct cand last = e->heap[--e->n_heap];
    size_t n = e->n_heap, i = 0;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const struct cand *bc = &last;
        if (l < n && cand_before(&e->heap[l], bc)) { best = l; bc = &e->heap[l]; }
        if (l + 1 < n && cand_before(&e->heap[l + 1], bc)) best = l + 1;
        if (best == i) break;
        e->heap[i] = e->heap[best];
        i = best;
    }
    if (n) e->heap[i] = last;
    return top;
}

static bool try_pair(struct enc *e, int32_t l, int32_t r)
{
    if (l < 0 || r < 0) return true;
    const sprig_tokenizer *t = e->t;
    int32_t a = e->s[l].id, b = e->s[r].id;
    if (!sprig_vocab_encodable(t, a) || !sprig_vocab_encodable(t, b)) return true;
    int m = sprig_vocab_find2(t, t->blob + t->piece_off[a], t->piece_len[a], t->blob + t->piece_off[b], t->piece_len[b]);
    if (m < 0 || !((double)t->scores[m] > MERGE_SCORE_FLOOR)) return true;
    struct cand c = { .score = t->scores[m], .left = l, .right = r, .id = m, .vl = e->s[l].ver, .vr = e->s[r].ver };
    return heap_push(e, &c);
}

static void add_sym(struct enc *e, int32_t id)
{
    int32_t i = e->n_sym++;
    if (e->s) e->s[i] = (struct sym){ .id = id, .prev = i - 1, .next = -1, .ver = 0 };
    if (e->s && i > 0) e->s[i - 1].next = i;
}

/* One character (bytes c[n]) -> its token, or its bytes' fallback tokens.
 * With e->s NULL only counts the symbols. */
static sprig_status add_char(struct enc *e, const char *c, size_t n, size_t at, sprig_error *err)
{
    int id = sprig_vocab_find2(e->t, c, n, NULL, 0);
    if (id >= 0) { add_sym(e, id); return SPRIG_OK; }
    for (size_t k = 0; k < n; k++) {
        unsigned char b = (unsigned char)c[k];
        if (e->t->byte_tok[b] < 0)
            return sprig_err(err, SPRIG_E_UNSUPPORTED,
                             "tokenize: byte 0x%02X at text offset %zu has no token (no <0x%02X> piece and no unknown token)",
                             b, at, b);
        add_sym(e, e->t->byte_tok[b]);
    }
    return SPRIG_OK;
}

/* Split the normalised text into initial symbols (or just count them). */
static sprig_status segment(struct enc *e, const char *text, size_t len, sprig_error *err)
{
    sprig_status st = SPRIG_OK;
    e->n_sym = 0;
    if (len > 0 && e->t->add_space_prefix) st = add_char(e, SPACE_MARK, 3, 0, err);
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len && st == SPRIG_OK;) {
        if (u[i] == ' ') { st = add_char(e, SPACE_MARK, 3, i, err); i++; continue; }
        int n = sprig_utf8_seq_len(u + i, len - i);
        if (n == 0) n = 1;
        st = add_char(e, text + i, (size_t)n, i, err);
        i += (size_t)n;
    }
    return st;
}

int sprig_tokenize(const sprig_tokenizer *t, const char *text, size_t len, int flags,
                   int32_t *out, int cap, sprig_error *err)
{
    bool add_bos = t && ((flags & SPRIG_TOK_BOS) || ((flags & SPRIG_TOK_ADD_SPECIAL) && t->add_bos));
    if (!t) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: tokenizer is NULL"); return -1; }
    if (!text && len) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: text is NULL with length %zu", len); return -1; }
    if (cap < 0 || (!out && cap > 0)) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: bad output buffer (cap %d)", cap); return -1; }
    if (len > SPRIG_TOKENIZE_MAX_TEXT) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: text of %zu bytes exceeds %zu", len, SPRIG_TOKENIZE_MAX_TEXT);
        return -1;
    }
    if (add_bos && t->bos < 0) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: add_bos requested but the vocabulary has no BOS token");
        return -1;
    }

    /* Count the symbols (at most 3 per input byte plus 3 for the dummy
     * prefix, so they fit int32), then build them. */
    struct enc e = { .t = t };
    if (segment(&e, text, len, err) != SPRIG_OK) return -1;
    size_t n_sym = (size_t)e.n_sym;
    e.heap_cap = n_sym + 16;
    e.s = malloc((n_sym ? n_sym : 1) * sizeof *e.s);
    e.heap = malloc(e.heap_cap * sizeof *e.heap);
    if (!e.s || !e.heap) {
        free(e.s); free(e.heap);
        sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory for %zu bytes of text", len);
        return -1;
    }
    sprig_status st = segment(&e, text, len, err);
    SPRIG_ASSERT(st == SPRIG_OK && (size_t)e.n_sym == n_sym);

    bool ok = true;
    for (int32_t i = 0; ok && i + 1 < e.n_sym; i++) ok = try_pair(&e, i, i + 1);
    while (ok && e.n_heap) {
        struct cand c = heap_pop(&e);
        struct sym *l = &e.s[c.left], *r = &e.s[c.right];
        if (l->ver != c.vl || r->ver != c.vr || l->next != c.right) continue;   /* stale */
        l->id = c.id;
        l->ver++;
        l->next = r->next;
        if (r->next >= 0) e.s[r->next].prev = c.left;
        r->ver = UINT32_MAX;
        ok = try_pair(&e, l->prev, c.left) && try_pair(&e, c.left, l->next);
    }
    if (!ok) {
        free(e.s); free(e.heap);
        sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory merging %zu symbols", n_sym);
        return -1;
    }

    int n = 0;
    if (add_bos) { if (n < cap) out[n] = t->bos; n++; }
    for (int32_t i = e.n_sym ? 0 : -1; i >= 0; i = e.s[i].next) {
        if (n < cap) out[n] = e.s[i].id;
        n++;
    }
    free(e.s);
    free(e.heap);
    return n;
}
