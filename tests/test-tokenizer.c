/*
 * tests/test-tokenizer.c — the llama (SentencePiece-style) tokenizer.
 *
 * The vocabulary comes from ../shared/models/tok512.bin (llama2.c format:
 * u32 max_token_length, then per token f32 score, u32 len, bytes), turned
 * into GGUF form the way llama.cpp's converter does: ' ' -> '▁', the
 * "\n<s>\n" / "\n</s>\n" pieces -> "<s>" / "</s>", token types id 0 UNKNOWN,
 * 1-2 CONTROL, "<0xNN>" BYTE, the rest NORMAL. Checks:
 *   - every (prompt_text, prompt_ids) pair in the vector files encodes exactly,
 *     every output_ids / bonus+drafts decodes to its text (prev = last prompt id);
 *   - the heap-based encoder equals a plain quadratic rescan written here, on
 *     random strings with the real vocabulary and with random vocabularies
 *     full of score ties, duplicates and control pieces;
 *   - encode -> decode round trips (prompts, random valid UTF-8, NUL bytes,
 *     spaces, emoji through byte fallback, long input); ill-formed UTF-8
 *     decodes like Python's errors="replace";
 *   - streaming decode equals whole decode, holds back split characters;
 *   - hostile descriptions are rejected naming the field;
 *   - sprig_tokenizer_from_gguf on stories260K.gguf matches tok512.bin.
 */
#include "test.h"
#include "tokenizer/tokenizer.h"
#include "gguf/gguf.h"
#include "base/rng.h"
#include "base/timer.h"

#include <ctype.h>

/* ================================================================ tok512.bin */

struct vocab {
    int n;
    char **pieces;
    size_t *lens;
    float *scores;
    int32_t *types;
};

static void vocab_free(struct vocab *v)
{
    for (int i = 0; i < v->n; i++) free(v->pieces[i]);
    free(v->pieces); free(v->lens); free(v->scores); free(v->types);
    memset(v, 0, sizeof *v);
}

static bool is_byte_piece(const char *p, size_t n)
{
    if (n != 6 || memcmp(p, "<0x", 3) || p[5] != '>') return false;
    return strchr("0123456789ABCDEF", p[3]) && strchr("0123456789ABCDEF", p[4]) && p[3] && p[4];
}

static bool load_tok512(struct vocab *v)
{
    memset(v, 0, sizeof *v);
    FILE *f = fopen(test_shared("models/tok512.bin"), "rb");
    if (!f) { fprintf(stderr, "  cannot open tok512.bin\n"); return false; }
    static unsigned char buf[1 << 16];
    size_t sz = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (sz < 4 || sz == sizeof buf) return false;
    int cap = 1024;
    v->pieces = calloc((size_t)cap, sizeof *v->pieces);
    v->lens = calloc((size_t)cap, sizeof *v->lens);
    v->scores = calloc((size_t)cap, sizeof *v->scores);
    v->types = calloc((size_t)cap, sizeof *v->types);
    size_t o = 4;
    while (o < sz) {
        if (sz - o < 8 || v->n == cap) { vocab_free(v); return false; }
        float score; uint32_t len;
        memcpy(&score, buf + o, 4); memcpy(&len, buf + o + 4, 4);
        o += 8;
        if (len > sz - o || len > 64) { vocab_free(v); return false; }
        const char *raw = (const char *)buf + o;
        o += len;
        char *p = malloc(3 * (size_t)len + 1);
        size_t n = 0;
        if (len == 5 && !memcmp(raw, "\n<s>\n", 5)) { memcpy(p, "<s>", 3); n = 3; }
        else if (len == 6 && !memcmp(raw, "\n</s>\n", 6)) { memcpy(p, "</s>", 4); n = 4; }
        else
            for (uint32_t k = 0; k < len; k++) {
                if (raw[k] == ' ') { memcpy(p + n, "\xE2\x96\x81", 3); n += 3; }
                else p[n++] = raw[k];
            }
        p[n] = 0;
        int id = v->n++;
        v->pieces[id] = p;
        v->lens[id] = n;
        v->scores[id] = score;
        v->types[id] = id == 0 ? SPRIG_TOKEN_UNKNOWN : (id == 1 || id == 2) ? SPRIG_TOKEN_CONTROL
                     : is_byte_piece(p, n) ? SPRIG_TOKEN_BYTE : SPRIG_TOKEN_NORMAL;
    }
    return v->n == 512;
}

static struct sprig_vocab_desc desc_of(const struct vocab *v)
{
    return (struct sprig_vocab_desc){
        .model = "llama", .n_vocab = v->n, .pieces = (const char *const *)v->pieces, .piece_lens = v->lens,
        .scores = v->scores, .types = v->types, .bos = 1, .eos = 2, .unk = 0, .add_bos = true, .add_space_prefix = true,
    };
}

static struct vocab g_v;
static sprig_tokenizer *g_tok;

/* ================================================================ quadratic oracle */

/* An independent, obviously-correct encoder: linear-scan lookups and the
 * llama2.c rescan loop, with the documented rules of tokenizer.h. */

static bool o_encodable(const struct vocab *v, int id)
{
    int ty = v->types ? v->types[id] : SPRIG_TOKEN_NORMAL;
    return ty != SPRIG_TOKEN_CONTROL && ty != SPRIG_TOKEN_UNKNOWN && ty != SPRIG_TOKEN_UNUSED;
}

static int o_find(const struct vocab *v, const char *a, size_t alen, const char *b, size_t blen)
{
    if (alen + blen == 0) return -1;
    for (int i = 0; i < v->n; i++)
        if (o_encodable(v, i) && v->lens[i] == alen + blen && !memcmp(v->pieces[i], a, alen) &&
            (blen == 0 || !memcmp(v->pieces[i] + alen, b, blen)))
            return i;
    return -1;
}

/* Length of a well-formed UTF-8 character at s (decode the code point, then
 * check it against the ranges), 0 if ill-formed. */
static int o_utf8_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80) return 1;
    int len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (!len || (size_t)len > n || s[0] >= 0xF8) return 0;
    uint32_t cp = s[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static int o_byte_tok(const struct vocab *v, int unk, unsigned char b)
{
    char name[7];
    snprintf(name, sizeof name, "<0x%02X>", b);
    int id = o_find(v, name, 6, NULL, 0);
    if (id < 0) { snprintf(name, sizeof name, "<0x%02x>", b); id = o_find(v, name, 6, NULL, 0); }
    if (id < 0) id = o_find(v, (const char *)&b, 1, NULL, 0);
    return id < 0 ? unk : id;
}

/* Returns the count (ids in out[cap]) or -1 when a byte has no token. */
static int oracle_encode(const struct vocab *v, int unk, bool space_prefix, const char *text, size_t len, int32_t *out, int cap)
{
    size_t nn = len + 3;
    char *norm = malloc(3 * nn + 1);
    size_t m = 0;
    if (len && space_prefix) { memcpy(norm, "\xE2\x96\x81", 3); m = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(norm + m, "\xE2\x96\x81", 3); m += 3; }
        else norm[m++] = text[i];
    }
    int32_t *ids = malloc((3 * m + 3) * sizeof *ids);
    int n = 0;
    for (size_t i = 0; i < m;) {
        int cl = o_utf8_len((const unsigned char *)norm + i, m - i);
        if (!cl) cl = 1;
        int id = o_find(v, norm + i, (size_t)cl, NULL, 0);
        if (id >= 0) ids[n++] = id;
        else
            for (int k = 0; k < cl; k++) {
                int b = o_byte_tok(v, unk, (unsigned char)norm[i + k]);
                if (b < 0) { free(norm); free(ids); return -1; }
                ids[n++] = b;
            }
        i += (size_t)cl;
    }
    for (;;) {
        double best = -1e30;
        int bi = -1, bid = -1;
        for (int i = 0; i + 1 < n; i++) {
            if (!o_encodable(v, ids[i]) || !o_encodable(v, ids[i + 1])) continue;
            int j = o_find(v, v->pieces[ids[i]], v->lens[ids[i]], v->pieces[ids[i + 1]], v->lens[ids[i + 1]]);
            double sc = v->scores ? v->scores[j < 0 ? 0 : j] : 0.0;
            if (j >= 0 && sc > best) { best = sc; bi = i; bid = j; }
        }
        if (bi < 0) break;
        ids[bi] = bid;
        memmove(ids + bi + 1, ids + bi + 2, (size_t)(n - bi - 2) * sizeof *ids);
        n--;
    }
    for (int i = 0; i < n && i < cap; i++) out[i] = ids[i];
    free(norm); free(ids);
    return n;
}

