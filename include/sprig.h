/*
 * sprig.h — the whole public C API of sprig.
 *
 * sprig is an LLM inference engine (C11, CPU) whose headline feature is
 * speculative decoding with draft token trees. This header is everything a
 * program needs: open a GGUF model, make a context, generate text plainly or
 * speculatively, read the round statistics.
 *
 * Conventions
 *   - Every fallible call returns a sprig_status and, when `err` is not NULL,
 *     fills it with a message that names the file, field or argument.
 *   - The library never calls exit() and never prints unless asked (log level).
 *   - Objects are opaque; *_default_params() give by-value parameter structs.
 */
#ifndef SPRIG_H
#define SPRIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares is
 * the shared library's interface. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

#define SPRIG_VERSION "0.2.0"

/* ---------------------------------------------------------------- status */

typedef enum sprig_status {
    SPRIG_OK = 0,
    SPRIG_E_INVALID_ARG,   /* a caller-supplied argument is out of range        */
    SPRIG_E_IO,            /* open/read/write/mmap failed                         */
    SPRIG_E_FORMAT,        /* a file is malformed (GGUF, tokenizer, checkpoint)   */
    SPRIG_E_UNSUPPORTED,   /* well-formed but not something sprig can run         */
    SPRIG_E_NOMEM,         /* allocation failed or a size overflowed              */
    SPRIG_E_CONTEXT_FULL,  /* the KV cache has no room for the request            */
    SPRIG_E_REFUSED,       /* a capability declined (e.g. tree verify), reason given */
    SPRIG_E_INTERNAL,      /* a broken invariant that was caught, not crashed on  */
    SPRIG_STATUS_COUNT
} sprig_status;

typedef struct sprig_error {
    sprig_status code;
    char msg[512];
} sprig_error;

/* Short name of a status code ("ok", "invalid argument", ...). */
const char *sprig_status_str(sprig_status s);

/* ---------------------------------------------------------------- models */

typedef struct sprig_model sprig_model;

/* Load a GGUF model (mmap'd; weights are views, packed copies are made for
 * the SIMD kernels). Validates the file, the architecture's keys, tensors
 * and shapes, and the tokenizer. */
sprig_status sprig_model_load(const char *path, sprig_model **out, sprig_error *err);
void         sprig_model_free(sprig_model *m);

struct sprig_model_info {
    const char *arch;          /* general.architecture */
    const char *name;          /* general.name ("" if absent) */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff;
    int64_t n_params;          /* parameters in the bound tensors */
    uint64_t weight_bytes;     /* bytes one decode step reads from the weights */
    double load_ms;            /* time sprig_model_load took */
    const char *kernels;       /* kernel family in use: "avx512-vnni", "avx2", "reference" */
    int32_t token_bos, token_eos;  /* the vocabulary's BOS / EOS ids (-1 = none) */
    /* memory: the weights sprig packed into memory of its own, and those read in place from the
     * mapped file (experts, embeddings), in MB (1e6); of the latter, what is resident is what was read */
    double weights_copied_mb, weights_mapped_mb;
    int64_t experts_total;     /* expert FFNs in the file (all layers; 0 for a dense model) */
    int64_t experts_touched;   /* of those, the ones some forward has read since the load */
    double experts_touched_mb; /* their weight megabytes */
};
void sprig_model_get_info(const sprig_model *m, struct sprig_model_info *out);

/* A string metadata value of the model's GGUF (e.g. "tokenizer.chat_template"):
 * a pointer into the mapping, valid while the model lives, NOT NUL-terminated,
 * *len bytes. NULL when the key is absent or not a string. */
const char *sprig_model_meta_str(const sprig_model *m, const char *key, size_t *len);

/* A token's piece exactly as the vocabulary stores it ("<s>", "<|im_start|>";
 * for chat templates' bos_token / eos_token), NUL-terminated; NULL (len 0)
 * for an id out of range. */
const char *sprig_model_token_piece(const sprig_model *m, int32_t id, size_t *len);

/* Text <-> tokens with the model's tokenizer. sprig_text_to_tokens writes up
 * to cap ids and returns how many the text needs (call again with a bigger
 * buffer if that is > cap), or -1 with err set. */
