/*
 * base/mem — see mem.h.
 */
#include "base/mem.h"
#include "base/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *sprig_calloc_aligned(size_t n, size_t size)
{
    size_t bytes;
    if (sprig_mul_ovf(n, size, &bytes)) return NULL;
    if (bytes == 0) bytes = SPRIG_ALIGN;
    size_t rounded;
    if (sprig_add_ovf(bytes, SPRIG_ALIGN - 1, &rounded)) return NULL;
    rounded &= ~(size_t)(SPRIG_ALIGN - 1);
    void *p = aligned_alloc(SPRIG_ALIGN, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

void sprig_free_aligned(void *p) { free(p); }

bool sprig_grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 256;
    while (c < need) {
        if (c > SIZE_MAX / 2) return false;
        c *= 2;
    }
    char *n = realloc(*buf, c);
    if (!n) return false;
    *buf = n;
    *cap = c;
    return true;
}

double sprig_mem_available(void)
{
    const char *o = getenv("SPRIG_MEM_AVAILABLE");
    if (o && *o) {
        char *end;
        const double v = strtod(o, &end);
        if (*end == 0 && v >= 0) return v;
    }
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        double kb = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
        fclose(f);
        if (kb > 0) return kb * 1024.0;
    }
    const double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    return phys > 0 ? phys : 0;
}
