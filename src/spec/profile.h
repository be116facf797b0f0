/*
 * spec/profile — tree auto's measured verify costs T(n), cached per model
 * file and machine, so a session does not spend its first second
 * re-measuring what the last one on this machine already knew.
 *
 * The key names everything T(n) depends on: the model file (real path,
 * size, modification time), the CPU (/proc/cpuinfo's model name, family,
 * model and stepping), the kernel family that runs, the kernels' speed
 * revision (SPRIG_MM_SPEED_REV, bumped when a kernel gets faster or slower)
 * and the thread count. A changed file, machine or engine gives another
 * key, hence a miss and a fresh profile. One small text file per key in
 * the cache directory ($SPRIG_CACHE_DIR; else $XDG_CACHE_HOME/sprig; else $HOME/.cache/sprig;
 * SPRIG_CACHE_DIR=off disables it):
 *
 *   sprig-profile 2
 *   key <the key, one line>
 *   t <n> <ms> <samples>    one line per size measured, n ascending: its
 *                           estimate (spec/costs.h: the median of its last
 *                           times) and how many times stand behind it
 *
 * The file is input from disk, so parsing is bounded and strict: a wrong
 * magic, another key, a size outside [1, SPRIG_TREE_MAX], a time that is
 * not in [1e-6, 1e7] ms, a sample count outside [1, 2^50], or sizes out
 * of order make the whole file a miss (it is then rewritten). Writes go to
 * a temporary file renamed into place, so readers never see half a file.
 * Failing to read or write the cache is never an error: the session
 * profiles as before. A session writes the file again after every
 * generation that ran rounds, so the next one starts from what the rounds
 * taught (a profile measured under load heals for good).
 */
#ifndef SPRIG_SPEC_PROFILE_H
#define SPRIG_SPEC_PROFILE_H

#include "spec/shape.h"

#include <stddef.h>

#define SPRIG_PROFILE_KEY_MAX 1024

/* The key of (model file, this machine, kernels, threads) into key[cap];
 * false when the model file cannot be examined or the key does not fit. */
bool sprig_profile_key(const char *model_path, const char *kernels, int n_threads, char *key, size_t cap);

/* The cache file of a key (a hash of it under the cache directory); false
 * when caching is off or there is no directory to use. */
bool sprig_profile_path(const char *key, char *path, size_t cap);

/* Parse a cache file's text[len] for `key`: the sizes it holds, into
 * prof[SPRIG_TREE_MAX + 1] and samples[SPRIG_TREE_MAX + 1] (0 where
 * absent); returns the largest size, or 0 when the text is not a valid
 * profile for this key. */
int sprig_profile_parse(const char *text, size_t len, const char *key, double *prof, int64_t *samples);

/* The text of a profile (prof, samples as above) into buf[cap]; the length it needs. */
int sprig_profile_format(const double *prof, const int64_t *samples, const char *key, char *buf, size_t cap);

/* Load into the shape's costs (provisional times with their sample counts:
 * spec/costs.h) when the cache holds sizes up to at least `need`; true on a
 * hit. */
bool sprig_profile_load(sprig_shape *s, const char *key, int need, char *path, size_t path_cap);
/* Save the shape's costs as they stand (each size's median and samples);
 * true when written. */
bool sprig_profile_save(const sprig_shape *s, const char *key, char *path, size_t path_cap);

#endif
