/*
 * tokenizer/vocab-gguf — sprig_tokenizer_from_gguf: the tokenizer.* keys of a
 * GGUF file turned into a sprig_vocab_desc, then sprig_tokenizer_create.
 *
 * Keys (llama.cpp's names):
 *   tokenizer.ggml.model            str, must be "llama"
 *   tokenizer.ggml.tokens           array of str (required; its length is n_vocab)
 *   tokenizer.ggml.scores           array of f32 (or f64), optional, same length
 *   tokenizer.ggml.token_type       array of integers (0..6), optional, same length
 *   tokenizer.ggml.bos_token_id / eos_token_id / unknown_token_id
 *                                   integers, optional (defaults 1 / 2 / 0 as
 *                                   llama.cpp assumes for this model, when in range);
 *                                   -1 or 0xFFFFFFFF means none
 *   tokenizer.ggml.add_bos_token    bool, optional, default true
 *   tokenizer.ggml.add_space_prefix bool, optional, default true
 * Every error names the file and the key (and the element index when one
 * element is at fault). Pieces point into the mapping; create copies them.
 */
#include "tokenizer/vocab.h"
#include "tokenizer/pretok.h"
#include "gguf/gguf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MODEL  "tokenizer.ggml.model"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES  "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

static bool is_int_vtype(int t)
{
    return t == SPRIG_GGUF_U8 || t == SPRIG_GGUF_I8 || t == SPRIG_GGUF_U16 || t == SPRIG_GGUF_I16 ||
           t == SPRIG_GGUF_U32 || t == SPRIG_GGUF_I32 || t == SPRIG_GGUF_U64 || t == SPRIG_GGUF_I64;
}

/* An optional array key: absent (*kv = -1), or of an accepted element type and length n. */
static sprig_status opt_array(const sprig_gguf *g, const char *key, bool want_float, uint64_t n, int64_t *kv, sprig_error *err)
{
    *kv = -1;
    int et = -1;
    uint64_t len = 0;
    sprig_status st = sprig_gguf_get_arr(g, key, &et, &len, false, err);
    if (st != SPRIG_OK) return st;
    int64_t i = sprig_gguf_find_kv(g, key);
    if (i < 0) return SPRIG_OK;
    bool ok = want_float ? (et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64) : is_int_vtype(et);
    if (!ok)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': array of %s, expected %s", sprig_gguf_path(g), key,
                         sprig_gguf_vtype_name(et), want_float ? "f32" : "i32");
    if (len != n)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu elements but '%s' has %llu", sprig_gguf_path(g), key,
                         (unsigned long long)len, KEY_TOKENS, (unsigned long long)n);
    *kv = i;
    return SPRIG_OK;
}

static sprig_status special_id(const sprig_gguf *g, const char *key, int n_vocab, int def, int *out, sprig_error *err)
{
    int64_t v = def < n_vocab ? def : -1;
    sprig_status st = sprig_gguf_get_i64(g, key, &v, false, err);
    if (st != SPRIG_OK) return st;
    if (v == -1 || v == 0xFFFFFFFFll) { *out = -1; return SPRIG_OK; }
    if (v < 0 || v >= n_vocab)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range (0..%d, or -1 for none)", sprig_gguf_path(g),
                         key, (long long)v, n_vocab - 1);
    *out = (int)v;
    return SPRIG_OK;
}

