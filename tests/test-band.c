/*
 * tests/test-band.c — the sliding-window band and its intersection with a
 * caller's mask (model/band.h):
 *   - below the window the caller's mask comes back unchanged (and the band
 *     is reported as not needed);
 *   - past the window an all-attend caller mask reduces to the band;
 *   - intersecting an already-banded mask again changes nothing;
 *   - a tree's keys are banded by their depth positions, history keys by
 *     their slots; a layer holding only [first, len) gets the caller's
 *     columns for those slots; no row ends all-blocked; without a caller
 *     mask the result is causal and banded.
 */
#include "test.h"
#include "model/band.h"

static bool all_blocked_row(const float *m, int w)
{
    for (int j = 0; j < w; j++)
        if (m[j] == 0.0f) return false;
    return true;
}

static void test_below_window_unchanged(void)
{
    /* 10 history slots + a 4-node tree (depths 0,1,1,2), window 32 */
    const int len = 10, n = 4, W = 32;
    const int32_t pos[4] = { 10, 11, 11, 12 };
    const int par[4] = { 0, 0, 0, 1 };
    float caller[4][14], out[4][14];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < len + n; j++) {
            bool vis = j < len;
            for (int t = i; !vis && j >= len; t = par[t]) {
                if (t == j - len) vis = true;
                if (t == 0) break;
            }
            caller[i][j] = vis ? 0.0f : SPRIG_BAND_BLOCKED;
        }
    CHECK(!sprig_band_needed(W, 0, len, pos, n));
    sprig_band_mask(&out[0][0], &caller[0][0], W, 0, len, pos, n);
    CHECK(memcmp(out, caller, sizeof out) == 0);
}

static void test_past_window_reduces_to_band(void)
{
    /* 100 history slots, a block of 6 rows at positions 100..105, window 8 */
    enum { LEN = 100, N = 6, W = 8 };
    int32_t pos[N];
    for (int i = 0; i < N; i++) pos[i] = LEN + i;
    static float caller[N][LEN + N], out[N][LEN + N], again[N][LEN + N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LEN + N; j++) caller[i][j] = 0.0f;   /* all attend */
    CHECK(sprig_band_needed(W, 0, LEN, pos, N));
    sprig_band_mask(&out[0][0], &caller[0][0], W, 0, LEN, pos, N);
    bool ok = true;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LEN + N; j++) {
            const int q = j < LEN ? j : pos[j - LEN];
            const bool in = q > pos[i] - W;
            ok &= out[i][j] == (in ? 0.0f : SPRIG_BAND_BLOCKED);
        }
    CHECK(ok);
    /* intersecting again: unchanged */
    sprig_band_mask(&again[0][0], &out[0][0], W, 0, LEN, pos, N);
    CHECK(memcmp(again, out, sizeof out) == 0);
}

static void test_tree_positions_and_held_history(void)
{
    /* a layer that holds slots [40, 60) of a 60-slot history; a tree of 5
     * nodes at depths 0,1,2,1,2 (positions 60..62), window 16 */
    enum { LEN = 60, FIRST = 40, N = 5, W = 16 };
    const int32_t pos[N] = { 60, 61, 62, 61, 62 };
    const int par[N] = { 0, 0, 1, 0, 3 };
    static float caller[N][LEN + N], out[N][LEN - FIRST + N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LEN + N; j++) {
            bool vis = j < LEN;
            for (int t = i; !vis && j >= LEN; t = par[t]) {
                if (t == j - LEN) vis = true;
                if (t == 0) break;
            }
            caller[i][j] = vis ? 0.0f : SPRIG_BAND_BLOCKED;
        }
    sprig_band_mask(&out[0][0], &caller[0][0], W, FIRST, LEN, pos, N);
    bool ok = true;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < LEN - FIRST; j++) {
            const int slot = FIRST + j;
            const bool in = slot > pos[i] - W;
            ok &= out[i][j] == (in ? caller[i][slot] : SPRIG_BAND_BLOCKED);
        }
        for (int t = 0; t < N; t++) ok &= out[i][LEN - FIRST + t] == caller[i][LEN + t];   /* block keys: depth <= 2 < W */
        ok &= !all_blocked_row(out[i], LEN - FIRST + N);
        ok &= out[i][LEN - FIRST + i] == 0.0f;   /* its own key */
    }
    CHECK(ok);
    /* slot 46 = position 62 - 16: outside for the depth-2 rows, inside for the root */
    CHECK(out[0][46 - FIRST] == 0.0f);
    CHECK(out[2][46 - FIRST] == SPRIG_BAND_BLOCKED);
    CHECK(out[2][47 - FIRST] == 0.0f);
}

static void test_causal_without_caller(void)
{
    enum { LEN = 20, N = 4, W = 6 };
    int32_t pos[N];
    for (int i = 0; i < N; i++) pos[i] = LEN + i;
    float out[N][LEN + N];
    sprig_band_mask(&out[0][0], NULL, W, 0, LEN, pos, N);
    bool ok = true;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < LEN + N; j++) {
            const int q = j < LEN ? j : pos[j - LEN];
            const bool vis = q <= pos[i] && q > pos[i] - W;
            ok &= out[i][j] == (vis ? 0.0f : SPRIG_BAND_BLOCKED);
        }
    CHECK(ok);
    /* a window of 1: each row sees itself only */
    sprig_band_mask(&out[0][0], NULL, 1, 0, LEN, pos, N);
    for (int i = 0; i < N; i++) {
        int vis = 0;
        for (int j = 0; j < LEN + N; j++) vis += out[i][j] == 0.0f;
        CHECK_EQ_INT(vis, 1);
        CHECK(out[i][LEN + i] == 0.0f);
    }
}

int main(void)
{
    RUN(test_below_window_unchanged);
    RUN(test_past_window_reduces_to_band);
    RUN(test_tree_positions_and_held_history);
    RUN(test_causal_without_caller);
    return test_summary("test-band");
}
