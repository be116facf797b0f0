/*
 * tools/cmd_tokenize.c — `sprig tokenize`: print the token ids of a text.
 *
 *   sprig tokenize -m FILE (-p TEXT | -f FILE | --stdin) [--ids] [--no-bos]
 *                  [--parse-special | --no-parse-special] [--show-count]
 *
 * The conventions are those of llama.cpp's `llama-tokenize`, so the two can
 * be compared line by line: BOS (and EOS, where the vocabulary asks for it)
 * is added only when the vocabulary says so (tokenizer.ggml.add_bos_token)
 * and --no-bos is absent, and each token prints as `%6d -> 'PIECE'` where
 * PIECE is what the token decodes to on its own, control and unknown tokens
 * shown as their stored text (llama-tokenize decodes with special = true).
 *
 * Differences, all on purpose:
 *  - the text of control tokens ("<s>", "<|im_start|>") is plain text unless
 *    --parse-special is given: text from a file or a user is data. The
 *    llama-tokenize of September 2026 parses it by default and has
 *    --no-parse-special, which sprig accepts too (it is sprig's default);
 *  - a newline or carriage return inside a piece prints as \n or \r, so
 *    that every token stays on one line;
 *  - --ids prints the ids space-separated on one line (llama-tokenize prints
 *    a Python-style list "[1, 2]");
 *  - escape sequences are never rewritten: llama-tokenize turns "\n" in -p,
 *    -f and stdin into a newline unless given --no-escape.
 * So `llama-tokenize --no-escape --no-parse-special` is the one to compare.
 *
 * Only the GGUF's metadata is read and only the tokenizer is built, so
 * vocabulary-only files (no tensors) work and a model's weights are never
 * touched. -f and --stdin read the bytes exactly, up to the tokenizer's
 * limit on one text. Exit status: 0 ok, 1 runtime failure (the message names
 * the file or key), 2 bad usage (the message names the flag).
 */
#include "cli.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const C = "tokenize";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sprig tokenize -m FILE (-p TEXT | -f FILE | --stdin) [--ids] [--no-bos]\n"
            "                      [--parse-special | --no-parse-special] [--show-count]\n"
            "\n"
            "Print the tokens of a text with the GGUF's tokenizer (vocabulary-only files work),\n"
            "one per line as `ID -> 'PIECE'`, or with --ids the ids space-separated on one line.\n"
            "  -m, --model FILE   the GGUF whose tokenizer.* metadata to use\n"
            "  -p, --prompt TEXT  the text\n"
            "  -f, --file FILE    read the text from FILE (its bytes exactly)\n"
            "  --stdin            read the text from standard input\n"
            "  --ids              print only the ids\n"
            "  --no-bos           do not add BOS even where the vocabulary asks for it\n"
            "  --parse-special    text of control tokens (<s>, <|im_start|>) becomes those tokens\n"
            "  --no-parse-special it stays plain text (the default)\n"
            "  --show-count       also print the number of tokens\n"
            "Exit status: 0 ok, 1 the file or text cannot be read or tokenized, 2 bad usage.\n");
}

/* A piece as one line: bytes verbatim except newline and carriage return. */
static void print_piece(const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\n' && s[i] != '\r') continue;
        fwrite(s + from, 1, i - from, stdout);
        fputs(s[i] == '\n' ? "\\n" : "\\r", stdout);
        from = i + 1;
    }
    fwrite(s + from, 1, n - from, stdout);
}

/* What llama-tokenize shows for a token: its decoded text, with control and
 * unknown tokens (which decode to nothing) shown as their stored text. */
static const char *shown_piece(const sprig_tokenizer *t, int id, size_t *len)
{
    int ty = sprig_tokenizer_type(t, id);
    if (ty == SPRIG_TOKEN_CONTROL || ty == SPRIG_TOKEN_UNKNOWN) return sprig_tokenizer_piece(t, id, len);
    return sprig_tokenizer_token_text(t, id, len);
}

int sprig_cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool use_stdin = false, ids = false, no_bos = false, parse_special = false, show_count = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) dst = &model;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) dst = &prompt;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) dst = &file;
        else if (!strcmp(a, "--stdin")) use_stdin = true;
        else if (!strcmp(a, "--ids")) ids = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--parse-special")) parse_special = true;
        else if (!strcmp(a, "--no-parse-special")) parse_special = false;
        else if (!strcmp(a, "--show-count")) show_count = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sprig %s: unknown option '%s'\n", C, a);
            usage(stderr);
            return 2;
        }
        if (dst) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sprig %s: %s: missing value\n", C, a);
                return 2;
            }
            *dst = argv[++i];
        }
    }
    if (!model) {
        fprintf(stderr, "sprig %s: -m FILE is required\n", C);
        usage(stderr);
        return 2;
    }
    if ((prompt != NULL) + (file != NULL) + use_stdin != 1) {
        fprintf(stderr, "sprig %s: give exactly one of -p TEXT, -f FILE or --stdin\n", C);
        return 2;
    }

    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(model, &err);
    if (!g) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        return 1;
    }
    sprig_tokenizer *t = sprig_tokenizer_from_gguf(g, &err);
    sprig_gguf_close(g);
    if (!t) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        return 1;
    }

    char *owned = NULL;
    const char *text = prompt;
    size_t len = prompt ? strlen(prompt) : 0;
    if (!prompt) {
        char why[512];
        owned = cli_read_all(use_stdin ? NULL : file, SPRIG_TOKENIZE_MAX_TEXT, &len, why, sizeof why);
        if (!owned) {
            fprintf(stderr, "sprig %s: %s: %s\n", C, use_stdin ? "--stdin" : "-f", why);
            sprig_tokenizer_free(t);
            return 1;
        }
        text = owned;
    }

    /* llama-tokenize: add_special = the vocabulary's add_bos && !--no-bos */
    int flags = (sprig_tokenizer_add_bos(t) && !no_bos ? SPRIG_TOK_ADD_SPECIAL : 0) |
                (parse_special ? SPRIG_TOK_PARSE_SPECIAL : 0);
    int cap = len < 1000000 ? (int)len + 16 : 1000000, n = -1, rc = 0;
    int32_t *out = malloc(sizeof *out * (size_t)cap);
    if (out) n = sprig_tokenize(t, text, len, flags, out, cap, &err);
    if (out && n > cap) {           /* the first guess was short: the count is now known */
        cap = n;
        int32_t *o2 = realloc(out, sizeof *out * (size_t)cap);
        if (!o2) free(out);
        out = o2;
        if (out) n = sprig_tokenize(t, text, len, flags, out, cap, &err);
    }
    if (!out) {
        fprintf(stderr, "sprig %s: out of memory for the tokens of %zu bytes\n", C, len);
        rc = 1;
    } else if (n < 0) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        rc = 1;
    } else if (ids) {
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)out[i]);
        printf("\n");
    } else {
        for (int i = 0; i < n; i++) {
            size_t pl = 0;
            const char *p = shown_piece(t, out[i], &pl);
            printf("%6d -> '", (int)out[i]);
            print_piece(p ? p : "", p ? pl : 0);
            printf("'\n");
        }
    }
    if (!rc && show_count) printf("Total number of tokens: %d\n", n);
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, "sprig %s: cannot write the output\n", C);
        rc = 1;
    }
    free(out);
    free(owned);
    sprig_tokenizer_free(t);
    return rc;
}