sprig_tokenizer *sprig_tokenizer_from_gguf(const struct sprig_gguf *g, sprig_error *err)
{
    if (!g) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenizer: gguf is NULL"); return NULL; }
    const char *path = sprig_gguf_path(g);

    const char *model;
    size_t model_len;
    if (sprig_gguf_get_str(g, KEY_MODEL, &model, &model_len, true, err) != SPRIG_OK) return NULL;
    const struct sprig_tok_kind *kind = sprig_tok_kind_find(model, model_len);
    if (!kind) {
        char sh[48];
        sprig_vocab_shown(sh, sizeof sh, model, model_len);
        sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' = \"%s\": tokenizer model not supported (llama, gpt2, gemma4)",
                  path, KEY_MODEL, sh);
        return NULL;
    }

    int et = -1;
    uint64_t n = 0;
    if (sprig_gguf_get_arr(g, KEY_TOKENS, &et, &n, true, err) != SPRIG_OK) return NULL;
    if (et != SPRIG_GGUF_STR) {
        sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': array of %s, expected str", path, KEY_TOKENS, sprig_gguf_vtype_name(et));
        return NULL;
    }
    if (n == 0 || n > SPRIG_TOKENIZER_MAX_VOCAB) {
        sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu tokens (expected 1..%d)", path, KEY_TOKENS,
                  (unsigned long long)n, SPRIG_TOKENIZER_MAX_VOCAB);
        return NULL;
    }
    const int n_vocab = (int)n;
    int64_t kv_tokens = sprig_gguf_find_kv(g, KEY_TOKENS), kv_scores, kv_types;
    if (opt_array(g, KEY_SCORES, true, n, &kv_scores, err) != SPRIG_OK) return NULL;
    if (opt_array(g, KEY_TYPES, false, n, &kv_types, err) != SPRIG_OK) return NULL;

    /* llama.cpp: SentencePiece adds BOS by default, BPE not unless the file says */
    struct sprig_vocab_desc d = { .model = kind->name, .n_vocab = n_vocab, .add_bos = !kind->bpe, .add_space_prefix = !kind->bpe };
    if (special_id(g, "tokenizer.ggml.bos_token_id", n_vocab, kind->def_bos, &d.bos, err) != SPRIG_OK) return NULL;
    if (special_id(g, "tokenizer.ggml.eos_token_id", n_vocab, kind->def_eos, &d.eos, err) != SPRIG_OK) return NULL;
    if (special_id(g, "tokenizer.ggml.unknown_token_id", n_vocab, kind->def_unk, &d.unk, err) != SPRIG_OK) return NULL;
    int32_t extra[2];
    int eot = -1, eom = -1;
    if (special_id(g, "tokenizer.ggml.eot_token_id", n_vocab, -1, &eot, err) != SPRIG_OK) return NULL;
    if (special_id(g, "tokenizer.ggml.eom_token_id", n_vocab, -1, &eom, err) != SPRIG_OK) return NULL;
    if (eot >= 0) extra[d.n_extra_eog++] = eot;
    if (eom >= 0) extra[d.n_extra_eog++] = eom;
    d.extra_eog = extra;
    if (sprig_gguf_get_str(g, "tokenizer.ggml.pre", &d.pre, &d.pre_len, false, err) != SPRIG_OK) return NULL;
    if (kind->bpe && d.pre) {
        const struct sprig_pretok_row *row = sprig_pretok_row_find(d.pre, d.pre_len);
        if (row && row->add_bos) d.add_bos = true;
    }
    if (sprig_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &d.add_bos, false, err) != SPRIG_OK) return NULL;
    if (sprig_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &d.add_eos, false, err) != SPRIG_OK) return NULL;
    if (sprig_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix, false, err) != SPRIG_OK) return NULL;
    {   /* llama.cpp's per-model attribute rule: Phi-3's special tokens rstrip */
        const char *name = NULL;
        size_t name_len = 0;
        if (sprig_gguf_get_str(g, "general.name", &name, &name_len, false, err) != SPRIG_OK) return NULL;
        for (size_t i = 0; name && i + 4 <= name_len && !d.rstrip_specials; i++) {
            char w[5];
            for (int k = 0; k < 5 && i + (size_t)k < name_len; k++) w[k] = (char)tolower((unsigned char)name[i + (size_t)k]);
            d.rstrip_specials = (i + 5 <= name_len && memcmp(w, "phi-3", 5) == 0) || memcmp(w, "phi3", 4) == 0;
        }
    }
    int64_t kv_merges = -1;
    {
        int met = -1;
        uint64_t nm = 0;
        if (sprig_gguf_get_arr(g, KEY_MERGES, &met, &nm, false, err) != SPRIG_OK) return NULL;
        kv_merges = sprig_gguf_find_kv(g, KEY_MERGES);
        if (kv_merges >= 0) {
            if (met != SPRIG_GGUF_STR) {
                sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s': array of %s, expected str", path, KEY_MERGES, sprig_gguf_vtype_name(met));
                return NULL;
            }
            if (nm > (uint64_t)SPRIG_TOKENIZER_MAX_VOCAB * 4) {
                sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu merges (at most %d)", path, KEY_MERGES,
                          (unsigned long long)nm, SPRIG_TOKENIZER_MAX_VOCAB * 4);
                return NULL;
            }
            d.n_merges = (int)nm;
        }
    }

    const char **pieces = malloc(n * sizeof *pieces);
    size_t *lens = malloc(n * sizeof *lens);
    float *scores = kv_scores >= 0 ? malloc(n * sizeof *scores) : NULL;
    const char **merges = d.n_merges ? malloc((size_t)d.n_merges * sizeof *merges) : NULL;
    size_t *merge_lens = d.n_merges ? malloc((size_t)d.n_merges * sizeof *merge_lens) : NULL;
    int32_t *types = kv_types >= 0 ? malloc(n * sizeof *types) : NULL;
    sprig_tokenizer *t = NULL;
    if (!pieces || !lens || (kv_scores >= 0 && !scores) || (kv_types >= 0 && !types) || (d.n_merges && (!merges || !merge_lens))) {
        sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory for %d tokens", path, n_vocab);
        goto done;
    }
    for (int i = 0; i < n_vocab; i++) {
        pieces[i] = sprig_gguf_arr_str(g, kv_tokens, (uint64_t)i, &lens[i]);
        if (!pieces[i]) {
            sprig_err(err, SPRIG_E_INTERNAL, "%s: key '%s': element %d unreadable", path, KEY_TOKENS, i);
            goto done;
        }
        if (scores) scores[i] = sprig_gguf_arr_f32(g, kv_scores, (uint64_t)i);
        if (types) {
            int64_t ty = sprig_gguf_arr_int(g, kv_types, (uint64_t)i);
            if (ty < SPRIG_TOKEN_UNDEFINED || ty > SPRIG_TOKEN_BYTE) {
                sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is not a token type (0..6)", path, KEY_TYPES, i, (long long)ty);
                goto done;
            }
            types[i] = (int32_t)ty;
        }
    }
    for (int i = 0; i < d.n_merges; i++) {
        merges[i] = sprig_gguf_arr_str(g, kv_merges, (uint64_t)i, &merge_lens[i]);
        if (!merges[i]) {
            sprig_err(err, SPRIG_E_INTERNAL, "%s: key '%s': element %d unreadable", path, KEY_MERGES, i);
            goto done;
        }
    }
    d.merges = merges;
    d.merge_lens = merge_lens;
    d.pieces = pieces;
    d.piece_lens = lens;
    d.scores = scores;
    d.types = types;
    t = sprig_tokenizer_create(&d, err);
    if (!t) sprig_err_prefix(err, "%s", path);
done:
    free(pieces); free(lens); free(scores); free(types); free(merges); free(merge_lens);
    return t;
}
