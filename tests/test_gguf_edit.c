/*
 * tests/test_gguf_edit.c — see test_gguf_edit.h.
 */
#include "test.h"
#include "test_gguf_edit.h"
#include "gguf/gguf.h"
#include "model/model.h"

const char *test_gguf_with_key(const char *src, const char *name, const struct test_key_edit *e)
{
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(src, &err);
    if (!g) { CHECKF(g, "%s", err.msg); return NULL; }
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++)
        if (strcmp(sprig_gguf_kv_key(g, i), e->key)) CHECK(sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK);
    if (e->n_arr) CHECK(sprig_gguf_w_arr(w, e->key, e->vtype, e->value, (uint64_t)e->n_arr, &err) == SPRIG_OK);
    else CHECK(sprig_gguf_w_scalar(w, e->key, e->vtype, e->value, &err) == SPRIG_OK);
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        CHECK(sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == SPRIG_OK);
    }
    const char *path = test_tmpfile(name);
    CHECKF(sprig_gguf_writer_write(w, path, &err) == SPRIG_OK, "%s", err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    return path;
}

void test_expect_load_fails(const char *src, const char *name, const struct test_key_edit *e, const char *needle)
{
    const char *path = test_gguf_with_key(src, name, e);
    if (!path) return;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(path, &m, &err);
    CHECKF(st != SPRIG_OK && m == NULL, "%s: loaded", name);
    CHECKF(strstr(err.msg, needle) != NULL, "%s: message '%s' should name '%s'", name, err.msg, needle);
    sprig_model_free(m);
}
