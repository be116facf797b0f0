/*
 * tokenizer/bpe — BPE encoding of one fragment ("gpt2" and "gemma4" kinds).
 *
 * gpt2 (byte-level): the pre-tokenizer cuts the fragment into words; each
 * byte of a word is one symbol, the token of its character in GPT-2's
 * byte-to-unicode alphabet (printable Latin-1 bytes stand for themselves,
 * the other 68 bytes for U+0100 + k in byte order); merges run by rank. With
 * ignore_merges (Llama 3) a word whose alphabet spelling is itself a token is
 * taken whole, as Hugging Face does.
 *
 * gemma4 (SentencePiece-style BPE): ' ' becomes '▁', the fragment is cut into
 * lines and runs of newlines, each UTF-8 character is the token of its piece
 * (a run of newlines that is a token is taken whole, llama.cpp's rule), merges
 * run by rank, and a character left without a token falls back to its
 * <0xNN> byte tokens.
 *
 * Input is valid UTF-8 here (sprig_tokenize replaces ill-formed sequences).
 */
#include "tokenizer/encode.h"
#include "tokenizer/pretok.h"

#include <stdlib.h>
#include <string.h>

static const char SPACE_MARK[3] = { '\xE2', '\x96', '\x81' };

/* ---------------------------------------------------------------- alphabet */

static bool printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* The 68 other bytes, in order: 0x00-0x20, 0x7F-0xA0, 0xAD -> U+0100 + k. */
static uint32_t byte_cp(unsigned b)
{
    if (printable(b)) return b;
    unsigned k = b <= 0x20 ? b : b <= 0xA0 ? 33 + (b - 0x7F) : 67;
    return 0x100 + k;
}

int sprig_bytelevel_char(unsigned b, char out[2])
{
    uint32_t cp = byte_cp(b & 0xFF);
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int sprig_bytelevel_byte(uint32_t cp)
{
    if (cp < 0x100) return printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    unsigned k = cp - 0x100;
    return (int)(k < 33 ? k : k < 67 ? 0x7F + (k - 33) : 0xAD);
}

/* ---------------------------------------------------------------- words */

static sprig_status grow(struct sprig_enc *e, char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return SPRIG_OK;
    size_t c = need < 256 ? 256 : need + need / 2;
    char *b = realloc(*buf, c);
    if (!b) return sprig_err(e->err, SPRIG_E_NOMEM, "tokenize: out of memory for %zu bytes", need);
    *buf = b;
    *cap = c;
    return SPRIG_OK;
}

struct words {
    struct sprig_enc *e;
    const char *text;
    sprig_status st;
};

static bool word_bytelevel(struct words *w, const unsigned char *p, size_t n)
{
    struct sprig_enc *e = w->e;
    const sprig_tokenizer *t = e->t;
    if (t->ignore_merges && 2 * n <= t->max_piece_len) {
        if ((w->st = grow(e, &e->word, &e->word_cap, 2 * n)) != SPRIG_OK) return false;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += (size_t)sprig_bytelevel_char(p[i], e->word + k);
        int id = sprig_vocab_find2(t, e->word, k, NULL, 0);
        if (id >= 0) { sprig_enc_push(e, id); return true; }
    }
    if ((w->st = sprig_enc_reserve_sym(e, n)) != SPRIG_OK) return false;
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (t->byte_tok[p[i]] >= 0) e->sym[k++] = t->byte_tok[p[i]];   /* a byte without a token is dropped, as llama.cpp does */
    k = sprig_merge_apply(t, &e->m, e->sym, k);
    for (int i = 0; i < k; i++) sprig_enc_push(e, e->sym[i]);
    return true;
}

static bool word_spm_bpe(struct words *w, const unsigned char *p, size_t n)
{
    struct sprig_enc *e = w->e;
    const sprig_tokenizer *t = e->t;
    bool all_nl = true;
    for (size_t i = 0; i < n && all_nl; i++) all_nl = p[i] == '\n';
    if (all_nl) {
        int id = sprig_vocab_find2(t, (const char *)p, n, NULL, 0);
        if (id >= 0) { sprig_enc_push(e, id); return true; }
    }
    if ((w->st = sprig_enc_reserve_sym(e, n)) != SPRIG_OK) return false;
    /* symbols: the token of each character, or -(offset + 1) of a character
     * with no token (byte fallback after the merges) */
    int k = 0;
    for (size_t i = 0; i < n;) {
        int cl = sprig_utf8_seq_len(p + i, n - i);
        if (cl == 0) cl = 1;
        int id = sprig_vocab_find2(t, (const char *)p + i, (size_t)cl, NULL, 0);
        e->sym[k++] = id >= 0 ? id : -(int32_t)(i + 1);
        i += (size_t)cl;
    }
    k = sprig_merge_apply(t, &e->m, e->sym, k);
    for (int i = 0; i < k; i++) {
        if (e->sym[i] >= 0) { sprig_enc_push(e, e->sym[i]); continue; }
        size_t at = (size_t)(-(e->sym[i] + 1));
        int cl = sprig_utf8_seq_len(p + at, n - at);
        if (cl == 0) cl = 1;
        for (int j = 0; j < cl; j++) {
            int32_t b = t->byte_tok[p[at + (size_t)j]];
            if (b >= 0) sprig_enc_push(e, b);
        }
    }
    return true;
}

static bool on_word(void *user, size_t off, size_t len)
{
    struct words *w = user;
    const unsigned char *p = (const unsigned char *)w->text + off;
    return w->e->t->kind->byte_level ? word_bytelevel(w, p, len) : word_spm_bpe(w, p, len);
}

sprig_status sprig_bpe_encode(struct sprig_enc *e, const char *text, size_t len)
{
    const sprig_tokenizer *t = e->t;
    if (len == 0) return SPRIG_OK;
    if (t->kind->escape_spaces) {
        size_t spaces = 0;
        for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
        if (spaces) {
            sprig_status st = grow(e, &e->buf, &e->buf_cap, len + 2 * spaces);
            if (st != SPRIG_OK) return st;
            size_t k = 0;
            for (size_t i = 0; i < len; i++) {
                if (text[i] == ' ') { memcpy(e->buf + k, SPACE_MARK, 3); k += 3; }
                else e->buf[k++] = text[i];
            }
            text = e->buf;
            len = k;
        }
    }
    struct words w = { .e = e, .text = text, .st = SPRIG_OK };
    sprig_status st = sprig_pretok_split(t->pre, text, len, on_word, &w, e->err);
    if (w.st != SPRIG_OK) return w.st;
    return st;
}
