/*
 * tests/test-quant.c — the reference quantizers and dequantizers of the
 * block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K) against bytes
 * llama.cpp's own reference code wrote (tests/data/quant-golden.txt: 14 rows
 * of 256 floats — random, all zeros, one huge outlier, negative only, tiny
 * and subnormal, beyond the f16 range, constant, sparse, exact halves,
 * sub-blocks 2^3 apart, 1e30 — each quantized by every type, the hash of
 * llama.cpp's dequantization of those bytes, and random blocks with their
 * dequantization hash). Also: the type table's K-quant facts, multi-block
 * rows, the non-finite rule (a NaN or infinity quantizes as 0), and a
 * round-trip error bound per type on a weights-like row.
 */
#include "test.h"
#include "tensor/types.h"
#include "tensor/quant.h"

#define GOLDEN "tests/data/quant-golden.txt"
#define N 256
#define MAX_CASES 32

struct row { char name[32]; float x[N]; };
static struct row rows[MAX_CASES];
static int n_rows;

static int hexval(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* Decode hex into out (at most cap bytes); returns the byte count or -1. */
static long unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (hexval(s[0]) >= 0 && hexval(s[1]) >= 0) {
        if (n == cap) return -1;
        out[n++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
        s += 2;
    }
    return (long)n;
}

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static const float *row_of(const char *name)
{
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].name, name)) return rows[i].x;
    return NULL;
}

static void test_table(void)
{
    static const struct { int type; const char *name; int64_t blck; size_t size; bool k; } want[] = {
        { SPRIG_TYPE_Q4_1, "q4_1", 32, 20, false }, { SPRIG_TYPE_Q5_0, "q5_0", 32, 22, false },
        { SPRIG_TYPE_Q5_1, "q5_1", 32, 24, false }, { SPRIG_TYPE_Q2_K, "q2_k", 256, 84, true },
        { SPRIG_TYPE_Q3_K, "q3_k", 256, 110, true }, { SPRIG_TYPE_Q4_K, "q4_k", 256, 144, true },
        { SPRIG_TYPE_Q5_K, "q5_k", 256, 176, true }, { SPRIG_TYPE_Q6_K, "q6_k", 256, 210, true },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct sprig_type_traits *t = sprig_type_traits(want[i].type);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_STR(t->name, want[i].name);
        CHECK_EQ_INT(t->blck, want[i].blck);
        CHECK_EQ_INT(t->type_size, want[i].size);
        CHECK(t->can_compute && t->to_f32 && t->from_f32);
        CHECK(sprig_type_quantizable(want[i].type));
        CHECK_EQ_INT(sprig_type_is_kquant(want[i].type), want[i].k);
        CHECK_EQ_INT(sprig_type_from_name(want[i].name), want[i].type);
    }
    CHECK_EQ_INT(sprig_type_from_name("Q4_K"), SPRIG_TYPE_Q4_K);
    CHECK(sprig_type_is_kquant(15));                 /* q8_k: known, not readable */
    CHECK(!sprig_type_quantizable(15));
    CHECK(!sprig_type_quantizable(16));              /* iq2_xxs */
    CHECK(!sprig_type_is_kquant(SPRIG_TYPE_Q8_0));
    CHECK(!sprig_type_is_kquant(-1) && !sprig_type_quantizable(99));
    /* the readable-names list is the table's can_compute column */
    int n_readable = 0, n_listed = 1;
    for (int i = 0; i < SPRIG_TYPE_COUNT; i++) {
        const struct sprig_type_traits *t = sprig_type_traits(i);
        if (!t || !t->can_compute) continue;
        n_readable++;
        CHECKF(strstr(sprig_type_readable_names(), t->name) != NULL, "%s missing from the readable names", t->name);
    }
    for (const char *c = sprig_type_readable_names(); *c; c++) n_listed += *c == ',';
    CHECK_EQ_INT(n_listed, n_readable);
    size_t rb;
    CHECK(sprig_row_bytes(SPRIG_TYPE_Q4_K, 4096, &rb) && rb == 16 * 144);
    CHECK(!sprig_row_bytes(SPRIG_TYPE_Q6_K, 896, &rb));   /* not a multiple of 256 */
}

