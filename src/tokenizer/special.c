/*
 * tokenizer/special — the special-token trie and the partition of raw text
 * (see special.h).
 */
#include "tokenizer/special.h"

#include <stdlib.h>
#include <string.h>

struct node {
    int32_t id_any;     /* lowest id of a control / unknown / user-defined token with this piece, or -1 */
    int32_t id_user;    /* lowest id of a user-defined token with this piece, or -1 */
};

struct edge {
    uint32_t key;       /* parent << 8 | byte, UINT32_MAX = empty */
    int32_t child;
};

struct sprig_special_trie {
    struct node *nodes;
    int32_t n_nodes;
    int32_t root[256];          /* children of the root, -1 = none */
    struct edge *edges;         /* [mask + 1] open addressing */
    uint32_t mask;
};

static inline uint32_t edge_hash(uint32_t key)
{
    key *= 0x9E3779B1u;
    return key ^ (key >> 16);
}

static int32_t child(const struct sprig_special_trie *s, int32_t parent, unsigned char b)
{
    if (parent == 0) return s->root[b];
    uint32_t key = (uint32_t)parent << 8 | b;
    for (uint32_t h = edge_hash(key) & s->mask;; h = (h + 1) & s->mask) {
        if (s->edges[h].key == key) return s->edges[h].child;
        if (s->edges[h].key == UINT32_MAX) return -1;
    }
}

static bool is_special_type(int ty)
{
    return ty == SPRIG_TOKEN_CONTROL || ty == SPRIG_TOKEN_UNKNOWN || ty == SPRIG_TOKEN_USER_DEFINED;
}

void sprig_special_free(struct sprig_special_trie *s)
{
    if (!s) return;
    free(s->nodes);
    free(s->edges);
    free(s);
}

