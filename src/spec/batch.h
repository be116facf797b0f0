/*
 * spec/batch — continuous batching of verification: several sessions (a
 * server's slots) share one model and one paged KV pool, and every round
 * their verify blocks and trees run as ONE batched forward
 * (sprig_forward_multi): each sequence's rows see only its own history and
 * its own tree (a block-diagonal mask, never materialised: each sequence's
 * attention runs on its own cache), while every weight is read once for all
 * of them. Each session keeps its own round loop, drafter, accepted path and
 * rollback; only the target's forward is shared.
 *
 * Protocol. A session's target calls sprig_batch_forward where it would call
 * sprig_forward; the first call makes it a member. The call queues the
 * request and blocks. When every member has a request queued (lockstep: the
 * others are drafting, and their drafts are worth waiting for), or when the
 * oldest request has waited wait_us (a member stalled elsewhere), the thread
 * that notices leads: it runs the queued requests as one forward on its own
 * thread pool, hands each its status, and wakes them all. A member leaves
 * when its generation ends (sprig_batch_leave), so new requests join and
 * finished ones drop out between steps. A prompt is prefilled outside the
 * batch, on the session's own threads.
 *
 * Exactness: a row's bits never depend on the rows around it (the kernels'
 * contract), so each session's tokens equal those of running it alone. A
 * batched forward that fails its checks runs each request alone instead, so
 * a bad request fails only its own session.
 *
 * Admission: sprig_batch_admit books KV slots against the pool before a
 * request starts and sprig_batch_release returns them, so a server can make
 * the newest request wait while the pool is spoken for, and a running
 * sequence never finds the pool empty mid-generation.
 */
#ifndef SPRIG_SPEC_BATCH_H
#define SPRIG_SPEC_BATCH_H

#include "model/model.h"
#include "spec/costs.h"
#include "spec/target.h"

typedef struct sprig_batch sprig_batch;

/* Prompt rows a step beside generating sessions, by default: on a 2-core Zen 5 with the 1B shape and three plain
 * streams, 8 rows prefilled a 4,000-token prompt in 1.45x its time alone with the streams' p99 gap 2.2x; 64 rows
 * 1.09x and 8.2x; on the session's own threads 1.90x and 1.9x (bench/prefill-stall.sh). */
#define SPRIG_BATCH_PREFILL_ROWS 8

struct sprig_batch_config {
    int n_seq;          /* members at most, 1..SPRIG_FORWARD_MAX_SEQS */
    int max_rows;       /* the largest block or tree one member verifies, 1..SPRIG_TREE_MAX */
    int n_ctx;          /* each member's context (sizes the default pool) */
    int kv_mode;        /* the pool's KV mode (kv/kv.h) */
    int block_slots;    /* the pool's block size, a power of two (0: 32) */
    int n_blocks;       /* blocks in the pool (0: enough for n_seq full contexts) */
    int wait_us;        /* the longest a queued request waits for the others (0: 200000) */
    int prefill_rows;   /* chunked prefill: N (at most 4096; 0: SPRIG_BATCH_PREFILL_ROWS), a prompt's chunks join the
                           steps, at most N rows a step while others generate; -1: they run on the session's own
                           threads beside the steps */
};

struct sprig_batch_counts {
    long long forwards;     /* forwards run */
    long long shared;       /* ... of which held two or more sequences */
    long long seqs;         /* sequences summed over the forwards */
    long long rows;         /* rows summed over the forwards */
    int max_seqs;           /* the most sequences one forward held */
    long long timeouts;     /* forwards started by the wait limit, not by every member being ready */
    long long prompt_chunks;        /* prompt chunks (requests with no output rows) run */
    long long prompt_chunks_shared; /* ... in a forward with other sequences */
    long long prompt_rows;          /* their rows */
    long long joint_plans;          /* steps whose rows tree auto allocated jointly (sprig_batch_plan) */
    long long joint_offers;         /* ... sequences summed over them */
    long long joint_late;           /* ... allocated by the wait limit, a planner's offer missing */
    long long unpriced;             /* shared verify forwards not taught to the cost table (a session worked beside) */
};

sprig_batch *sprig_batch_new(const sprig_model *m, const struct sprig_batch_config *cfg, sprig_error *err);
void sprig_batch_delete(sprig_batch *b);   /* every member's context must be freed first */
struct sprig_kv_pool *sprig_batch_kv_pool(sprig_batch *b);
/* The most rows of a prompt chunk one member may submit to a step (sprig_batch_forward); 0: prompts run on their
 * sessions' own threads. */
