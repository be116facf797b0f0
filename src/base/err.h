/*
 * base/err — status + message plumbing shared by every module, and the
 * assert for broken invariants.
 *
 * Library functions report bad input by returning a sprig_status and writing
 * a message that names the file, field or argument into a caller-owned
 * sprig_error (which may be NULL). SPRIG_ASSERT is only for invariants the
 * code itself guarantees; it aborts with file:line and stays on in release
 * builds, because a silently wrong token is worse than a crash report.
 */
#ifndef SPRIG_BASE_ERR_H
#define SPRIG_BASE_ERR_H

#include "sprig.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Set *e (if not NULL) to code + formatted message; returns code. */
sprig_status sprig_err(sprig_error *e, sprig_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same from a va_list (for functions that take a format of their own). */
sprig_status sprig_verr(sprig_error *e, sprig_status code, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* Prefix an existing message with "what: " (keeps the code). */
void sprig_err_prefix(sprig_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void sprig_err_clear(sprig_error *e);

_Noreturn void sprig_abort(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define SPRIG_ASSERT(x) \
    do { if (__builtin_expect(!(x), 0)) sprig_abort(__FILE__, __LINE__, "assertion failed: %s", #x); } while (0)

/* Overflow-checked size arithmetic: return true on overflow. */
static inline bool sprig_mul_ovf(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline bool sprig_add_ovf(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }

#define SPRIG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SPRIG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SPRIG_UNUSED(x) ((void)(x))

#endif
