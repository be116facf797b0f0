/*
 * base/log — see log.h.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int          g_level = -1;   /* -1: not yet read from the environment */
static sprig_log_fn g_fn;
static void        *g_user;

static int level_from_env(void)
{
    const char *s = getenv("SPRIG_LOG");
    if (!s) return SPRIG_LOG_WARN;
    if (!strcmp(s, "error")) return SPRIG_LOG_ERROR;
    if (!strcmp(s, "warn")) return SPRIG_LOG_WARN;
    if (!strcmp(s, "info")) return SPRIG_LOG_INFO;
    if (!strcmp(s, "debug")) return SPRIG_LOG_DEBUG;
    return SPRIG_LOG_WARN;
}

void sprig_log_set_level(int level) { g_level = level; }

int sprig_log_get_level(void)
{
    if (g_level < 0) g_level = level_from_env();
    return g_level;
}

void sprig_log_set_callback(sprig_log_fn fn, void *user)
{
    g_fn = fn;
    g_user = user;
}

void sprig_log(int level, const char *fmt, ...)
{
    if (level > sprig_log_get_level()) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_fn) {
        g_fn(level, buf, g_user);
        return;
    }
    static const char *const tag[] = { "error: ", "warning: ", "", "debug: " };
    fprintf(stderr, "sprig: %s%s\n", tag[level < 0 ? 0 : level > 3 ? 3 : level], buf);
}