/* Is p[0..k) (k = 1..3) a proper prefix of some well-formed UTF-8 sequence?
 * Tables built once by encoding every scalar value U+0000..U+10FFFF. */
static bool o_wf_prefix(const unsigned char *p, size_t k)
{
    static uint8_t *bits;   /* bit set over 1 + 256 + 65536 + 2^24 prefixes */
    static const size_t base[4] = { 0, 0, 256, 256 + 65536 };
    if (!bits) {
        bits = calloc((256 + 65536 + (1u << 24)) / 8 + 1, 1);
        for (uint32_t cp = 0x80; cp <= 0x10FFFF; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            unsigned char b[4];
            size_t n;
            if (cp < 0x800) { b[0] = (unsigned char)(0xC0 | cp >> 6); b[1] = (unsigned char)(0x80 | (cp & 63)); n = 2; }
            else if (cp < 0x10000) { b[0] = (unsigned char)(0xE0 | cp >> 12); b[1] = (unsigned char)(0x80 | (cp >> 6 & 63));
                                     b[2] = (unsigned char)(0x80 | (cp & 63)); n = 3; }
            else { b[0] = (unsigned char)(0xF0 | cp >> 18); b[1] = (unsigned char)(0x80 | (cp >> 12 & 63));
                   b[2] = (unsigned char)(0x80 | (cp >> 6 & 63)); b[3] = (unsigned char)(0x80 | (cp & 63)); n = 4; }
            uint32_t key = 0;
            for (size_t j = 1; j < n; j++) {
                key = key << 8 | b[j - 1];
                size_t bit = base[j] + key;
                bits[bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
        }
    }
    uint32_t key = 0;
    for (size_t j = 0; j < k; j++) key = key << 8 | p[j];
    size_t bit = base[k] + key;
    return bits[bit / 8] >> (bit % 8) & 1;
}

/* Python's bytes.decode("utf-8", "replace"): each maximal prefix of a
 * well-formed sequence that cannot complete (or a lone bad byte) becomes one
 * U+FFFD. */
static size_t oracle_replace(const unsigned char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int l = o_utf8_len(s + i, n - i);
        if (l) { memcpy(out + o, s + i, (size_t)l); o += (size_t)l; i += (size_t)l; continue; }
        size_t best = 1;
        for (size_t k = 1; k <= 3 && i + k <= n && o_wf_prefix(s + i, k); k++) best = k;
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i += best;
    }
    return o;
}

static bool valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int l = o_utf8_len((const unsigned char *)s + i, n - i);
        if (!l) return false;
        i += (size_t)l;
    }
    return true;
}

/* ================================================================ vector files */

/* JSON string at *s (starting at '"') -> bytes in out (cap); returns length or -1. */
static long json_string(const char *s, char *out, size_t cap)
{
    if (*s++ != '"') return -1;
    size_t n = 0;
    while (*s != '"') {
        if (!*s || (unsigned char)*s < 0x20) return -1;
        uint32_t cp;
        if (*s != '\\') {
            if (n + 1 > cap) return -1;
            out[n++] = *s++;
            continue;
        }
        s++;
        switch (*s++) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            char hex[5] = { 0 };
            for (int k = 0; k < 4; k++) { if (!isxdigit((unsigned char)s[k])) return -1; hex[k] = s[k]; }
            s += 4;
            cp = (uint32_t)strtoul(hex, NULL, 16);
            if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;             /* lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (s[0] != '\\' || s[1] != 'u') return -1;
                for (int k = 0; k < 4; k++) { if (!isxdigit((unsigned char)s[2 + k])) return -1; hex[k] = s[2 + k]; }
                uint32_t lo = (uint32_t)strtoul(hex, NULL, 16);
                if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            }
            break;
        }
        default: return -1;
        }
        if (n + 4 > cap) return -1;
        if (cp < 0x80) out[n++] = (char)cp;
        else if (cp < 0x800) { out[n++] = (char)(0xC0 | cp >> 6); out[n++] = (char)(0x80 | (cp & 63)); }
        else if (cp < 0x10000) { out[n++] = (char)(0xE0 | cp >> 12); out[n++] = (char)(0x80 | (cp >> 6 & 63)); out[n++] = (char)(0x80 | (cp & 63)); }
        else {
            out[n++] = (char)(0xF0 | cp >> 18); out[n++] = (char)(0x80 | (cp >> 12 & 63));
            out[n++] = (char)(0x80 | (cp >> 6 & 63)); out[n++] = (char)(0x80 | (cp & 63));
        }
    }
    if (s[1] != 0) return -1;   /* trailing garbage after the closing quote */
    return (long)n;
}

#define VMAX_IDS 1024
struct vcase {
    char *prompt, *output;       /* NULL when absent */
    size_t prompt_len, output_len;
    int n_prompt, n_output;
    int32_t prompt_ids[VMAX_IDS], output_ids[VMAX_IDS];
};

static int parse_ids(const char *s, int32_t *ids)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || n < 0 || n > VMAX_IDS) return -1;
    for (long i = 0; i < n; i++) {
        s = end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000) return -1;
        ids[i] = (int32_t)v;
    }
    while (*end == ' ') end++;
    return *end ? -1 : (int)n;
}

static char *dup_json(const char *s, size_t *len)
{
    size_t cap = 4 * strlen(s) + 4;
    char *o = malloc(cap);
    long n = json_string(s, o, cap);
    if (n < 0) { free(o); return NULL; }
    *len = (size_t)n;
    o[n] = 0;
    return o;
}

/* Reads every case of a vector file; for mtp_drafts the output is bonus + drafts. */
static int load_cases(const char *rel, struct vcase **out)
{
    FILE *f = fopen(test_shared(rel), "r");
    if (!f) { fprintf(stderr, "  cannot open %s\n", rel); return -1; }
    static char line[1 << 16];
    struct vcase *cs = NULL;
    int n = 0, bad = 0;
    struct vcase *cur = NULL;
    int32_t bonus = -1;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (line[0] == '#') continue;
        if (!len) { cur = NULL; continue; }
        char *sp = strchr(line, ' ');
        if (!sp) { bad++; continue; }
        *sp = 0;
        const char *key = line, *val = sp + 1;
        if (!strcmp(key, "case")) {
            cs = realloc(cs, (size_t)(n + 1) * sizeof *cs);
            cur = &cs[n++];
            memset(cur, 0, sizeof *cur);
            bonus = -1;
            continue;
        }
        if (!cur) { bad++; continue; }
        if (!strcmp(key, "prompt_text")) { cur->prompt = dup_json(val, &cur->prompt_len); bad += !cur->prompt; }
        else if (!strcmp(key, "output_text") || !strcmp(key, "drafts_text")) { cur->output = dup_json(val, &cur->output_len); bad += !cur->output; }
        else if (!strcmp(key, "prompt_ids")) { cur->n_prompt = parse_ids(val, cur->prompt_ids); bad += cur->n_prompt < 0; }
        else if (!strcmp(key, "output_ids")) { cur->n_output = parse_ids(val, cur->output_ids); bad += cur->n_output < 0; }
        else if (!strcmp(key, "bonus")) bonus = atoi(val);
        else if (!strcmp(key, "drafts")) {
            int32_t d[VMAX_IDS];
            int k = parse_ids(val, d);
            if (k < 0 || bonus < 0) { bad++; continue; }
            cur->output_ids[0] = bonus;
            memcpy(cur->output_ids + 1, d, (size_t)k * sizeof *d);
            cur->n_output = k + 1;
        }
    }
    fclose(f);
    if (bad) { fprintf(stderr, "  %s: %d malformed lines\n", rel, bad); }
    *out = cs;
    return bad ? -1 : n;
}

static void free_cases(struct vcase *cs, int n)
{
    for (int i = 0; i < n; i++) { free(cs[i].prompt); free(cs[i].output); }
    free(cs);
}

/* ================================================================ tests */

