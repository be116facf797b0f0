/*
 * base/mmap — read-only whole-file mapping.
 *
 * Model files are mapped, never read into the heap: tensors are views into
 * the mapping. Empty files and non-regular files are refused by name.
 */
#ifndef SPRIG_BASE_MMAP_H
#define SPRIG_BASE_MMAP_H

#include "base/err.h"

typedef struct sprig_map {
    const uint8_t *data;
    size_t size;
} sprig_map;

sprig_status sprig_map_file(const char *path, sprig_map *m, sprig_error *err);
void         sprig_unmap(sprig_map *m);

/* Drop the whole pages of [p, p + len) (inside a mapping made here) from the
 * resident set: a later read maps them from the file again. For file bytes
 * that were copied (packed weights), so the copy is not counted twice. */
void sprig_map_drop(const void *p, size_t len);

/* Read a whole (small) file into a malloc'd buffer, NUL-terminated. */
sprig_status sprig_read_file(const char *path, char **out, size_t *len, size_t max_len, sprig_error *err);

#endif