int   sprig_text_to_tokens(const sprig_model *m, const char *text, size_t len, bool add_bos,
                           int32_t *out, int cap, sprig_error *err);
/* malloc'd NUL-terminated text of ids[n]; prev_token = the token before ids[0]
 * (-1 = none; the BOS id drops the leading space). NULL on allocation failure.
 * Free it with free(), or sprig_free() from a language without C's allocator. */
char *sprig_tokens_to_text(const sprig_model *m, const int32_t *ids, int n, int prev_token);
/* free() for what the library handed out malloc'd (bindings: Python, ...) */
void  sprig_free(void *p);

/* ---------------------------------------------------------------- sessions */

/* One candidate next token: its id and its log-probability under the plain
 * softmax of the target's logits (no temperature, no filter). */
typedef struct sprig_logprob {
    int32_t id;
    float logprob;
} sprig_logprob;

#define SPRIG_TOP_LOGPROBS_MAX 20

/* What the KV cache stores per token (the numbers are stable):
 *   F32, F16: the rows as computed / as f16;
 *   INT8: int8 codes + one f16 absmax/127 scale per token and kv head, keys and values;
 *   TURBO4: keys and values as 4-bit Lloyd-Max codes of the row rotated by
 *     random signs x Walsh-Hadamard x random signs, plus norm and rescale;
 *   TURBO4_ASYM / TURBO3_ASYM: f16 keys, 4-bit / 3-bit rotated values;
 *   TURBO4_DELEGATED: f16 keys; values of the last 128-256 positions in f16
 *     (a hot ring), older ones folded into 4-bit rotated codes.
 * Rotated modes need a head size that is a power of two (refused by name).
 * Every mode keeps speculative output byte-identical to plain decoding with
 * the same mode (a verify block reads its own rows as the cache holds them). */
enum sprig_kv_type {
    SPRIG_KV_F32 = 0, SPRIG_KV_F16 = 1, SPRIG_KV_INT8 = 2, SPRIG_KV_TURBO4 = 3,
    SPRIG_KV_TURBO4_ASYM = 4, SPRIG_KV_TURBO3_ASYM = 5, SPRIG_KV_TURBO4_DELEGATED = 6
};
/* "turbo4-asym" etc., or NULL for a value that is not a KV type. */
const char *sprig_kv_type_name(enum sprig_kv_type t);
/* The KV type called `name` (f32|f16|int8|turbo4|turbo4-asym|turbo3-asym|turbo4-delegated); false if none. */
bool sprig_kv_type_from_name(const char *name, enum sprig_kv_type *out);
/* "f32|f16|..." — the accepted names, for help and errors. */
const char *sprig_kv_type_list(void);

enum sprig_drafter_kind {
    SPRIG_DRAFTER_NONE = 0,    /* plain decoding */
    SPRIG_DRAFTER_MODEL,       /* a separate draft model with the target's vocabulary (draft_path) */
    SPRIG_DRAFTER_MTP,         /* an MTP assistant head over the target's state (draft_path) */
    SPRIG_DRAFTER_NGRAM,       /* prompt lookup, no model */
    SPRIG_DRAFTER_ORACLE       /* benchmarks only: the target's recorded greedy ids (draft_path, as
                                  `sprig run --save-ids` writes them) at set acceptance rates */
};

/* The tree switch: off by default; FROM_ENV reads SPRIG_TREE (1/true/on/yes). */
enum sprig_tree_switch { SPRIG_TREE_FROM_ENV = -1, SPRIG_TREE_OFF = 0, SPRIG_TREE_ON = 1 };

