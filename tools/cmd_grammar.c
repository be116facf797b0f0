/*
 * tools/cmd_grammar.c — `sprig grammar`: check a GBNF grammar, or print the
 * GBNF a JSON schema compiles to (what `sprig run --json-schema` and the
 * server's response_format use), as llama.cpp's json_schema_to_grammar.py
 * prints one.
 *
 *   sprig grammar --json-schema JSON     the schema's GBNF on stdout
 *   sprig grammar --check FILE.gbnf      compile it; errors name the rule and line:column
 *
 * JSON is text or @PATH. Exit status: 0 ok, 1 the schema or grammar is
 * refused (the reason on stderr), 2 bad usage.
 */
#include "cli.h"
#include "grammar/gbnf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: sprig grammar --json-schema JSON | --check FILE.gbnf\n"
               "  --json-schema JSON   print the GBNF grammar the JSON schema compiles to (JSON: text or @PATH)\n"
               "  --check FILE         compile a GBNF grammar file and say whether it is usable\n");
}

int sprig_cmd_grammar(int argc, char **argv)
{
    const char *schema = NULL, *check = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if ((!strcmp(a, "--json-schema") || !strcmp(a, "--check")) && !val) {
            fprintf(stderr, "sprig grammar: %s: missing value\n", a);
            return 2;
        }
        if (!strcmp(a, "--json-schema")) schema = argv[++i];
        else if (!strcmp(a, "--check")) check = argv[++i];
        else {
            fprintf(stderr, "sprig grammar: unknown option '%s' (see sprig grammar --help)\n", a);
            return 2;
        }
    }
    if (!!schema == !!check) {
        usage(stderr);
        return 2;
    }
    char why[512], *text = NULL;
    size_t n = 0;
    const char *path = check ? check : schema[0] == '@' ? schema + 1 : NULL;
    if (path && !(text = cli_read_all(path, (size_t)1 << 24, &n, why, sizeof why))) {
        fprintf(stderr, "sprig grammar: %s\n", why);
        return 1;
    }
    sprig_error err = { 0 };
    int rc = 0;
    if (schema) {
        char *g = NULL;
        if (sprig_json_schema_to_gbnf(text ? text : schema, text ? n : strlen(schema), &g, &err)) {
            fprintf(stderr, "sprig grammar: %s\n", err.msg);
            rc = 1;
        } else {
            fputs(g, stdout);
            free(g);
        }
    } else {
        sprig_gbnf *g = NULL;
        if (sprig_gbnf_parse(text, n, &g, &err)) {
            fprintf(stderr, "sprig grammar: %s: %s\n", check, err.msg);
            rc = 1;
        } else {
            fprintf(stderr, "sprig grammar: %s: %d rules, %d elements\n", check, g->n_rules, g->n_e);
            sprig_gbnf_free(g);
        }
    }
    free(text);
    return rc;
}
