/*
 * model/band — the sliding-window band of a local attention layer, and its
 * intersection with a caller's mask.
 *
 * A sliding layer of window W lets the query at position p see the key at
 * position q only when p - W < q <= p. A forward of n rows after len cached
 * tokens gives each row its position pos[i] (a tree's rows: len + depth).
 * The layer reads its history [first, len) (first: the oldest slot it still
 * holds — the kv view's `first`; key j of the history is at position
 * first + j) and then the block's own n rows at positions pos[0..n). The
 * band is a property of positions, not of slots, so a tree node's key is
 * banded by its depth position.
 *
 * The caller's mask is additive, [n][len + n] (0 / -1e9), over the whole
 * history. The layer's mask is [n][(len - first) + n]: the caller's columns
 * for the slots it holds, intersected with the band by element-wise minimum
 * (-1e9 outside the band). A row always keeps its own key (distance 0), so
 * no row ends all-blocked when the caller lets it see itself. Without a
 * caller mask the layer's mask is causal (block row i sees block rows
 * t <= i) and banded.
 *
 * sprig_band_needed says whether the band can block anything at all for a
 * forward (some key at or below some row's position minus W): when it
 * cannot and the layer holds the whole history (first == 0), a caller mask
 * is used as it is and no mask is built — the band only acts where the two
 * can disagree.
 */
#ifndef SPRIG_MODEL_BAND_H
#define SPRIG_MODEL_BAND_H

#include <stdbool.h>
#include <stdint.h>

#define SPRIG_BAND_BLOCKED (-1e9f)

/* Whether the band can block a key for these rows: the oldest key the layer
 * reads (position first, or the smallest block position when the history is
 * empty) is at or below the largest row position minus the window. */
bool sprig_band_needed(int window, int first, int len, const int32_t *pos, int n);

/* out[n][(len - first) + n]: min(caller, band), caller [n][len + n] or NULL
 * (causal). */
void sprig_band_mask(float *out, const float *caller, int window, int first, int len, const int32_t *pos, int n);

#endif
