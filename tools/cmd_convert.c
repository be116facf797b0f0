/*
 * tools/cmd_convert.c — `sprig convert llama2c MODEL.bin TOKENIZER.bin OUT.gguf`:
 * import a karpathy llama2.c checkpoint and its tokenizer.bin into a llama
 * GGUF (all tensors F32, the layout of llama.cpp's llama2.c converter); and
 * `sprig convert hf-tokenizer TOKENIZER.json [--config CONFIG.json] OUT.gguf`:
 * a Hugging Face tokenizer.json to a vocabulary-only GGUF. The work is in
 * src/gguf/convert.c and src/gguf/convert_hf.c; this file parses the command line.
 */
#include "cli.h"
#include "gguf/convert.h"
#include "gguf/convert_hf.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sprig convert llama2c [options] MODEL.bin TOKENIZER.bin OUT.gguf\n"
            "       sprig convert hf-tokenizer TOKENIZER.json [--config TOKENIZER_CONFIG.json] OUT.gguf\n"
            "\n"
            "Import a llama2.c checkpoint (legacy export: 7 int32 header + f32 weights)\n"
            "and a llama2.c tokenizer.bin into a llama GGUF with F32 tensors.\n"
            "\n"
            "hf-tokenizer: a Hugging Face tokenizer.json (byte-level BPE such as Llama 3\n"
            "and Qwen 3, or SentencePiece-style BPE such as Gemma 3) to a vocabulary-only\n"
            "GGUF (tokenizer.* keys, no tensors); --config adds the special-token ids,\n"
            "add_bos/add_eos and the chat template from tokenizer_config.json.\n"
            "\n"
            "options:\n"
            "  --config F    hf-tokenizer: tokenizer_config.json to read\n"
            "  --ctx N       llama.context_length to record (default: the checkpoint's seq_len)\n"
            "  --name NAME   general.name (default: llama)\n"
            "  -h, --help    this text\n"
            "\n"
            "The official stories260K.gguf was made with --ctx 2048.\n");
}

int sprig_cmd_convert(int argc, char **argv)
{
    const char *pos[4] = { 0 };
    int npos = 0;
    struct sprig_convert_opts opts = { 0 };
    const char *config = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--ctx") || !strcmp(a, "--name") || !strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sprig convert: %s: missing value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--config")) {
                config = v;
            } else if (!strcmp(a, "--ctx")) {
                long long n;
                if (!cli_parse_int("convert", "--ctx", v, 1, 0xffffffffLL, &n)) return 2;
                opts.context_length = (uint32_t)n;
            } else {
                if (!*v || strlen(v) > 256) {
                    fprintf(stderr, "sprig convert: --name: must be 1..256 bytes\n");
                    return 2;
                }
                opts.name = v;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "sprig convert: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (npos == 4) {
            fprintf(stderr, "sprig convert: too many arguments ('%s')\n", a);
            return 2;
        }
        pos[npos++] = a;
    }
    if (npos == 0) {
        usage(stderr);
        return 2;
    }
    sprig_error err = { 0 };
    if (!strcmp(pos[0], "hf-tokenizer")) {
        if (npos != 3) {
            fprintf(stderr, "sprig convert hf-tokenizer: expected TOKENIZER.json OUT.gguf\n");
            usage(stderr);
            return 2;
        }
        if (sprig_convert_hf_tokenizer(pos[1], config, pos[2], &err) != SPRIG_OK) {
            fprintf(stderr, "sprig convert: %s\n", err.msg);
            return 1;
        }
        fprintf(stderr, "sprig convert: wrote %s\n", pos[2]);
        return 0;
    }
    if (strcmp(pos[0], "llama2c")) {
        fprintf(stderr, "sprig convert: unknown source format '%s' (supported: llama2c, hf-tokenizer)\n", pos[0]);
        return 2;
    }
    if (config) {
        fprintf(stderr, "sprig convert llama2c: --config is for hf-tokenizer\n");
        return 2;
    }
    if (npos != 4) {
        fprintf(stderr, "sprig convert llama2c: expected MODEL.bin TOKENIZER.bin OUT.gguf\n");
        usage(stderr);
        return 2;
    }
    if (sprig_convert_llama2c(pos[1], pos[2], pos[3], &opts, &err) != SPRIG_OK) {
        fprintf(stderr, "sprig convert: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "sprig convert: wrote %s\n", pos[3]);
    return 0;
}
