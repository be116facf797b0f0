/*
 * spec/routes — which experts a token's row routed to, remembered per token
 * id, so a round can predict the experts its candidate drafts would read
 * before any forward is spent on them.
 *
 * Why: a mixture-of-experts target's verify reads the UNION of its rows'
 * experts; at equal acceptance a draft that routes to experts the tree
 * already reads is cheaper than one that brings new ones. A row's routing
 * depends on its context, but mostly on its token (the first layers'
 * especially): the last routing seen for a token is the prediction.
 *
 * A direct-mapped table of SPRIG_ROUTES_CAP entries (slot = id % cap, the
 * newest wins) of the routing at the target's first SPRIG_MOE_ROUTE_LAYERS
 * expert layers, filled from every forward's rows (model/moe.h). Allocated
 * once with the target; noting and looking up never allocate.
 */
#ifndef SPRIG_SPEC_ROUTES_H
#define SPRIG_SPEC_ROUTES_H

#include "base/err.h"

#include <stdbool.h>
#include <stdint.h>

#define SPRIG_ROUTES_CAP 4096

typedef struct sprig_routes {
    int layers;          /* expert layers remembered (<= SPRIG_MOE_ROUTE_LAYERS) */
    int k, e;            /* experts a row runs; experts per layer */
    double scale;        /* the target's expert layers / layers remembered */
    int32_t *tag;        /* [cap] the token in the slot, -1 = empty */
    int16_t *ex;         /* [cap][layers][k] */
    int64_t noted, hits, lookups;
} sprig_routes;

/* For a target of `layers` expert layers of e experts, k per row. */
sprig_status sprig_routes_init(sprig_routes *r, int layers, int e, int k, sprig_error *err);
void sprig_routes_free(sprig_routes *r);
/* A forward's rows: tokens[n] and their routing [n][stride_layers][k] at `layers` layers. */
void sprig_routes_note(sprig_routes *r, const int32_t *tokens, int n, const int16_t *routes, int stride_layers, int layers);
/* The token's last routing [layers][k], or NULL when none is remembered. */
const int16_t *sprig_routes_get(sprig_routes *r, int32_t token);

#endif
