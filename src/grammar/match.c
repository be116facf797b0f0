/*
 * grammar/match — see match.h.
 *
 * Interning: a stack is (rule position, parent stack) -> id; a set is the
 * sorted ids of its stacks (-1: the empty stack, the grammar complete) ->
 * id; a state is (set, the pending bytes of an unfinished UTF-8 sequence)
 * -> id. Transitions are cached per (state, byte) and per (set, code point).
 * The vocabulary trie is stored in depth-first order, each node knowing
 * where its subtree ends, so a walk is one pass over an array that jumps
 * over dead subtrees.
 */
#include "grammar/match.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- u64 -> i32 map, open addressing (key + 1 stored: 0 is empty) ---- */
typedef struct hmap { uint64_t *k; int32_t *v; size_t cap, n; } hmap;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static const int32_t *hget(const hmap *m, uint64_t key)
{
    if (!m->cap) return NULL;
    for (size_t i = mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->k[i]) return NULL;
        if (m->k[i] == key + 1) return &m->v[i];
    }
}

static bool hput(hmap *m, uint64_t key, int32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        const size_t cap = m->cap ? m->cap * 2 : 1024;
        uint64_t *nk = calloc(cap, sizeof *nk);
        int32_t *nv = malloc(cap * sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i])
                for (size_t j = mix(m->k[i] - 1) & (cap - 1);; j = (j + 1) & (cap - 1))
                    if (!nk[j]) {
                        nk[j] = m->k[i];
                        nv[j] = m->v[i];
                        break;
                    }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = cap;
    }
    for (size_t i = mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->k[i] || m->k[i] == key + 1) {
            if (!m->k[i]) m->n++;
            m->k[i] = key + 1;
            m->v[i] = v;
            return true;
        }
    }
}

static void hfree(hmap *m)
{
    free(m->k);
    free(m->v);
}

typedef struct ivec { int32_t *v; int n, cap; } ivec;

