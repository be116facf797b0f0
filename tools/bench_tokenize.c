/*
 * tools/bench_tokenize.c — `sprig bench tokenize`: tokenizer speed on 1 MiB
 * of text, encode and decode, one thread.
 *
 *   sprig bench tokenize -m VOCAB.gguf [--text english|mixed|FILE] [--reps R]
 *        [--size BYTES] [--docs DIR] [--bos] [--parse-special]
 *        [--save-text FILE] [--ids-out FILE] [--json]
 *
 * The two standard texts are built deterministically and cut to exactly
 * --size bytes (default 1 MiB), backed off to a UTF-8 character boundary:
 *   english  the Markdown files under the docs folder ($SPRIG_SHARED/docs,
 *            default ../shared/docs; --docs DIR), in sorted path order, with
 *            fenced code blocks left out, concatenated and repeated; the
 *            project's README.md when that folder has none;
 *   mixed    bench/data/mixed.txt ($SPRIG_BENCH_DATA/mixed.txt) repeated:
 *            sentences in many scripts, emoji, code and numbers.
 * Any other value is a file taken as it is. The text's FNV-1a hash is
 * printed so that runs on different checkouts can be matched.
 *
 * Timing: one discarded warm-up, then R repetitions of the whole encode
 * (BOS off and control-token text not parsed unless asked, as llama.cpp's
 * bindings tokenize by default); the median is reported as tokens/s and
 * MB/s (10^6 bytes). Decode (detokenize) of the resulting ids is timed the
 * same way, and whether it gives the text back is reported. --save-text and
 * --ids-out write the exact text and the ids (space-separated, one line) for
 * bench/tokenize-compare.sh, which runs llama.cpp on the same bytes.
 */
#include "cli.h"
#include "gguf/gguf.h"
#include "base/timer.h"
#include "tokenizer/tokenizer.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const C = "bench tokenize";

/* ---------------------------------------------------------------- text */

struct buf { char *p; size_t n, cap; };

static bool buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

struct paths { char **v; int n, cap; };

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every *.md under dir, recursively (depth-bounded; links not followed). */
static bool find_md(const char *dir, struct paths *out, int depth)
{
    if (depth > 8) return true;
    DIR *d = opendir(dir);
    if (!d) return depth > 0;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        size_t need = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(need);
        if (!p) { ok = false; break; }
        snprintf(p, need, "%s/%s", dir, e->d_name);
        struct stat st;
        size_t nl = strlen(e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            ok = find_md(p, out, depth + 1);
            free(p);
        } else if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && nl > 3 && !strcmp(e->d_name + nl - 3, ".md")) {
            if (out->n == out->cap) {
                int cap = out->cap ? 2 * out->cap : 16;
                char **v = realloc(out->v, sizeof *v * (size_t)cap);
                if (!v) { free(p); ok = false; break; }
                out->v = v;
                out->cap = cap;
            }
            out->v[out->n++] = p;
        } else {
            free(p);
        }
    }
    closedir(d);
    return ok;
}

/* Append a Markdown file's lines outside ``` fences. */
static bool add_prose(struct buf *b, const char *md, size_t n)
{
    bool fence = false;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && md[j] != '\n') j++;
        size_t k = i;
        while (k < j && (md[k] == ' ' || md[k] == '\t')) k++;
        bool marker = j - k >= 3 && !memcmp(md + k, "```", 3);
        if (marker) fence = !fence;
        else if (!fence && !buf_add(b, md + i, j - i + (j < n))) return false;
        i = j + (j < n);
    }
    return true;
}

/* Repeat src[n] to exactly `size` bytes, then back off to a UTF-8 boundary. */
static char *repeat_to(const char *src, size_t n, size_t size, size_t *len)
{
    char *p = malloc(size + 1);
    if (!p || !n) { free(p); return NULL; }
    for (size_t i = 0; i < size; i += n) memcpy(p + i, src, size - i < n ? size - i : n);
    /* the last character starts at s; keep it only if it ends inside size */
    size_t s = size - 1;
    while (s > 0 && ((unsigned char)p[s] & 0xC0) == 0x80) s--;
    unsigned char lead = (unsigned char)p[s];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    size_t cut = s + want <= size ? size : s;
    p[cut] = 0;
    *len = cut;
    return p;
}