static void test_golden(void)
{
    FILE *f = fopen(GOLDEN, "r");
    CHECKF(f != NULL, "cannot open %s (run from the repository root)", GOLDEN);
    if (!f) return;
    static char line[1 << 16];
    static uint8_t bytes[8 * 292], mine[8 * 292];
    float y[N];
    int n_q = 0, n_d = 0, n_r = 0, n_fail = 0;
    while (fgets(line, sizeof line, f)) {
        char kind = line[0];
        if (kind == '#' || kind == '\n') continue;
        char a[32], b[32];
        int at = 0;
        if (kind == 'x') {
            if (n_rows == MAX_CASES || sscanf(line, "x %31s %n", a, &at) != 1) { CHECK(!"bad x line"); continue; }
            long n = unhex(line + at, (uint8_t *)rows[n_rows].x, sizeof rows[n_rows].x);
            CHECK_EQ_INT(n, sizeof rows[n_rows].x);
            snprintf(rows[n_rows].name, sizeof rows[n_rows].name, "%s", a);
            n_rows++;
            continue;
        }
        if (sscanf(line, "%*c %31s %31s %n", a, b, &at) != 2) { CHECKF(0, "bad line '%.40s'", line); continue; }
        int type = sprig_type_from_name(a);
        const struct sprig_type_traits *t = sprig_type_traits(type);
        size_t rb = 0;
        CHECKF(t && t->to_f32 && sprig_row_bytes(type, N, &rb), "type %s", a);
        if (!t || !t->to_f32) continue;
        if (kind == 'q') {
            const float *x = row_of(b);
            long n = unhex(line + at, bytes, sizeof bytes);
            CHECKF(x && n == (long)rb, "%s %s: row or %ld bytes", a, b, n);
            if (!x || n != (long)rb) continue;
            memset(mine, 0xAA, sizeof mine);
            t->from_f32(x, mine, N);
            n_q++;
            if (memcmp(mine, bytes, rb)) {
                n_fail++;
                size_t k = 0;
                while (mine[k] == bytes[k]) k++;
                CHECKF(0, "%s %s: quantized bytes differ from llama.cpp's at byte %zu (%02x vs %02x)", a, b, k, mine[k], bytes[k]);
            }
        } else if (kind == 'd') {
            /* dequantize llama.cpp's bytes of the same row (the q line before) */
            unsigned long long h;
            CHECK(sscanf(line + at, "%llx", &h) == 1);
            const float *x = row_of(b);
            if (!x) continue;
            /* the golden q bytes equal ours when the q check passed; use llama.cpp's */
            t->to_f32(bytes, y, N);
            n_d++;
            CHECKF(fnv(y, sizeof y) == h, "%s %s: dequantized floats differ from llama.cpp's", a, b);
        } else if (kind == 'r') {
            long n = unhex(line + at, bytes, sizeof bytes);
            unsigned long long h;
            CHECK(n == (long)rb && sscanf(line + at + 2 * n, " %llx", &h) == 1);
            t->to_f32(bytes, y, N);
            n_r++;
            CHECKF(fnv(y, sizeof y) == h, "%s %s: dequantized random blocks differ from llama.cpp's", a, b);
        } else {
            CHECKF(0, "unknown line kind '%c'", kind);
        }
    }
    fclose(f);
    fprintf(stderr, "  %d rows, %d quantized rows (%d differ), %d dequantized, %d random blocks\n", n_rows, n_q, n_fail, n_d, n_r);
    CHECK(n_rows >= 14 && n_q >= 140 && n_d == n_q && n_r >= 20);   /* the comparisons ran */
}

static const int qtypes[] = { SPRIG_TYPE_Q4_1, SPRIG_TYPE_Q5_0, SPRIG_TYPE_Q5_1, SPRIG_TYPE_Q2_K,
                              SPRIG_TYPE_Q3_K, SPRIG_TYPE_Q4_K, SPRIG_TYPE_Q5_K, SPRIG_TYPE_Q6_K };
#define N_QT ((int)(sizeof qtypes / sizeof qtypes[0]))

