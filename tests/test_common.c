/*
 * tests/test_common.c — implementation of tests/test.h (linked into every test).
 */
#include "test.h"

#include <stdarg.h>
#include <unistd.h>
#include <sys/stat.h>

int test_failures = 0;
int test_checks = 0;

static char g_tmp[512];

static void rm_tmp(void)
{
    if (!g_tmp[0] || getenv("SPRIG_TEST_KEEP")) return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", g_tmp);
}

int test_summary(const char *name)
{
    if (test_failures) {
        fprintf(stderr, "%s: FAILED %d of %d checks\n", name, test_failures, test_checks);
        return 1;
    }
    fprintf(stderr, "%s: ok (%d checks)\n", name, test_checks);
    return 0;
}

const char *test_shared(const char *rel)
{
    static char buf[4][1024];
    static int k;
    const char *base = getenv("SPRIG_SHARED");
    if (!base || !*base) base = "../shared";
    char *b = buf[k++ & 3];
    snprintf(b, 1024, "%s/%s", base, rel);
    return b;
}

bool test_file_exists(const char *path) { return access(path, R_OK) == 0; }

bool test_text_collect(void *user, const char *text, size_t len)
{
    struct test_text *b = user;
    if (b->n + len + 1 > b->cap) {
        b->cap = (b->n + len + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, text, len);
    b->n += len;
    b->p[b->n] = 0;
    return true;
}

char *test_read_file(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = len >= 0 ? malloc((size_t)len + 1) : NULL;
    *n = t ? fread(t, 1, (size_t)len, f) : 0;
    if (t) t[*n] = 0;
    fclose(f);
    return t;
}

const char *test_tmpdir(void)
{
    if (!g_tmp[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(g_tmp, sizeof g_tmp, "%s/sprig-test-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(g_tmp)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(rm_tmp);
    }
    return g_tmp;
}

const char *test_tmpfile(const char *name)
{
    static char buf[8][1024];
    static int k;
    char *b = buf[k++ & 7];
    snprintf(b, 1024, "%s/%s", test_tmpdir(), name);
    return b;
}

bool test_quick(void)
{
    const char *q = getenv("SPRIG_TEST_QUICK");
    return q && *q && strcmp(q, "0");
}