static void test_json_parser(void)
{
    char b[64];
    CHECK_EQ_INT(json_string("\"a\\u00e9\\ud83d\\ude00\\n\\\"\"", b, sizeof b), 1 + 2 + 4 + 1 + 1);
    CHECK(!memcmp(b, "a\xC3\xA9\xF0\x9F\x98\x80\n\"", 9));
    CHECK_EQ_INT(json_string("\"x\\u0000y\"", b, sizeof b), 3);
    CHECK(b[1] == 0 && b[2] == 'y');
    CHECK_EQ_INT(json_string("\"\\ud83d\"", b, sizeof b), -1);      /* lone high surrogate */
    CHECK_EQ_INT(json_string("\"\\ude00\"", b, sizeof b), -1);      /* lone low surrogate */
    CHECK_EQ_INT(json_string("\"\\q\"", b, sizeof b), -1);
    CHECK_EQ_INT(json_string("\"abc", b, sizeof b), -1);
    CHECK_EQ_INT(json_string("\"abc\" x", b, sizeof b), -1);
}

static void test_vocab_basics(void)
{
    CHECK_EQ_INT(sprig_tokenizer_n_vocab(g_tok), 512);
    CHECK_EQ_INT(sprig_tokenizer_bos(g_tok), 1);
    CHECK_EQ_INT(sprig_tokenizer_eos(g_tok), 2);
    CHECK_EQ_INT(sprig_tokenizer_unk(g_tok), 0);
    CHECK(sprig_tokenizer_add_bos(g_tok));
    size_t len;
    const char *p = sprig_tokenizer_piece(g_tok, 259, &len);
    CHECK(p && len == 4 && !memcmp(p, "\xE2\x96\x81t", 4));
    CHECK(sprig_tokenizer_piece(g_tok, 512, &len) == NULL && len == 0);
    CHECK(sprig_tokenizer_piece(g_tok, -1, NULL) == NULL);
    CHECK_EQ_INT(sprig_tokenizer_type(g_tok, 13), SPRIG_TOKEN_BYTE);
    CHECK_EQ_INT(sprig_tokenizer_type(g_tok, 1), SPRIG_TOKEN_CONTROL);
    CHECK_NEAR(sprig_tokenizer_score(g_tok, 260), -1.0, 0);
    CHECK_EQ_INT(sprig_tokenizer_find(g_tok, "he", 2), 260);
    CHECK_EQ_INT(sprig_tokenizer_find(g_tok, "<s>", 3), -1);      /* control: not producible from text */
    CHECK_EQ_INT(sprig_tokenizer_find(g_tok, "<0x0A>", 6), 13);
    const char *tx = sprig_tokenizer_token_text(g_tok, 13, &len);
    CHECK(tx && len == 1 && tx[0] == '\n');
    tx = sprig_tokenizer_token_text(g_tok, 259, &len);
    CHECK(tx && len == 2 && !memcmp(tx, " t", 2));
    tx = sprig_tokenizer_token_text(g_tok, 1, &len);
    CHECK(tx && len == 0);
    CHECK(sprig_detok_max_out(g_tok) >= 3 + 3 * 7);
}

static int encode(const char *s, size_t n, bool bos, int32_t *out, int cap)
{
    sprig_error err = { 0 };
    int r = sprig_tokenize(g_tok, s, n, bos, out, cap, &err);
    if (r < 0) fprintf(stderr, "  tokenize failed: %s\n", err.msg);
    return r;
}

static void test_vectors(void)
{
    static const char *files[] = { "models/vectors/greedy_target.txt", "models/vectors/greedy_draft.txt",
                                   "models/vectors/logits_target.txt", "models/vectors/logits_draft.txt",
                                   "models/vectors/mtp_drafts.txt" };
    int n_prompts = 0, n_outputs = 0;
    for (size_t fi = 0; fi < sizeof files / sizeof *files; fi++) {
        struct vcase *cs = NULL;
        int n = load_cases(files[fi], &cs);
        CHECKF(n > 0, "%s", files[fi]);
        for (int i = 0; i < n; i++) {
            struct vcase *c = &cs[i];
            CHECK(c->prompt && c->n_prompt > 0);
            if (!c->prompt || c->n_prompt <= 0) continue;
            int32_t ids[VMAX_IDS];
            int k = encode(c->prompt, c->prompt_len, true, ids, VMAX_IDS);
            bool same = k == c->n_prompt && !memcmp(ids, c->prompt_ids, (size_t)k * sizeof *ids);
            CHECKF(same, "%s case %d: \"%s\" encodes to %d ids (want %d)", files[fi], i, c->prompt, k, c->n_prompt);
            n_prompts++;
            /* round trip: the prompt decodes back (space after BOS dropped) */
            size_t dl;
            char *dec = sprig_detokenize_n(g_tok, ids + 1, k - 1, ids[0], &dl);
            CHECKF(dec && dl == c->prompt_len && !memcmp(dec, c->prompt, dl), "%s case %d round trip", files[fi], i);
            free(dec);
            if (c->output && c->n_output > 0) {
                int prev = c->prompt_ids[c->n_prompt - 1];
                dec = sprig_detokenize_n(g_tok, c->output_ids, c->n_output, prev, &dl);
                CHECKF(dec && dl == c->output_len && !memcmp(dec, c->output, dl), "%s case %d output: \"%s\" vs \"%s\"",
                       files[fi], i, dec ? dec : "(null)", c->output);
                /* streaming, token by token, with exactly max_out room each time */
                size_t cap = sprig_detok_max_out(g_tok);
                char *buf = malloc(c->output_len + cap + 8);
                sprig_detok s;
                sprig_detok_init(&s, prev);
                size_t o = 0;
                for (int j = 0; j < c->n_output; j++) o += sprig_detok_push(g_tok, &s, c->output_ids[j], buf + o, cap);
                o += sprig_detok_flush(g_tok, &s, buf + o, cap);
                CHECK(o == dl && dec && !memcmp(buf, dec, o));
                free(buf);
                free(dec);
                n_outputs++;
            }
        }
        free_cases(cs, n);
    }
    CHECK_EQ_INT(n_prompts, 19);
    CHECK_EQ_INT(n_outputs, 13);
    fprintf(stderr, "  %d prompts encoded, %d outputs decoded\n", n_prompts, n_outputs);
}

static void test_greedy_from_bos_text(void)
{
    /* The README's published start of stories260K's greedy text, via the vectors' case 0. */
    int32_t ids[64];
    int n = encode("Once upon a time, there was a little girl named Lily.", 53, true, ids, 64);
    CHECK(n > 1 && ids[0] == 1);
    char *s = sprig_detokenize(g_tok, ids + 1, n - 1, 1);
    CHECK_STR(s, "Once upon a time, there was a little girl named Lily.");
    free(s);
    /* at the start of a stream the dummy-prefix space goes too (llama.cpp's remove_space) */
    s = sprig_detokenize(g_tok, ids + 1, n - 1, -1);
    CHECK_STR(s, "Once upon a time, there was a little girl named Lily.");
    free(s);
    /* after any other token it stays */
    s = sprig_detokenize(g_tok, ids + 1, n - 1, ids[1]);
    CHECK_STR(s, " Once upon a time, there was a little girl named Lily.");
    free(s);
    /* a space is dropped only right after BOS, and only one */
    int32_t two[2] = { 1, 259 };   /* BOS, "▁t" */
    s = sprig_detokenize(g_tok, two, 2, -1);
    CHECK_STR(s, "t");
    free(s);
    int32_t sp[2] = { 1, 36 };      /* BOS, <0x21> '!' */
    s = sprig_detokenize(g_tok, sp, 2, -1);
    CHECK_STR(s, "!");
    free(s);
    int32_t bsp[2] = { 1, 35 };     /* BOS, <0x20> ' ' : dropped like a piece's space */
    s = sprig_detokenize(g_tok, bsp, 2, -1);
    CHECK_STR(s, "");
    free(s);
}