struct sprig_session_params {
    int n_threads;                   /* 0 = every online core */
    int n_ctx;                       /* KV slots; 0 = min(model context, 4096) */
    int n_batch;                     /* prompt chunk / largest forward; 0 = 64 */
    enum sprig_kv_type kv_type;
    int kv_block_slots;              /* 0: one contiguous cache; a power of two N: a paged cache of
                                        N-slot blocks from a pool (the server's layout) */
    /* sampling (temp 0: greedy; negative values are refused) */
    float temp;
    int top_k;                       /* 0 = off */
    float top_p;                     /* 1 = off */
    float min_p;                     /* 0 = off */
    uint64_t seed;
    /* speculative decoding */
    enum sprig_drafter_kind drafter;
    const char *draft_path;          /* draft model or MTP head file */
    int draft_max;                   /* drafted tokens per round (the verify block is draft_max + 1) */
    int tree;                        /* enum sprig_tree_switch; an explicit value overrides the environment */
    int tree_branches;               /* extra tree nodes: runner-up sibling leaves at the first N draft
                                        steps, or (tree_width > 0) a dynamic tree of draft_max + 1 +
                                        tree_branches nodes */
    bool tree_auto;                  /* with tree_width (and tree on): each round verifies the tree, chain or
                                        bare bonus that maximises expected tokens per second, from the
                                        target's measured verify times and the drafter's calibrated
                                        acceptance (up to draft_max deep, draft_max + 1 + tree_branches nodes).
                                        The verify times are measured once per model file and machine and
                                        cached ($SPRIG_CACHE_DIR, else ~/.cache/sprig; "off" disables).
                                        With sampled drafts the sampled dynamic tree is verified whole: a
                                        choice made after the draws would bias the output */
    bool grammar_blind_drafts;       /* under a grammar (sprig_session_set_grammar): false (default) drafts with it
                                        (a model drafter proposes only tokens it allows, drafts it refuses are cut
                                        before the verify, text it forces joins the block); true: the drafter
                                        ignores it and only the target's rows are masked (what the grammar-aware
                                        drafting gains is measured against this) */
    int tree_width;                  /* 0: runner-up trees; 1..8: dynamic (EAGLE-2 style) trees of a model
                                        drafter: each depth expands its w best frontier nodes in one
                                        drafter forward, w children each; the best nodes by cumulative
                                        draft log-probability are verified */
    bool sampled_drafts;             /* temp > 0: the drafter DRAWS its drafts from its own distribution q (the
                                        target's sampler over the drafter's logits; tree siblings without
                                        replacement) and they are accepted with min(1, p/q), residual (p - q)+
                                        (trees: the multi-candidate rule); false: one-hot drafts (argmax,
                                        accepted with p). Both keep the target's distribution; drafters with
                                        no distribution (n-gram, oracle) always draft one-hot. Default true:
                                        on stories260K's drafters at temp 0.8 q drafts are accepted 0.38
                                        vs 0.29 (chain) */
    int ngram_min, ngram_max;        /* n-gram lengths for SPRIG_DRAFTER_NGRAM */
    const char *oracle_accept;       /* SPRIG_DRAFTER_ORACLE: the chance that the draft at depth d is right,
                                        "p1,p2,..." (the last repeats; NULL: "0.8") */
    float oracle_sibling;            /* the chance that the first wrong depth's runner-up is right */
    uint64_t oracle_seed;            /* its draws: a fixed function of (seed, position, depth) */
    bool ignore_eos;
    /* prompt text from a chat template: the text of control tokens
     * (<|im_start|>, <start_of_turn>, ...) becomes those tokens, and a prompt
     * that already starts with the BOS token's text gets no second BOS */
    bool parse_special;
    /* 0 (default) .. SPRIG_TOP_LOGPROBS_MAX: at every generated token, record
     * the N most likely tokens of the row that produced it (sprig_session_get_output) */
    int top_logprobs;
    /* NULL: the session runs alone. A batch (sprig_batch_create): the session's
     * cache is a paged sequence on the batch's shared KV pool (the batch's KV
     * type and block size) and every verify forward runs as ONE forward with
     * the other sessions of the batch that are generating (each sees only its
     * own history and tree; greedy output equals the session alone). The
     * session's largest verify block must fit the batch's max_rows.
     * Sessions on one batch share prompt prefixes: full KV blocks a session
     * computed are kept in the pool under the tokens they hold, and a session
     * whose prompt starts the same way attaches them instead of computing
     * them (sprig_session_set_prefix_reuse; sprig_batch_get_stats counts them). */
    struct sprig_batch *batch;
    /* a prompt on a batch is prefilled in chunks of this many tokens (0:
     * 256), each published for the other sessions as soon as it is computed;
     * a session whose prompt needs a chunk another session is computing waits
     * for it instead of computing it too. Where the chunks run: the batch's
     * prefill_rows */
    int prefill_chunk;
};

