/*
 * tokenizer/pretok — the pre-tokenizer table and its PCRE2 matcher (see
 * pretok.h). Adding a pre-tokenizer is adding a row: its name, the names
 * llama.cpp treats as the same, and the published expressions verbatim.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretok.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

/* Expressions are C string literals holding the published text: each JSON
 * "\\" became a "\\" here too, so the regex text is byte-identical. */
static const struct sprig_pretok_row rows[] = {
    { "gpt-2", "phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de mellum modern-bert exaone4", {
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
      }, false, false, "GPT-2's ByteLevel pre-tokenizer (use_regex: true)" },
    { "llama-bpe", "llama3 llama-v3 falcon3 falcon-h1 pixtral midm-2.0 lfm2", {
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      }, true, true, "Llama 3 tokenizer.json, pre_tokenizer Split (Isolated)" },
    { "qwen2", "deepseek-r1-qwen kormo f2llmv2", {
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      }, false, false, "Qwen 2 / 2.5 / 3 tokenizer.json, pre_tokenizer Split (Isolated)" },
    { "qwen35", "", {
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      }, false, false, "Qwen 3.5 tokenizer.json, pre_tokenizer Split (Isolated)" },
    { "default", "", {
        "[\\p{P}\\$\\+<=>\\^~\\|]+",
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "\\p{N}+",
        "[0-9][0-9][0-9]",
      }, false, false, "llama.cpp's fallback for BPE vocabularies that name no pre-tokenizer" },
    { "gemma4", "granite-embed-multi-311m", {
        "[^\\n]+|[\\n]+",
      }, false, false, "llama.cpp's split for SentencePiece-style BPE (Gemma 4): lines and runs of newlines" },
};

#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

const struct sprig_pretok_row *sprig_pretok_rows(int *n)
{
    if (n) *n = N_ROWS;
    return rows;
}

static bool word_in(const char *list, const char *w, size_t len)
{
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == len && len && memcmp(p, w, len) == 0) return true;
        p = e;
    }
    return false;
}

const struct sprig_pretok_row *sprig_pretok_row_find(const char *name, size_t len)
{
    if (!name) return NULL;
    for (int i = 0; i < N_ROWS; i++)
        if ((strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0) || word_in(rows[i].aliases, name, len))
            return &rows[i];
    return NULL;
}

const struct sprig_pretok_row *sprig_pretok_row_by_regex(const char *regex, size_t len)
{
    if (!regex) return NULL;
    for (int i = 0; i < N_ROWS; i++)
        if (!rows[i].regex[1] && strlen(rows[i].regex[0]) == len && memcmp(rows[i].regex[0], regex, len) == 0)
            return &rows[i];
    return NULL;
}

/* ---------------------------------------------------------------- matcher */

struct sprig_pretok {
    const struct sprig_pretok_row *row;
    pcre2_code *code[SPRIG_PRETOK_MAX_REGEX];
    int n;
    size_t ovec_pairs;
};

void sprig_pretok_free(sprig_pretok *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->code[i]);
    free(p);
}

sprig_pretok *sprig_pretok_compile_regex(const char *name, const char *const *regex, int n, sprig_error *err)
{
    if (!name) name = "(unnamed)";
    if (!regex || n < 1 || n > SPRIG_PRETOK_MAX_REGEX) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "pre-tokenizer '%s': %d expressions (1..%d)", name, n, SPRIG_PRETOK_MAX_REGEX);
        return NULL;
    }
    sprig_pretok *p = calloc(1, sizeof *p);
    if (!p) { sprig_err(err, SPRIG_E_NOMEM, "pre-tokenizer '%s': out of memory", name); return NULL; }
    for (int i = 0; i < n; i++) {
        if (!regex[i]) {
            sprig_err(err, SPRIG_E_INVALID_ARG, "pre-tokenizer '%s': expression %d is NULL", name, i);
            sprig_pretok_free(p);
            return NULL;
        }
        int ec = 0;
        PCRE2_SIZE eo = 0;
        pcre2_code *c = pcre2_compile((PCRE2_SPTR)regex[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                      &ec, &eo, NULL);
        if (!c) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            sprig_err(err, SPRIG_E_FORMAT, "pre-tokenizer '%s': expression %d does not compile at offset %zu: %s",
                      name, i, (size_t)eo, (const char *)msg);
            sprig_pretok_free(p);
            return NULL;
        }
        (void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);   /* interpreted matching when JIT is unavailable */
        p->code[p->n++] = c;
        uint32_t cap = 0;
        pcre2_pattern_info(c, PCRE2_INFO_CAPTURECOUNT, &cap);
        if (cap + 1 > p->ovec_pairs) p->ovec_pairs = cap + 1;
    }
    return p;
}