static void test_encode_api(void)
{
    int32_t ids[8];
    sprig_error err = { 0 };
    CHECK_EQ_INT(sprig_tokenize(g_tok, "", 0, true, ids, 8, &err), 1);
    CHECK_EQ_INT(ids[0], 1);
    CHECK_EQ_INT(sprig_tokenize(g_tok, "", 0, false, ids, 8, &err), 0);
    CHECK_EQ_INT(sprig_tokenize(g_tok, NULL, 0, false, NULL, 0, &err), 0);
    /* counting call, then a too-small buffer: only cap ids written */
    const char *txt = "The little dog was sad because";
    int need = sprig_tokenize(g_tok, txt, strlen(txt), true, NULL, 0, &err);
    CHECK_EQ_INT(need, 13);
    for (int i = 0; i < 8; i++) ids[i] = -7;
    CHECK_EQ_INT(sprig_tokenize(g_tok, txt, strlen(txt), true, ids, 3, &err), 13);
    CHECK(ids[0] == 1 && ids[1] == 291 && ids[2] == 376 && ids[3] == -7);
    /* bad arguments name themselves */
    CHECK_EQ_INT(sprig_tokenize(NULL, "a", 1, true, ids, 8, &err), -1);
    CHECK(strstr(err.msg, "tokenizer") != NULL);
    CHECK_EQ_INT(sprig_tokenize(g_tok, NULL, 3, true, ids, 8, &err), -1);
    CHECK(err.code == SPRIG_E_INVALID_ARG && strstr(err.msg, "text") != NULL);
    CHECK_EQ_INT(sprig_tokenize(g_tok, "a", 1, true, NULL, 4, &err), -1);
    CHECK_EQ_INT(sprig_tokenize(g_tok, "a", 1, true, ids, -1, &err), -1);
    CHECK(strstr(err.msg, "cap") != NULL);
    CHECK_EQ_INT(sprig_tokenize(g_tok, "a", SPRIG_TOKENIZE_MAX_TEXT + 1, true, ids, 8, &err), -1);
    CHECK(strstr(err.msg, "exceeds") != NULL);
    /* "<s>" as text is three characters, never the BOS control token */
    int n = sprig_tokenize(g_tok, "<s></s><unk>", 12, false, ids, 8, &err);
    CHECK(n > 0);
    for (int i = 0; i < n && i < 8; i++) CHECK(ids[i] > 2);
}

/* Random text from a mix of ASCII, spaces, newlines, NULs, Latin-1, CJK, emoji. */
static size_t random_text(sprig_rng *r, char *out, size_t max_chars, bool allow_invalid)
{
    static const char *const pool[] = {
        "a", "b", "e", "t", "h", "o", " ", " ", " ", "  ", "\n", "\t", ".", ",", "!", "\"", "'", "<", ">", "\\",
        "Once", " upon", " the", "Lily", " play", "ing", "ed", "\xC3\xA9", "\xC3\xA2", "\xE2\x82\xAC",
        "\xE2\x84\xA2", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xF0\x9F\x8D\x95", "\xE2\x80\x8A", "0x", "<0x41>",
        "\x01", "~", "|",
    };
    static const char *const bad[] = { "\x80", "\xFF", "\xC0\xAF", "\xE2\x82", "\xED\xA0\x80", "\xF0\x9F\x98", "\xF4\x90\x80\x80", "\xC3" };
    size_t n = 0, k = (size_t)(sprig_rng_u64(r) % (max_chars + 1));
    for (size_t i = 0; i < k; i++) {
        const char *p;
        uint64_t x = sprig_rng_u64(r);
        if (x % 50 == 0) { out[n++] = 0; continue; }
        if (allow_invalid && x % 7 == 0) p = bad[(x >> 8) % (sizeof bad / sizeof *bad)];
        else p = pool[(x >> 8) % (sizeof pool / sizeof *pool)];
        size_t l = strlen(p);
        memcpy(out + n, p, l);
        n += l;
    }
    return n;
}

static void test_against_oracle_real_vocab(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 11);
    int iters = test_quick() ? 150 : 1500, mism = 0;
    static char text[4096];
    static int32_t a[20000], b[20000];
    for (int it = 0; it < iters; it++) {
        size_t n = random_text(&r, text, 60, it % 3 == 0);
        int na = sprig_tokenize(g_tok, text, n, false, a, 20000, NULL);
        int nb = oracle_encode(&g_v, 0, true, text, n, b, 20000);
        if (na != nb || memcmp(a, b, (size_t)(na > 0 ? na : 0) * sizeof *a)) mism++;
    }
    CHECKF(mism == 0, "%d of %d random strings differ from the quadratic oracle", mism, iters);
}

/* Random vocabulary over a tiny alphabet: many score ties, duplicate pieces,
 * control/unknown/unused pieces that text could otherwise reach, scores at
 * and below the -1e30 floor, optional byte tokens. */
static void make_random_vocab(sprig_rng *r, struct vocab *v, int n, bool bytes)
{
    static const char *const alpha[] = { "a", "b", "c", "\xE2\x96\x81", "\xC3\xA9" };
    memset(v, 0, sizeof *v);
    int cap = n + 256 + 8;
    v->pieces = calloc((size_t)cap, sizeof *v->pieces);
    v->lens = calloc((size_t)cap, sizeof *v->lens);
    v->scores = calloc((size_t)cap, sizeof *v->scores);
    v->types = calloc((size_t)cap, sizeof *v->types);
    static const float score_set[] = { 0.0f, -1.0f, -1.0f, -2.0f, -3.5f, 5.0f, -1e30f, -1e31f, -INFINITY, INFINITY };
    for (int i = 0; i < n; i++) {
        char buf[64];
        size_t l = 0;
        int parts = i < 5 ? 1 : 1 + (int)(sprig_rng_u64(r) % 4);
        for (int k = 0; k < parts; k++) {
            const char *p = alpha[i < 5 ? (uint64_t)i : sprig_rng_u64(r) % 5];
            memcpy(buf + l, p, strlen(p));
            l += strlen(p);
        }
        if (i >= 5 && sprig_rng_u64(r) % 10 == 0 && i > 5) {   /* duplicate of an earlier piece */
            int j = (int)(sprig_rng_u64(r) % (uint64_t)i);
            l = v->lens[j];
            memcpy(buf, v->pieces[j], l);
        }
        v->pieces[i] = malloc(l + 1);
        memcpy(v->pieces[i], buf, l);
        v->pieces[i][l] = 0;
        v->lens[i] = l;
        v->scores[i] = score_set[sprig_rng_u64(r) % (sizeof score_set / sizeof *score_set)];
        uint64_t ty = sprig_rng_u64(r) % 12;
        /* no USER_DEFINED: those are matched as whole strings before any
         * merge (test-tokenizer-vocab covers them), which the oracle here
         * does not model */
        v->types[i] = ty == 0 ? SPRIG_TOKEN_CONTROL : ty == 1 ? SPRIG_TOKEN_UNUSED
                    : ty == 3 ? SPRIG_TOKEN_UNKNOWN : SPRIG_TOKEN_NORMAL;
        if (i < 3) v->types[i] = SPRIG_TOKEN_NORMAL;
    }
    v->n = n;
    if (bytes)
        for (int b = 0; b < 256; b++) {
            int id = v->n++;
            v->pieces[id] = malloc(7);
            snprintf(v->pieces[id], 7, (b & 1) ? "<0x%02X>" : "<0x%02x>", b);
            v->lens[id] = 6;
            v->scores[id] = 0;
            v->types[id] = SPRIG_TOKEN_BYTE;
        }
    /* an unknown token at the end */
    int id = v->n++;
    v->pieces[id] = strdup("<unk>");
    v->lens[id] = 5;
    v->types[id] = SPRIG_TOKEN_UNKNOWN;
}

static void test_against_oracle_random_vocabs(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 12345);
    int n_vocabs = test_quick() ? 10 : 60, mism = 0, total = 0;
    static const char *const alpha[] = { "a", "b", "c", " ", "\xC3\xA9", "\xE2\x96\x81", "d", "\xFF" };
    for (int vi = 0; vi < n_vocabs; vi++) {
        struct vocab v;
        bool bytes = vi % 2 == 0;
        make_random_vocab(&r, &v, 20 + (int)(sprig_rng_u64(&r) % 120), bytes);
        int unk = v.n - 1;
        struct sprig_vocab_desc d = { .model = "llama", .n_vocab = v.n, .pieces = (const char *const *)v.pieces,
                                      .piece_lens = v.lens, .scores = v.scores, .types = v.types, .bos = -1,
                                      .eos = -1, .unk = unk, .add_bos = false, .add_space_prefix = vi % 3 != 0,
                                      .allow_duplicates = true };
        sprig_error err = { 0 };
        sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
        CHECKF(t != NULL, "%s", err.msg);
        if (!t) { vocab_free(&v); continue; }
        for (int it = 0; it < 40; it++) {
            char text[512];
            size_t n = 0, k = sprig_rng_u64(&r) % 80;
            for (size_t i = 0; i < k; i++) {
                const char *p = alpha[sprig_rng_u64(&r) % (sizeof alpha / sizeof *alpha)];
                memcpy(text + n, p, strlen(p));
                n += strlen(p);
            }
            int32_t a[1024], b[1024];
            int na = sprig_tokenize(t, text, n, false, a, 1024, NULL);
            int nb = oracle_encode(&v, unk, d.add_space_prefix, text, n, b, 1024);
            total++;
            if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * sizeof *a))) {
                if (!mism) fprintf(stderr, "  vocab %d text %d: %d vs oracle %d ids\n", vi, it, na, nb);
                mism++;
            }
        }
        sprig_tokenizer_free(t);
        vocab_free(&v);
    }
    CHECKF(mism == 0, "%d of %d strings differ from the oracle on random vocabularies", mism, total);
}

