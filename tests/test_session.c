/*
 * tests/test_session.c — see test_session.h.
 */
#include "test.h"
#include "test_session.h"

bool test_run_session(const sprig_model *m, const struct sprig_session_params *p, const char *prompt, int n, struct test_run *r)
{
    sprig_error err = { 0 };
    sprig_session *s = NULL;
    memset(r, 0, sizeof *r);
    sprig_status rc = sprig_session_create(m, p, &s, &err);
    CHECKF(rc == SPRIG_OK, "%s", err.msg);
    if (rc) return false;
    rc = sprig_session_generate(s, prompt, strlen(prompt), n, NULL, NULL, &err);
    CHECKF(rc == SPRIG_OK, "%s", err.msg);
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    sprig_session_get_stats(s, &r->st);
    r->n = o.n_tokens;
    r->ids = malloc(sizeof(int32_t) * (size_t)(o.n_tokens + 1));
    if (r->ids) memcpy(r->ids, o.tokens, sizeof(int32_t) * (size_t)o.n_tokens);
    CHECK(r->ids != NULL);
    sprig_session_free(s);
    return rc == SPRIG_OK && r->ids;
}

int test_first_diff(const struct test_run *a, const struct test_run *b)
{
    const int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n; i++)
        if (a->ids[i] != b->ids[i]) return i;
    return a->n == b->n ? -1 : n;
}
