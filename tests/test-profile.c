/*
 * tests/test-profile.c — tree auto's profile cache (spec/profile.c): the
 * text format round-trips; hostile or foreign files are misses that load
 * nothing; the key follows the model file (a touched file is another key);
 * save/load through SPRIG_CACHE_DIR (and "off" disables it); and a second
 * tree-auto session on the same model and machine takes its verify times
 * from the cache instead of measuring them again.
 */
#include "test.h"
#include "sprig.h"
#include "spec/profile.h"
#include "tensor/matmul.h"

#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

static void test_format_and_parse(void)
{
    double prof[SPRIG_TREE_MAX + 1] = { 0 }, back[SPRIG_TREE_MAX + 1];
    int64_t samples[SPRIG_TREE_MAX + 1] = { 0 }, sback[SPRIG_TREE_MAX + 1];
    prof[1] = 19.5;
    prof[4] = 27.25;
    prof[16] = 58.125;
    samples[1] = 2;
    samples[4] = 37;
    samples[16] = 1;
    char buf[4096];
    int n = sprig_profile_format(prof, samples, "model=x cpu=y", buf, sizeof buf);
    CHECK(n > 0 && (size_t)n < sizeof buf);
    CHECK(strstr(buf, "t 4 27.25 37\n") != NULL);
    CHECK_EQ_INT(sprig_profile_parse(buf, (size_t)n, "model=x cpu=y", back, sback), 16);
    for (int i = 0; i <= SPRIG_TREE_MAX; i++) CHECK(back[i] == prof[i] && sback[i] == samples[i]);
    CHECK_EQ_INT(sprig_profile_parse(buf, (size_t)n, "model=x cpu=z", back, sback), 0);   /* another machine */
    CHECK_EQ_INT(sprig_profile_parse(buf, (size_t)n - 1, "model=x cpu=y", back, sback), 0);   /* cut off */
    static const char *const bad[] = {
        "sprig-profile 1\nkey k\nt 1 2\n",          /* the version before sample counts */
        "sprig-profile 3\nkey k\nt 1 2 1\n",        /* another version */
        "sprig-profile 2\nkey k\nt 4 2 1\nt 2 3 1\n",   /* out of order */
        "sprig-profile 2\nkey k\nt 1 2 1\nt 1 3 1\n",   /* repeated */
        "sprig-profile 2\nkey k\nt 65 2 1\n",       /* past SPRIG_TREE_MAX */
        "sprig-profile 2\nkey k\nt 0 2 1\n",
        "sprig-profile 2\nkey k\nt 2 -1 1\n",
        "sprig-profile 2\nkey k\nt 2 nan 1\n",
        "sprig-profile 2\nkey k\nt 2 inf 1\n",
        "sprig-profile 2\nkey k\nt 2 1e-9 1\n",
        "sprig-profile 2\nkey k\nt 2 3\n",          /* no sample count */
        "sprig-profile 2\nkey k\nt 2 3 0\n",        /* no samples */
        "sprig-profile 2\nkey k\nt 2 3 -4\n",
        "sprig-profile 2\nkey k\nt 2 3 99999999999999999999\n",   /* past 2^50 (and long long) */
        "sprig-profile 2\nkey k\nt 2 3 4 5\n",      /* trailing junk */
        "sprig-profile 2\nkey k\n",                 /* no sizes */
        "sprig-profile 2\nkey kk\nt 1 2 1\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int j = 0; j <= SPRIG_TREE_MAX; j++) back[j] = 7, sback[j] = 7;
        CHECKF(sprig_profile_parse(bad[i], strlen(bad[i]), "k", back, sback) == 0, "bad file %zu parsed", i);
        bool empty = true;
        for (int j = 0; j <= SPRIG_TREE_MAX; j++) empty &= back[j] == 0 && sback[j] == 0;
        CHECKF(empty, "bad file %zu loaded something", i);
    }
}