/* seed value meaning "pick one from the clock" (the session reports it) */
#define SPRIG_SEED_RANDOM UINT64_MAX

struct sprig_session_params sprig_session_default_params(void);

typedef struct sprig_session sprig_session;

/* The model is borrowed and must outlive the session; several sessions may
 * share one model. Validates every parameter, naming it. */
sprig_status sprig_session_create(const sprig_model *m, const struct sprig_session_params *p,
                                  sprig_session **out, sprig_error *err);
void         sprig_session_free(sprig_session *s);

/* Change the sampling seed for the next generate (SPRIG_SEED_RANDOM: from the clock). */
void sprig_session_set_seed(sprig_session *s, uint64_t seed);
/* Change the sampling (as the session params name them) and the number of
 * top log-probabilities recorded, for the next generate: a server's
 * per-request settings on a session that keeps its cache and drafter.
 * Validated like the params; on error nothing changes. */
sprig_status sprig_session_set_sampling(sprig_session *s, float temp, int top_k, float top_p, float min_p, int top_logprobs,
                                        sprig_error *err);
/* Whether the next prompts are chat-template text (params.parse_special). */
void sprig_session_set_parse_special(sprig_session *s, bool on);
/* Prefix reuse (on by default): the next generate keeps the longest prefix
 * of its prompt that the target's cache (and a draft model's) already holds
 * from the last generation, prompt and generated text alike, and prefills
 * only the rest, so a chat's next turn reads only what is new. The output is
 * byte-identical either way (a row's bits do not depend on what else is
 * computed with it). Off for sessions on a batch, recurrent and
 * sliding-window targets, and drafters that read every prompt row (MTP
 * heads of Qwen 3.5); stats.cached_tokens says what was reused. */
void sprig_session_set_prefix_reuse(sprig_session *s, bool on);
/* How many of ids[n] the next generate would find in the cache (0 when reuse is off or nothing is kept): a
 * server sends a request to the session that holds the most of it. Not while the session generates. */
int sprig_session_prefix_match(const sprig_session *s, const int32_t *ids, int n);
/* Whether generated control tokens (other than end-of-generation ones) appear
 * in the output as their text, e.g. Mistral's [TOOL_CALLS] or Llama's
 * <|python_tag|>, which a reply's tool calls are read by (default off: a
 * control token writes nothing). */
void sprig_session_set_render_special(sprig_session *s, bool on);

/* Constrain the next generates to a grammar: every generated token is one
 * whose text the grammar allows next, and the end-of-sequence token only
 * where the grammar may end. gbnf: llama.cpp's GBNF text (NULL: no
 * grammar). A JSON schema (text) compiles to one (schema NULL: any JSON
 * object, OpenAI's json_object). Errors (SPRIG_E_INVALID_ARG) name the
 * rule and line:column, or the schema keyword and where it is; on error the
 * session keeps its previous grammar. Greedy output equals the argmax of
 * the grammar-masked logits; sampling draws from the masked distribution;
 * speculation keeps both. */
sprig_status sprig_session_set_grammar(sprig_session *s, const char *gbnf, size_t len, sprig_error *err);
sprig_status sprig_session_set_json_schema(sprig_session *s, const char *schema, size_t len, sprig_error *err);
/* Build the model's vocabulary index for grammars now (a byte trie of every
 * token's text: 60-90 ms for a 128K-152K vocabulary, once per model),
 * rather than in the first generate that has a grammar. Thread-safe. */
sprig_status sprig_model_prepare_grammars(const sprig_model *m, sprig_error *err);
/* A JSON schema as GBNF text (malloc'd), what set_json_schema compiles. */
sprig_status sprig_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, sprig_error *err);

/* One verify round as it happened: the block the target verified (node 0 is
 * the bonus; parents[i] < i; a chain is a line) and the path the walk
 * accepted through it. Valid during the callback only. */