sprig_pretok *sprig_pretok_compile(const struct sprig_pretok_row *row, sprig_error *err)
{
    if (!row) { sprig_err(err, SPRIG_E_INVALID_ARG, "pre-tokenizer: row is NULL"); return NULL; }
    int n = 0;
    while (n < SPRIG_PRETOK_MAX_REGEX && row->regex[n]) n++;
    sprig_pretok *p = sprig_pretok_compile_regex(row->name, row->regex, n, err);
    if (p) p->row = row;
    return p;
}

const struct sprig_pretok_row *sprig_pretok_row_of(const sprig_pretok *p) { return p ? p->row : NULL; }

struct split {
    const sprig_pretok *p;
    pcre2_match_data *md;
    const char *text;
    sprig_pretok_fn fn;
    void *user;
    sprig_error *err;
    int rc;                 /* first PCRE2 error, 0 if none */
    bool stopped;
};

/* Length of the UTF-8 character at s (valid UTF-8 is guaranteed). */
static size_t char_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

static bool emit(struct split *s, int level, size_t off, size_t len);

/* Cut [off, off+len) with expression `level`, passing matches and gaps on. */
static bool cut(struct split *s, int level, size_t off, size_t len)
{
    const pcre2_code *c = s->p->code[level];
    PCRE2_SPTR subj = (PCRE2_SPTR)(s->text + off);
    size_t pos = 0, gap = 0;
    while (pos < len) {
        int rc = pcre2_match(c, subj, len, pos, PCRE2_NO_UTF_CHECK, s->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) { s->rc = rc; return false; }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) {                 /* an empty match cuts nothing: step over one character */
            pos = ms + char_len(subj[ms < len ? ms : len - 1]);
            continue;
        }
        if (ms > gap && !emit(s, level + 1, off + gap, ms - gap)) return false;
        if (!emit(s, level + 1, off + ms, me - ms)) return false;
        pos = gap = me;
    }
    if (gap < len && !emit(s, level + 1, off + gap, len - gap)) return false;
    return true;
}

static bool emit(struct split *s, int level, size_t off, size_t len)
{
    if (level < s->p->n) return cut(s, level, off, len);
    if (!s->fn(s->user, off, len)) { s->stopped = true; return false; }
    return true;
}

sprig_status sprig_pretok_split(const sprig_pretok *p, const char *text, size_t len,
                                sprig_pretok_fn fn, void *user, sprig_error *err)
{
    if (!p || !fn || (!text && len)) return sprig_err(err, SPRIG_E_INVALID_ARG, "pre-tokenize: bad arguments");
    if (len == 0) return SPRIG_OK;
    struct split s = { .p = p, .text = text, .fn = fn, .user = user, .err = err };
    s.md = pcre2_match_data_create((uint32_t)p->ovec_pairs, NULL);
    if (!s.md) return sprig_err(err, SPRIG_E_NOMEM, "pre-tokenize: out of memory");
    bool ok = cut(&s, 0, 0, len);
    pcre2_match_data_free(s.md);
    if (ok) return SPRIG_OK;
    if (s.rc) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(s.rc, msg, sizeof msg);
        return sprig_err(err, SPRIG_E_INTERNAL, "pre-tokenize '%s': matching failed: %s", p->row ? p->row->name : "(regex)",
                         (const char *)msg);
    }
    return err && err->code ? err->code : SPRIG_E_INTERNAL;
}