static bool ipush(ivec *a, int32_t x)
{
    if (a->n == a->cap) {
        const int cap = a->cap ? a->cap * 2 : 64;
        int32_t *nv = realloc(a->v, sizeof *nv * (size_t)cap);
        if (!nv) return false;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

/* ---- the vocabulary trie ---- */
typedef struct tnode {
    uint8_t byte;
    uint16_t depth;     /* 1-based: the token text's length at this node */
    int32_t end;        /* the index after this node's subtree */
    int32_t tok0, ntok; /* the tokens whose text ends here: ids[tok0 .. tok0 + ntok) */
} tnode;

struct sprig_gvocab {
    int n_vocab, n_nodes, max_depth;
    tnode *nodes;
    int32_t *ids;        /* tokens with text, sorted by text */
    char *blob;          /* every token's text */
    uint64_t *off;       /* [n_vocab + 1] */
    uint8_t *eog;        /* [n_vocab] */
    int32_t *eog_ids;    /* [n_eog] the end-of-generation tokens */
    int n_eog;
};

typedef struct { const char *p; uint32_t n; int32_t id; } tok_text;

static int cmp_text(const void *a, const void *b)
{
    const tok_text *x = a, *y = b;
    const uint32_t n = x->n < y->n ? x->n : y->n;
    const int c = memcmp(x->p, y->p, n);
    if (c) return c;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void sprig_gvocab_free(sprig_gvocab *v)
{
    if (!v) return;
    free(v->nodes);
    free(v->ids);
    free(v->blob);
    free(v->off);
    free(v->eog);
    free(v->eog_ids);
    free(v);
}

int sprig_gvocab_n_vocab(const sprig_gvocab *v) { return v->n_vocab; }

sprig_gvocab *sprig_gvocab_create(int n_vocab, const char *(*text)(const void *u, int32_t id, size_t *len), bool (*eog)(const void *u, int32_t id),
                                  const void *u, sprig_error *err)
{
    sprig_gvocab *v = calloc(1, sizeof *v);
    tok_text *t = n_vocab > 0 ? malloc(sizeof *t * (size_t)n_vocab) : NULL;
    if (!v || !t || !(v->off = calloc((size_t)n_vocab + 1, sizeof *v->off)) || !(v->eog = calloc((size_t)n_vocab, 1))) goto oom;
    v->n_vocab = n_vocab;
    size_t total = 0;
    for (int32_t id = 0; id < n_vocab; id++) {
        size_t len = 0;
        const char *p = text(u, id, &len);
        if (!p || len > 65535) len = 0;
        v->off[id] = total;
        total += len;
        v->eog[id] = eog && eog(u, id);
    }
    v->off[n_vocab] = total;
    for (int32_t id = 0; id < n_vocab; id++) v->n_eog += v->eog[id];
    if (!(v->eog_ids = malloc(sizeof *v->eog_ids * (size_t)(v->n_eog ? v->n_eog : 1)))) goto oom;
    for (int32_t id = 0, k = 0; id < n_vocab; id++)
        if (v->eog[id]) v->eog_ids[k++] = id;
    if (!(v->blob = malloc(total ? total : 1))) goto oom;
    int n = 0;
    for (int32_t id = 0; id < n_vocab; id++) {
        const size_t len = (size_t)(v->off[id + 1] - v->off[id]);
        if (!len) continue;
        size_t l2 = 0;
        memcpy(v->blob + v->off[id], text(u, id, &l2), len);
        t[n++] = (tok_text){ v->blob + v->off[id], (uint32_t)len, id };
    }
    qsort(t, (size_t)n, sizeof *t, cmp_text);
    if (!(v->ids = malloc(sizeof *v->ids * (size_t)(n ? n : 1))) || !(v->nodes = malloc(sizeof *v->nodes * (total ? total : 1)))) goto oom;
    int32_t *open = malloc(sizeof *open * 65536);
    int n_open = 0;
    if (!open) goto oom;
    for (int k = 0; k < n; k++) {
        v->ids[k] = t[k].id;
        uint32_t lcp = 0;
        if (k)
            while (lcp < t[k].n && lcp < t[k - 1].n && lcp < (uint32_t)n_open && t[k].p[lcp] == t[k - 1].p[lcp]) lcp++;
        while (n_open > (int)lcp) v->nodes[open[--n_open]].end = v->n_nodes;
        for (uint32_t d = lcp; d < t[k].n; d++) {
            tnode *x = &v->nodes[v->n_nodes];
            *x = (tnode){ (uint8_t)t[k].p[d], (uint16_t)(d + 1), 0, -1, 0 };
            open[n_open++] = v->n_nodes++;
        }
        tnode *last = &v->nodes[open[t[k].n - 1]];
        if (!last->ntok) last->tok0 = k;
        last->ntok++;
        if ((int)t[k].n > v->max_depth) v->max_depth = (int)t[k].n;
    }
    while (n_open) v->nodes[open[--n_open]].end = v->n_nodes;
    free(open);
    free(t);
    return v;
oom:
    free(t);
    sprig_gvocab_free(v);
    sprig_err(err, SPRIG_E_NOMEM, "grammar: out of memory for the vocabulary's trie");
    return NULL;
}

/* ---- the matcher ---- */
#define N_MASKS 16

struct sprig_gmatch {
    sprig_gbnf g;               /* a copy: e[], rule[] (names not kept) */
    const sprig_gvocab *v;
    /* stacks */
    ivec npos, npar;
    hmap nodes;
    /* sets: their stacks in pool[off .. off + len) */
    ivec set_off, set_len, pool;
    hmap sets;
    /* states */
    ivec st_set, st_pend;
    hmap states;
    hmap step, cp;              /* (state, byte) -> state; (set, code point) -> set */
    /* scratch */
    uint32_t *mark;             /* [marks] visit generation per stack id + 1 */
    int marks;
    uint32_t gen;
    ivec work, out;
    int32_t *walk;              /* [max_depth + 1] states along a trie walk */
    /* masks */
    uint64_t *mask[N_MASKS];
    int32_t mask_state[N_MASKS];
    int next_mask;
    int64_t entries, walks, hits, checks;
    bool full;
    char why[160];
};

static void note_full(sprig_gmatch *m)
{
    if (!m->full)
        snprintf(m->why, sizeof m->why, "grammar: its state tables passed %d entries (a grammar this open needs more memory than allowed)",
                 SPRIG_GMATCH_MAX_ENTRIES);
    m->full = true;
}

static bool room(sprig_gmatch *m)
{
    if (++m->entries > SPRIG_GMATCH_MAX_ENTRIES) {
        note_full(m);
        return false;
    }
    return true;
}

static int32_t node(sprig_gmatch *m, int32_t pos, int32_t parent)
{
    const uint64_t key = (uint64_t)(uint32_t)pos << 32 | (uint32_t)(parent + 1);
    const int32_t *hit = hget(&m->nodes, key);
    if (hit) return *hit;
    if (!room(m)) return -2;
    const int32_t id = m->npos.n;
    if (!ipush(&m->npos, pos) || !ipush(&m->npar, parent) || !hput(&m->nodes, key, id)) {
        note_full(m);
        return -2;
    }
    return id;
}

static bool is_end(const sprig_gelem *e) { return e->type == GE_END || e->type == GE_ALT; }

static bool visit(sprig_gmatch *m, int32_t x)
{
    if (x + 1 >= m->marks) {
        int n = m->marks ? m->marks : 1024;
        while (x + 1 >= n) n *= 2;
        uint32_t *nm = realloc(m->mark, sizeof *nm * (size_t)n);
        if (!nm) return false;
        memset(nm + m->marks, 0, sizeof *nm * (size_t)(n - m->marks));
        m->mark = nm;
        m->marks = n;
    }
    if (m->mark[x + 1] == m->gen) return false;
    m->mark[x + 1] = m->gen;
    return true;
}

/* the stacks reachable from stack x without reading, whose top is a character (or the empty stack), into m->out */
static bool expand(sprig_gmatch *m, int32_t x)
{
    const sprig_gelem *E = m->g.e;
    m->work.n = 0;
    if (!ipush(&m->work, x)) return false;
    while (m->work.n) {
        const int32_t s = m->work.v[--m->work.n];
        if (s == -2) return false;
        if (!visit(m, s)) continue;
        if (s == -1) {
            if (!ipush(&m->out, -1)) return false;
            continue;
        }
        const int32_t pos = m->npos.v[s];
        if (E[pos].type != GE_RULE) {
            if (!ipush(&m->out, s)) return false;
            continue;
        }
        const int32_t par = m->npar.v[s];
        const int32_t cont = is_end(&E[pos + 1]) ? par : node(m, pos + 1, par);
        if (cont == -2) return false;
        for (int32_t a = m->g.rule[E[pos].value];;) {
            if (!ipush(&m->work, is_end(&E[a]) ? cont : node(m, a, cont))) return false;
            while (!is_end(&E[a])) a++;
            if (E[a].type == GE_END) break;
            a++;
        }
    }
    return true;
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* m->out as an interned set (sorted, unique); -1 when empty (dead); -2 on full tables */
static int32_t intern_set(sprig_gmatch *m)
{
    if (!m->out.n) return -1;
    qsort(m->out.v, (size_t)m->out.n, sizeof *m->out.v, cmp_i32);
    int n = 1;
    for (int i = 1; i < m->out.n; i++)
        if (m->out.v[i] != m->out.v[n - 1]) m->out.v[n++] = m->out.v[i];
    m->out.n = n;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)m->out.v[i]) * 1099511628211ull;
    for (;; h = h * 31 + 7) {
        const int32_t *hit = hget(&m->sets, h);
        if (!hit) break;
        if (m->set_len.v[*hit] == n && !memcmp(m->pool.v + m->set_off.v[*hit], m->out.v, sizeof *m->out.v * (size_t)n)) return *hit;
    }
    if (!room(m)) return -2;
    const int32_t id = m->set_off.n;
    if (!ipush(&m->set_off, m->pool.n) || !ipush(&m->set_len, n) || !hput(&m->sets, h, id)) {
        note_full(m);
        return -2;
    }
    for (int i = 0; i < n; i++)
        if (!ipush(&m->pool, m->out.v[i])) {
            note_full(m);
            return -2;
        }
    m->entries += n;
    return id;
}

static bool match_char(const sprig_gelem *e, uint32_t c)
{
    if (e->type == GE_ANY) return true;
    const bool neg = e->type == GE_CHAR_NOT;
    bool found = false;
    do {
        if (e[1].type == GE_CHAR_RNG_UPPER) {
            found |= e->value <= c && c <= e[1].value;
            e += 2;
        } else {
            found |= e->value == c;
            e++;
        }
    } while (e->type == GE_CHAR_ALT);
    return found != neg;
}

/* may the element accept some code point in [lo, hi]? (negated classes: yes) */
static bool match_range(const sprig_gelem *e, uint32_t lo, uint32_t hi)
{
    if (e->type == GE_ANY || e->type == GE_CHAR_NOT) return true;
    do {
        const uint32_t a = e->value, b = e[1].type == GE_CHAR_RNG_UPPER ? e[1].value : e->value;
        if (a <= hi && lo <= b) return true;
        e += e[1].type == GE_CHAR_RNG_UPPER ? 2 : 1;
    } while (e->type == GE_CHAR_ALT);
    return false;
}

static int32_t after_char(const sprig_gelem *E, int32_t pos)
{
    if (E[pos].type == GE_ANY) return pos + 1;
    do pos += E[pos + 1].type == GE_CHAR_RNG_UPPER ? 2 : 1;
    while (E[pos].type == GE_CHAR_ALT);
    return pos;
}

/* the set after code point c: cached; -1 dead, -2 full */
static int32_t accept_cp(sprig_gmatch *m, int32_t set, uint32_t c)
{
    const uint64_t key = (uint64_t)(uint32_t)set << 21 | c;
    const int32_t *hit = hget(&m->cp, key);
    if (hit) return *hit;
    const sprig_gelem *E = m->g.e;
    m->gen++;
    m->out.n = 0;
    const int n = m->set_len.v[set];
    for (int i = 0; i < n; i++) {
        const int32_t x = m->pool.v[m->set_off.v[set] + i];   /* (the pool may move while expanding: read by index) */
        if (x < 0 || !match_char(&E[m->npos.v[x]], c)) continue;
        const int32_t next = after_char(E, m->npos.v[x]);
        const int32_t y = is_end(&E[next]) ? m->npar.v[x] : node(m, next, m->npar.v[x]);
        if (y == -2 || !expand(m, y)) {
            note_full(m);
            return -2;
        }
    }
    const int32_t r = intern_set(m);
    if (r == -2) return -2;
    if (!room(m) || !hput(&m->cp, key, r)) {
        note_full(m);
        return -2;
    }
    return r;
}

/* pending bytes: low 24 bits the bytes so far (first in the lowest byte), bits 24-25 how many, 26-28 how many in all */
static uint32_t pend_make(uint32_t bytes, int have, int need) { return bytes | (uint32_t)have << 24 | (uint32_t)need << 26; }

static int32_t intern_state(sprig_gmatch *m, int32_t set, uint32_t pend)
{
    if (set < 0) return set == -2 ? -2 : SPRIG_GSTATE_DEAD;
    const uint64_t key = (uint64_t)(uint32_t)set << 32 | pend;
    const int32_t *hit = hget(&m->states, key);
    if (hit) return *hit;
    if (pend) {   /* a code point begun: live only if some stack may take one it can still become */
        const int have = (int)(pend >> 24 & 3), need = (int)(pend >> 26 & 7);
        uint32_t v = pend & 0xff;
        v &= need == 2 ? 0x1f : need == 3 ? 0x0f : 0x07;
        for (int k = 1; k < have; k++) v = v << 6 | (pend >> (8 * k) & 0x3f);
        const int rest = 6 * (need - have);
        static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };   /* no overlong encodings */
        uint32_t lo = v << rest, hi = (v << rest) | ((1u << rest) - 1);
        if (lo < least[need]) lo = least[need];
        if (hi > 0x10FFFF) hi = 0x10FFFF;
        if (lo > hi) return SPRIG_GSTATE_DEAD;
        bool live = false;
        for (int i = 0; i < m->set_len.v[set] && !live; i++) {
            const int32_t x = m->pool.v[m->set_off.v[set] + i];
            live = x >= 0 && match_range(&m->g.e[m->npos.v[x]], lo, hi);
        }
        if (!live) return SPRIG_GSTATE_DEAD;
    }
    if (!room(m)) return -2;
    const int32_t id = m->st_set.n;
    if (!ipush(&m->st_set, set) || !ipush(&m->st_pend, (int32_t)pend) || !hput(&m->states, key, id)) {
        note_full(m);
        return -2;
    }
    return id;
}

/* the state after byte b (cached) */
static int32_t step(sprig_gmatch *m, int32_t s, uint8_t b)
{
    const uint64_t key = (uint64_t)(uint32_t)s << 8 | b;
    const int32_t *hit = hget(&m->step, key);
    if (hit) return *hit;
    const int32_t set = m->st_set.v[s];
    const uint32_t pend = (uint32_t)m->st_pend.v[s];
    int32_t r;
    if (!pend) {
        if (b < 0x80) r = intern_state(m, accept_cp(m, set, b), 0);
        else {
            const int need = (b >> 5) == 6 && b >= 0xC2 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 && b <= 0xF4 ? 4 : 0;
            r = need ? intern_state(m, set, pend_make(b, 1, need)) : SPRIG_GSTATE_DEAD;
        }
    } else {
        const int have = (int)(pend >> 24 & 3), need = (int)(pend >> 26 & 7);
        if ((b & 0xc0) != 0x80) r = SPRIG_GSTATE_DEAD;
        else if (have + 1 < need) r = intern_state(m, set, pend_make((pend & 0xffffff) | (uint32_t)b << (8 * have), have + 1, need));
        else {
            uint32_t c = pend & (need == 2 ? 0x1f : need == 3 ? 0x0f : 0x07);
            for (int k = 1; k < have; k++) c = c << 6 | (pend >> (8 * k) & 0x3f);
            c = c << 6 | (b & 0x3f);
            const bool valid = !(need == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) && !(need == 4 && (c < 0x10000 || c > 0x10FFFF));
            r = valid ? intern_state(m, accept_cp(m, set, c), 0) : SPRIG_GSTATE_DEAD;
        }
    }
    if (r == -2) return SPRIG_GSTATE_DEAD;
    if (!room(m) || !hput(&m->step, key, r)) {
        note_full(m);
        return SPRIG_GSTATE_DEAD;
    }
    return r;
}

void sprig_gmatch_free(sprig_gmatch *m)
{
    if (!m) return;
    free(m->g.e);
    free(m->g.rule);
    free(m->npos.v);
    free(m->npar.v);
    hfree(&m->nodes);
    free(m->set_off.v);
    free(m->set_len.v);
    free(m->pool.v);
    hfree(&m->sets);
    free(m->st_set.v);
    free(m->st_pend.v);
    hfree(&m->states);
    hfree(&m->step);
    hfree(&m->cp);
    free(m->mark);
    free(m->work.v);
    free(m->out.v);
    free(m->walk);
    for (int i = 0; i < N_MASKS; i++) free(m->mask[i]);
    free(m);
}

sprig_gmatch *sprig_gmatch_create(const sprig_gbnf *g, const sprig_gvocab *v, sprig_error *err)
{
    sprig_gmatch *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    m->v = v;
    m->g.n_e = g->n_e;
    m->g.n_rules = g->n_rules;
    m->g.root = g->root;
    if (!(m->g.e = malloc(sizeof *m->g.e * (size_t)(g->n_e + 1))) || !(m->g.rule = malloc(sizeof *m->g.rule * (size_t)g->n_rules)) ||
        !(m->walk = malloc(sizeof *m->walk * (size_t)(v->max_depth + 1))))
        goto oom;
    memcpy(m->g.e, g->e, sizeof *m->g.e * (size_t)g->n_e);
    m->g.e[g->n_e] = (sprig_gelem){ GE_END, 0 };
    memcpy(m->g.rule, g->rule, sizeof *m->g.rule * (size_t)g->n_rules);
    for (int i = 0; i < N_MASKS; i++) {
        m->mask_state[i] = -1;
        if (!(m->mask[i] = malloc(sizeof(uint64_t) * (size_t)((v->n_vocab + 63) / 64 + 1)))) goto oom;
    }
    if (sprig_gmatch_start(m) < 0) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "%s", m->why[0] ? m->why : "grammar: the root rule matches nothing");
        sprig_gmatch_free(m);
        return NULL;
    }
    return m;