/* A row of several blocks is its blocks quantized one by one. */
static void test_multi_block(void)
{
    const float *a = row_of("weights"), *b = row_of("outlier"), *c = row_of("ranges");
    if (!a || !b || !c) { CHECK(!"golden rows missing"); return; }
    float x[3 * N];
    memcpy(x, a, sizeof(float) * N);
    memcpy(x + N, b, sizeof(float) * N);
    memcpy(x + 2 * N, c, sizeof(float) * N);
    for (int i = 0; i < N_QT; i++) {
        const struct sprig_type_traits *t = sprig_type_traits(qtypes[i]);
        size_t rb;
        sprig_row_bytes(qtypes[i], N, &rb);
        uint8_t all[3 * 8 * 292], one[8 * 292];
        t->from_f32(x, all, 3 * N);
        for (int k = 0; k < 3; k++) {
            t->from_f32(x + k * N, one, N);
            CHECKF(!memcmp(all + k * rb, one, rb), "%s: block %d of a 3-block row", t->name, k);
        }
        float y3[3 * N], y1[N];
        t->to_f32(all, y3, 3 * N);
        t->to_f32(all + rb, y1, N);
        CHECKF(!memcmp(y3 + N, y1, sizeof y1), "%s: dequantizing a row equals its blocks", t->name);
    }
}

/* NaN and infinities quantize as 0; nothing else in the block changes. */
static void test_non_finite(void)
{
    const float *w = row_of("weights");
    if (!w) return;
    float x[N], z[N];
    memcpy(x, w, sizeof x);
    memcpy(z, w, sizeof z);
    const int at[] = { 0, 17, 100, 255 };
    for (int k = 0; k < 4; k++) {
        x[at[k]] = k == 1 ? INFINITY : k == 2 ? -INFINITY : NAN;
        z[at[k]] = 0.0f;
    }
    for (int i = 0; i < N_QT; i++) {
        const struct sprig_type_traits *t = sprig_type_traits(qtypes[i]);
        uint8_t a[8 * 292], b[8 * 292];
        size_t rb;
        sprig_row_bytes(qtypes[i], N, &rb);
        t->from_f32(x, a, N);
        t->from_f32(z, b, N);
        CHECKF(!memcmp(a, b, rb), "%s: a row with NaN/inf quantizes as with zeros there", t->name);
        float y[N];
        t->to_f32(a, y, N);
        bool finite = true;
        for (int j = 0; j < N; j++) finite &= isfinite(y[j]) != 0;
        CHECKF(finite, "%s: dequantized values are finite", t->name);
        /* all-NaN: all zeros */
        for (int j = 0; j < N; j++) x[j] = NAN;
        memset(z, 0, sizeof z);
        t->from_f32(x, a, N);
        t->from_f32(z, b, N);
        CHECKF(!memcmp(a, b, rb), "%s: an all-NaN row quantizes as zeros", t->name);
        memcpy(x, w, sizeof x);
        memcpy(z, w, sizeof z);
        for (int k = 0; k < 4; k++) {
            x[at[k]] = k == 1 ? INFINITY : k == 2 ? -INFINITY : NAN;
            z[at[k]] = 0.0f;
        }
    }
}

/* Round trip on a weights-like row: RMS error relative to RMS value under
 * a per-type bound (more bits, smaller error). */
static void test_round_trip_error(void)
{
    const float *w = row_of("gauss1");
    if (!w) return;
    static const struct { int type; double bound; } b[] = {
        { SPRIG_TYPE_Q2_K, 0.45 }, { SPRIG_TYPE_Q3_K, 0.25 }, { SPRIG_TYPE_Q4_K, 0.12 }, { SPRIG_TYPE_Q5_K, 0.06 },
        { SPRIG_TYPE_Q6_K, 0.03 }, { SPRIG_TYPE_Q4_1, 0.12 }, { SPRIG_TYPE_Q5_0, 0.06 }, { SPRIG_TYPE_Q5_1, 0.06 },
    };
    double prev = 1;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        const struct sprig_type_traits *t = sprig_type_traits(b[i].type);
        uint8_t q[8 * 292];
        float y[N];
        t->from_f32(w, q, N);
        t->to_f32(q, y, N);
        double e2 = 0, x2 = 0;
        for (int j = 0; j < N; j++) {
            e2 += ((double)y[j] - w[j]) * ((double)y[j] - w[j]);
            x2 += (double)w[j] * w[j];
        }
        double rel = sqrt(e2 / x2);
        CHECKF(rel < b[i].bound && rel > 0, "%s: relative RMS error %.4f (bound %.2f)", t->name, rel, b[i].bound);
        if (i < 5) {
            CHECKF(rel < prev, "%s: error %.4f not below the previous K type's %.4f", t->name, rel, prev);
            prev = rel;
        }
    }
}

int main(void)
{
    RUN(test_table);
    RUN(test_golden);
    RUN(test_multi_block);
    RUN(test_non_finite);
    RUN(test_round_trip_error);
    return test_summary("test-quant");
}
