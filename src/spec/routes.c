/*
 * spec/routes — see routes.h.
 */
#include "spec/routes.h"
#include "model/moe.h"

#include <stdlib.h>
#include <string.h>

sprig_status sprig_routes_init(sprig_routes *r, int layers, int e, int k, sprig_error *err)
{
    memset(r, 0, sizeof *r);
    if (layers < 1 || e < 1 || k < 1 || k > e) return sprig_err(err, SPRIG_E_INVALID_ARG, "routes: %d layers, %d of %d experts", layers, k, e);
    r->layers = layers < SPRIG_MOE_ROUTE_LAYERS ? layers : SPRIG_MOE_ROUTE_LAYERS;
    r->scale = (double)layers / r->layers;
    r->k = k;
    r->e = e;
    r->tag = malloc(SPRIG_ROUTES_CAP * sizeof *r->tag);
    r->ex = calloc((size_t)SPRIG_ROUTES_CAP * (size_t)r->layers * (size_t)k, sizeof *r->ex);
    if (!r->tag || !r->ex) {
        sprig_routes_free(r);
        return sprig_err(err, SPRIG_E_NOMEM, "routes: out of memory");
    }
    for (int i = 0; i < SPRIG_ROUTES_CAP; i++) r->tag[i] = -1;
    return SPRIG_OK;
}

void sprig_routes_free(sprig_routes *r)
{
    free(r->tag);
    free(r->ex);
    memset(r, 0, sizeof *r);
}

void sprig_routes_note(sprig_routes *r, const int32_t *tokens, int n, const int16_t *routes, int stride_layers, int layers)
{
    if (!r->tag || !routes || layers < r->layers) return;   /* a forward that did not reach the layers remembered */
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0) continue;
        const int slot = tokens[i] % SPRIG_ROUTES_CAP;
        r->tag[slot] = tokens[i];
        for (int l = 0; l < r->layers; l++)
            memcpy(r->ex + ((size_t)slot * r->layers + l) * r->k, routes + ((size_t)i * stride_layers + l) * r->k,
                   (size_t)r->k * sizeof *r->ex);
        r->noted++;
    }
}

const int16_t *sprig_routes_get(sprig_routes *r, int32_t token)
{
    if (!r->tag || token < 0) return NULL;
    const int slot = token % SPRIG_ROUTES_CAP;
    r->lookups++;
    if (r->tag[slot] != token) return NULL;
    r->hits++;
    return r->ex + (size_t)slot * r->layers * r->k;
}