sprig_status sprig_special_build(const sprig_tokenizer *t, struct sprig_special_trie **out, sprig_error *err)
{
    *out = NULL;
    size_t total = 0;
    for (int i = 0; i < t->n_vocab; i++)
        if (is_special_type(t->types[i])) total += t->piece_len[i];
    if (total == 0) return SPRIG_OK;
    if (total >= (1u << 23)) return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: special-token pieces total %zu bytes (too many)", total);
    struct sprig_special_trie *s = calloc(1, sizeof *s);
    uint32_t cap = 16;
    while (cap < 2 * (uint32_t)total) cap <<= 1;
    if (s) {
        s->nodes = malloc((total + 1) * sizeof *s->nodes);
        s->edges = malloc((size_t)cap * sizeof *s->edges);
    }
    if (!s || !s->nodes || !s->edges) {
        sprig_special_free(s);
        return sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory for the special-token trie");
    }
    s->mask = cap - 1;
    for (uint32_t i = 0; i < cap; i++) s->edges[i].key = UINT32_MAX;
    for (int b = 0; b < 256; b++) s->root[b] = -1;
    s->nodes[0] = (struct node){ -1, -1 };
    s->n_nodes = 1;
    for (int i = 0; i < t->n_vocab; i++) {
        int ty = t->types[i];
        if (!is_special_type(ty) || t->piece_len[i] == 0) continue;
        const unsigned char *p = (const unsigned char *)t->blob + t->piece_off[i];
        int32_t cur = 0;
        for (uint32_t k = 0; k < t->piece_len[i]; k++) {
            int32_t c = child(s, cur, p[k]);
            if (c < 0) {
                c = s->n_nodes++;
                s->nodes[c] = (struct node){ -1, -1 };
                if (cur == 0) s->root[p[k]] = c;
                else {
                    uint32_t key = (uint32_t)cur << 8 | p[k];
                    uint32_t h = edge_hash(key) & s->mask;
                    while (s->edges[h].key != UINT32_MAX) h = (h + 1) & s->mask;
                    s->edges[h] = (struct edge){ key, c };
                }
            }
            cur = c;
        }
        if (s->nodes[cur].id_any < 0) s->nodes[cur].id_any = i;
        if (ty == SPRIG_TOKEN_USER_DEFINED && s->nodes[cur].id_user < 0) s->nodes[cur].id_user = i;
    }
    *out = s;
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- partition */

struct occ {
    uint32_t pos, len;
    int32_t id;
};

static int cmp_occ(const void *a, const void *b)
{
    const struct occ *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;     /* longer pieces first */
    if (x->id != y->id) return x->id < y->id ? -1 : 1;         /* then lower ids */
    return x->pos < y->pos ? -1 : x->pos > y->pos;              /* then left to right */
}

static int cmp_pos(const void *a, const void *b)
{
    const struct occ *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

enum { FREE = 0, TAKEN = 1, DROPPED = 2 };

sprig_status sprig_special_partition(const sprig_tokenizer *t, const char *text, size_t len, bool parse_special,
                                     sprig_fragment_fn fn, void *user, sprig_error *err)
{
    const struct sprig_special_trie *s = t->special;
    if (len == 0) return SPRIG_OK;
    if (!s) return fn(user, text, len, -1);
    const unsigned char *u = (const unsigned char *)text;

    /* every occurrence of every enabled piece */
    struct occ *occ = NULL;
    size_t n_occ = 0, cap_occ = 0;
    sprig_status st = SPRIG_OK;
    for (size_t i = 0; i < len; i++) {
        int32_t cur = s->root[u[i]];
        for (size_t k = i + 1; cur >= 0; k++) {
            int32_t id = parse_special ? s->nodes[cur].id_any : s->nodes[cur].id_user;
            if (id >= 0) {
                if (n_occ == cap_occ) {
                    size_t c = cap_occ ? 2 * cap_occ : 64;
                    struct occ *o = realloc(occ, c * sizeof *o);
                    if (!o) { st = sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory for special tokens"); goto done; }
                    occ = o;
                    cap_occ = c;
                }
                occ[n_occ++] = (struct occ){ (uint32_t)i, (uint32_t)(k - i), id };
            }
            if (k >= len) break;
            cur = child(s, cur, u[k]);
        }
    }
    if (n_occ == 0) { st = fn(user, text, len, -1); goto done; }

    /* take them in llama.cpp's order */
    qsort(occ, n_occ, sizeof *occ, cmp_occ);
    uint8_t *state = calloc(len, 1);
    if (!state) { st = sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory for %zu bytes of text", len); goto done; }
    size_t n_taken = 0;
    for (size_t j = 0; j < n_occ; j++) {
        struct occ o = occ[j];
        bool free_span = true;
        for (uint32_t k = 0; k < o.len && free_span; k++) free_span = state[o.pos + k] == FREE;
        if (!free_span) continue;
        memset(state + o.pos, TAKEN, o.len);
        uint8_t a = t->attrs[o.id];
        if (a & SPRIG_TOKATTR_LSTRIP)
            for (size_t k = o.pos; k > 0 && state[k - 1] == FREE && is_space(u[k - 1]); k--) state[k - 1] = DROPPED;
        if (a & SPRIG_TOKATTR_RSTRIP)
            for (size_t k = o.pos + o.len; k < len && state[k] == FREE && is_space(u[k]); k++) state[k] = DROPPED;
        occ[n_taken++] = o;
    }
    /* emit in text order */
    qsort(occ, n_taken, sizeof *occ, cmp_pos);
    size_t pos = 0;
    for (size_t j = 0; j <= n_taken && st == SPRIG_OK; j++) {
        size_t end = j < n_taken ? occ[j].pos : len;
        size_t a = pos;
        while (a < end && state[a] == DROPPED) a++;
        size_t b = end;
        while (b > a && state[b - 1] == DROPPED) b--;
        if (b > a) st = fn(user, text + a, b - a, -1);
        if (j < n_taken && st == SPRIG_OK) {
            st = fn(user, text + occ[j].pos, occ[j].len, occ[j].id);
            pos = occ[j].pos + occ[j].len;
        }
    }
    free(state);
done:
    free(occ);
    return st;
}