struct sprig_round_trace {
    int n;                           /* nodes verified */
    const int32_t *tokens;           /* [n] */
    const int32_t *parents;          /* [n], parents[0] = 0 */
    int n_path;                      /* accepted drafts + 1 */
    const int *path;                 /* [n_path] node indices, path[0] = 0 */
    bool tree;                       /* a tree round (else a chain) */
};
typedef void (*sprig_round_fn)(void *user, const struct sprig_round_trace *r);
/* Called after every verify round of the next generates (NULL: none); for a
 * live picture of speculation (sprig serve's trace). */
void sprig_session_set_round_fn(sprig_session *s, sprig_round_fn fn, void *user);

/* The prompt cache file (as llama.cpp's --prompt-cache): save writes the
 * tokens the session's caches hold after its last generate (prompt and
 * reply) and their stored key/value rows, the draft model's too; load puts
 * them back, so the next generate whose prompt starts the same way computes
 * only the rest (its stats' cached_tokens). A file made for another model,
 * draft model, KV type or shape, kernel family or sprig version is refused
 * naming what differs (SPRIG_E_REFUSED), a truncated or corrupted one too
 * (SPRIG_E_FORMAT); so is a session whose cache cannot be cut back to a
 * prefix (recurrent layers, a sliding-window ring, a drafter that reads every
 * prompt row's hidden state). Load reports the tokens restored. */
sprig_status sprig_session_save_cache(sprig_session *s, const char *path, sprig_error *err);
sprig_status sprig_session_load_cache(sprig_session *s, const char *path, int *n_tokens, sprig_error *err);

/* Stop the generate that runs on another thread as soon as it can: between
 * prompt chunks on a shared pool, else at its next token (its stop reason is
 * "cancel"); a generate that starts later clears the request. */
void sprig_session_cancel(sprig_session *s);

/* Streamed output: return false to stop generating. */
typedef bool (*sprig_text_fn)(void *user, const char *text, size_t len);

/* Generate up to n_predict tokens after the prompt (the context is reset
 * first). Stops at the end-of-sequence token, n_predict or the context
 * limit; the statistics say which. */
sprig_status sprig_session_generate(sprig_session *s, const char *prompt, size_t prompt_len, int n_predict,
                                    sprig_text_fn on_text, void *user, sprig_error *err);

#define SPRIG_PLAN_SIZES 14   /* row counts tree auto's planner reports T(rows) at */

