/*
 * api/pcache — the prompt cache file (`sprig run --prompt-cache FILE`,
 * sprig_session_save_cache / sprig_session_load_cache): the tokens a
 * session's caches hold and their stored key/value rows, so that the next run
 * whose prompt starts the same way computes only the rest.
 *
 * Layout (little-endian):
 *   "SPRIGPC\0" | u32 format version | u32 id length | id text
 *   | u32 sections | sections x { u32 n_tokens | i32 tokens[n_tokens]
 *                                | u32 n_layer | u64 row_bytes | rows }
 *   | u64 FNV-1a of every byte before it
 * rows: n_layer * n_tokens * row_bytes bytes (kv.h's sprig_kv_rows_save).
 * Section 0 is the target's cache; section 1, when present, the draft model's.
 *
 * The id text is "key=value" lines naming what the rows depend on: the
 * sprig version, the kernel family (a row's bits may differ between them),
 * the model's fingerprint and name, the KV mode and shape, the draft model's.
 * A file is used only when every line equals the running session's; the
 * refusal names the first line that differs.
 */
#ifndef SPRIG_API_PCACHE_H
#define SPRIG_API_PCACHE_H

#include "base/err.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SPRIG_PCACHE_VERSION 1
#define SPRIG_PCACHE_MAX_SECTIONS 2

typedef struct sprig_pcache_section {
    int n_tokens;
    const int32_t *tokens;      /* into the buffer (may be unaligned: read with memcpy) */
    int n_layer;
    uint64_t row_bytes;
    const uint8_t *rows;        /* n_layer * n_tokens * row_bytes bytes */
    size_t rows_len;
} sprig_pcache_section;

typedef struct sprig_pcache {
    uint32_t version;
    const char *id;             /* into the buffer, id_len bytes (not NUL-terminated) */
    size_t id_len;
    int n_sections;
    sprig_pcache_section sec[SPRIG_PCACHE_MAX_SECTIONS];
} sprig_pcache;

/* Check every length, count and the checksum of a whole file in memory;
 * SPRIG_E_FORMAT naming what is wrong (truncated, corrupted, too large). */
sprig_status sprig_pcache_parse(const void *buf, size_t len, sprig_pcache *out, sprig_error *err);
/* SPRIG_OK when the file's id text equals `id`, else SPRIG_E_REFUSED naming
 * the first line that differs (both values). */
sprig_status sprig_pcache_match(const sprig_pcache *pc, const char *id, const char *path, sprig_error *err);

/* Writing: begin (magic, version, id, section count), then per section its
 * tokens and the caller's rows (sprig_kv_rows_save through the writer's
 * FILE), then end (the checksum). The writer hashes what passes through it. */
typedef struct sprig_pcache_writer sprig_pcache_writer;
sprig_pcache_writer *sprig_pcache_begin(const char *path, const char *id, int n_sections, sprig_error *err);
/* The FILE rows go to after sprig_pcache_section_head (hashed on end). */
FILE        *sprig_pcache_file(sprig_pcache_writer *w);
sprig_status sprig_pcache_section_head(sprig_pcache_writer *w, const int32_t *tokens, int n, int n_layer, uint64_t row_bytes);
/* Finish (checksum) and rename into place; on error nothing replaces an existing file. */
sprig_status sprig_pcache_end(sprig_pcache_writer *w, sprig_error *err);
void         sprig_pcache_abort(sprig_pcache_writer *w);

#endif