static void test_no_byte_token_error(void)
{
    /* vocabulary without byte tokens or unk: an unknown character is an error naming the byte */
    const char *pieces[] = { "a", "\xE2\x96\x81" };
    size_t lens[] = { 1, 3 };
    struct sprig_vocab_desc d = { .model = "llama", .n_vocab = 2, .pieces = pieces, .piece_lens = lens,
                                  .bos = -1, .eos = -1, .unk = -1, .add_space_prefix = true };
    sprig_error err = { 0 };
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
    CHECK(t != NULL);
    int32_t ids[8];
    CHECK_EQ_INT(sprig_tokenize(t, "a a", 3, false, ids, 8, &err), 4);
    CHECK_EQ_INT(sprig_tokenize(t, "ab", 2, false, ids, 8, &err), -1);
    CHECKF(strstr(err.msg, "0x62") && strstr(err.msg, "offset 1"), "%s", err.msg);
    CHECK_EQ_INT(sprig_tokenize(t, "a", 1, true, ids, 8, &err), -1);   /* no BOS in this vocabulary */
    CHECKF(strstr(err.msg, "BOS") != NULL, "%s", err.msg);
    sprig_tokenizer_free(t);
}

static void roundtrip_check(const char *text, size_t n, int *fails)
{
    int32_t *ids = malloc((3 * n + 4) * sizeof *ids);
    int k = sprig_tokenize(g_tok, text, n, true, ids, (int)(3 * n + 4), NULL);
    if (k < 1 || k > (int)(3 * n + 4)) { (*fails)++; free(ids); return; }
    size_t dl;
    char *dec = sprig_detokenize_n(g_tok, ids + 1, k - 1, ids[0], &dl);
    char *want = malloc(3 * n + 1);
    size_t wl = oracle_replace((const unsigned char *)text, n, want);
    if (!dec || dl != wl || memcmp(dec, want, wl) || !valid_utf8(dec, dl)) (*fails)++;
    /* streaming equals whole; each push ends on a character boundary */
    sprig_detok s;
    sprig_detok_init(&s, ids[0]);
    size_t cap = sprig_detok_max_out(g_tok), o = 0;
    char *buf = malloc(wl + cap + 8);
    for (int i = 1; i < k; i++) {
        size_t w = sprig_detok_push(g_tok, &s, ids[i], buf + o, cap);
        if (!valid_utf8(buf + o, w)) (*fails)++;
        o += w;
    }
    o += sprig_detok_flush(g_tok, &s, buf + o, cap);
    if (o != wl || memcmp(buf, want, wl)) (*fails)++;
    free(buf); free(dec); free(want); free(ids);
}

static void test_roundtrips(void)
{
    int fails = 0;
#define LIT(x) { x, sizeof(x) - 1 }
    static const struct { const char *s; size_t n; } fixed[] = {
        LIT("hello world"), LIT(" leading space"), LIT("  two leading"), LIT("trailing  "), LIT("      "), LIT(" "),
        LIT("a\0b\0\0c"), LIT("\0"), LIT("\xF0\x9F\x98\x80 emoji \xF0\x9F\x8D\x95!"), LIT("tab\there\nnewline\r\n"),
        LIT("\xE4\xB8\xAD\xE6\x96\x87"), LIT("caf\xC3\xA9 \xE2\x82\xAC" "5"), LIT("<0x41><s></s>"), LIT("\x7F\x01\x02"),
    };
#undef LIT
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        int f0 = fails;
        roundtrip_check(fixed[i].s, fixed[i].n, &fails);
        CHECKF(fails == f0, "fixed round trip %zu", i);
        /* valid UTF-8 must come back byte for byte */
        int32_t ids[128];
        int k = sprig_tokenize(g_tok, fixed[i].s, fixed[i].n, true, ids, 128, NULL);
        size_t dl;
        char *dec = sprig_detokenize_n(g_tok, ids + 1, k - 1, 1, &dl);
        CHECKF(dec && dl == fixed[i].n && !memcmp(dec, fixed[i].s, dl), "exact round trip %zu", i);
        free(dec);
    }
    /* emoji through byte fallback: 4 byte tokens */
    int32_t ids[16];
    int k = sprig_tokenize(g_tok, "\xF0\x9F\x98\x80", 4, false, ids, 16, NULL);
    CHECK(k == 5 && ids[1] == 0xF0 + 3 && ids[2] == 0x9F + 3 && ids[3] == 0x98 + 3 && ids[4] == 0x80 + 3);

    sprig_rng r;
    sprig_rng_seed(&r, 99);
    static char text[8192];
    int iters = test_quick() ? 300 : 3000;
    for (int it = 0; it < iters; it++) {
        size_t n = random_text(&r, text, 200, it % 2 == 1);
        roundtrip_check(text, n, &fails);
    }
    /* fully random bytes */
    for (int it = 0; it < iters; it++) {
        size_t n = sprig_rng_u64(&r) % 64;
        for (size_t i = 0; i < n; i++) text[i] = (char)(sprig_rng_u64(&r) & 0xFF);
        roundtrip_check(text, n, &fails);
    }
    CHECKF(fails == 0, "%d round-trip failures", fails);
}

static void test_replacement_like_python(void)
{
    /* expected strings from Python 3: bytes.decode("utf-8", "replace") */
    static const struct { const char *in; size_t n; const char *want; } cases[] = {
        { "\xE2\x82", 2, "\xEF\xBF\xBD" },
        { "\xE2\x82" "A", 3, "\xEF\xBF\xBD" "A" },
        { "\xE0\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "\xF0\x9F\x98", 3, "\xEF\xBF\xBD" },
        { "\xF0\x9F\x98" "\xF0\x9F\x98\x80", 7, "\xEF\xBF\xBD\xF0\x9F\x98\x80" },
        { "\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "\xC0\xAF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "\xFF" "a\x80", 3, "\xEF\xBF\xBD" "a\xEF\xBF\xBD" },
        { "\xC3", 1, "\xEF\xBF\xBD" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* through byte tokens, one push per byte */
        int32_t ids[8];
        for (size_t j = 0; j < cases[i].n; j++) ids[j] = (unsigned char)cases[i].in[j] + 3;
        size_t dl;
        char *dec = sprig_detokenize_n(g_tok, ids, (int)cases[i].n, -1, &dl);
        CHECKF(dec && dl == strlen(cases[i].want) && !memcmp(dec, cases[i].want, dl), "replacement case %zu", i);
        free(dec);
        char o[64];
        size_t ol = oracle_replace((const unsigned char *)cases[i].in, cases[i].n, o);
        CHECKF(ol == strlen(cases[i].want) && !memcmp(o, cases[i].want, ol), "oracle replacement case %zu", i);
    }
}

static void test_streaming_holds_back(void)
{
    sprig_detok s;
    sprig_detok_init(&s, -1);
    char out[256];
    /* "€" = E2 82 AC as three byte tokens: nothing until the last */
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 0xE2 + 3, out, sizeof out), 0);
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 0x82 + 3, out, sizeof out), 0);
    CHECK_EQ_INT(s.n_pend, 2);
    size_t n = sprig_detok_push(g_tok, &s, 0xAC + 3, out, sizeof out);
    CHECK(n == 3 && !memcmp(out, "\xE2\x82\xAC", 3));
    /* incomplete then a normal piece: U+FFFD, then the piece */
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 0xF0 + 3, out, sizeof out), 0);
    n = sprig_detok_push(g_tok, &s, 260, out, sizeof out);   /* "he" */
    CHECK(n == 5 && !memcmp(out, "\xEF\xBF\xBDhe", 5));
    /* incomplete at end of stream: flush gives U+FFFD once */
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 0xE2 + 3, out, sizeof out), 0);
    CHECK_EQ_INT(sprig_detok_flush(g_tok, &s, out, sizeof out), 3);
    CHECK_EQ_INT(sprig_detok_flush(g_tok, &s, out, sizeof out), 0);
    /* control tokens and out-of-range ids decode to nothing */
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 2, out, sizeof out), 0);
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 0, out, sizeof out), 0);
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, 512, out, sizeof out), 0);
    CHECK_EQ_INT(sprig_detok_push(g_tok, &s, -5, out, sizeof out), 0);
    /* a too-small buffer: whole characters only */
    sprig_detok_init(&s, 0);   /* after <unk>: the space stays */
    n = sprig_detok_push(g_tok, &s, 265, out, 2);   /* " the" */
    CHECK_EQ_INT(n, 2);
    CHECK(!memcmp(out, " t", 2));
    /* every split of a token sequence: prefix stream + suffix stream == whole */
    const char *txt = "Caf\xC3\xA9 \xF0\x9F\x98\x80 and \xE4\xB8\xAD! \xE2\x82\xAC\n";
    int32_t ids[128];
    int k = sprig_tokenize(g_tok, txt, strlen(txt), true, ids, 128, NULL);
    CHECK(k > 10);
    char *whole = sprig_detokenize(g_tok, ids, k, -1);
    CHECK_STR(whole, txt);
    for (int split = 0; split <= k; split++) {
        char buf[512];
        size_t o = 0;
        sprig_detok st;
        sprig_detok_init(&st, -1);
        for (int i = 0; i < split; i++) o += sprig_detok_push(g_tok, &st, ids[i], buf + o, sizeof buf - o);
        sprig_detok copy = st;            /* the state is a plain value: resume from a copy */
        for (int i = split; i < k; i++) o += sprig_detok_push(g_tok, &copy, ids[i], buf + o, sizeof buf - o);
        o += sprig_detok_flush(g_tok, &copy, buf + o, sizeof buf - o);
        CHECKF(whole && o == strlen(whole) && !memcmp(buf, whole, o), "split at %d", split);
    }
    free(whole);
}

