/*
 * tests/test_gguf_edit.h — a GGUF copied with one key (re)written, for the
 * tests that feed the loader bad or unusual hyper-parameters, and the check
 * that such a file is refused with a message naming the key.
 */
#ifndef SPRIG_TEST_GGUF_EDIT_H
#define SPRIG_TEST_GGUF_EDIT_H

/* One key to (re)write: a scalar of type vtype, or an array of n_arr elements. */
struct test_key_edit {
    const char *key;
    int vtype;              /* SPRIG_GGUF_* of the scalar, or of the array's elements */
    const void *value;
    int n_arr;              /* > 0: an array of n_arr elements at value */
};

/* src copied to the temp file `name` with e applied (every tensor as is);
 * its path, or NULL after a failed check. */
const char *test_gguf_with_key(const char *src, const char *name, const struct test_key_edit *e);

/* The edited copy must fail to load, with needle in the message. */
void test_expect_load_fails(const char *src, const char *name, const struct test_key_edit *e, const char *needle);

#endif