static void test_key_follows_the_file(void)
{
    const char *f = test_tmpfile("profile-model.bin");
    FILE *w = fopen(f, "wb");
    CHECK(w != NULL);
    if (!w) return;
    fputs("weights", w);
    fclose(w);
    char k1[SPRIG_PROFILE_KEY_MAX], k2[SPRIG_PROFILE_KEY_MAX], k3[SPRIG_PROFILE_KEY_MAX];
    CHECK(sprig_profile_key(f, "avx2", 2, k1, sizeof k1));
    CHECK(sprig_profile_key(f, "avx2", 2, k2, sizeof k2));
    CHECK_STR(k1, k2);
    CHECK(sprig_profile_key(f, "avx512", 2, k2, sizeof k2) && strcmp(k1, k2));   /* another kernel family */
    CHECK(sprig_profile_key(f, "avx2", 1, k2, sizeof k2) && strcmp(k1, k2));     /* another thread count */
    char rev[32];                                                                  /* the kernels' revision */
    snprintf(rev, sizeof rev, " rev=%d ", SPRIG_MM_SPEED_REV);
    CHECK(strstr(k1, rev) != NULL);
    char pfs[32];                                                                  /* the prefetch scheme */
    snprintf(pfs, sizeof pfs, " prefetch=%s ", sprig_prefetch_name());
    CHECK(strstr(k1, pfs) != NULL);
    struct timespec ts[2] = { { 1000000, 0 }, { 1000000, 0 } };
    CHECK(utimensat(AT_FDCWD, f, ts, 0) == 0);                                     /* the file changed */
    CHECK(sprig_profile_key(f, "avx2", 2, k3, sizeof k3) && strcmp(k1, k3));
    CHECK(!sprig_profile_key(test_tmpfile("no-such-model.bin"), "avx2", 2, k3, sizeof k3));
    CHECK(!sprig_profile_key(f, "avx2", 2, k3, 16));   /* does not fit */
}

static void test_save_and_load(void)
{
    const char *dir = test_tmpfile("profile-cache");
    setenv("SPRIG_CACHE_DIR", dir, 1);
    sprig_shape a, b;
    sprig_shape_init(&a);
    sprig_shape_init(&b);
    sprig_shape_cost(&a, 1, 10, true);   /* a profile */
    sprig_shape_cost(&a, 2, 11, true);
    sprig_shape_cost(&a, 4, 14, true);
    for (int i = 0; i < 5; i++) sprig_shape_cost(&a, 4, 13 + i % 2, false);   /* and five rounds of 4 rows: 13 14 13 14 13 */
    char path[4096];
    CHECK(sprig_profile_save(&a, "the key", path, sizeof path));
    CHECK(strncmp(path, dir, strlen(dir)) == 0);
    CHECK(!sprig_profile_load(&b, "the key", 8, path, sizeof path));   /* holds sizes up to 4 only */
    CHECK(!b.profiled);
    CHECK(!sprig_profile_load(&b, "another key", 4, path, sizeof path));
    CHECK(sprig_profile_load(&b, "the key", 4, path, sizeof path));
    CHECK(b.profiled);
    /* the rounds' median and every sample behind it, the profile's own where no round ran */
    CHECK(sprig_costs_median(&b.cost, 4) == 13 && sprig_costs_samples(&b.cost, 4) == 6);
    CHECK(sprig_costs_median(&b.cost, 2) == 11 && sprig_costs_samples(&b.cost, 2) == 1 && sprig_costs_median(&b.cost, 3) == 0);
    CHECK(!sprig_costs_fresh(&b.cost, 4));   /* loaded: provisional until this session's own round of 4 rows */
    sprig_shape_cost(&b, 4, 20, false);
    CHECK(sprig_costs_median(&b.cost, 4) == 20 && sprig_costs_samples(&b.cost, 4) == 7);
    setenv("SPRIG_CACHE_DIR", "off", 1);
    CHECK(!sprig_profile_path("the key", path, sizeof path));
    CHECK(!sprig_profile_save(&a, "the key", path, sizeof path));
    unsetenv("SPRIG_CACHE_DIR");
}

/* A server's slots save the same key from several threads at once: every
 * save lands whole (each writes its own temporary file), so the file always
 * parses */
static void *save_many(void *arg)
{
    const sprig_shape *a = arg;
    char path[4096];
    for (int i = 0; i < 200; i++)
        if (!sprig_profile_save(a, "the shared key", path, sizeof path)) return (void *)1;
    return NULL;
}