static void test_long_input(void)
{
    size_t n = test_quick() ? (1 << 16) : (1 << 20);
    char *text = malloc(n);
    sprig_rng r;
    sprig_rng_seed(&r, 5);
    size_t o = 0;
    while (o < n) {
        char tmp[1024];
        size_t k = random_text(&r, tmp, 100, false);
        if (o + k > n) k = n - o;
        memcpy(text + o, tmp, k);
        o += k;
    }
    int cap = (int)(3 * n + 4);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    double t0 = sprig_time_ms();
    int k = sprig_tokenize(g_tok, text, n, true, ids, cap, NULL);
    double dt = sprig_time_ms() - t0;
    CHECK(k > 1);
    fprintf(stderr, "  encoded %zu bytes into %d tokens in %.1f ms (%.1f MB/s)\n", n, k, dt, (double)n / dt / 1e3);
    /* round trip (the cut at n may split the last character) */
    size_t dl;
    char *dec = sprig_detokenize_n(g_tok, ids + 1, k - 1, 1, &dl);
    char *want = malloc(3 * n);
    size_t wl = oracle_replace((const unsigned char *)text, n, want);
    CHECK(dec && dl == wl && !memcmp(dec, want, wl));
    CHECK(wl >= n - 3 && !memcmp(want, text, n - 3));
    free(dec);
    free(want);
    /* only spaces: each becomes '▁' and merges deterministically */
    memset(text, ' ', 4096);
    k = sprig_tokenize(g_tok, text, 4096, true, ids, cap, NULL);
    int32_t *b = malloc(20000 * sizeof *b);
    int kb = oracle_encode(&g_v, 0, true, text, 4096, b, 20000);
    CHECK(k == kb + 1 && !memcmp(ids + 1, b, (size_t)kb * sizeof *b));
    dec = sprig_detokenize_n(g_tok, ids + 1, k - 1, 1, &dl);
    CHECK(dec && dl == 4096 && !memcmp(dec, text, 4096));
    free(dec); free(b); free(text); free(ids);
}

static sprig_status try_create(struct sprig_vocab_desc d, char *msg, size_t cap)
{
    sprig_error err = { 0 };
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
    snprintf(msg, cap, "%s", err.msg);
    sprig_tokenizer_free(t);
    return t ? SPRIG_OK : err.code;
}

static void test_create_validation(void)
{
    char m[512];
    struct sprig_vocab_desc good = desc_of(&g_v), d;
    CHECK_EQ_INT(try_create(good, m, sizeof m), SPRIG_OK);
    sprig_error err = { 0 };
    CHECK(sprig_tokenizer_create(NULL, &err) == NULL && err.code == SPRIG_E_INVALID_ARG);

    d = good; d.model = "bert";
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_UNSUPPORTED);
    CHECKF(strstr(m, "\"bert\"") && strstr(m, "tokenizer.ggml.model"), "%s", m);
    d = good; d.model = "gpt2";   /* BPE without merges */
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECKF(strstr(m, "tokenizer.ggml.merges"), "%s", m);
    d = good; d.model = "\x01\x02llama";
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_UNSUPPORTED);
    CHECK(!strchr(m, '\x01'));
    d = good; d.model = NULL;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_INVALID_ARG);
    d = good; d.n_vocab = 0;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECK(strstr(m, "n_vocab") != NULL);
    d = good; d.n_vocab = SPRIG_TOKENIZER_MAX_VOCAB + 1;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    d = good; d.bos = 512;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECK(strstr(m, "bos_token_id") != NULL);
    d = good; d.eos = -2;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECK(strstr(m, "eos_token_id") != NULL);
    d = good; d.unk = 1000;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECK(strstr(m, "unknown_token_id") != NULL);
    d = good; d.pieces = NULL;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_INVALID_ARG);

    float scores[512];
    memcpy(scores, g_v.scores, sizeof scores);
    scores[300] = NAN;
    d = good; d.scores = scores;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECKF(strstr(m, "scores[300]") != NULL, "%s", m);

    int32_t types[512];
    memcpy(types, g_v.types, sizeof types);
    types[7] = 9;
    d = good; d.types = types;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECKF(strstr(m, "token_type[7]") != NULL, "%s", m);
    types[7] = -1;
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    memcpy(types, g_v.types, sizeof types);
    types[300] = SPRIG_TOKEN_BYTE;   /* a BYTE type on a normal piece */
    CHECK_EQ_INT(try_create(d, m, sizeof m), SPRIG_E_FORMAT);
    CHECKF(strstr(m, "tokens[300]") && strstr(m, "BYTE"), "%s", m);

    /* strict <0xNN>: bad hex, wrong length, trailing bytes */
    static const char *const bad_bytes[] = { "<0xZZ>", "<0x4>", "<0x041>", "<0x41 >", "<0X41>", "<0x4G>", "0x41", "<0x41>\0" };
    static const size_t bad_lens[] = { 6, 5, 7, 7, 6, 6, 4, 7 };
    for (size_t i = 0; i < sizeof bad_bytes / sizeof *bad_bytes; i++) {
        const char *pieces[1] = { bad_bytes[i] };
        size_t lens[1] = { bad_lens[i] };
        int32_t ty[1] = { SPRIG_TOKEN_BYTE };
        struct sprig_vocab_desc b = { .model = "llama", .n_vocab = 1, .pieces = pieces, .piece_lens = lens,
                                      .types = ty, .bos = -1, .eos = -1, .unk = -1 };
        CHECKF(try_create(b, m, sizeof m) == SPRIG_E_FORMAT, "byte piece %zu accepted", i);
    }
    {   /* lower-case hex is still two hex digits: accepted, decodes to the byte */
        const char *pieces[1] = { "<0x0a>" };
        size_t lens[1] = { 6 };
        int32_t ty[1] = { SPRIG_TOKEN_BYTE };
        struct sprig_vocab_desc b = { .model = "llama", .n_vocab = 1, .pieces = pieces, .piece_lens = lens,
                                      .types = ty, .bos = -1, .eos = -1, .unk = -1 };
        sprig_tokenizer *t = sprig_tokenizer_create(&b, &err);
        CHECK(t != NULL);
        int32_t id = 0;
        char *s = sprig_detokenize(t, &id, 1, -1);
        CHECK_STR(s, "\n");
        free(s);
        sprig_tokenizer_free(t);
    }

    /* piece too long */
    static char longp[SPRIG_TOKENIZER_MAX_PIECE + 1];
    memset(longp, 'x', sizeof longp);
    const char *pieces[2] = { "a", longp };
    size_t lens[2] = { 1, sizeof longp };
    struct sprig_vocab_desc b = { .model = "llama", .n_vocab = 2, .pieces = pieces, .piece_lens = lens, .bos = -1, .eos = -1, .unk = -1 };
    CHECK_EQ_INT(try_create(b, m, sizeof m), SPRIG_E_FORMAT);
    CHECKF(strstr(m, "tokens[1]") != NULL, "%s", m);
    lens[1] = SPRIG_TOKENIZER_MAX_PIECE;
    CHECK_EQ_INT(try_create(b, m, sizeof m), SPRIG_OK);
    pieces[1] = NULL;
    CHECK_EQ_INT(try_create(b, m, sizeof m), SPRIG_E_INVALID_ARG);
}

