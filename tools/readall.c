/*
 * tools/readall.c — read a whole file (or stdin) into memory, bounded.
 *
 * `sprig tokenize -f/--stdin` and `sprig bench tokenize --text FILE` take
 * text of any size up to the tokenizer's limit; the bytes are read exactly
 * (no newline handling, NUL bytes kept). The size is checked while reading,
 * so a FIFO or a growing file cannot push the buffer past the limit, and the
 * error says which file and why.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *cli_read_all(const char *path, size_t max, size_t *len, char *why, size_t why_cap)
{
    bool is_stdin = !path || !strcmp(path, "-");
    const char *name = is_stdin ? "<stdin>" : path;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "cannot open '%s': %s", name, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            snprintf(why, why_cap, "'%s': out of memory", name);
            break;
        }
        size_t want = cap - n, got = fread(buf + n, 1, want, f);
        n += got;
        if (n > max) {
            snprintf(why, why_cap, "'%s' is larger than the limit of %zu bytes", name, max);
            break;
        }
        if (got < want) {               /* fread stops short only at EOF or on an error */
            if (ferror(f)) {
                snprintf(why, why_cap, "cannot read '%s': %s", name, strerror(errno));
                break;
            }
            if (!is_stdin) fclose(f);
            buf[n] = 0;
            *len = n;
            return buf;
        }
        /* full: grow (to at most max + 1, enough to see that the file is too large) */
        size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
        if (ncap <= cap) ncap = cap + 1;
        char *nb = realloc(buf, ncap + 1);
        if (!nb) free(buf);
        buf = nb;
        cap = ncap;
    }
    free(buf);
    if (!is_stdin) fclose(f);
    return NULL;
}
