/*
 * base/mem — aligned allocation with overflow-checked sizes.
 *
 * Kernels want 64-byte aligned buffers (one cache line, one AVX-512
 * register). Every size that comes from a file or an argument goes through
 * the checked helpers so a hostile count cannot wrap an allocation.
 */
#ifndef SPRIG_BASE_MEM_H
#define SPRIG_BASE_MEM_H

#include <stdbool.h>
#include <stddef.h>

#define SPRIG_ALIGN 64

/* 64-byte aligned, zero-filled; NULL on failure or when n*size overflows. */
void *sprig_calloc_aligned(size_t n, size_t size);
void  sprig_free_aligned(void *p);

/* A growing byte buffer: make *buf (capacity *cap) hold at least need
 * bytes, doubling from 256; false (the buffer untouched) when out of
 * memory or the size would overflow. */
bool sprig_grow(char **buf, size_t *cap, size_t need);

/* Bytes of memory available now (/proc/meminfo's MemAvailable, else the
 * physical memory; 0 if unknown). SPRIG_MEM_AVAILABLE=BYTES overrides it
 * (to test the memory checks, or to keep a share of a machine free). */
double sprig_mem_available(void);

#endif
