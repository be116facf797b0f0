/*
 * gguf — a validating GGUF v3 reader over an mmap'd file, and a writer.
 *
 * File layout (little endian):
 *   "GGUF" | u32 version (3) | u64 n_tensors | u64 n_kv
 *   n_kv      x { str key | u32 type | value }       str = u64 len + bytes
 *               value of ARRAY = u32 elem_type | u64 n | n values (no nested arrays)
 *   n_tensors x { str name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment (u32, power of two, default 32)
 *   tensor data; tensor i at data_start + offset_i (aligned, inside the file)
 *
 * Everything is hostile: the reader checks every count and length against the
 * bytes that remain before allocating, rejects unknown value and tensor types,
 * duplicate keys and names, n_dims outside 1..4, dims <= 0 or overflowing
 * products, rows that are not whole blocks, misaligned, out-of-file or
 * overlapping tensor data, and a bad alignment key. Every error names the
 * file, the section and the field (key or tensor name, index).
 * Architecture-level checks (required keys, tensors, shapes) live in model/.
 */
#ifndef SPRIG_GGUF_H
#define SPRIG_GGUF_H

#include "base/err.h"

enum sprig_gguf_vtype {
    SPRIG_GGUF_U8 = 0, SPRIG_GGUF_I8, SPRIG_GGUF_U16, SPRIG_GGUF_I16,
    SPRIG_GGUF_U32, SPRIG_GGUF_I32, SPRIG_GGUF_F32, SPRIG_GGUF_BOOL,
    SPRIG_GGUF_STR, SPRIG_GGUF_ARR, SPRIG_GGUF_U64, SPRIG_GGUF_I64,
    SPRIG_GGUF_F64, SPRIG_GGUF_VTYPE_COUNT
};

#define SPRIG_GGUF_MAX_DIMS 4
#define SPRIG_GGUF_DEFAULT_ALIGNMENT 32
#define SPRIG_GGUF_MAX_ALIGNMENT (1u << 20)    /* general.alignment cap */
#define SPRIG_GGUF_MAX_NAME 256                /* bytes in a key or tensor name */
#define SPRIG_GGUF_MAX_KV (1 << 20)            /* n_kv cap */
#define SPRIG_GGUF_MAX_TENSORS (1 << 20)       /* n_tensors cap */

typedef struct sprig_gguf sprig_gguf;

typedef struct sprig_gguf_tensor {
    const char *name;        /* NUL-terminated copy */
    int type;                /* ggml type id (tensor/types.h) */
    int n_dims;              /* 1..4 */
    int64_t ne[SPRIG_GGUF_MAX_DIMS];   /* ggml order: ne[0] fastest; unused dims = 1 */
    uint64_t offset;         /* relative to the data section */
    size_t nbytes;
    const void *data;        /* view into the mapping */
} sprig_gguf_tensor;

/* "u8", "i8", ..., "str", "arr", "f64"; "?" when unknown. */
const char *sprig_gguf_vtype_name(int vtype);

/* ---------------------------------------------------------------- reader */

sprig_gguf *sprig_gguf_open(const char *path, sprig_error *err);
/* Parse a caller-owned buffer (tests, fuzzing); `name` is used in messages. */
sprig_gguf *sprig_gguf_open_memory(const void *data, size_t size, const char *name, sprig_error *err);
void        sprig_gguf_close(sprig_gguf *g);

const char *sprig_gguf_path(const sprig_gguf *g);
uint32_t    sprig_gguf_version(const sprig_gguf *g);
size_t      sprig_gguf_alignment(const sprig_gguf *g);
size_t      sprig_gguf_data_offset(const sprig_gguf *g);
size_t      sprig_gguf_file_size(const sprig_gguf *g);
/* What names this file's contents, whatever its path: a 64-bit hash of the
 * header (metadata and tensor table) and of the first and last 4 KiB of
 * every tensor's data. Two files with the same value hold the same model
 * for every practical purpose (the prompt cache refuses a file whose model
 * differs). Reads a few pages per tensor. */
uint64_t    sprig_gguf_fingerprint(const sprig_gguf *g);

/* Metadata, in file order. */
int64_t     sprig_gguf_n_kv(const sprig_gguf *g);
const char *sprig_gguf_kv_key(const sprig_gguf *g, int64_t i);
int         sprig_gguf_kv_type(const sprig_gguf *g, int64_t i);       /* enum sprig_gguf_vtype */
int64_t     sprig_gguf_find_kv(const sprig_gguf *g, const char *key); /* -1 if absent */

/* Typed getters by key. A missing key returns SPRIG_E_FORMAT naming the key
 * when `required`, else SPRIG_OK with *out untouched (so set defaults first).
 * Integer getters accept any integer type whose value fits; f32 accepts f32
 * or f64; a type that cannot convert is an error naming key and type. */