int sprig_batch_prefill_rows(const sprig_batch *b);
/* A KV pool the sessions' draft models share (prefix sharing of the drafter's cache), made by the first caller for
 * a draft model of this shape (hp; contexts of n_ctx slots each); NULL when another shape has it or it cannot be made
 * (the caller keeps a cache of its own). */
struct sprig_kv_pool *sprig_batch_draft_pool(sprig_batch *b, const struct sprig_hparams *hp, int n_ctx);
/* The draft pool if one was made, else NULL. */
struct sprig_kv_pool *sprig_batch_draft_pool_now(sprig_batch *b);
/* Members other than ctx that are generating (their last request had output rows; prompt chunks have none). */
int sprig_batch_others_generating(sprig_batch *b, const sprig_ctx *ctx);
/* A session of context n_ctx attached to the batch (sign +1) or gone (-1): the pool then knows whether it holds
 * every attached session's whole context at once (room_for_all), when sessions may keep their blocks between
 * generations (prefix reuse) without taking any request's room. */
void sprig_batch_attach(sprig_batch *b, int n_ctx, int sign);
bool sprig_batch_room_for_all(sprig_batch *b);
int sprig_batch_max_rows(const sprig_batch *b);
int sprig_batch_n_seq(const sprig_batch *b);   /* members at most */

/* One forward of ctx (as sprig_forward), run together with the other members'. */
sprig_status sprig_batch_forward(sprig_batch *b, sprig_ctx *ctx, const struct sprig_fwd *f, sprig_error *err);
/* After ctx's round: how many tokens it emitted (the bonus and the accepted
 * drafts), for the others' tree choice (sprig_batch_others). */
void sprig_batch_observe(sprig_batch *b, sprig_ctx *ctx, int emitted);
/* What the other members put into a shared forward: their last verify rows
 * and their tokens emitted per round (moving averages), summed; 0, 0 when
 * ctx is alone. cost: the time between two shared forwards (everyone's
 * drafting, walks, emission and the lockstep), a cost each step pays
 * whatever its rows, and the shared forward's own time against its rows
 * (a line fitted to the forwards run so far, spec/shape.h). */
void sprig_batch_others(sprig_batch *b, const sprig_ctx *ctx, double *rows, double *emitted, sprig_shared_cost *cost);
/* Tree auto's rows for ctx's next verify, allocated jointly with the other
 * members' (spec/joint.h): gain[0..n) are its candidates' expected tokens
 * best first (gain[0] = 1, the bonus row). Blocks until every member that
 * planned its last step and is not queued for this one has offered (or the
 * wait limit passes; a member that offers after the step's plan is granted
 * alone against it), then returns the rows granted, 1..n; 0 when ctx plans
 * alone (no other member, or no cost known yet). gain must stay valid until
 * the call returns. lone (may be NULL): the session's own verify times per
 * row count (spec/costs.h); the first one given seeds the shared forwards'
 * table as provisional times (a forward of n rows alone is the closest
 * measurement of a shared one until that is timed; without it the counts
 * below the first shared forward timed read flat at its time, and a step
 * never tries fewer rows than the batch first ran). */
int sprig_batch_plan(sprig_batch *b, sprig_ctx *ctx, const double *gain, int n, double draft_ms, const sprig_costs *lone);
/* A session's generation began (sign +1: its prompt, drafting and rounds
 * run from now on, inside the batch or beside it) or ended (-1). A shared
 * forward's time teaches the cost table only while every such session is
 * a member queued for it: one prefilling or setting up beside the step
 * takes cores from it (measured: 16 rows in 105-118 ms beside a starting
 * request against 60-70 ms without), and those times priced every step of
 * that size. */
void sprig_batch_busy(sprig_batch *b, int sign);
/* ctx's generation ended: the others stop waiting for it. */
void sprig_batch_leave(sprig_batch *b, sprig_ctx *ctx);

/* Book `slots` KV slots (a prompt, its generation and a verify block); false
 * when the pool cannot hold them beside what is booked. */
bool sprig_batch_admit(sprig_batch *b, int slots);
void sprig_batch_release(sprig_batch *b, int slots);
/* Slots the pool holds in all, and those booked now. */
void sprig_batch_slots(sprig_batch *b, long long *total, long long *booked);

void sprig_batch_get_counts(sprig_batch *b, struct sprig_batch_counts *out);

#endif
