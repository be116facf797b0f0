/*
 * base/err — see err.h. Formatting of error messages, status names, abort.
 */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[SPRIG_STATUS_COUNT] = {
    [SPRIG_OK]             = "ok",
    [SPRIG_E_INVALID_ARG]  = "invalid argument",
    [SPRIG_E_IO]           = "i/o error",
    [SPRIG_E_FORMAT]       = "bad file format",
    [SPRIG_E_UNSUPPORTED]  = "unsupported",
    [SPRIG_E_NOMEM]        = "out of memory",
    [SPRIG_E_CONTEXT_FULL] = "context full",
    [SPRIG_E_REFUSED]      = "refused",
    [SPRIG_E_INTERNAL]     = "internal error",
};

const char *sprig_status_str(sprig_status s)
{
    if ((unsigned)s >= SPRIG_STATUS_COUNT) return "unknown status";
    return status_names[s];
}

sprig_status sprig_verr(sprig_error *e, sprig_status code, const char *fmt, va_list ap)
{
    if (e) {
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    }
    return code;
}

sprig_status sprig_err(sprig_error *e, sprig_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sprig_verr(e, code, fmt, ap);
    va_end(ap);
    return code;
}

void sprig_err_prefix(sprig_error *e, const char *fmt, ...)
{
    if (!e) return;
    char pre[256], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(pre);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, pre, n);
    e->msg[n] = ':';
    e->msg[n + 1] = ' ';
    size_t room = sizeof e->msg - n - 2;
    size_t m = strnlen(old, sizeof old);
    if (m > room - 1) m = room - 1;
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = 0;
}

void sprig_err_clear(sprig_error *e)
{
    if (!e) return;
    e->code = SPRIG_OK;
    e->msg[0] = 0;
}

_Noreturn void sprig_abort(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sprig: fatal: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
