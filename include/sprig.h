/*
 * sprig.h — the whole public C API of sprig.
 *
 * sprig is an LLM inference engine (C11, CPU) whose headline feature is
 * speculative decoding with draft token trees. This header is everything a
 * program needs: open a GGUF model, make a context, generate text plainly or
 * speculatively, read the round statistics.
 *
 * Conventions
 *   - Every fallible call returns a sprig_status and, when `err` is not NULL,
 *     fills it with a message that names the file, field or argument.
 *   - The library never calls exit() and never prints unless asked (log level).
 *   - Objects are opaque; *_default_params() give by-value parameter structs.
 */
#ifndef SPRIG_H
#define SPRIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPRIG_VERSION "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum sprig_status {
    SPRIG_OK = 0,
    SPRIG_E_INVALID_ARG,   /* a caller-supplied argument is out of range        */
    SPRIG_E_IO,            /* open/read/write/mmap failed                         */
    SPRIG_E_FORMAT,        /* a file is malformed (GGUF, tokenizer, checkpoint)   */
    SPRIG_E_UNSUPPORTED,   /* well-formed but not something sprig can run         */
    SPRIG_E_NOMEM,         /* allocation failed or a size overflowed              */
    SPRIG_E_CONTEXT_FULL,  /* the KV cache has no room for the request            */
    SPRIG_E_REFUSED,       /* a capability declined (e.g. tree verify), reason given */
    SPRIG_E_INTERNAL,      /* a broken invariant that was caught, not crashed on  */
    SPRIG_STATUS_COUNT
} sprig_status;

typedef struct sprig_error {
    sprig_status code;
    char msg[512];
} sprig_error;

/* Short name of a status code ("ok", "invalid argument", ...). */
const char *sprig_status_str(sprig_status s);

#ifdef __cplusplus
}
#endif
#endif /* SPRIG_H */