static char *build_text(const char *which, const char *docs, size_t size, size_t *len, char *source, size_t scap)
{
    char why[512];
    if (!strcmp(which, "english")) {
        struct paths ps = { 0 };
        struct buf b = { 0 };
        bool ok = find_md(docs, &ps, 0);
        if (ok) qsort(ps.v, (size_t)ps.n, sizeof *ps.v, cmp_str);
        snprintf(source, scap, "%s/**/*.md (%d files, prose outside code fences)", docs, ps.n);
        if (ok && ps.n == 0) {                  /* no docs folder: the project's README */
            ps.v = malloc(sizeof *ps.v);
            ok = ps.v && (ps.v[0] = strdup("README.md"));
            ps.n = ok;
            snprintf(source, scap, "README.md (no *.md under %s)", docs);
        }
        for (int i = 0; ok && i < ps.n; i++) {
            size_t n;
            char *md = cli_read_all(ps.v[i], 1 << 24, &n, why, sizeof why);
            if (!md) { fprintf(stderr, "sprig %s: --text english: %s\n", C, why); ok = false; break; }
            ok = add_prose(&b, md, n) && buf_add(&b, "\n", 1);
            free(md);
        }
        for (int i = 0; i < ps.n; i++) free(ps.v[i]);
        free(ps.v);
        char *t = ok && b.n ? repeat_to(b.p, b.n, size, len) : NULL;
        if (ok && !t) fprintf(stderr, "sprig %s: --text english: no text found (or out of memory)\n", C);
        free(b.p);
        return t;
    }
    if (!strcmp(which, "mixed")) {
        const char *dir = getenv("SPRIG_BENCH_DATA");
        char path[4096];
        snprintf(path, sizeof path, "%s/mixed.txt", dir && *dir ? dir : "bench/data");
        size_t n;
        char *src = cli_read_all(path, 1 << 24, &n, why, sizeof why);
        if (!src) { fprintf(stderr, "sprig %s: --text mixed: %s\n", C, why); return NULL; }
        snprintf(source, scap, "%s", path);
        char *t = repeat_to(src, n, size, len);
        if (!t) fprintf(stderr, "sprig %s: --text mixed: '%s' is empty (or out of memory)\n", C, path);
        free(src);
        return t;
    }
    char *t = cli_read_all(which, SPRIG_TOKENIZE_MAX_TEXT, len, why, sizeof why);
    if (!t) fprintf(stderr, "sprig %s: --text: %s\n", C, why);
    snprintf(source, scap, "%s", which);
    return t;
}

/* ---------------------------------------------------------------- timing */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* A JSON string body: quotes, backslashes and control bytes escaped. */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

static bool write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

