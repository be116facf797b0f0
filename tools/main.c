/*
 * tools/main.c — the `sprig` command: dispatch to subcommands.
 *
 *   sprig run      generate text (plain or speculative)
 *   sprig bench    measure speed (decode, forward, spec)
 *   sprig gguf     print a GGUF file's metadata and tensor table
 *   sprig convert  import a llama2.c checkpoint
 *   sprig mkmodel  write a synthetic model (random weights, seeded)
 *   sprig tokenize print the token ids of a text (llama-tokenize conventions)
 *   sprig serve    the OpenAI API over HTTP
 *   sprig --version  the version, the kernel families compiled in and those this CPU runs
 */
#include "cli.h"
#include "sprig.h"

#include <stdio.h>
#include <string.h>

struct command { const char *name; int (*fn)(int, char **); const char *help; };

static const struct command commands[] = {
    { "run",     sprig_cmd_run,     "generate text (plain, chain or tree speculative decoding)" },
    { "bench",   sprig_cmd_bench,   "measure speed: decode | forward | spec | matmul | tokenize" },
    { "serve",   sprig_cmd_serve,   "the OpenAI API over HTTP: completions, chat, streaming" },
    { "gguf",    sprig_cmd_gguf,    "print a GGUF file's metadata and tensor table" },
    { "convert", sprig_cmd_convert, "import a llama2.c checkpoint: convert llama2c MODEL.bin TOKENIZER.bin OUT.gguf" },
    { "mkmodel", sprig_cmd_mkmodel, "write a synthetic llama model with seeded random weights" },
    { "template", sprig_cmd_template, "print a conversation rendered by a model's chat template: template -m FILE --messages JSON" },
    { "grammar", sprig_cmd_grammar, "print the GBNF grammar a JSON schema compiles to, or check a GBNF file" },
    { "tokenize", sprig_cmd_tokenize, "print the token ids of a text: tokenize -m FILE (-p TEXT | -f FILE | --stdin) [--ids]" },
};

static void usage(FILE *f)
{
    fprintf(f, "sprig %s — LLM inference with draft-tree speculative decoding\n\nusage: sprig <command> [options]\n\n", SPRIG_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'sprig <command> --help' describes a command's options; 'sprig --version' the build.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        struct sprig_build_info bi;
        sprig_get_build_info(&bi);
        printf("sprig %s\n", bi.version);
        printf("kernels compiled in: %s\n", bi.kernels_compiled);
        printf("this CPU runs:       %s (selected: %s)\n", bi.kernels_cpu, bi.kernels_selected);
        printf("built with %s\n", bi.compiler);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "sprig: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
