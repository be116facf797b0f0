/*
 * base/mmap — see mmap.h.
 */
#include "base/mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

sprig_status sprig_map_file(const char *path, sprig_map *m, sprig_error *err)
{
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sprig_err(err, SPRIG_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sprig_err(err, SPRIG_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sprig_err(err, SPRIG_E_IO, "%s: not a regular file", path);
    }
    if (st.st_size <= 0) {
        close(fd);
        return sprig_err(err, SPRIG_E_FORMAT, "%s: file is empty", path);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return sprig_err(err, SPRIG_E_IO, "%s: mmap failed: %s", path, strerror(e));
    m->data = p;
    m->size = (size_t)st.st_size;
    return SPRIG_OK;
}

void sprig_unmap(sprig_map *m)
{
    if (m && m->data) munmap((void *)m->data, m->size);
    if (m) { m->data = NULL; m->size = 0; }
}

sprig_status sprig_read_file(const char *path, char **out, size_t *len, size_t max_len, sprig_error *err)
{
    *out = NULL;
    if (len) *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return sprig_err(err, SPRIG_E_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { fclose(f); return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); }
    for (;;) {
        if (n == cap) {
            if (cap >= max_len) {
                free(buf);
                fclose(f);
                return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: larger than the limit of %zu bytes", path, max_len);
            }
            cap = cap * 2 > max_len ? max_len : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) { free(buf); fclose(f); return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return sprig_err(err, SPRIG_E_IO, "%s: read error", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return SPRIG_OK;
}

void sprig_map_drop(const void *p, size_t len)
{
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!p || !pg) return;
    uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1), b = ((uintptr_t)p + len) & ~(pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);   /* advice: a failure changes nothing */
}