static void test_duplicates_first_wins(void)
{
    /* pieces: 0 "a", 1 "b", 2 "ab" (score -5), 3 "ab" again (score 9), 4 "a" again */
    const char *pieces[] = { "a", "b", "ab", "ab", "a", "\xE2\x96\x81" };
    size_t lens[] = { 1, 1, 2, 2, 1, 3 };
    float scores[] = { 0, 0, -5, 9, 0, 0 };
    struct sprig_vocab_desc d = { .model = "llama", .n_vocab = 6, .pieces = pieces, .piece_lens = lens,
                                  .scores = scores, .bos = -1, .eos = -1, .unk = -1, .add_space_prefix = false };
    sprig_error err = { 0 };
    /* a vocabulary file with duplicates is refused, naming both ids */
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
    CHECK(t == NULL && strstr(err.msg, "tokenizer.ggml.tokens[3]") && strstr(err.msg, "duplicates tokens[2]"));
    /* allowed on request (tests of the merge rule), the lowest id wins */
    d.allow_duplicates = true;
    t = sprig_tokenizer_create(&d, &err);
    CHECK(t != NULL);
    CHECK_EQ_INT(sprig_tokenizer_find(t, "a", 1), 0);
    CHECK_EQ_INT(sprig_tokenizer_find(t, "ab", 2), 2);
    int32_t ids[8];
    CHECK_EQ_INT(sprig_tokenize(t, "ab", 2, false, ids, 8, &err), 1);
    CHECK_EQ_INT(ids[0], 2);
    /* both ids still decode */
    int32_t two[2] = { 3, 4 };
    char *s = sprig_detokenize(t, two, 2, -1);
    CHECK_STR(s, "aba");
    free(s);
    sprig_tokenizer_free(t);

    /* ties: "aaa" with merge "aa" -> the leftmost pair merges first */
    const char *p2[] = { "a", "aa", "b", "ab", "ba" };
    size_t l2[] = { 1, 2, 1, 2, 2 };
    float s2[] = { 0, -1, 0, -2, -2 };
    struct sprig_vocab_desc d2 = { .model = "llama", .n_vocab = 5, .pieces = p2, .piece_lens = l2, .scores = s2,
                                   .bos = -1, .eos = -1, .unk = -1, .add_space_prefix = false };
    t = sprig_tokenizer_create(&d2, &err);
    CHECK_EQ_INT(sprig_tokenize(t, "aaa", 3, false, ids, 8, &err), 2);
    CHECK(ids[0] == 1 && ids[1] == 0);
    CHECK_EQ_INT(sprig_tokenize(t, "bab", 3, false, ids, 8, &err), 2);   /* "ba" and "ab" tie: leftmost "ba" */
    CHECK(ids[0] == 4 && ids[1] == 2);
    sprig_tokenizer_free(t);
}

/* ---------------------------------------------------------------- from GGUF */

static bool same_vocab(const sprig_tokenizer *t, const char *what)
{
    bool ok = sprig_tokenizer_n_vocab(t) == g_v.n && sprig_tokenizer_bos(t) == 1 && sprig_tokenizer_eos(t) == 2 &&
              sprig_tokenizer_unk(t) == 0 && sprig_tokenizer_add_bos(t) && sprig_tokenizer_add_space_prefix(t);
    int bad = -1;
    for (int i = 0; ok && i < g_v.n; i++) {
        size_t len;
        const char *p = sprig_tokenizer_piece(t, i, &len);
        if (!p || len != g_v.lens[i] || memcmp(p, g_v.pieces[i], len) || sprig_tokenizer_score(t, i) != g_v.scores[i] ||
            sprig_tokenizer_type(t, i) != g_v.types[i]) { ok = false; bad = i; }
    }
    if (!ok) fprintf(stderr, "  %s: vocabulary differs from tok512.bin (first at token %d)\n", what, bad);
    return ok;
}

static void test_from_gguf_models(void)
{
    static const char *const files[] = { "models/stories260K.gguf", "models/stories-draft.gguf", "models/stories-mtp.gguf" };
    sprig_rng r;
    sprig_rng_seed(&r, 404);
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        sprig_error err = { 0 };
        sprig_gguf *g = sprig_gguf_open(test_shared(files[f]), &err);
        CHECKF(g != NULL, "%s", err.msg);
        if (!g) continue;
        sprig_tokenizer *t = sprig_tokenizer_from_gguf(g, &err);
        CHECKF(t != NULL, "%s", err.msg);
        if (t) {
            CHECKF(same_vocab(t, files[f]), "%s", files[f]);
            /* same ids as the tok512.bin vocabulary on random text */
            int diff = 0;
            for (int it = 0; it < (test_quick() ? 50 : 500); it++) {
                char text[2048];
                int32_t a[8192], b[8192];
                size_t n = random_text(&r, text, 100, it % 2 == 1);
                int na = sprig_tokenize(t, text, n, true, a, 8192, NULL);
                int nb = sprig_tokenize(g_tok, text, n, true, b, 8192, NULL);
                if (na != nb || memcmp(a, b, (size_t)(na > 0 ? na : 0) * sizeof *a)) diff++;
            }
            CHECK_EQ_INT(diff, 0);
            int32_t ids[16];
            CHECK_EQ_INT(sprig_tokenize(t, "Once upon a time", 16, true, ids, 16, &err), 5);
            CHECK(ids[0] == 1 && ids[1] == 403 && ids[2] == 407 && ids[3] == 261 && ids[4] == 378);
        }
        sprig_tokenizer_free(t);
        sprig_gguf_close(g);
    }
}

/* What to break in a written vocabulary file. */
enum gbreak {
    GB_NONE, GB_MODEL_GPT2, GB_MODEL_MISSING, GB_MODEL_U32, GB_TOKENS_I32, GB_TOKENS_MISSING, GB_TOKENS_EMPTY,
    GB_SCORES_SHORT, GB_SCORES_I32, GB_TYPES_LONG, GB_TYPES_F32, GB_TYPE_VALUE, GB_TYPE_BYTE_ON_NORMAL,
    GB_BOS_RANGE, GB_BOS_NONE, GB_EOS_NEG, GB_UNK_STR, GB_NO_OPTIONALS, GB_FLAGS_OFF, GB_FLAG_U32, GB_NAN_SCORE,
};