struct sprig_stats {
    uint64_t seed;                   /* the seed the sampler used */
    const char *path;                /* what ran: "plain", "chain" or "tree" */
    const char *stop;                /* "eos", "budget", "context", "cancel", "error", "running" */
    const char *drafter;             /* "none", "draft-model", "mtp", "ngram" */
    bool tree_mode;                  /* the switch resolved on (whether trees RAN is `path`) */
    int draft_max, tree_branches;
    int n_threads;
    const char *kernels;             /* kernel family that ran */
    const char *kv_type;             /* the KV cache mode that ran ("turbo4-asym", ...) */
    const char *kv_layout;           /* the KV cache kind: "dense" or "paged" */
    int64_t prompt_tokens;
    int64_t cached_tokens;           /* of the prompt, the prefix the cache already held (prefix reuse) */
    int64_t generated_tokens;        /* tokens delivered, the first included */
    double load_ms;                  /* model load */
    double prefill_ms, decode_ms;    /* prompt + first token; the rest */
    double profile_ms;               /* tree auto's one-time verify profile (0: none, or read from the cache) */
    double prefill_tok_s, decode_tok_s;
    int64_t rounds, proposed, accepted, emitted;
    double emitted_per_verify, acceptance_rate;
    int64_t zero_accept_rounds, partial_accept_rounds, full_accept_rounds;
    int64_t branch_rounds;           /* tree rounds won by a side branch (the accepted path is not
                                        the tree's first chain) */
    int block_min, block_max;        /* the fewest and most rows a round verified (tree auto varies them) */
    int64_t sampled_rounds;          /* rounds whose drafts were drawn from the drafter's q (sampled_drafts) */
    double draft_ms, verify_ms, walk_ms, finalize_ms;
    double rollback_ms;              /* recurrent layers (qwen35): copying states before verify blocks and
                                        replaying accepted steps (inside verify_ms and finalize_ms) */
    /* mixture-of-experts targets (0 for dense ones, and for sessions on a batch, whose forwards are shared):
     * after the prefill, what the target's forwards read from their experts */
    int64_t expert_forwards;         /* target forwards (verify blocks, trees, plain steps) */
    double experts_per_layer;        /* distinct experts one forward read per expert layer (each once, however
                                        many of its rows chose it), mean */
    double expert_mb_per_forward;    /* expert weight megabytes (1e6) one forward read, mean */
    double experts_per_token;        /* distinct experts read, summed over layers and forwards, per token emitted */
    double experts_per_verify;       /* distinct experts one forward read, summed over its expert layers, mean */
    /* a grammar (sprig_session_set_grammar): verify rows whose whole mask was applied (the argmax alone was not
     * allowed, or sampling); masks walked over the vocabulary's trie, and found in the cache */
    int64_t grammar_rows_masked, grammar_walks, grammar_mask_hits;
    /* speculation under a grammar: draft nodes it refused (cut before the verify), tokens of text it forced put
     * into verify blocks, and the rounds that got some */
    int64_t grammar_pruned, grammar_forced, grammar_forced_rounds;
    /* tree auto's planner (tree_auto sessions; zeros otherwise): the rounds it planned a chain (or the bare bonus)
     * and a branching tree, over the session's life; its verify-cost estimates T(rows) at the sizes it profiles,
     * plan_rows[i] rows -> plan_ms[i] ms, with the measurements behind each (the profile's and the rounds');
     * plan_joint: of the rounds, those whose rows a batch allocated across its sessions at once */
    int64_t plan_chains, plan_trees, plan_joint;
    int plan_n;
    int plan_rows[SPRIG_PLAN_SIZES];
    double plan_ms[SPRIG_PLAN_SIZES];
    int64_t plan_samples[SPRIG_PLAN_SIZES];
    /* and its drafting: the drafter's time per round at width 1 and wider (0: not measured), the rounds it
     * drafted wide (the wide rounds earned more than their width-1 chain would have, or an 8th round's try),
     * and the drafts it stopped before their depth cap (nothing deeper could have been chosen) */
    double plan_draft_ms[2];
    int64_t plan_wide_rounds, plan_draft_stops;
};
void sprig_session_get_stats(const sprig_session *s, struct sprig_stats *out);

/* What the last generate fed and produced; pointers into the session, valid
 * until the next generate or free. */
struct sprig_output {
    const int32_t *prompt;           /* [n_prompt] the prompt ids as evaluated (BOS included) */
    int n_prompt;
    const int32_t *tokens;           /* [n_tokens] the generated ids in order (no EOS unless ignore_eos) */
    int n_tokens;
    int top_n;                       /* params.top_logprobs */
    const sprig_logprob *top;        /* [n_tokens][top_n]: tokens[i]'s step, most likely first
                                        (ties: lower id); NULL when top_n is 0. Speculative
                                        rounds take them from the verify rows of the accepted
                                        path: the same logits, so the same values, as plain decoding */
};
void sprig_session_get_output(const sprig_session *s, struct sprig_output *out);
/* The statistics as one JSON object (NUL-terminated) into buf[cap]; returns
 * the length it needs (snprintf rules). */
int  sprig_stats_to_json(const struct sprig_stats *st, char *buf, size_t cap);

/* ---------------------------------------------------------------- batches
 * Continuous batching for a server: up to n_seq sessions on one model share
 * a paged KV pool, and each step their verify blocks and trees (any mix of
 * plain, chain and tree sessions and drafters) run as one batched forward.
 * Sessions join a step when they verify and leave when their generation
 * ends; a session still prefilling does not hold the others up. */