sprig_status sprig_gguf_get_u32(const sprig_gguf *g, const char *key, uint32_t *out, bool required, sprig_error *err);
sprig_status sprig_gguf_get_i64(const sprig_gguf *g, const char *key, int64_t *out, bool required, sprig_error *err);
sprig_status sprig_gguf_get_f32(const sprig_gguf *g, const char *key, float *out, bool required, sprig_error *err);
sprig_status sprig_gguf_get_bool(const sprig_gguf *g, const char *key, bool *out, bool required, sprig_error *err);
/* String: pointer into the mapping, NOT NUL-terminated; *len bytes. */
sprig_status sprig_gguf_get_str(const sprig_gguf *g, const char *key, const char **s, size_t *len, bool required, sprig_error *err);
/* Array header: element type and count. */
sprig_status sprig_gguf_get_arr(const sprig_gguf *g, const char *key, int *elem_type, uint64_t *n, bool required, sprig_error *err);

/* Array elements by kv index (from sprig_gguf_find_kv); i must be < n.
 * Numeric accessors convert from the stored element type (caller checked it). */
const char *sprig_gguf_arr_str(const sprig_gguf *g, int64_t kv, uint64_t i, size_t *len);
float       sprig_gguf_arr_f32(const sprig_gguf *g, int64_t kv, uint64_t i);
int64_t     sprig_gguf_arr_int(const sprig_gguf *g, int64_t kv, uint64_t i);

/* Scalar value of kv i rendered as text (for `sprig gguf`); arrays print
 * their type, length and first few elements. Returns bytes written (snprintf rules). */
int sprig_gguf_kv_format(const sprig_gguf *g, int64_t i, char *buf, size_t cap);

/* Tensors, in file order. */
int64_t                  sprig_gguf_n_tensors(const sprig_gguf *g);
const sprig_gguf_tensor *sprig_gguf_tensor_at(const sprig_gguf *g, int64_t i);
const sprig_gguf_tensor *sprig_gguf_find_tensor(const sprig_gguf *g, const char *name);

/* ---------------------------------------------------------------- writer */

typedef struct sprig_gguf_writer sprig_gguf_writer;

sprig_gguf_writer *sprig_gguf_writer_create(sprig_error *err);
void sprig_gguf_writer_free(sprig_gguf_writer *w);

/* Metadata setters; keys must be unique (a duplicate is an error). */
sprig_status sprig_gguf_w_u32(sprig_gguf_writer *w, const char *key, uint32_t v, sprig_error *err);
sprig_status sprig_gguf_w_i32(sprig_gguf_writer *w, const char *key, int32_t v, sprig_error *err);
sprig_status sprig_gguf_w_f32(sprig_gguf_writer *w, const char *key, float v, sprig_error *err);
sprig_status sprig_gguf_w_bool(sprig_gguf_writer *w, const char *key, bool v, sprig_error *err);
sprig_status sprig_gguf_w_str(sprig_gguf_writer *w, const char *key, const char *s, size_t len, sprig_error *err);
/* Any scalar type (u8..f64, bool) from its little-endian in-memory value. */
sprig_status sprig_gguf_w_scalar(sprig_gguf_writer *w, const char *key, int vtype, const void *value, sprig_error *err);
/* Array of strings (each with its length) / of fixed-size elements. Data is copied. */
sprig_status sprig_gguf_w_arr_str(sprig_gguf_writer *w, const char *key, const char *const *s, const size_t *lens, uint64_t n, sprig_error *err);
sprig_status sprig_gguf_w_arr(sprig_gguf_writer *w, const char *key, int elem_type, const void *data, uint64_t n, sprig_error *err);
/* Copy kv `i` of a reader verbatim (types included). */
sprig_status sprig_gguf_w_copy_kv(sprig_gguf_writer *w, const sprig_gguf *g, int64_t i, sprig_error *err);
/* Raw escape hatch for tests that build broken files: no validation at all. */
sprig_status sprig_gguf_w_raw_kv(sprig_gguf_writer *w, const char *key, int vtype, const void *payload, size_t payload_len, sprig_error *err);

/* Tensor; `data` (nbytes = row bytes of ne[0] x rest) is copied into the writer. */
sprig_status sprig_gguf_w_tensor(sprig_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                                 const void *data, sprig_error *err);

/* Streaming tensor: `fill` is called once at write time to produce the
 * tensor's nbytes into `dst` (so a huge synthetic model is never held in
 * memory whole). `user` must stay valid until the writer is written or freed. */
typedef sprig_status (*sprig_gguf_fill_fn)(void *user, void *dst, size_t nbytes, sprig_error *err);
sprig_status sprig_gguf_w_tensor_fill(sprig_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *ne,
                                      sprig_gguf_fill_fn fill, void *user, sprig_error *err);

/* Write the file (alignment = general.alignment if set, else 32). Writes to
 * a temp file beside `path` and renames, so a failure never leaves half a file. */
sprig_status sprig_gguf_writer_write(sprig_gguf_writer *w, const char *path, sprig_error *err);

#endif
