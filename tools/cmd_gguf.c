/*
 * tools/cmd_gguf.c — `sprig gguf FILE`: print a GGUF file's header figures,
 * every metadata key (type and value; arrays show element type, length and
 * the first elements), the tensor table and totals.
 *
 * The file goes through the same validating reader the engine uses, so this
 * is also the quickest way to see why a file is refused: the reader's
 * message (file, section, field) is printed and the exit status is 1.
 */
#include "cli.h"
#include "gguf/gguf.h"
#include "tensor/types.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sprig gguf [--help] FILE\n"
            "\n"
            "Print a GGUF file's version, alignment, data offset, every metadata key\n"
            "(type and value; arrays: element type, length, first elements), the tensor\n"
            "table (index, name, type, shape, offset, bytes) and totals.\n"
            "Exit status: 0 ok, 1 the file cannot be read or is malformed, 2 bad usage.\n");
}

static void print_shape(const sprig_gguf_tensor *t, char *buf, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

int sprig_cmd_gguf(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sprig gguf: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (path) {
            fprintf(stderr, "sprig gguf: one FILE expected, got '%s' and '%s'\n", path, argv[i]);
            return 2;
        }
        path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "sprig gguf: missing FILE\n");
        usage(stderr);
        return 2;
    }
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(path, &err);
    if (!g) {
        fprintf(stderr, "sprig gguf: %s\n", err.msg);
        return 1;
    }
    printf("file:        %s\n", path);
    printf("version:     %" PRIu32 "\n", sprig_gguf_version(g));
    printf("alignment:   %zu\n", sprig_gguf_alignment(g));
    printf("data offset: %zu\n", sprig_gguf_data_offset(g));
    printf("file size:   %zu\n", sprig_gguf_file_size(g));

    int64_t nkv = sprig_gguf_n_kv(g);
    printf("\nmetadata: %" PRId64 " keys\n", nkv);
    static char val[8192];
    for (int64_t i = 0; i < nkv; i++) {
        sprig_gguf_kv_format(g, i, val, sizeof val);
        printf("  %4" PRId64 "  %-42s %-4s %s\n", i, sprig_gguf_kv_key(g, i), sprig_gguf_vtype_name(sprig_gguf_kv_type(g, i)), val);
    }

    int64_t nt = sprig_gguf_n_tensors(g);
    printf("\ntensors: %" PRId64 "\n", nt);
    printf("  %4s  %-42s %-6s %-24s %12s %12s\n", "idx", "name", "type", "shape", "offset", "bytes");
    uint64_t params = 0, bytes = 0;
    for (int64_t i = 0; i < nt; i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        char shape[128];
        print_shape(t, shape, sizeof shape);
        printf("  %4" PRId64 "  %-42s %-6s %-24s %12" PRIu64 " %12zu\n", i, t->name, sprig_type_name(t->type), shape, t->offset, t->nbytes);
        /* the reader proved each product fits in int64 */
        uint64_t nel = (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        params += nel;
        bytes += t->nbytes;
    }
    printf("\ntotals: %" PRId64 " tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%.2f MiB)\n", nt, params, bytes,
           (double)bytes / (1024.0 * 1024.0));
    sprig_gguf_close(g);
    return 0;
}
