/*
 * base/log — one logging sink for the library.
 *
 * The library is quiet by default (warnings and errors only, on stderr); the
 * CLI raises the level. An embedder can redirect everything with a callback.
 * Level from the environment: SPRIG_LOG=error|warn|info|debug.
 */
#ifndef SPRIG_BASE_LOG_H
#define SPRIG_BASE_LOG_H

enum sprig_log_level { SPRIG_LOG_ERROR = 0, SPRIG_LOG_WARN, SPRIG_LOG_INFO, SPRIG_LOG_DEBUG };

typedef void (*sprig_log_fn)(int level, const char *msg, void *user);

void sprig_log_set_level(int level);
int  sprig_log_get_level(void);
void sprig_log_set_callback(sprig_log_fn fn, void *user);
void sprig_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define SPRIG_LOGE(...) sprig_log(SPRIG_LOG_ERROR, __VA_ARGS__)
#define SPRIG_LOGW(...) sprig_log(SPRIG_LOG_WARN, __VA_ARGS__)
#define SPRIG_LOGI(...) sprig_log(SPRIG_LOG_INFO, __VA_ARGS__)
#define SPRIG_LOGD(...) sprig_log(SPRIG_LOG_DEBUG, __VA_ARGS__)

#endif
