/*
 * tests/test_session.h — one generation through the public API for the
 * speculation tests: the ids it produced and the statistics that prove
 * which path ran. Shared so every spec == plain test drives sessions alike.
 */
#ifndef SPRIG_TEST_SESSION_H
#define SPRIG_TEST_SESSION_H

#include "sprig.h"

#include <stdbool.h>
#include <stdint.h>

struct test_run { int32_t *ids; int n; struct sprig_stats st; };

/* Create a session with p, generate n tokens from prompt, keep the ids
 * (malloc'd: free r->ids) and the statistics; a failure is a failed check. */
bool test_run_session(const sprig_model *m, const struct sprig_session_params *p, const char *prompt, int n, struct test_run *r);

/* The first step where a and b differ, or -1 when they are equal. */
int test_first_diff(const struct test_run *a, const struct test_run *b);

#endif