static sprig_gguf *write_vocab(enum gbreak b, sprig_error *err)
{
    sprig_gguf_writer *w = sprig_gguf_writer_create(err);
    if (!w) return NULL;
    int n = g_v.n;
    if (b == GB_MODEL_GPT2) sprig_gguf_w_str(w, "tokenizer.ggml.model", "gpt2", 4, err);
    else if (b == GB_MODEL_U32) sprig_gguf_w_u32(w, "tokenizer.ggml.model", 7, err);
    else if (b != GB_MODEL_MISSING) sprig_gguf_w_str(w, "tokenizer.ggml.model", "llama", 5, err);
    if (b == GB_TOKENS_I32) sprig_gguf_w_arr(w, "tokenizer.ggml.tokens", SPRIG_GGUF_I32, g_v.types, (uint64_t)n, err);
    else if (b == GB_TOKENS_EMPTY) sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)g_v.pieces, g_v.lens, 0, err);
    else if (b != GB_TOKENS_MISSING)
        sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)g_v.pieces, g_v.lens, (uint64_t)n, err);
    float scores[512];
    memcpy(scores, g_v.scores, sizeof scores);
    if (b == GB_NAN_SCORE) scores[77] = NAN;
    if (b == GB_SCORES_I32) sprig_gguf_w_arr(w, "tokenizer.ggml.scores", SPRIG_GGUF_I32, g_v.types, (uint64_t)n, err);
    else if (b != GB_NO_OPTIONALS)
        sprig_gguf_w_arr(w, "tokenizer.ggml.scores", SPRIG_GGUF_F32, scores, (uint64_t)(b == GB_SCORES_SHORT ? n - 1 : n), err);
    int32_t types[513];
    memcpy(types, g_v.types, 512 * sizeof *types);
    types[512] = 1;
    if (b == GB_TYPE_VALUE) types[100] = 7;
    if (b == GB_TYPE_BYTE_ON_NORMAL) types[300] = SPRIG_TOKEN_BYTE;
    if (b == GB_TYPES_F32) sprig_gguf_w_arr(w, "tokenizer.ggml.token_type", SPRIG_GGUF_F32, scores, (uint64_t)n, err);
    else if (b != GB_NO_OPTIONALS)
        sprig_gguf_w_arr(w, "tokenizer.ggml.token_type", SPRIG_GGUF_I32, types, (uint64_t)(b == GB_TYPES_LONG ? n + 1 : n), err);
    if (b == GB_BOS_RANGE) sprig_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 512, err);
    else if (b == GB_BOS_NONE) sprig_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 0xFFFFFFFFu, err);
    else if (b != GB_NO_OPTIONALS) sprig_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1, err);
    if (b == GB_EOS_NEG) sprig_gguf_w_i32(w, "tokenizer.ggml.eos_token_id", -5, err);
    else if (b != GB_NO_OPTIONALS) sprig_gguf_w_i32(w, "tokenizer.ggml.eos_token_id", 2, err);
    if (b == GB_UNK_STR) sprig_gguf_w_str(w, "tokenizer.ggml.unknown_token_id", "0", 1, err);
    else if (b != GB_NO_OPTIONALS) sprig_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0, err);
    if (b == GB_FLAGS_OFF) {
        sprig_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", false, err);
        sprig_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", false, err);
    }
    if (b == GB_FLAG_U32) sprig_gguf_w_u32(w, "tokenizer.ggml.add_bos_token", 1, err);
    static int k;
    char name[64];
    snprintf(name, sizeof name, "vocab-%d.gguf", k++);
    const char *path = test_tmpfile(name);
    sprig_status st = sprig_gguf_writer_write(w, path, err);
    sprig_gguf_writer_free(w);
    if (st != SPRIG_OK) return NULL;
    return sprig_gguf_open(path, err);
}

static void test_from_gguf_hostile(void)
{
    static const struct { enum gbreak b; sprig_status code; const char *needle; } cases[] = {
        { GB_MODEL_GPT2, SPRIG_E_FORMAT, "tokenizer.ggml.merges" },
        { GB_MODEL_MISSING, SPRIG_E_FORMAT, "tokenizer.ggml.model" },
        { GB_MODEL_U32, SPRIG_E_FORMAT, "tokenizer.ggml.model" },
        { GB_TOKENS_I32, SPRIG_E_FORMAT, "tokenizer.ggml.tokens" },
        { GB_TOKENS_MISSING, SPRIG_E_FORMAT, "tokenizer.ggml.tokens" },
        { GB_TOKENS_EMPTY, SPRIG_E_FORMAT, "tokenizer.ggml.tokens" },
        { GB_SCORES_SHORT, SPRIG_E_FORMAT, "tokenizer.ggml.scores" },
        { GB_SCORES_I32, SPRIG_E_FORMAT, "tokenizer.ggml.scores" },
        { GB_TYPES_LONG, SPRIG_E_FORMAT, "tokenizer.ggml.token_type" },
        { GB_TYPES_F32, SPRIG_E_FORMAT, "tokenizer.ggml.token_type" },
        { GB_TYPE_VALUE, SPRIG_E_FORMAT, "tokenizer.ggml.token_type'[100]" },
        { GB_TYPE_BYTE_ON_NORMAL, SPRIG_E_FORMAT, "tokens[300]" },
        { GB_BOS_RANGE, SPRIG_E_FORMAT, "tokenizer.ggml.bos_token_id" },
        { GB_EOS_NEG, SPRIG_E_FORMAT, "tokenizer.ggml.eos_token_id" },
        { GB_UNK_STR, SPRIG_E_FORMAT, "tokenizer.ggml.unknown_token_id" },
        { GB_FLAG_U32, SPRIG_E_FORMAT, "tokenizer.ggml.add_bos_token" },
        { GB_NAN_SCORE, SPRIG_E_FORMAT, "scores[77]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sprig_error err = { 0 };
        sprig_gguf *g = write_vocab(cases[i].b, &err);
        CHECKF(g != NULL, "case %zu: %s", i, err.msg);
        if (!g) continue;
        memset(&err, 0, sizeof err);
        sprig_tokenizer *t = sprig_tokenizer_from_gguf(g, &err);
        CHECKF(t == NULL && err.code == cases[i].code && strstr(err.msg, cases[i].needle) && strstr(err.msg, "vocab-"),
               "case %zu: code %d: %s", i, (int)err.code, err.msg);
        sprig_tokenizer_free(t);
        sprig_gguf_close(g);
    }
    sprig_error err = { 0 };
    CHECK(sprig_tokenizer_from_gguf(NULL, &err) == NULL && err.code == SPRIG_E_INVALID_ARG);

    /* the unbroken file, and the accepted variants */
    sprig_gguf *g = write_vocab(GB_NONE, &err);
    sprig_tokenizer *t = g ? sprig_tokenizer_from_gguf(g, &err) : NULL;
    CHECKF(t && same_vocab(t, "written"), "%s", err.msg);
    sprig_tokenizer_free(t);
    sprig_gguf_close(g);

    g = write_vocab(GB_BOS_NONE, &err);
    t = g ? sprig_tokenizer_from_gguf(g, &err) : NULL;
    CHECKF(t && sprig_tokenizer_bos(t) == -1, "%s", err.msg);
    int32_t ids[8];
    CHECK_EQ_INT(sprig_tokenize(t, "a", 1, true, ids, 8, &err), -1);   /* no BOS to add */
    sprig_tokenizer_free(t);
    sprig_gguf_close(g);

    g = write_vocab(GB_FLAGS_OFF, &err);
    t = g ? sprig_tokenizer_from_gguf(g, &err) : NULL;
    CHECKF(t && !sprig_tokenizer_add_bos(t) && !sprig_tokenizer_add_space_prefix(t), "%s", err.msg);
    if (t) {   /* no dummy prefix: "Once" is not "▁Once" */
        int na = sprig_tokenize(t, "Once upon", 9, false, ids, 8, &err);
        int nb = sprig_tokenize(g_tok, "Once upon", 9, false, ids + 4, 4, &err);
        CHECK(na > 0 && nb > 0 && ids[0] != ids[4]);
    }
    sprig_tokenizer_free(t);
    sprig_gguf_close(g);

    /* no scores, no types, no special ids: all NORMAL with scores 0, ids default to 1/2/0 */
    g = write_vocab(GB_NO_OPTIONALS, &err);
    t = g ? sprig_tokenizer_from_gguf(g, &err) : NULL;
    CHECKF(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_EQ_INT(sprig_tokenizer_bos(t), 1);
        CHECK_EQ_INT(sprig_tokenizer_eos(t), 2);
        CHECK_EQ_INT(sprig_tokenizer_unk(t), 0);
        CHECK_EQ_INT(sprig_tokenizer_type(t, 13), SPRIG_TOKEN_NORMAL);
        /* a NORMAL "<0x0A>" piece decodes literally */
        int32_t id = 13;
        char *s = sprig_detokenize(t, &id, 1, -1);
        CHECK_STR(s, "<0x0A>");
        free(s);
    }
    sprig_tokenizer_free(t);
    sprig_gguf_close(g);
}

int main(void)
{
    if (!load_tok512(&g_v)) { fprintf(stderr, "cannot load tok512.bin\n"); return 1; }
    struct sprig_vocab_desc d = desc_of(&g_v);
    sprig_error err = { 0 };
    g_tok = sprig_tokenizer_create(&d, &err);
    if (!g_tok) { fprintf(stderr, "tokenizer_create: %s\n", err.msg); return 1; }
    RUN(test_json_parser);
    RUN(test_vocab_basics);
    RUN(test_vectors);
    RUN(test_greedy_from_bos_text);
    RUN(test_encode_api);
    RUN(test_against_oracle_real_vocab);
    RUN(test_against_oracle_random_vocabs);
    RUN(test_no_byte_token_error);
    RUN(test_roundtrips);
    RUN(test_replacement_like_python);
    RUN(test_streaming_holds_back);
    RUN(test_long_input);
    RUN(test_create_validation);
    RUN(test_duplicates_first_wins);
    RUN(test_from_gguf_models);
    RUN(test_from_gguf_hostile);
    sprig_tokenizer_free(g_tok);
    vocab_free(&g_v);
    return test_summary("test-tokenizer");
}
