/*
 * tests/test-ngram.c — the prompt-lookup index: finds the most recent earlier
 * occurrence of the longest suffix, continues periodically, offers an
 * alternative continuation, never matches the suffix with itself, and agrees
 * with a brute-force search on random histories.
 */
#include "test.h"
#include "spec/ngram.h"
#include "base/rng.h"

static void test_repeats_what_followed(void)
{
    sprig_ngram *g = sprig_ngram_create(1, 3, 100, NULL);
    int32_t h[] = { 5, 6, 7, 8, 9, 5, 6, 7 };
    sprig_ngram_push(g, h, 8);
    int32_t out[4];
    CHECK_EQ_INT(sprig_ngram_draft(g, out, 4, NULL, NULL), 4);
    /* suffix 5 6 7 occurred at 0..2, followed by 8 9 5 6 */
    CHECK_EQ_INT(out[0], 8);
    CHECK_EQ_INT(out[1], 9);
    CHECK_EQ_INT(out[2], 5);
    CHECK_EQ_INT(out[3], 6);
    sprig_ngram_free(g);
}

static void test_no_earlier_occurrence_gives_nothing(void)
{
    sprig_ngram *g = sprig_ngram_create(2, 3, 100, NULL);
    int32_t h[] = { 1, 2, 3, 4, 5 };
    sprig_ngram_push(g, h, 5);
    int32_t out[4];
    CHECK_EQ_INT(sprig_ngram_draft(g, out, 4, NULL, NULL), 0);
    sprig_ngram_free(g);
}

static void test_periodic_continuation(void)
{
    sprig_ngram *g = sprig_ngram_create(1, 2, 100, NULL);
    int32_t h[] = { 3, 4, 3, 4 };
    sprig_ngram_push(g, h, 4);
    int32_t out[5];
    CHECK_EQ_INT(sprig_ngram_draft(g, out, 5, NULL, NULL), 5);
    int32_t want[5] = { 3, 4, 3, 4, 3 };
    CHECK(memcmp(out, want, sizeof want) == 0);
    sprig_ngram_free(g);
}

static void test_longest_suffix_wins_and_alternative(void)
{
    sprig_ngram *g = sprig_ngram_create(1, 3, 100, NULL);
    /* "1 2 x" appears with x = 7, then "9 1 2 8", then the suffix "9 1 2" */
    int32_t h[] = { 1, 2, 7, 0, 9, 1, 2, 8, 0, 9, 1, 2 };
    sprig_ngram_push(g, h, 12);
    int32_t out[2], alt;
    int at;
    CHECK_EQ_INT(sprig_ngram_draft(g, out, 2, &alt, &at), 2);
    CHECK_EQ_INT(out[0], 8);        /* longest match "9 1 2" -> 8 */
    CHECK_EQ_INT(alt, -1);          /* "9 1 2" only ever continued with 8 */
    sprig_ngram_free(g);
    g = sprig_ngram_create(1, 2, 100, NULL);
    sprig_ngram_push(g, h, 12);
    CHECK_EQ_INT(sprig_ngram_draft(g, out, 2, &alt, &at), 2);
    CHECK_EQ_INT(out[0], 8);        /* most recent "1 2" -> 8 */
    CHECK_EQ_INT(alt, 7);           /* the earlier "1 2" -> 7 */
    CHECK_EQ_INT(at, 0);
    sprig_ngram_free(g);
}

/* brute force: longest n in [lo,hi], most recent earlier end j */
static int brute(const int32_t *h, int L, int lo, int hi, int32_t *out, int k)
{
    for (int n = hi < L - 1 ? hi : L - 1; n >= lo; n--)
        for (int j = L - 2; j >= n - 1; j--) {
            if (memcmp(h + j - n + 1, h + L - n, (size_t)n * 4)) continue;
            int32_t seq[600];
            memcpy(seq, h, (size_t)L * 4);
            for (int m = 0; m < k; m++) { seq[L + m] = seq[j + 1 + m]; out[m] = seq[L + m]; }
            return k;
        }
    return 0;
}

static void test_matches_brute_force(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 7);
    for (int rep = 0; rep < 200; rep++) {
        int L = 1 + (int)(sprig_rng_u64(&r) % 300);
        int V = 2 + (int)(sprig_rng_u64(&r) % 6);
        int32_t h[300];
        for (int i = 0; i < L; i++) h[i] = (int32_t)(sprig_rng_u64(&r) % (uint64_t)V);
        sprig_ngram *g = sprig_ngram_create(1, 4, 300, NULL);
        for (int i = 0; i < L; i++) sprig_ngram_push(g, h + i, 1);
        int32_t a[6], b[6];
        int na = sprig_ngram_draft(g, a, 6, NULL, NULL), nb = brute(h, L, 1, 4, b, 6);
        CHECK_EQ_INT(na, nb);
        if (na == nb && na) CHECK(memcmp(a, b, (size_t)na * 4) == 0);
        sprig_ngram_free(g);
    }
}

static void test_bad_arguments(void)
{
    sprig_error err;
    CHECK(sprig_ngram_create(0, 3, 10, &err) == NULL);
    CHECK(strstr(err.msg, "n-gram") != NULL);
    CHECK(sprig_ngram_create(3, 2, 10, &err) == NULL);
    CHECK(sprig_ngram_create(1, 99, 10, &err) == NULL);
    CHECK(sprig_ngram_create(1, 2, 0, &err) == NULL);
    sprig_ngram *g = sprig_ngram_create(1, 2, 4, &err);
    int32_t h[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    sprig_ngram_push(g, h, 8);            /* past capacity: ignored */
    CHECK_EQ_INT(sprig_ngram_len(g), 4);
    sprig_ngram_free(g);
}

int main(void)
{
    RUN(test_repeats_what_followed);
    RUN(test_no_earlier_occurrence_gives_nothing);
    RUN(test_periodic_continuation);
    RUN(test_longest_suffix_wins_and_alternative);
    RUN(test_matches_brute_force);
    RUN(test_bad_arguments);
    return test_summary("test-ngram");
}
