/*
 * tests/vectors — reader for the reference vector files in
 * ../shared/models/vectors/: `#` comments, `case i` starts a case, a blank
 * line ends it, other lines are `key value...`; id lists `key N ids...`,
 * float lists `key N values...`, text fields JSON strings.
 */
#ifndef SPRIG_TEST_VECTORS_H
#define SPRIG_TEST_VECTORS_H

#include <stdint.h>
#include <stddef.h>

#define VEC_MAX_FIELDS 16

struct vec_field {
    char key[32];
    char *text;        /* decoded JSON string, or the raw rest of the line */
    int n;             /* list length (ids/floats) or -1 */
    int32_t *ids;      /* when the list parsed as integers */
    float *vals;       /* the list as floats */
};

struct vec_case {
    int index;
    int n_fields;
    struct vec_field f[VEC_MAX_FIELDS];
};

struct vec_file {
    int n_cases;
    struct vec_case *cases;
};

/* Parse; returns 0 on success, -1 on failure (message on stderr). */
int  vec_load(const char *path, struct vec_file *out);
void vec_free(struct vec_file *v);
const struct vec_field *vec_get(const struct vec_case *c, const char *key);

#endif