int sprig_bench_tokenize(int argc, char **argv)
{
    const char *model = NULL, *which = "english", *save_text = NULL, *ids_out = NULL;
    const char *shared = getenv("SPRIG_SHARED");
    char docs_default[4096];
    snprintf(docs_default, sizeof docs_default, "%s/docs", shared && *shared ? shared : "../shared");
    const char *docs = docs_default;
    long long reps = 5, size = 1 << 20;
    bool json = false, bos = false, parse_special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = NULL;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) dst = &model;
        else if (!strcmp(a, "--text")) dst = &which;
        else if (!strcmp(a, "--docs")) dst = &docs;
        else if (!strcmp(a, "--save-text")) dst = &save_text;
        else if (!strcmp(a, "--ids-out")) dst = &ids_out;
        else if (!strcmp(a, "--reps")) {
            if (!cli_parse_int(C, a, val, 1, 10000, &reps)) return 2;
            i++;
        } else if (!strcmp(a, "--size")) {
            if (!cli_parse_int(C, a, val, 1, (long long)SPRIG_TOKENIZE_MAX_TEXT, &size)) return 2;
            i++;
        } else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--bos")) bos = true;
        else if (!strcmp(a, "--parse-special")) parse_special = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench tokenize -m VOCAB.gguf [--text english|mixed|FILE] [--reps R] [--size BYTES]\n"
                   "                            [--docs DIR] [--bos] [--parse-special] [--save-text FILE]\n"
                   "                            [--ids-out FILE] [--json]\n");
            return 0;
        } else {
            fprintf(stderr, "sprig %s: unknown option '%s'\n", C, a);
            return 2;
        }
        if (dst) {
            if (!val) { fprintf(stderr, "sprig %s: %s: missing value\n", C, a); return 2; }
            *dst = val;
            i++;
        }
    }
    if (!model) { fprintf(stderr, "sprig %s: -m VOCAB.gguf is required\n", C); return 2; }

    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(model, &err);
    sprig_tokenizer *t = g ? sprig_tokenizer_from_gguf(g, &err) : NULL;
    sprig_gguf_close(g);
    if (!t) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); return 1; }

    char source[4400];
    size_t len = 0;
    char *text = build_text(which, docs, (size_t)size, &len, source, sizeof source);
    if (!text) { sprig_tokenizer_free(t); return 1; }
    if (save_text && !write_file(save_text, text, len)) {
        fprintf(stderr, "sprig %s: --save-text: cannot write '%s'\n", C, save_text);
        free(text);
        sprig_tokenizer_free(t);
        return 1;
    }

    int flags = (bos ? SPRIG_TOK_BOS : 0) | (parse_special ? SPRIG_TOK_PARSE_SPECIAL : 0);
    int R = (int)reps, rc = 0, n = 0;
    double *enc = malloc(sizeof(double) * (size_t)R), *dec = malloc(sizeof(double) * (size_t)R);
    int32_t *ids = NULL;
    bool roundtrip = false;
    long long rt_diff = -1;    /* first text byte the decode gets wrong */
    /* the warm-up also learns the count */
    double t0 = sprig_time_ms();
    n = sprig_tokenize(t, text, len, flags, NULL, 0, &err);
    double first_ms = sprig_time_ms() - t0;
    if (n < 0 || !enc || !dec || !(ids = malloc(sizeof *ids * (size_t)(n ? n : 1)))) {
        fprintf(stderr, "sprig %s: %s\n", C, n < 0 ? err.msg : "out of memory");
        rc = 1;
    }
    for (int r = 0; r < R && !rc; r++) {
        t0 = sprig_time_ms();
        int m = sprig_tokenize(t, text, len, flags, ids, n, &err);
        enc[r] = sprig_time_ms() - t0;
        if (m != n) { fprintf(stderr, "sprig %s: %s\n", C, m < 0 ? err.msg : "token count changed between runs"); rc = 1; }
    }
    size_t out_len = 0;
    for (int r = -1; r < R && !rc; r++) {       /* r = -1: warm-up */
        size_t dl = 0;
        t0 = sprig_time_ms();
        char *back = sprig_detokenize_n(t, ids, n, -1, &dl);
        double ms = sprig_time_ms() - t0;
        if (!back) { fprintf(stderr, "sprig %s: out of memory decoding %d tokens\n", C, n); rc = 1; break; }
        if (r >= 0) dec[r] = ms;
        else {
            /* SentencePiece's dummy prefix decodes as a leading space when there is no BOS */
            size_t skip = dl > 0 && back[0] == ' ' && sprig_tokenizer_add_space_prefix(t) ? 1 : 0;
            roundtrip = dl - skip == len && !memcmp(back + skip, text, len);
            size_t k = 0;
            while (k < len && k < dl - skip && back[skip + k] == text[k]) k++;
            rt_diff = roundtrip ? -1 : (long long)k;
            out_len = dl;
        }
        free(back);
    }
    if (!rc && ids_out) {
        FILE *f = fopen(ids_out, "w");
        bool ok = f != NULL;
        for (int i = 0; ok && i < n; i++) ok = fprintf(f, i ? " %d" : "%d", (int)ids[i]) > 0;
        if (f) ok = fprintf(f, "\n") > 0 && fclose(f) == 0 && ok;
        if (!ok) { fprintf(stderr, "sprig %s: --ids-out: cannot write '%s'\n", C, ids_out); rc = 1; }
    }
    if (!rc) {
        double e_ms = cli_median(enc, R), d_ms = cli_median(dec, R);
        double tok_s = n / (e_ms * 1e-3), mb_s = (double)len / 1e6 / (e_ms * 1e-3);
        double dtok_s = n / (d_ms * 1e-3), dmb_s = (double)out_len / 1e6 / (d_ms * 1e-3);
        uint64_t h = fnv1a(text, len);
        const char *kind = !strcmp(which, "english") || !strcmp(which, "mixed") ? which : "file";
        if (json) {
            printf("{\"bench\":\"tokenize\",\"vocab\":\"");
            json_str(stdout, model);
            printf("\",\"model\":\"");
            json_str(stdout, sprig_tokenizer_model(t));
            printf("\",\"pre\":\"");
            json_str(stdout, sprig_tokenizer_pre(t));
            printf("\",\"n_vocab\":%d,\"text\":\"%s\",\"source\":\"", sprig_tokenizer_n_vocab(t), kind);
            json_str(stdout, source);
            printf("\",\"bytes\":%zu,\"fnv1a\":\"%016" PRIx64 "\",\"bos\":%s,\"parse_special\":%s,\"tokens\":%d,\"reps\":%d,"
                   "\"threads\":1,\"first_ms\":%.3f,\"encode_ms_median\":%.3f,\"tok_s\":%.1f,\"mb_s\":%.3f,"
                   "\"decode_ms_median\":%.3f,\"decode_tok_s\":%.1f,\"decode_mb_s\":%.3f,\"roundtrip\":%s,\"roundtrip_first_diff\":%lld}\n",
                   len, h, bos ? "true" : "false", parse_special ? "true" : "false", n, R, first_ms, e_ms, tok_s, mb_s,
                   d_ms, dtok_s, dmb_s, roundtrip ? "true" : "false", rt_diff);
        } else {
            printf("vocab     %s (%s%s%s, %d tokens)\n", model, sprig_tokenizer_model(t), *sprig_tokenizer_pre(t) ? ", pre " : "",
                   sprig_tokenizer_pre(t), sprig_tokenizer_n_vocab(t));
            printf("text      %s: %s, %zu bytes, fnv1a %016" PRIx64 "\n", kind, source, len, h);
            printf("tokens    %d (%.2f bytes/token)%s%s\n", n, n ? (double)len / n : 0, bos ? ", BOS" : "",
                   parse_special ? ", special tokens parsed" : "");
            printf("encode    %.2f ms median of %d (warm-up %.2f ms) = %.0f tok/s, %.2f MB/s, 1 thread\n", e_ms, R, first_ms, tok_s, mb_s);
            printf("decode    %.2f ms median of %d = %.0f tok/s, %.2f MB/s; round trip ", d_ms, R, dtok_s, dmb_s);
            if (roundtrip) printf("exact\n");
            else printf("differs from byte %lld of the text\n", rt_diff);
        }
    }
    free(ids);
    free(enc);
    free(dec);
    free(text);
    sprig_tokenizer_free(t);
    return rc;
}
