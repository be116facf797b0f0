/*
 * tools/cli.c — strict flag-value parsing shared by the subcommands.
 */
#include "cli.h"
#include "sprig.h"

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

bool cli_tree_shape(const char *cmd, struct sprig_session_params *p, int tree_nodes, bool depth_set, int *tree)
{
    if (p->tree_auto) {
        if (!depth_set) p->draft_max = 8;
        if (!tree_nodes) tree_nodes = 24;
        if (!p->tree_width) p->tree_width = 3;
    }
    if (tree_nodes) {   /* a dynamic tree of tree_nodes nodes, depth draft_max */
        if (tree_nodes < p->draft_max + 1) {
            fprintf(stderr, "sprig %s: --tree-nodes %d is less than the depth %d + 1 (--draft-max / --tree-depth)\n", cmd, tree_nodes,
                    p->draft_max);
            return false;
        }
        p->tree_branches = tree_nodes - (p->draft_max + 1);
        if (!p->tree_width) p->tree_width = 4;
        if (*tree == SPRIG_TREE_FROM_ENV) *tree = SPRIG_TREE_ON;
    }
    return true;
}

double cli_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
