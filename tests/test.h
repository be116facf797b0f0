/*
 * tests/test.h — the test harness: a handful of CHECK macros that report
 * file:line, a pass/fail tally, fixture lookup and temp folders.
 *
 * Each tests/test-*.c is its own binary; tests/run.sh runs them all. A test
 * binary exits non-zero if any check failed. Fixtures are read from
 * $SPRIG_SHARED (default ../shared, beside the repository), never written.
 * SPRIG_TEST_QUICK=1 (set by `make asan`) asks long tests to shrink.
 */
#ifndef SPRIG_TEST_H
#define SPRIG_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

extern int test_failures;
extern int test_checks;

#define CHECK(cond) do { test_checks++; if (!(cond)) { test_failures++; \
    fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECKF(cond, ...) do { test_checks++; if (!(cond)) { test_failures++; \
    fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); test_checks++; \
    if (_a != _b) { test_failures++; fprintf(stderr, "  FAIL %s:%d: %s == %s (%lld vs %lld)\n", \
    __FILE__, __LINE__, #a, #b, _a, _b); } } while (0)

#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b); test_checks++; \
    if (!(fabs(_a - _b) <= (tol))) { test_failures++; fprintf(stderr, \
    "  FAIL %s:%d: %s ~ %s (%.9g vs %.9g, tol %g)\n", __FILE__, __LINE__, #a, #b, _a, _b, (double)(tol)); } } while (0)

#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); test_checks++; \
    if (!_a || !_b || strcmp(_a, _b)) { test_failures++; fprintf(stderr, \
    "  FAIL %s:%d: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)

/* Run one test function with a banner. */
#define RUN(fn) do { int _f = test_failures; fprintf(stderr, "- %s\n", #fn); fn(); \
    if (test_failures != _f) fprintf(stderr, "  (%d failed in %s)\n", test_failures - _f, #fn); } while (0)

/* Print the summary and return the exit status for main(). */
int test_summary(const char *name);

/* Path of a file under the shared fixtures folder (static buffer, valid until next call). */
const char *test_shared(const char *rel);

/* Does a file exist and is readable? */
bool test_file_exists(const char *path);

/* Streamed text gathered into one NUL-terminated buffer (a sprig_text_fn: pass a zeroed struct test_text as
 * user; free p after). */
struct test_text { char *p; size_t n, cap; };
bool test_text_collect(void *user, const char *text, size_t len);

/* A whole file, NUL-terminated, its length in *n (malloc'd; NULL when it cannot be read). */
char *test_read_file(const char *path, size_t *n);

/* A fresh temp folder for this test binary (removed at exit); returns its path. */
const char *test_tmpdir(void);

/* Path of a file in the temp folder (static rotating buffers). */
const char *test_tmpfile(const char *name);

/* true when SPRIG_TEST_QUICK is set (sanitizer runs). */
bool test_quick(void);

#endif