static void test_concurrent_saves(void)
{
    setenv("SPRIG_CACHE_DIR", test_tmpfile("profile-threads"), 1);
    static sprig_shape a;
    sprig_shape_init(&a);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&a, n, 10.0 + n, true);   /* a long file: 64 lines */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, save_many, &a) == 0);
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        CHECK(r == NULL);
    }
    static sprig_shape b;
    sprig_shape_init(&b);
    char path[4096];
    CHECK(sprig_profile_load(&b, "the shared key", SPRIG_TREE_MAX, path, sizeof path));
    CHECK(sprig_costs_median(&b.cost, SPRIG_TREE_MAX) == 10.0 + SPRIG_TREE_MAX);
    unsetenv("SPRIG_CACHE_DIR");
}

/* Two tree-auto sessions: the first measures and writes the cache, the second reads it (a planted
 * profile with the same key stays as planted: nothing measured it again) */
static void test_second_session_reads_the_cache(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpfile("profile-session"));
    setenv("SPRIG_CACHE_DIR", dir, 1);
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 1;
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = test_shared("models/stories-draft.gguf");
    p.tree = SPRIG_TREE_ON;
    p.tree_auto = true;
    p.tree_width = 2;
    p.draft_max = 4;
    p.tree_branches = 3;
    char key[SPRIG_PROFILE_KEY_MAX], path[4096];
    for (int run = 0; run < 2; run++) {
        sprig_session *s = NULL;
        CHECKF(sprig_session_create(m, &p, &s, &err) == SPRIG_OK, "%s", err.msg);
        if (!s) break;
        CHECK(sprig_session_generate(s, "Once upon a time", 16, 16, NULL, NULL, &err) == SPRIG_OK);
        struct sprig_stats st;
        sprig_session_get_stats(s, &st);
        CHECK(sprig_profile_key(test_shared("models/stories260K.gguf"), st.kernels, st.n_threads, key, sizeof key));
        CHECK(sprig_profile_path(key, path, sizeof path));
        sprig_session_free(s);
        FILE *f = fopen(path, "rb");
        CHECKF(f != NULL, "run %d: no cache file %s", run, path);
        char buf[8192];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        double prof[SPRIG_TREE_MAX + 1];
        int64_t samples[SPRIG_TREE_MAX + 1];
        const int last = sprig_profile_parse(buf, n, key, prof, samples);
        CHECK(last >= 8);   /* the profile's sizes up to the block + branches = 8, and any size a round verified */
        if (run == 0) {
            CHECKF(st.profile_ms > 0, "run 0 did not profile");
            /* plant a profile for the same key, each size as if 1000 times measured: the next session must read
               it, not re-measure; what its rounds measure replaces the planted value at their sizes only */
            for (int i = 1; i <= SPRIG_TREE_MAX; i++) prof[i] = prof[i] > 0 ? 1000.0 + i : 0, samples[i] = prof[i] > 0 ? 1000 : 0;
            int len = sprig_profile_format(prof, samples, key, buf, sizeof buf);
            f = fopen(path, "wb");
            CHECK(f && fwrite(buf, 1, (size_t)len, f) == (size_t)len);
            if (f) fclose(f);
        } else {
            CHECKF(st.profile_ms == 0, "run 1 measured the profile again (%.1f ms)", st.profile_ms);
            int kept = 0, learned = 0;
            for (int i = 1; i <= 8; i++) {
                if (prof[i] == 1000.0 + i) CHECKF(samples[i] == 1000, "T(%d) planted, %lld samples", i, (long long)samples[i]);
                kept += prof[i] == 1000.0 + i;
                learned += prof[i] > 0 && prof[i] < 1000.0 && samples[i] > 1000;   /* a round's time, the planted count kept */
            }
            CHECKF(kept >= 1 && learned >= 1, "planted sizes kept %d, learned from the rounds %d", kept, learned);
        }
    }
    sprig_model_free(m);
    unsetenv("SPRIG_CACHE_DIR");
}

int main(void)
{
    RUN(test_format_and_parse);
    RUN(test_key_follows_the_file);
    RUN(test_save_and_load);
    RUN(test_concurrent_saves);
    RUN(test_second_session_reads_the_cache);
    return test_summary("test-profile");
}
