/*
 * tensor/cpu — CPU feature detection for run-time kernel selection.
 *
 * CPUID says what the core implements; XGETBV says whether the operating
 * system saves the register state (YMM for AVX/AVX2, opmask + ZMM for
 * AVX-512). A feature counts only when both agree. Detected once, then
 * served from a static table (reads are safe from any thread).
 * The environment can cap the kernel level every dispatcher (matmul,
 * attention, row ops) picks: SPRIG_NO_SIMD=1 or SPRIG_KERNELS=reference
 * keeps plain C, SPRIG_KERNELS=avx2 stops below AVX-512 — for comparing the
 * kernel families on one machine.
 * The vendor, family and model pick the kernels' prefetch scheme from a
 * table of measured CPUs (matmul.h says what the schemes are).
 */
#include "tensor/matmul.h"
#include "base/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static struct sprig_cpu_features g_cpu;
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(g_cpu.vendor, &b, 4);
        memcpy(g_cpu.vendor + 4, &d, 4);
        memcpy(g_cpu.vendor + 8, &c, 4);
        g_cpu.vendor[12] = 0;
    }
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    {   /* family = base + extended when base is 15; model gets its extended bits for families 6 and 15+ */
        unsigned fam = (a >> 8) & 15, mod = (a >> 4) & 15;
        if (fam == 15) fam += (a >> 20) & 255;
        if (fam == 6 || fam >= 15) mod |= ((a >> 16) & 15) << 4;
        g_cpu.family = fam;
        g_cpu.model = mod;
    }
    bool osxsave = c & (1u << 27), avx = c & (1u << 28);
    bool fma = c & (1u << 12), f16c = c & (1u << 29);
    if (!osxsave || !avx) return;
    uint64_t xcr0 = xgetbv0();
    bool os_ymm = (xcr0 & 0x6) == 0x6;             /* SSE + AVX state */
    bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm) return;
    unsigned max = __get_cpuid_max(0, NULL);
    if (max < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    g_cpu.fma = fma;
    g_cpu.f16c = f16c;
    g_cpu.avx2 = b & (1u << 5);
    if (os_zmm) {
        g_cpu.avx512f = b & (1u << 16);
        g_cpu.avx512dq = b & (1u << 17);
        g_cpu.avx512bw = b & (1u << 30);
        g_cpu.avx512vl = b & (1u << 31);
        g_cpu.avx512vnni = c & (1u << 11);
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        g_cpu.avx512bf16 = a1 & (1u << 5);
    }
#endif
}

const struct sprig_cpu_features *sprig_cpu_features(void)
{
    pthread_once(&g_cpu_once, detect);
    return &g_cpu;
}

int sprig_kernels_level(const char *name)
{
    static const struct { const char *name; int level; } names[] = {
        { "reference", SPRIG_KERNELS_REF }, { "ref", SPRIG_KERNELS_REF }, { "c", SPRIG_KERNELS_REF },
        { "avx2", SPRIG_KERNELS_AVX2 }, { "avx512", SPRIG_KERNELS_AVX512 }, { "avx512-vnni", SPRIG_KERNELS_AVX512 },
    };
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) return names[i].level;
    return -1;
}

static int g_cap = SPRIG_KERNELS_AVX512;
static pthread_once_t g_cap_once = PTHREAD_ONCE_INIT;

static void read_cap(void)
{
    const char *no = getenv("SPRIG_NO_SIMD"), *k = getenv("SPRIG_KERNELS");
    if (k && *k && strcmp(k, "auto") != 0) {
        int level = sprig_kernels_level(k);
        if (level >= 0) g_cap = level;
        else sprig_log(SPRIG_LOG_WARN, "SPRIG_KERNELS='%s' is not reference, avx2, avx512 or auto; ignored", k);
    }
    if (no && *no && strcmp(no, "0") != 0) g_cap = SPRIG_KERNELS_REF;
}

int sprig_kernels_cap(void)
{
    pthread_once(&g_cap_once, read_cap);
    return g_cap;
}

/* ---------------------------------------------------------------- prefetch scheme */

/* CPUs measured with both schemes (in-process A/B over DRAM-resident copies
 * of real tensors, 2 threads; figures in the README's kernel section). The
 * first row that matches wins; model_hi 0 matches every model. */
static const struct {
    const char *vendor;
    unsigned family, model_lo, model_hi;
    int scheme;
    const char *name;
} pf_table[] = {
    { "AuthenticAMD", 0x1a, 0, 0, SPRIG_PF_NEAR, "AMD Zen 5" },
    { "AuthenticAMD", 0x19, 0x10, 0x1f, SPRIG_PF_FAR, "AMD Zen 4, EPYC 9004" },
};

static int g_pf_auto = SPRIG_PF_FAR;           /* the table's (or SPRIG_PREFETCH's) choice */
static atomic_int g_pf = SPRIG_PF_FAR;          /* in force */
static char g_pf_why[96] = "default";
static pthread_once_t g_pf_once = PTHREAD_ONCE_INIT;

static void pf_init(void)
{
    const struct sprig_cpu_features *c = sprig_cpu_features();
    for (size_t i = 0; i < sizeof pf_table / sizeof pf_table[0]; i++) {
        if (strcmp(c->vendor, pf_table[i].vendor) || c->family != pf_table[i].family) continue;
        if (pf_table[i].model_hi && (c->model < pf_table[i].model_lo || c->model > pf_table[i].model_hi)) continue;
        g_pf_auto = pf_table[i].scheme;
        snprintf(g_pf_why, sizeof g_pf_why, "cpu table: %s (family %xh model %xh)", pf_table[i].name, c->family, c->model);
        break;
    }
    const char *e = getenv("SPRIG_PREFETCH");
    if (e && *e && strcmp(e, "auto") != 0) {
        if (!strcmp(e, "near") || !strcmp(e, "far")) {
            g_pf_auto = !strcmp(e, "far") ? SPRIG_PF_FAR : SPRIG_PF_NEAR;
            snprintf(g_pf_why, sizeof g_pf_why, "SPRIG_PREFETCH");
        } else {
            sprig_log(SPRIG_LOG_WARN, "SPRIG_PREFETCH='%s' is not near, far or auto; ignored", e);
        }
    }
    atomic_store(&g_pf, g_pf_auto);
}

int sprig_prefetch_scheme(void)
{
    pthread_once(&g_pf_once, pf_init);
    return atomic_load_explicit(&g_pf, memory_order_relaxed);
}

void sprig_prefetch_force(int scheme)
{
    pthread_once(&g_pf_once, pf_init);
    atomic_store(&g_pf, scheme == SPRIG_PF_NEAR || scheme == SPRIG_PF_FAR ? scheme : g_pf_auto);
}

const char *sprig_prefetch_name(void) { return sprig_prefetch_scheme() == SPRIG_PF_FAR ? "far" : "near"; }

const char *sprig_prefetch_why(void)
{
    pthread_once(&g_pf_once, pf_init);
    return g_pf_why;
}
