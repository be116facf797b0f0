/*
 * tools/cli.h — the `sprig` command's subcommands and small shared helpers
 * for argument parsing. Only tools/ may call exit(); subcommands return the
 * process exit status (0 ok, 1 runtime failure, 2 bad usage).
 */
#ifndef SPRIG_TOOLS_CLI_H
#define SPRIG_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int sprig_cmd_run(int argc, char **argv);
int sprig_cmd_bench(int argc, char **argv);
int sprig_cmd_gguf(int argc, char **argv);
int sprig_cmd_convert(int argc, char **argv);
int sprig_cmd_mkmodel(int argc, char **argv);
int sprig_cmd_tokenize(int argc, char **argv);
int sprig_cmd_template(int argc, char **argv);
int sprig_cmd_grammar(int argc, char **argv);
int sprig_cmd_serve(int argc, char **argv);
/* `sprig bench tokenize` (tools/bench_tokenize.c), dispatched by cmd_bench.c. */
int sprig_bench_tokenize(int argc, char **argv);
/* `sprig bench grammar` (tools/bench_grammar.c). */
int sprig_bench_grammar(int argc, char **argv);
/* `sprig bench kv` (tools/bench_kv.c). */
int sprig_bench_kv(int argc, char **argv);

/* Strict number parsing for flag values: the whole string must parse and be
 * within [lo, hi]; on failure print "sprig <cmd>: <flag>: <why>" to stderr and
 * return false. */
bool cli_parse_int(const char *cmd, const char *flag, const char *s, long long lo, long long hi, long long *out);
bool cli_parse_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);

/* The median of v[n] (sorts v in place); 0 for n <= 0. Every bench's figures
 * are medians of alternated repetitions. */
double cli_median(double *v, int n);

/* The tree shape from the flags (`sprig run`, `sprig serve`): tree auto chooses from a dynamic tree,
 * by default 8 deep (unless the depth was given), 24 nodes, width 3; --tree-nodes M makes a dynamic
 * tree of M nodes (width 4 unless given) and turns tree mode on unless it was set. *tree is the
 * switch (SPRIG_TREE_*). False, after printing why, when M is below the depth + 1. */
struct sprig_session_params;   /* sprig.h */
bool cli_tree_shape(const char *cmd, struct sprig_session_params *p, int tree_nodes, bool depth_set, int *tree);

/* Read all of `path` ("-" or NULL: stdin) into a malloc'd buffer with a NUL
 * after the *len bytes; more than `max` bytes is an error. On failure returns
 * NULL with a message naming the file in why[why_cap]. (tools/readall.c) */
char *cli_read_all(const char *path, size_t max, size_t *len, char *why, size_t why_cap);

#endif