oom:
    sprig_gmatch_free(m);
    sprig_err(err, SPRIG_E_NOMEM, "grammar: out of memory");
    return NULL;
}

int32_t sprig_gmatch_start(sprig_gmatch *m)
{
    const sprig_gelem *E = m->g.e;
    m->gen++;
    m->out.n = 0;
    for (int32_t a = m->g.rule[m->g.root];;) {
        const int32_t x = is_end(&E[a]) ? -1 : node(m, a, -1);
        if (x == -2 || !expand(m, x)) return SPRIG_GSTATE_DEAD;
        while (!is_end(&E[a])) a++;
        if (E[a].type == GE_END) break;
        a++;
    }
    const int32_t r = intern_state(m, intern_set(m), 0);
    return r < 0 ? SPRIG_GSTATE_DEAD : r;
}

int32_t sprig_gmatch_advance_bytes(sprig_gmatch *m, int32_t s, const char *p, size_t n)
{
    for (size_t i = 0; i < n && s >= 0; i++) s = step(m, s, (uint8_t)p[i]);
    return s < 0 ? SPRIG_GSTATE_DEAD : s;
}

bool sprig_gmatch_accepting(sprig_gmatch *m, int32_t s)
{
    if (s < 0 || m->st_pend.v[s]) return false;
    const int32_t set = m->st_set.v[s];
    return m->set_len.v[set] && m->pool.v[m->set_off.v[set]] == -1;
}

