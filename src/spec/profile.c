/*
 * spec/profile — see profile.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "spec/profile.h"
#include "tensor/matmul.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "sprig-profile 2\n"

/* /proc/cpuinfo's first "name : value" for each wanted name, "?" when absent */
static void cpu_identity(char *out, size_t cap)
{
    static const char *const want[] = { "model name", "cpu family", "model", "stepping" };
    char val[4][128] = { "?", "?", "?", "?" };
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *e = colon;
        while (e > line && (e[-1] == ' ' || e[-1] == '\t')) e--;
        const size_t nlen = (size_t)(e - line);
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\r\n")] = 0;
        for (int i = 0; i < 4; i++)
            if (strlen(want[i]) == nlen && !strncmp(line, want[i], nlen) && !strcmp(val[i], "?"))
                snprintf(val[i], sizeof val[i], "%s", v);
        if (line[0] == '\n') break;   /* the first processor's block is enough */
    }
    if (f) fclose(f);
    snprintf(out, cap, "%s/%s/%s/%s", val[0], val[1], val[2], val[3]);
}

bool sprig_profile_key(const char *model_path, const char *kernels, int n_threads, char *key, size_t cap)
{
    struct stat st;
    char real[PATH_MAX];
    if (!model_path || stat(model_path, &st) || !realpath(model_path, real)) return false;
    char cpu[600];
    cpu_identity(cpu, sizeof cpu);
    int n = snprintf(key, cap, "model=%s size=%lld mtime=%lld.%09ld cpu=%s kernels=%s prefetch=%s rev=%d threads=%d",
                     real, (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, cpu,
                     kernels ? kernels : "?", sprig_prefetch_name(), SPRIG_MM_SPEED_REV, n_threads);
    if (n < 0 || (size_t)n >= cap) return false;
    for (char *c = key; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';   /* one line in the file */
    return true;
}

bool sprig_profile_path(const char *key, char *path, size_t cap)
{
    const char *dir = getenv("SPRIG_CACHE_DIR"), *base = NULL, *sub = "";
    if (dir && (!*dir || !strcmp(dir, "off") || !strcmp(dir, "0"))) return false;
    if (dir) base = dir;
    else if ((base = getenv("XDG_CACHE_HOME")) && *base) sub = "/sprig";
    else if ((base = getenv("HOME")) && *base) sub = "/.cache/sprig";
    else return false;
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a of the key */
    for (const unsigned char *c = (const unsigned char *)key; *c; c++) h = (h ^ *c) * 0x100000001b3ull;
    int n = snprintf(path, cap, "%s%s/profile-%016llx.txt", base, sub, (unsigned long long)h);
    return n > 0 && (size_t)n < cap;
}

static int parse(const char *text, size_t len, const char *key, double *prof, int64_t *samples)
{
    const size_t ml = strlen(MAGIC), kl = strlen(key);
    if (len < ml || memcmp(text, MAGIC, ml)) return 0;
    size_t o = ml;
    if (len - o < 4 + kl + 1 || memcmp(text + o, "key ", 4) || memcmp(text + o + 4, key, kl) || text[o + 4 + kl] != '\n') return 0;
    o += 4 + kl + 1;
    int last = 0;
    while (o < len) {
        const char *nl = memchr(text + o, '\n', len - o);
        if (!nl) return 0;   /* a cut-off line */
        const size_t ll = (size_t)(nl - (text + o));
        char line[96];
        if (ll >= sizeof line) return 0;
        memcpy(line, text + o, ll);
        line[ll] = 0;
        o += ll + 1;
        int n = 0, used = 0;
        double ms = 0;
        long long k = 0;
        if (sscanf(line, "t %d %lf %lld%n", &n, &ms, &k, &used) != 3 || used != (int)ll) return 0;
        if (n <= last || n > SPRIG_TREE_MAX || !(ms >= 1e-6 && ms <= 1e7)) return 0;   /* 1 ns .. 3 hours */
        if (k < 1 || k > (1LL << 50)) return 0;
        prof[n] = ms;
        samples[n] = k;
        last = n;
    }
    return last;
}

int sprig_profile_parse(const char *text, size_t len, const char *key, double *prof, int64_t *samples)
{
    for (int i = 0; i <= SPRIG_TREE_MAX; i++) prof[i] = 0, samples[i] = 0;
    const int last = parse(text, len, key, prof, samples);
    if (!last) for (int i = 0; i <= SPRIG_TREE_MAX; i++) prof[i] = 0, samples[i] = 0;   /* a miss loads nothing */
    return last;
}

int sprig_profile_format(const double *prof, const int64_t *samples, const char *key, char *buf, size_t cap)
{
    int o = snprintf(buf, cap, "%skey %s\n", MAGIC, key);
    for (int n = 1; n <= SPRIG_TREE_MAX && o >= 0; n++)
        if (prof[n] > 0) {
            int k = snprintf(buf + ((size_t)o < cap ? (size_t)o : cap), (size_t)o < cap ? cap - (size_t)o : 0, "t %d %.17g %lld\n", n,
                             prof[n], (long long)(samples[n] > 0 ? samples[n] : 1));
            o = k < 0 ? -1 : o + k;
        }
    return o;
}

bool sprig_profile_load(sprig_shape *s, const char *key, int need, char *path, size_t path_cap)
{
    if (!sprig_profile_path(key, path, path_cap)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    bool whole = feof(f) && !ferror(f);
    fclose(f);
    double prof[SPRIG_TREE_MAX + 1];
    int64_t samples[SPRIG_TREE_MAX + 1];
    if (!whole || sprig_profile_parse(buf, len, key, prof, samples) < need) return false;
    for (int n = 1; n <= SPRIG_TREE_MAX; n++)
        if (prof[n] > 0) sprig_costs_load(&s->cost, n, prof[n], samples[n]);
    s->profiled = true;
    return true;
}

/* mkdir -p of the directory part of path */
static void make_dirs(const char *path)
{
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", path);
    char *slash = strrchr(d, '/');
    if (!slash) return;
    *slash = 0;
    for (char *p = d + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(d, 0755);
            *p = '/';
        }
    mkdir(d, 0755);
}

bool sprig_profile_save(const sprig_shape *s, const char *key, char *path, size_t path_cap)
{
    if (!sprig_profile_path(key, path, path_cap)) return false;
    char buf[8192], tmp[PATH_MAX + 32];
    double prof[SPRIG_TREE_MAX + 1] = { 0 };
    int64_t samples[SPRIG_TREE_MAX + 1] = { 0 };
    for (int i = 1; i <= SPRIG_TREE_MAX; i++) {   /* what each size's own window says now, and the samples behind it */
        prof[i] = sprig_costs_median(&s->cost, i);
        samples[i] = sprig_costs_samples(&s->cost, i);
    }
    int n = sprig_profile_format(prof, samples, key, buf, sizeof buf);
    if (n <= 0 || (size_t)n >= sizeof buf) return false;
    make_dirs(path);
    static atomic_uint seq;   /* a server's slots save from several threads of one process: a temporary file each */
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&seq, 1u));
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    ok = !fclose(f) && ok;
    if (ok) ok = !rename(tmp, path);
    if (!ok) remove(tmp);
    return ok;
}
