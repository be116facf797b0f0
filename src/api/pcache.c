/*
 * api/pcache — see pcache.h. The writer goes to PATH.tmp and renames over
 * PATH only once the checksum is written, so a run that fails (or is killed)
 * half way never leaves a torn cache file behind.
 */
#include "api/pcache.h"

#include <stdlib.h>
#include <string.h>

static const char magic[8] = { 'S', 'P', 'R', 'I', 'G', 'P', 'C', 0 };

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

typedef struct {
    const uint8_t *p;
    size_t len, at;
} rd;

static bool get(rd *r, void *out, size_t n)
{
    if (r->len - r->at < n) return false;
    memcpy(out, r->p + r->at, n);
    r->at += n;
    return true;
}

static bool skip(rd *r, size_t n, const uint8_t **where)
{
    if (r->len - r->at < n) return false;
    *where = r->p + r->at;
    r->at += n;
    return true;
}

sprig_status sprig_pcache_parse(const void *buf, size_t len, sprig_pcache *out, sprig_error *err)
{
    memset(out, 0, sizeof *out);
    rd r = { buf, len, 0 };
    char m[8];
    if (!buf || !get(&r, m, sizeof m) || memcmp(m, magic, sizeof m))
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: not a sprig prompt cache file (no SPRIGPC magic)");
    if (len < sizeof m + 8)
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: truncated (%zu bytes)", len);
    uint64_t want;
    memcpy(&want, (const uint8_t *)buf + len - 8, 8);
    if (fnv(0xcbf29ce484222325ull, buf, len - 8) != want)
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: checksum mismatch (the file is truncated or corrupted)");
    r.len = len - 8;
    uint32_t id_len = 0, n_sec = 0;
    if (!get(&r, &out->version, 4)) return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: truncated before the version");
    if (out->version != SPRIG_PCACHE_VERSION)
        return sprig_err(err, SPRIG_E_REFUSED, "prompt cache: format version %u, this sprig reads version %d", out->version,
                         SPRIG_PCACHE_VERSION);
    const uint8_t *idp;
    if (!get(&r, &id_len, 4) || id_len > 65536 || !skip(&r, id_len, &idp))
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: the id text is truncated or longer than 64 KiB");
    out->id = (const char *)idp;
    out->id_len = id_len;
    if (!get(&r, &n_sec, 4) || n_sec < 1 || n_sec > SPRIG_PCACHE_MAX_SECTIONS)
        return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: %u sections (1 or 2 expected)", n_sec);
    out->n_sections = (int)n_sec;
    for (uint32_t i = 0; i < n_sec; i++) {
        sprig_pcache_section *s = &out->sec[i];
        uint32_t nt, nl;
        uint64_t rb;
        const uint8_t *tp;
        if (!get(&r, &nt, 4) || nt > (1u << 24) || !skip(&r, (size_t)nt * 4, &tp))
            return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: section %u: tokens truncated or more than 2^24", i);
        if (!get(&r, &nl, 4) || nl < 1 || nl > 4096 || !get(&r, &rb, 8) || rb < 1 || rb > (1u << 24))
            return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: section %u: layer count or row size out of range", i);
        const uint64_t bytes = (uint64_t)nl * (uint64_t)nt * rb;   /* < 2^12 * 2^24 * 2^24: no overflow */
        const uint8_t *rows;
        if (bytes > (uint64_t)(r.len - r.at) || !skip(&r, (size_t)bytes, &rows))
            return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: section %u: %llu bytes of rows, %zu left in the file", i,
                             (unsigned long long)bytes, r.len - r.at);
        *s = (sprig_pcache_section){ .n_tokens = (int)nt, .tokens = (const int32_t *)(const void *)tp, .n_layer = (int)nl,
                                     .row_bytes = rb, .rows = rows, .rows_len = (size_t)bytes };
    }
    if (r.at != r.len) return sprig_err(err, SPRIG_E_FORMAT, "prompt cache: %zu bytes after the last section", r.len - r.at);
    return SPRIG_OK;
}

/* The next line of text[at..n) into [*b, *e); false at the end. */
static bool line(const char *t, size_t n, size_t *at, size_t *b, size_t *e)
{
    if (*at >= n) return false;
    *b = *at;
    while (*at < n && t[*at] != '\n') (*at)++;
    *e = *at;
    if (*at < n) (*at)++;
    return true;
}