int32_t sprig_gmatch_advance(sprig_gmatch *m, int32_t s, int32_t token)
{
    m->checks++;
    if (s < 0 || token < 0 || token >= m->v->n_vocab) return SPRIG_GSTATE_DEAD;
    if (m->v->eog[token]) return sprig_gmatch_accepting(m, s) ? SPRIG_GSTATE_END : SPRIG_GSTATE_DEAD;
    const size_t len = (size_t)(m->v->off[token + 1] - m->v->off[token]);
    if (!len) return SPRIG_GSTATE_DEAD;
    return sprig_gmatch_advance_bytes(m, s, m->v->blob + m->v->off[token], len);
}

const uint64_t *sprig_gmatch_mask(sprig_gmatch *m, int32_t s, sprig_error *err)
{
    for (int i = 0; i < N_MASKS; i++)
        if (m->mask_state[i] == s && s >= 0) {
            m->hits++;
            return m->mask[i];
        }
    const sprig_gvocab *v = m->v;
    const int slot = m->next_mask;
    m->next_mask = (m->next_mask + 1) % N_MASKS;
    uint64_t *bits = m->mask[slot];
    m->mask_state[slot] = -1;
    memset(bits, 0, sizeof *bits * (size_t)((v->n_vocab + 63) / 64 + 1));
    m->walks++;
    if (s >= 0) {
        if (sprig_gmatch_accepting(m, s))
            for (int k = 0; k < v->n_eog; k++) bits[v->eog_ids[k] >> 6] |= 1ull << (v->eog_ids[k] & 63);
        m->walk[0] = s;
        for (int32_t i = 0; i < v->n_nodes;) {
            const tnode *x = &v->nodes[i];
            const int32_t t = step(m, m->walk[x->depth - 1], x->byte);
            if (t < 0) {
                i = x->end;
                continue;
            }
            m->walk[x->depth] = t;
            for (int32_t k = 0; k < x->ntok; k++) {
                const int32_t id = v->ids[x->tok0 + k];
                bits[id >> 6] |= 1ull << (id & 63);
            }
            i++;
        }
    }
    if (m->full) {
        sprig_err(err, SPRIG_E_NOMEM, "%s", m->why);
        return NULL;
    }
    m->mask_state[slot] = s;
    return bits;
}

