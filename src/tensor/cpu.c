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
 */
#include "tensor/matmul.h"
#include "base/log.h"

#include <pthread.h>
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
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
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
