/*
 * grammar/match — a compiled grammar (grammar/gbnf) run over a model's
 * tokens: which tokens may come next, and the state after one.
 *
 * The grammar is a pushdown automaton over code points: its configuration
 * is a set of stacks of rule positions (llama.cpp's formulation), each stack
 * topped by a character element. Here every stack, every set of stacks and
 * every "set + the bytes of a code point not yet complete" is interned, so
 * a grammar state is one int32 and moving on is a cached table lookup:
 * the state after a byte, after a code point, after a token. States are
 * what decoding carries from token to token, and what a speculative tree
 * carries from node to node (each node's state is its parent's advanced by
 * its token), so a tree's illegal nodes are known before the verify.
 *
 * Which tokens are allowed: a token is allowed when its bytes (the text it
 * decodes to) lead to a live state; an end-of-generation token when the
 * grammar may end here; a token with no text (control tokens) never. The
 * whole mask comes from the vocabulary's byte trie (sprig_gvocab, built
 * once per model) walked with the state: a dead state prunes its subtree,
 * so the walk costs what the allowed tokens share, not the vocabulary; a
 * state's mask is cached. Checking one token (a greedy argmax) walks only
 * its bytes.
 *
 * Tables grow with the states a generation visits and are bounded
 * (SPRIG_GMATCH_MAX_ENTRIES); past the bound a step fails with an error
 * rather than using more memory. Not thread-safe: one matcher per sequence
 * (or per session), over a shared read-only vocabulary.
 */
#ifndef SPRIG_GRAMMAR_MATCH_H
#define SPRIG_GRAMMAR_MATCH_H

#include "base/err.h"
#include "grammar/gbnf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPRIG_GSTATE_DEAD (-1)   /* no continuation: the token is not allowed */
#define SPRIG_GSTATE_END (-2)    /* an end-of-generation token where the grammar may end */
#define SPRIG_GMATCH_MAX_ENTRIES (1 << 24)

/* ---- a vocabulary's byte trie ---- */
typedef struct sprig_gvocab sprig_gvocab;
/* text(u, id, &len): the bytes token id decodes to (NULL or len 0: none, e.g. a control token); eog: whether it
 * ends a generation. */
sprig_gvocab *sprig_gvocab_create(int n_vocab, const char *(*text)(const void *u, int32_t id, size_t *len), bool (*eog)(const void *u, int32_t id),
                                  const void *u, sprig_error *err);
void sprig_gvocab_free(sprig_gvocab *v);
int sprig_gvocab_n_vocab(const sprig_gvocab *v);

/* ---- the matcher ---- */
typedef struct sprig_gmatch sprig_gmatch;
/* g is copied; v is borrowed (it must outlive the matcher). */
sprig_gmatch *sprig_gmatch_create(const sprig_gbnf *g, const sprig_gvocab *v, sprig_error *err);
void sprig_gmatch_free(sprig_gmatch *m);

/* The state before anything is generated. */
int32_t sprig_gmatch_start(sprig_gmatch *m);
/* The state after token in state s: SPRIG_GSTATE_DEAD when not allowed, SPRIG_GSTATE_END for an end-of-generation
 * token the grammar allows there. DEAD (or END) in gives DEAD. */
int32_t sprig_gmatch_advance(sprig_gmatch *m, int32_t s, int32_t token);
/* The state after the bytes p[n] (text, not tokens). */
int32_t sprig_gmatch_advance_bytes(sprig_gmatch *m, int32_t s, const char *p, size_t n);
/* May the generation end in state s (an end-of-generation token is allowed)? */
bool sprig_gmatch_accepting(sprig_gmatch *m, int32_t s);
/* The tokens allowed in state s: a bitset of n_vocab bits (cached; valid until the next mask call). NULL when the
 * tables are full (err says so). */
const uint64_t *sprig_gmatch_mask(sprig_gmatch *m, int32_t s, sprig_error *err);
/* logits[n_vocab]: -INFINITY for every token the state does not allow. false (err) when the tables are full. */
bool sprig_gmatch_apply(sprig_gmatch *m, int32_t s, float *logits, sprig_error *err);
/* The one token the state allows, or -1 when it allows none or more than one (end-of-generation tokens count). */
int32_t sprig_gmatch_forced(sprig_gmatch *m, int32_t s, sprig_error *err);
/* The text the grammar allows and nothing else from state s on (every way on starts with it: one literal character
 * after another, until a choice or the end), up to cap bytes into out; its length (0: none forced). */
int sprig_gmatch_forced_text(sprig_gmatch *m, int32_t s, char *out, int cap);
/* Why the last step returned DEAD for full tables (else ""). */
const char *sprig_gmatch_error(const sprig_gmatch *m);

/* Figures: interned states and table entries so far, full walks and mask cache hits. */
struct sprig_gmatch_stats { int64_t states, entries, walks, mask_hits, checks; };
void sprig_gmatch_get_stats(const sprig_gmatch *m, struct sprig_gmatch_stats *out);

#endif