bool sprig_gmatch_apply(sprig_gmatch *m, int32_t s, float *logits, sprig_error *err)
{
    const uint64_t *bits = sprig_gmatch_mask(m, s, err);
    if (!bits) return false;
    for (int32_t id = 0; id < m->v->n_vocab; id++)
        if (!(bits[id >> 6] >> (id & 63) & 1)) logits[id] = -INFINITY;
    return true;
}

int32_t sprig_gmatch_forced(sprig_gmatch *m, int32_t s, sprig_error *err)
{
    const uint64_t *bits = sprig_gmatch_mask(m, s, err);
    if (!bits) return -1;
    int32_t one = -1;
    for (int w = 0; w < (m->v->n_vocab + 63) / 64; w++) {
        if (!bits[w]) continue;
        if (one >= 0 || (bits[w] & (bits[w] - 1))) return -1;
        one = w * 64 + __builtin_ctzll(bits[w]);
    }
    return one;
}

int sprig_gmatch_forced_text(sprig_gmatch *m, int32_t s, char *out, int cap)
{
    int n = 0;
    while (s >= 0 && !m->st_pend.v[s]) {
        const int32_t set = m->st_set.v[s];
        uint32_t c = 0;
        bool one = m->set_len.v[set] > 0;
        for (int i = 0; i < m->set_len.v[set] && one; i++) {   /* every stack's top is the same single character */
            const int32_t x = m->pool.v[m->set_off.v[set] + i];
            const sprig_gelem *e = x >= 0 ? &m->g.e[m->npos.v[x]] : NULL;
            one = e && e->type == GE_CHAR && e[1].type != GE_CHAR_ALT && e[1].type != GE_CHAR_RNG_UPPER && (i == 0 || e->value == c);
            if (e) c = e->value;
        }
        if (!one) break;
        char u[4];
        const int k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n + k > cap) break;
        if (k == 1) u[0] = (char)c;
        else {
            u[0] = (char)((k == 2 ? 0xC0 : k == 3 ? 0xE0 : 0xF0) | (c >> (6 * (k - 1))));
            for (int j = 1; j < k; j++) u[j] = (char)(0x80 | ((c >> (6 * (k - 1 - j))) & 0x3f));
        }
        memcpy(out + n, u, (size_t)k);
        n += k;
        s = sprig_gmatch_advance_bytes(m, s, u, (size_t)k);
    }
    return n;
}

const char *sprig_gmatch_error(const sprig_gmatch *m) { return m->full ? m->why : ""; }

void sprig_gmatch_get_stats(const sprig_gmatch *m, struct sprig_gmatch_stats *out)
{
    out->states = m->st_set.n;
    out->entries = m->entries;
    out->walks = m->walks;
    out->mask_hits = m->hits;
    out->checks = m->checks;
}