sprig_status sprig_pcache_match(const sprig_pcache *pc, const char *id, const char *path, sprig_error *err)
{
    const size_t n = strlen(id);
    size_t a = 0, b = 0;
    for (;;) {
        size_t ab = 0, ae = 0, bb = 0, be = 0;
        const bool ha = line(pc->id, pc->id_len, &a, &ab, &ae), hb = line(id, n, &b, &bb, &be);
        if (!ha && !hb) return SPRIG_OK;
        if (ha && hb && ae - ab == be - bb && !memcmp(pc->id + ab, id + bb, ae - ab)) continue;
        /* name the key that differs: the running session's line, and the file's */
        const char *kk = hb ? id + bb : pc->id + ab;
        size_t kn = 0;
        const size_t lim = hb ? be - bb : ae - ab;
        while (kn < lim && kk[kn] != '=') kn++;
        return sprig_err(err, SPRIG_E_REFUSED, "prompt cache %s: made for another %.*s: the file has '%.*s', this run '%.*s'", path,
                         (int)kn, kk, ha ? (int)(ae - ab) : 6, ha ? pc->id + ab : "(none)", hb ? (int)(be - bb) : 6,
                         hb ? id + bb : "(none)");
    }
}

struct sprig_pcache_writer {
    FILE *f;
    char *path, *tmp;
};

sprig_pcache_writer *sprig_pcache_begin(const char *path, const char *id, int n_sections, sprig_error *err)
{
    sprig_pcache_writer *w = calloc(1, sizeof *w);
    const size_t pl = strlen(path);
    if (w) {
        w->path = strdup(path);
        w->tmp = malloc(pl + 5);
    }
    if (!w || !w->path || !w->tmp) {
        sprig_pcache_abort(w);
        sprig_err(err, SPRIG_E_NOMEM, "prompt cache: out of memory");
        return NULL;
    }
    memcpy(w->tmp, path, pl);
    memcpy(w->tmp + pl, ".tmp", 5);
    if (!(w->f = fopen(w->tmp, "w+b"))) {
        sprig_err(err, SPRIG_E_IO, "prompt cache %s: cannot write %s", path, w->tmp);
        sprig_pcache_abort(w);
        return NULL;
    }
    const uint32_t v = SPRIG_PCACHE_VERSION, il = (uint32_t)strlen(id), ns = (uint32_t)n_sections;
    if (fwrite(magic, 1, 8, w->f) != 8 || fwrite(&v, 4, 1, w->f) != 1 || fwrite(&il, 4, 1, w->f) != 1 ||
        fwrite(id, 1, il, w->f) != il || fwrite(&ns, 4, 1, w->f) != 1) {
        sprig_err(err, SPRIG_E_IO, "prompt cache %s: write error", path);
        sprig_pcache_abort(w);
        return NULL;
    }
    return w;
}

FILE *sprig_pcache_file(sprig_pcache_writer *w) { return w->f; }

sprig_status sprig_pcache_section_head(sprig_pcache_writer *w, const int32_t *tokens, int n, int n_layer, uint64_t row_bytes)
{
    const uint32_t nt = (uint32_t)n, nl = (uint32_t)n_layer;
    if (fwrite(&nt, 4, 1, w->f) != 1 || (n && fwrite(tokens, 4, (size_t)n, w->f) != (size_t)n) || fwrite(&nl, 4, 1, w->f) != 1 ||
        fwrite(&row_bytes, 8, 1, w->f) != 1)
        return SPRIG_E_IO;
    return SPRIG_OK;
}

sprig_status sprig_pcache_end(sprig_pcache_writer *w, sprig_error *err)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint8_t buf[1 << 16];
    bool ok = fflush(w->f) == 0 && fseek(w->f, 0, SEEK_SET) == 0;
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, w->f)) > 0) h = fnv(h, buf, n);
    ok = ok && !ferror(w->f) && fseek(w->f, 0, SEEK_END) == 0 && fwrite(&h, 8, 1, w->f) == 1;
    ok = fclose(w->f) == 0 && ok;
    w->f = NULL;
    if (!ok || rename(w->tmp, w->path)) {
        sprig_err(err, SPRIG_E_IO, "prompt cache %s: cannot finish the file (disk full?)", w->path);
        sprig_pcache_abort(w);
        return SPRIG_E_IO;
    }
    free(w->path);
    free(w->tmp);
    free(w);
    return SPRIG_OK;
}

void sprig_pcache_abort(sprig_pcache_writer *w)
{
    if (!w) return;
    if (w->f) fclose(w->f);
    if (w->tmp) remove(w->tmp);
    free(w->path);
    free(w->tmp);
    free(w);
}