typedef struct sprig_batch sprig_batch;
struct sprig_batch_params {
    int n_seq;                       /* sessions generating at once, 1..64 */
    int max_rows;                    /* the largest verify block or tree of one session (0: 64) */
    int n_ctx;                       /* the sessions' context (sizes the default pool; 0: min(model, 4096)) */
    enum sprig_kv_type kv_type;
    int kv_block_slots;              /* the pool's block size, a power of two (0: 32) */
    int kv_blocks;                   /* blocks in the pool (0: n_seq whole contexts) */
    int wait_us;                     /* the longest a ready session waits for the others to finish
                                        drafting (0: 200000: with more threads than cores, a woken
                                        session may wait tens of ms for a core) */
    int prefill_rows;                /* chunked prefill: a session's prompt chunks join the shared steps, at most
                                        N rows a step while other sessions generate (alone, up to 64; 0: 8, as
                                        measured); -1: they run on the session's own threads beside the steps */
};
struct sprig_batch_params sprig_batch_default_params(void);
sprig_status sprig_batch_create(const sprig_model *m, const struct sprig_batch_params *p, sprig_batch **out, sprig_error *err);
/* Every session created on the batch must be freed first. */
void sprig_batch_free(sprig_batch *b);
/* Book KV slots for a request (its prompt, max_tokens and a verify block)
 * before it starts: false when the pool cannot hold them beside what is
 * booked (the request should wait, or be refused); release them when it ends. */
bool sprig_batch_admit(sprig_batch *b, int slots);
void sprig_batch_release(sprig_batch *b, int slots);
struct sprig_batch_stats {
    int64_t forwards;                /* verify forwards run */
    int64_t shared_forwards;         /* ... of which held two or more sessions */
    int64_t seqs, rows;              /* sessions and rows summed over the forwards */
    int max_seqs;                    /* the most sessions one forward held */
    int64_t timeouts;                /* forwards started by wait_us rather than by every session being ready */
    int64_t kv_slots, kv_booked;     /* the pool's slots, and those booked now */
    int64_t prompt_chunks;           /* chunked prefill: prompt chunks run through the batch ... */
    int64_t prompt_chunks_shared;    /* ... of which beside other sessions' rows */
    int64_t prompt_rows;             /* ... and their rows */
    int64_t joint_plans;             /* tree auto: steps whose rows were allocated across the sessions at once */
    int64_t joint_offers;            /* ... sessions summed over them */
    int64_t joint_late;              /* ... allocated by wait_us with a session's offer missing */
    /* the prefix cache over the pool (sessions sharing prompt prefixes) */
    int64_t prefix_blocks_hit;       /* blocks a session attached from the pool instead of computing them */
    int64_t prefix_blocks_published; /* blocks keyed for sharing */
    int64_t prefix_blocks_evicted;   /* cached blocks taken back for new rows (least recently used first) */
    int64_t prefix_blocks_copied;    /* shared blocks copied before a session wrote into them */
    int kv_blocks, kv_block_slots;
    int prefix_blocks_cached;        /* keyed now (held or idle) */
    int prefix_blocks_idle;          /* ... held by no session (what eviction takes) */
    int prefix_blocks_shared;        /* held by two or more sessions now */
    int64_t draft_blocks_hit;        /* the sessions' draft models: blocks attached from their own pool ... */
    int64_t draft_blocks_published;  /* ... and published to it */
};
void sprig_batch_get_stats(sprig_batch *b, struct sprig_batch_stats *out);

/* ---------------------------------------------------------------- build */

/* The library's version: SPRIG_VERSION as it was when the library was built
 * (a program compiled against another header can tell). */
const char *sprig_version(void);

struct sprig_build_info {
    const char *version;             /* "0.2.0" */
    const char *kernels_compiled;    /* the kernel families built in, plain C first: "reference avx2 avx512-vnni" */
    const char *kernels_cpu;         /* those this CPU can run */
    const char *kernels_selected;    /* the one that runs (the best the CPU has, capped by SPRIG_KERNELS / SPRIG_NO_SIMD) */
    const char *compiler;            /* the compiler that built the library */
};
void sprig_get_build_info(struct sprig_build_info *out);

/* Library log level: 0 errors, 1 warnings (default), 2 info, 3 debug. */
void sprig_set_log_level(int level);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SPRIG_H */
