/*
 * tests/vectors.c — see vectors.h.
 */
#include "vectors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) { o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63)); return 3; }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static char *json_unquote(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(n + 1), *p = o;
    if (!o) return NULL;
    if (*s != '"') { memcpy(o, s, n + 1); return o; }
    s++;
    while (*s && *s != '"') {
        if (*s != '\\') { *p++ = *s++; continue; }
        s++;
        switch (*s) {
        case 'n': *p++ = '\n'; s++; break;
        case 't': *p++ = '\t'; s++; break;
        case 'r': *p++ = '\r'; s++; break;
        case 'b': *p++ = '\b'; s++; break;
        case 'f': *p++ = '\f'; s++; break;
        case 'u': {
            unsigned cp = (unsigned)strtoul((char[]){ s[1], s[2], s[3], s[4], 0 }, NULL, 16);
            s += 5;
            if (cp >= 0xD800 && cp < 0xDC00 && s[0] == '\\' && s[1] == 'u') {
                unsigned lo = (unsigned)strtoul((char[]){ s[2], s[3], s[4], s[5], 0 }, NULL, 16);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            }
            p += put_utf8(p, cp);
            break;
        }
        default: *p++ = *s++; break;
        }
    }
    *p = 0;
    return o;
}

int vec_load(const char *path, struct vec_file *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "vectors: cannot open %s\n", path); return -1; }
    static char line[1 << 16];
    struct vec_case *cur = NULL;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (line[0] == '#') continue;
        if (!len) { cur = NULL; continue; }
        char *sp = strchr(line, ' ');
        const char *rest = sp ? sp + 1 : "";
        if (sp) *sp = 0;
        if (!strcmp(line, "case")) {
            out->cases = realloc(out->cases, (size_t)(out->n_cases + 1) * sizeof *out->cases);
            cur = &out->cases[out->n_cases++];
            memset(cur, 0, sizeof *cur);
            cur->index = atoi(rest);
            continue;
        }
        if (!cur || cur->n_fields == VEC_MAX_FIELDS) continue;
        struct vec_field *fl = &cur->f[cur->n_fields++];
        size_t kl = strnlen(line, sizeof fl->key - 1);
        memcpy(fl->key, line, kl);
        fl->key[kl] = 0;
        fl->text = json_unquote(rest);
        fl->n = -1;
        if (isdigit((unsigned char)rest[0])) {
            char *end;
            long n = strtol(rest, &end, 10);
            if (*end == ' ' && n > 0) {
                fl->n = (int)n;
                fl->ids = calloc((size_t)n, sizeof *fl->ids);
                fl->vals = calloc((size_t)n, sizeof *fl->vals);
                const char *q = end;
                for (long i = 0; i < n; i++) {
                    char *e2;
                    double v = strtod(q, &e2);
                    fl->vals[i] = (float)v;
                    fl->ids[i] = (int32_t)v;
                    q = e2;
                }
            } else if (*end == 0) {
                fl->vals = calloc(1, sizeof *fl->vals);
                fl->ids = calloc(1, sizeof *fl->ids);
                fl->vals[0] = (float)strtod(rest, NULL);
                fl->ids[0] = (int32_t)n;
            }
        }
    }
    fclose(f);
    return 0;
}

void vec_free(struct vec_file *v)
{
    for (int i = 0; i < v->n_cases; i++)
        for (int j = 0; j < v->cases[i].n_fields; j++) {
            free(v->cases[i].f[j].text);
            free(v->cases[i].f[j].ids);
            free(v->cases[i].f[j].vals);
        }
    free(v->cases);
    memset(v, 0, sizeof *v);
}

const struct vec_field *vec_get(const struct vec_case *c, const char *key)
{
    for (int i = 0; i < c->n_fields; i++)
        if (!strcmp(c->f[i].key, key)) return &c->f[i];
    return NULL;
}
