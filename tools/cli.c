/*
 * tools/cli.c — strict flag-value parsing shared by the subcommands.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

bool cli_parse_int(const char *cmd, const char *flag, const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !*s) {
        fprintf(stderr, "sprig %s: %s: missing value\n", cmd, flag);
        return false;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) {
        fprintf(stderr, "sprig %s: %s: '%s' is not an integer\n", cmd, flag, s);
        return false;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "sprig %s: %s: %lld is out of range [%lld, %lld]\n", cmd, flag, v, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out)
{
    if (!s || !*s) {
        fprintf(stderr, "sprig %s: %s: missing value\n", cmd, flag);
        return false;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) {
        fprintf(stderr, "sprig %s: %s: '%s' is not a number\n", cmd, flag, s);
        return false;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "sprig %s: %s: %g is out of range [%g, %g]\n", cmd, flag, v, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
