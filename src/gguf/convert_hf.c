/*
 * convert_hf — see convert_hf.h. Hugging Face tokenizer.json -> vocabulary-only GGUF.
 *
 * What is written (llama.cpp's key names and order, gguf-py constants.py):
 *   tokenizer.ggml.model        "gpt2" (byte-level BPE) or "gemma4" (SentencePiece-
 *                               style BPE on raw UTF-8: ' ' -> U+2581 by the
 *                               normalizer, byte fallback to <0xNN> tokens, no
 *                               byte-level alphabet; llama.cpp calls this kind
 *                               "gemma4" after the first model it converted so)
 *   tokenizer.ggml.pre          gpt2 only: the row of tokenizer/pretok whose single
 *                               expression is exactly the Split pattern's "Regex"
 *                               (plain ByteLevel with use_regex: GPT-2's, "gpt-2");
 *                               an expression not in the table is refused, naming it
 *   tokenizer.ggml.tokens       id order: model.vocab, then added_tokens; ids that
 *                               neither names become "[PAD{id}]" (type 5, unused)
 *   tokenizer.ggml.token_type   i32: added + special 3 (control), added 4 (user-
 *                               defined), gemma4 "<0xNN>" 6 (byte), else 1
 *   tokenizer.ggml.merges       rank order as "A B" (tokenizer.json holds "A B"
 *                               strings or ["A", "B"] pairs); A, B and AB must be
 *                               tokens of model.vocab, as the Rust crate requires
 *   tokenizer.ggml.add_space_prefix  false (gemma4: the normalizer prepends nothing)
 *   from tokenizer_config.json: bos/eos/unk/pad_token (a string or {content})
 *   -> *_token_id (u32), add_bos_token / add_eos_token (bool), chat_template
 *   (a string, or a list of {name, template}: "default" -> tokenizer.chat_template,
 *   others -> tokenizer.chat_template.NAME). When the config says nothing about
 *   add_bos_token and the post_processor (TemplateProcessing, alone or in a
 *   Sequence) puts the BOS token first in "single", add_bos_token is true (and
 *   likewise a last special token equal to EOS sets add_eos_token); with no
 *   bos_token in the config, the prepended token becomes bos_token_id.
 *
 * NOT reproduced (the GGUF has no key for them; say so rather than pretend):
 *   - the NFC normalizer (Qwen 3): accepted but not applied by llama.cpp nor by
 *     sprig; text that NFC would change tokenizes differently;
 *   - model.ignore_merges (Llama 3): llama.cpp ties it to the pre-tokenizer, and
 *     so does sprig's pretok table; a tokenizer.json whose flag disagrees with
 *     its row is refused rather than converted wrongly;
 *   - added tokens' lstrip / rstrip / single_word / normalized flags: llama.cpp
 *     sets its own token attributes per model at load time;
 *   - model.dropout (refused unless null or 0), continuing_subword_prefix /
 *     end_of_word_suffix (refused unless empty), fuse_unk (irrelevant with byte
 *     fallback), the decoder (implied by the kind), the post-processor beyond
 *     the BOS/EOS facts above;
 *   - Gemma 3's pre-tokenizer, Split on " " MergedWithPrevious: it runs after
 *     the normalizer has turned every ' ' into U+2581, so it never splits;
 *   - the model's vocab_size from config.json (not an input here): llama.cpp
 *     pads the token list with [PAD{id}] up to it (Qwen 3: 151936 tokens; this
 *     converter writes the 151669 that tokenizer.json defines);
 *   - llama.cpp's own retyping: its gpt2 path marks a non-special added token
 *     that "looks special" (<|fim_prefix|>) as control and writes user-defined
 *     U+2581 as ' '; its gemma4 path types tokens from tokenizer_config's special
 *     list. Here the types are tokenizer.json's own (special or not), which is
 *     what the reference tokenizer matches in text.
 * Refused with the JSON path named: model.type other than BPE (Unigram,
 * WordPiece, WordLevel), a normalizer other than NFC / Replace(' ' -> U+2581),
 * pre-tokenizers other than Split(Regex, Isolated) + ByteLevel, a merge naming
 * a token not in model.vocab, two tokens with one id, ids out of range, a merge
 * part holding a space (not expressible as "A B").
 */
#include "gguf/convert_hf.h"
#include "gguf/gguf.h"
#include "base/mmap.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum hf_kind { KIND_BYTELEVEL, KIND_SPM };

struct hf_kind_row {
    const char *model;          /* tokenizer.ggml.model */
    bool byte_tokens;           /* "<0xNN>" pieces are type 6 */
    bool writes_pre;            /* tokenizer.ggml.pre */
    bool writes_space_prefix;   /* tokenizer.ggml.add_space_prefix = false */
};

static const struct hf_kind_row kinds[] = {
    [KIND_BYTELEVEL] = { "gpt2", false, true, false },
    [KIND_SPM]       = { "gemma4", true, false, true },
};

static const char *const json_type_names[] = {
    [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array", [JSON_STRING] = "a string",
    [JSON_INTEGER] = "an integer", [JSON_REAL] = "a number", [JSON_TRUE] = "true",
    [JSON_FALSE] = "false", [JSON_NULL] = "null",
};

static const char *jtype(const json_t *v)
{
    return v ? json_type_names[json_typeof(v)] : "absent";
}

struct tok {
    const char *s;
    size_t len;
    int type;         /* 0 = hole */
    bool added;
};

struct conv {
    const char *name;          /* tokenizer.json's name, for messages */
    sprig_error *err;
    json_t *root, *model, *vocab, *added;
    enum hf_kind kind;
    const struct sprig_pretok_row *pre;
    struct tok *tok;
    int n_tok;
    char *pad_blob;            /* "[PAD{id}]" texts */
    const char **merge_s;
    size_t *merge_len;
    size_t n_merges;
    char *merge_blob;          /* "A B" built from pairs */
};

#define FAIL(c, code, ...) sprig_err((c)->err, code, __VA_ARGS__)

/* a printable prefix of a string for messages */
#define SHOW(s, n) (int)((n) > 80 ? 80 : (n)), (s)

static const char *obj_str(const json_t *o, const char *key, size_t *len)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) return NULL;
    if (len) *len = json_string_length(v);
    return json_string_value(v);
}

static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && json_string_length(v) == strlen(s) && !memcmp(json_string_value(v), s, strlen(s));
}

/* ---------------------------------------------------------------- normalizer */

static sprig_status check_normalizer(struct conv *c, const json_t *n, const char *path, int depth,
                                     bool *nfc, bool *space_repl)
{
    if (!n || json_is_null(n)) return SPRIG_OK;
    if (!json_is_object(n))
        return FAIL(c, SPRIG_E_FORMAT, "%s: %s is %s, not an object", c->name, path, jtype(n));
    const char *type = obj_str(n, "type", NULL);
    if (!type) return FAIL(c, SPRIG_E_FORMAT, "%s: %s.type: missing or not a string", c->name, path);
    if (!strcmp(type, "NFC")) {
        *nfc = true;
        return SPRIG_OK;
    }
    if (!strcmp(type, "Replace")) {
        const json_t *pat = json_object_get(n, "pattern");
        if (str_is(json_object_get(pat, "String"), " ") && str_is(json_object_get(n, "content"), "\xe2\x96\x81")) {
            *space_repl = true;
            return SPRIG_OK;
        }
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s: a Replace normalizer other than ' ' -> U+2581 is not supported",
                    c->name, path);
    }
    if (!strcmp(type, "Sequence") && depth < 4) {
        const json_t *arr = json_object_get(n, "normalizers");
        if (!json_is_array(arr))
            return FAIL(c, SPRIG_E_FORMAT, "%s: %s.normalizers: %s, not an array", c->name, path, jtype(arr));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            sprig_status st = check_normalizer(c, json_array_get(arr, i), sub, depth + 1, nfc, space_repl);
            if (st) return st;
        }
        return SPRIG_OK;
    }
    return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s: normalizer \"%s\" is not supported (only NFC and Replace ' ' -> U+2581)",
                c->name, path, type);
}

/* ---------------------------------------------------------------- pre-tokenizer */

/* Is there a ByteLevel component in this pre-tokenizer / decoder (or its Sequence)? */
static bool has_bytelevel(const json_t *n)
{
    if (!json_is_object(n)) return false;
    const char *type = obj_str(n, "type", NULL);
    if (type && !strcmp(type, "ByteLevel")) return true;
    const char *const lists[] = { "pretokenizers", "decoders", "processors" };
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const json_t *arr = json_object_get(n, lists[k]);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (has_bytelevel(json_array_get(arr, i))) return true;
    }
    return false;
}

/* One component of a byte-level pre-tokenizer: a Split (its regex into *regex)
 * or a ByteLevel (its use_regex into *bl_regex). */
static sprig_status bytelevel_part(struct conv *c, const json_t *p, const char *path,
                                   const char **regex, size_t *regex_len, const char **regex_path,
                                   int *n_bytelevel, bool *bl_regex)
{
    static char split_path[128];
    if (!json_is_object(p)) return FAIL(c, SPRIG_E_FORMAT, "%s: %s is %s, not an object", c->name, path, jtype(p));
    const char *type = obj_str(p, "type", NULL);
    if (!type) return FAIL(c, SPRIG_E_FORMAT, "%s: %s.type: missing or not a string", c->name, path);
    if (!strcmp(type, "ByteLevel")) {
        if (json_is_true(json_object_get(p, "add_prefix_space")))
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s.add_prefix_space = true is not supported", c->name, path);
        const json_t *ur = json_object_get(p, "use_regex");
        (*n_bytelevel)++;
        *bl_regex = !ur || json_is_true(ur);
        return SPRIG_OK;
    }
    if (!strcmp(type, "Split")) {
        if (*regex)
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s: a second Split is not supported", c->name, path);
        const json_t *pat = json_object_get(p, "pattern");
        const json_t *re = json_object_get(pat, "Regex");
        if (!json_is_string(re))
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s.pattern: only a \"Regex\" pattern is supported", c->name, path);
        if (!str_is(json_object_get(p, "behavior"), "Isolated"))
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s.behavior: only \"Isolated\" is supported", c->name, path);
        if (json_is_true(json_object_get(p, "invert")))
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s.invert = true is not supported", c->name, path);
        *regex = json_string_value(re);
        *regex_len = json_string_length(re);
        snprintf(split_path, sizeof split_path, "%s.pattern.Regex", path);
        *regex_path = split_path;
        return SPRIG_OK;
    }
    return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s: pre-tokenizer \"%s\" is not supported with byte-level BPE",
                c->name, path, type);
}

static sprig_status bytelevel_pre(struct conv *c)
{
    const json_t *pt = json_object_get(c->root, "pre_tokenizer");
    const char *regex = NULL, *regex_path = NULL;
    size_t regex_len = 0;
    int n_bl = 0;
    bool bl_regex = false;
    sprig_status st;
    if (!json_is_object(pt))
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: pre_tokenizer is %s; byte-level BPE needs Split and/or ByteLevel",
                    c->name, jtype(pt));
    const char *type = obj_str(pt, "type", NULL);
    if (type && !strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(pt, "pretokenizers");
        if (!json_is_array(arr))
            return FAIL(c, SPRIG_E_FORMAT, "%s: pre_tokenizer.pretokenizers: %s, not an array", c->name, jtype(arr));
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char path[64];
            snprintf(path, sizeof path, "pre_tokenizer.pretokenizers[%zu]", i);
            if ((st = bytelevel_part(c, json_array_get(arr, i), path, &regex, &regex_len, &regex_path, &n_bl, &bl_regex)))
                return st;
        }
    } else if ((st = bytelevel_part(c, pt, "pre_tokenizer", &regex, &regex_len, &regex_path, &n_bl, &bl_regex))) {
        return st;
    }
    if (n_bl != 1)
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: pre_tokenizer: byte-level BPE needs exactly one ByteLevel step (found %d)",
                    c->name, n_bl);
    if (regex && bl_regex)
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: pre_tokenizer: a Split followed by ByteLevel with use_regex = true "
                    "(two expressions) is not supported", c->name);
    if (regex) {
        c->pre = sprig_pretok_row_by_regex(regex, regex_len);
        if (!c->pre)
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: %s: expression not in sprig's pre-tokenizer table "
                        "(tokenizer/pretok.c), refusing to guess: %.*s", c->name, regex_path, SHOW(regex, regex_len));
    } else if (bl_regex) {
        c->pre = sprig_pretok_row_find("gpt-2", 5);
    } else {
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: pre_tokenizer: ByteLevel with use_regex = false and no Split "
                    "(no pre-tokenization) is not supported", c->name);
    }
    if (!c->pre) return FAIL(c, SPRIG_E_INTERNAL, "%s: pre-tokenizer row \"gpt-2\" missing", c->name);
    return SPRIG_OK;
}

static sprig_status spm_pre(struct conv *c)
{
    const json_t *pt = json_object_get(c->root, "pre_tokenizer");
    if (!pt || json_is_null(pt)) return SPRIG_OK;
    /* Gemma 3: Split on " " — a no-op after the normalizer removed every ' '. */
    if (str_is(json_object_get(pt, "type"), "Split") &&
        str_is(json_object_get(json_object_get(pt, "pattern"), "String"), " "))
        return SPRIG_OK;
    const char *type = obj_str(pt, "type", NULL);
    return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: pre_tokenizer: \"%s\" is not supported with SentencePiece-style BPE "
                "(only none, or a Split on \" \")", c->name, type ? type : jtype(pt));
}

/* ---------------------------------------------------------------- model */

static sprig_status check_model(struct conv *c)
{
    c->model = json_object_get(c->root, "model");
    if (!json_is_object(c->model))
        return FAIL(c, SPRIG_E_FORMAT, "%s: model: %s, not an object", c->name, jtype(c->model));
    const json_t *type = json_object_get(c->model, "type");
    if (!json_is_string(type))
        return FAIL(c, SPRIG_E_FORMAT, "%s: model.type: %s, not a string", c->name, jtype(type));
    if (!str_is(type, "BPE"))
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: model.type \"%.*s\" is not supported (only BPE)", c->name,
                    SHOW(json_string_value(type), json_string_length(type)));
    const json_t *drop = json_object_get(c->model, "dropout");
    if (drop && !json_is_null(drop) && !(json_is_number(drop) && json_number_value(drop) == 0.0))
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: model.dropout: BPE dropout is not supported", c->name);
    const char *const affixes[] = { "continuing_subword_prefix", "end_of_word_suffix" };
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(c->model, affixes[i]);
        if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: model.%s: must be null or empty", c->name, affixes[i]);
    }
    c->vocab = json_object_get(c->model, "vocab");
    if (!json_is_object(c->vocab))
        return FAIL(c, SPRIG_E_FORMAT, "%s: model.vocab: %s, not an object", c->name, jtype(c->vocab));
    if (json_object_size(c->vocab) == 0) return FAIL(c, SPRIG_E_FORMAT, "%s: model.vocab is empty", c->name);

    bool byte_fallback = json_is_true(json_object_get(c->model, "byte_fallback"));
    bool nfc = false, space_repl = false;
    sprig_status st = check_normalizer(c, json_object_get(c->root, "normalizer"), "normalizer", 0, &nfc, &space_repl);
    if (st) return st;
    bool bl = has_bytelevel(json_object_get(c->root, "pre_tokenizer")) || has_bytelevel(json_object_get(c->root, "decoder"));
    if (byte_fallback && space_repl && !bl) {
        c->kind = KIND_SPM;
        if (nfc)
            return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: normalizer: NFC with SentencePiece-style BPE is not supported", c->name);
        st = spm_pre(c);
    } else if (!byte_fallback && !space_repl && bl) {
        c->kind = KIND_BYTELEVEL;
        st = bytelevel_pre(c);
    } else {
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: neither byte-level BPE (a ByteLevel pre-tokenizer, no byte_fallback) "
                    "nor SentencePiece-style BPE (model.byte_fallback and a ' ' -> U+2581 normalizer): "
                    "byte_fallback %s, ' ' -> U+2581 %s, ByteLevel %s", c->name,
                    byte_fallback ? "yes" : "no", space_repl ? "yes" : "no", bl ? "yes" : "no");
    }
    if (st) return st;
    bool ignore = json_is_true(json_object_get(c->model, "ignore_merges"));
    bool row_ignore = c->pre ? c->pre->ignore_merges : false;
    if (ignore != row_ignore)
        return FAIL(c, SPRIG_E_UNSUPPORTED, "%s: model.ignore_merges = %s but %s %s; GGUF has no key for it",
                    c->name, ignore ? "true" : "false",
                    c->pre ? "the pre-tokenizer row" : "SentencePiece-style BPE", 
                    row_ignore ? "takes whole words" : "always merges");
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- tokens */

static bool is_byte_piece(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return false;
    for (int i = 3; i < 5; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'F') || (ch >= 'a' && ch <= 'f'))) return false;
    }
    return true;
}

static sprig_status token_id(struct conv *c, const json_t *v, const char *path, const char *key, size_t klen, int *id)
{
    if (!json_is_integer(v))
        return FAIL(c, SPRIG_E_FORMAT, "%s: %s%.*s%s: id is %s, not an integer", c->name, path, SHOW(key, klen),
                    key ? "\"]" : "", jtype(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= SPRIG_TOKENIZER_MAX_VOCAB)
        return FAIL(c, SPRIG_E_FORMAT, "%s: %s%.*s%s: id %lld is outside 0..%d", c->name, path, SHOW(key, klen),
                    key ? "\"]" : "", (long long)x, SPRIG_TOKENIZER_MAX_VOCAB - 1);
    *id = (int)x;
    return SPRIG_OK;
}

static sprig_status build_tokens(struct conv *c)
{
    const char *key;
    size_t klen;
    json_t *v;
    int max_id = -1, id;
    sprig_status st;
    json_object_keylen_foreach(c->vocab, key, klen, v) {
        if ((st = token_id(c, v, "model.vocab[\"", key, klen, &id))) return st;
        if (id > max_id) max_id = id;
    }
    c->added = json_object_get(c->root, "added_tokens");
    if (c->added && !json_is_null(c->added) && !json_is_array(c->added))
        return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens: %s, not an array", c->name, jtype(c->added));
    for (size_t i = 0; i < json_array_size(c->added); i++) {
        const json_t *a = json_array_get(c->added, i);
        char path[64];
        snprintf(path, sizeof path, "added_tokens[%zu].id", i);
        if (!json_is_object(a)) return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu]: %s, not an object", c->name, i, jtype(a));
        if ((st = token_id(c, json_object_get(a, "id"), path, NULL, 0, &id))) return st;
        if (!json_is_string(json_object_get(a, "content")))
            return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu].content: %s, not a string", c->name, i,
                        jtype(json_object_get(a, "content")));
        if (id > max_id) max_id = id;
    }
    c->n_tok = max_id + 1;
    c->tok = calloc((size_t)c->n_tok, sizeof *c->tok);
    if (!c->tok) return FAIL(c, SPRIG_E_NOMEM, "%s: out of memory for %d tokens", c->name, c->n_tok);

    json_object_keylen_foreach(c->vocab, key, klen, v) {
        id = (int)json_integer_value(v);
        struct tok *t = &c->tok[id];
        if (t->type)
            return FAIL(c, SPRIG_E_FORMAT, "%s: model.vocab[\"%.*s\"]: id %d is also \"%.*s\"", c->name, SHOW(key, klen),
                        id, SHOW(t->s, t->len));
        if (klen > SPRIG_TOKENIZER_MAX_PIECE)
            return FAIL(c, SPRIG_E_FORMAT, "%s: model.vocab[\"%.*s...\"]: token of %zu bytes exceeds %d", c->name,
                        SHOW(key, klen), klen, SPRIG_TOKENIZER_MAX_PIECE);
        t->s = key;
        t->len = klen;
        t->type = kinds[c->kind].byte_tokens && is_byte_piece(key, klen) ? SPRIG_TOKEN_BYTE : SPRIG_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < json_array_size(c->added); i++) {
        const json_t *a = json_array_get(c->added, i);
        const json_t *content = json_object_get(a, "content");
        const char *s = json_string_value(content);
        size_t len = json_string_length(content);
        id = (int)json_integer_value(json_object_get(a, "id"));
        struct tok *t = &c->tok[id];
        if (t->added)
            return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu]: id %d is already added token \"%.*s\"", c->name, i,
                        id, SHOW(t->s, t->len));
        if (t->type && (t->len != len || memcmp(t->s, s, len)))
            return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu]: id %d is \"%.*s\" but model.vocab gives it to \"%.*s\"",
                        c->name, i, id, SHOW(s, len), SHOW(t->s, t->len));
        if (len == 0 || len > SPRIG_TOKENIZER_MAX_PIECE)
            return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu].content: %zu bytes (must be 1..%d)", c->name, i, len,
                        SPRIG_TOKENIZER_MAX_PIECE);
        const json_t *special = json_object_get(a, "special");
        if (special && !json_is_boolean(special))
            return FAIL(c, SPRIG_E_FORMAT, "%s: added_tokens[%zu].special: %s, not a boolean", c->name, i, jtype(special));
        t->s = s;
        t->len = len;
        t->added = true;
        t->type = json_is_true(special) ? SPRIG_TOKEN_CONTROL : SPRIG_TOKEN_USER_DEFINED;
    }
    int holes = 0;
    for (int i = 0; i < c->n_tok; i++) holes += !c->tok[i].type;
    if (holes) {
        c->pad_blob = malloc((size_t)holes * 20);
        if (!c->pad_blob) return FAIL(c, SPRIG_E_NOMEM, "%s: out of memory", c->name);
        char *p = c->pad_blob;
        for (int i = 0; i < c->n_tok; i++) {
            struct tok *t = &c->tok[i];
            if (t->type) continue;
            int n = snprintf(p, 20, "[PAD%d]", i);
            t->s = p;
            t->len = (size_t)n;
            t->type = SPRIG_TOKEN_UNUSED;
            p += n + 1;
        }
    }
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- merges */

static sprig_status merge_part_check(struct conv *c, size_t i, const char *what, const char *s, size_t n)
{
    if (!json_object_getn(c->vocab, s, n))
        return FAIL(c, SPRIG_E_FORMAT, "%s: model.merges[%zu]: %s \"%.*s\" is not in model.vocab", c->name, i, what, SHOW(s, n));
    return SPRIG_OK;
}

static sprig_status build_merges(struct conv *c)
{
    const json_t *m = json_object_get(c->model, "merges");
    if (!m || json_is_null(m)) return SPRIG_OK;
    if (!json_is_array(m)) return FAIL(c, SPRIG_E_FORMAT, "%s: model.merges: %s, not an array", c->name, jtype(m));
    size_t n = json_array_size(m);
    if (n > SPRIG_HF_MAX_MERGES)
        return FAIL(c, SPRIG_E_FORMAT, "%s: model.merges: %zu merges exceed the limit of %d", c->name, n, SPRIG_HF_MAX_MERGES);
    if (n == 0) return SPRIG_OK;
    c->merge_s = calloc(n, sizeof *c->merge_s);
    c->merge_len = calloc(n, sizeof *c->merge_len);
    if (!c->merge_s || !c->merge_len) return FAIL(c, SPRIG_E_NOMEM, "%s: out of memory for %zu merges", c->name, n);
    /* pass 1: validate, size the blob for pairs */
    size_t blob = 0, cat_cap = 0;
    char *cat = NULL;
    sprig_status st = SPRIG_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const json_t *e = json_array_get(m, i);
        const char *a, *b;
        size_t an, bn;
        if (json_is_string(e)) {
            const char *s = json_string_value(e);
            size_t len = json_string_length(e);
            const char *sp = memchr(s, ' ', len);
            if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
                { st = FAIL(c, SPRIG_E_FORMAT, "%s: model.merges[%zu]: \"%.*s\" is not two tokens separated by one space",
                            c->name, i, SHOW(s, len)); break; }
            a = s; an = (size_t)(sp - s);
            b = sp + 1; bn = len - an - 1;
            c->merge_s[i] = s;
            c->merge_len[i] = len;
        } else if (json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            a = json_string_value(json_array_get(e, 0)); an = json_string_length(json_array_get(e, 0));
            b = json_string_value(json_array_get(e, 1)); bn = json_string_length(json_array_get(e, 1));
            if (memchr(a, ' ', an) || memchr(b, ' ', bn))
                { st = FAIL(c, SPRIG_E_UNSUPPORTED, "%s: model.merges[%zu]: a part holding a space cannot be written "
                            "as a GGUF \"A B\" merge", c->name, i); break; }
            c->merge_s[i] = NULL;
            c->merge_len[i] = an + bn + 1;
            if (sprig_add_ovf(blob, an + bn + 1, &blob)) { st = FAIL(c, SPRIG_E_NOMEM, "%s: merges overflow", c->name); break; }
        } else {
            st = FAIL(c, SPRIG_E_FORMAT, "%s: model.merges[%zu]: %s, not a string \"A B\" or a pair of strings", c->name,
                      i, jtype(e));
            break;
        }
        if (an == 0 || bn == 0)
            { st = FAIL(c, SPRIG_E_FORMAT, "%s: model.merges[%zu]: an empty part", c->name, i); break; }
        if ((st = merge_part_check(c, i, "left part", a, an)) || (st = merge_part_check(c, i, "right part", b, bn))) break;
        if (an + bn > cat_cap) {
            cat_cap = (an + bn) * 2;
            char *nc = realloc(cat, cat_cap);
            if (!nc) { st = FAIL(c, SPRIG_E_NOMEM, "%s: out of memory", c->name); break; }
            cat = nc;
        }
        memcpy(cat, a, an);
        memcpy(cat + an, b, bn);
        if (!json_object_getn(c->vocab, cat, an + bn))
            st = FAIL(c, SPRIG_E_FORMAT, "%s: model.merges[%zu]: the merged token \"%.*s\" is not in model.vocab",
                      c->name, i, SHOW(cat, an + bn));
    }
    free(cat);
    if (st) return st;
    c->n_merges = n;
    if (!blob) return SPRIG_OK;
    /* pass 2: "A B" for the pairs */
    c->merge_blob = malloc(blob);
    if (!c->merge_blob) return FAIL(c, SPRIG_E_NOMEM, "%s: out of memory for merges", c->name);
    char *p = c->merge_blob;
    for (size_t i = 0; i < n; i++) {
        if (c->merge_s[i]) continue;
        const json_t *e = json_array_get(m, i);
        const json_t *ja = json_array_get(e, 0), *jb = json_array_get(e, 1);
        size_t an = json_string_length(ja), bn = json_string_length(jb);
        memcpy(p, json_string_value(ja), an);
        p[an] = ' ';
        memcpy(p + an + 1, json_string_value(jb), bn);
        c->merge_s[i] = p;
        p += an + bn + 1;
    }
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- config */

/* Id of a token by content: added tokens first (they win in the reference), then model.vocab. */
static int find_token(const struct conv *c, const char *s, size_t n)
{
    for (size_t i = 0; i < json_array_size(c->added); i++) {
        const json_t *a = json_array_get(c->added, i);
        const json_t *content = json_object_get(a, "content");
        if (json_string_length(content) == n && !memcmp(json_string_value(content), s, n))
            return (int)json_integer_value(json_object_get(a, "id"));
    }
    const json_t *v = json_object_getn(c->vocab, s, n);
    return v ? (int)json_integer_value(v) : -1;
}

/* First (first = true) or last special token of the post-processor's "single"
 * template, looking inside a Sequence; NULL when none. */
static const json_t *template_special(const json_t *pp, bool first, int depth)
{
    if (!json_is_object(pp) || depth > 4) return NULL;
    const char *type = obj_str(pp, "type", NULL);
    if (type && !strcmp(type, "Sequence")) {
        const json_t *arr = json_object_get(pp, "processors");
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *r = template_special(json_array_get(arr, i), first, depth + 1);
            if (r) return r;
        }
        return NULL;
    }
    if (!type || strcmp(type, "TemplateProcessing")) return NULL;
    const json_t *single = json_object_get(pp, "single");
    size_t n = json_array_size(single);
    if (!n) return NULL;
    const json_t *piece = json_array_get(single, first ? 0 : n - 1);
    const json_t *id = json_object_get(json_object_get(piece, "SpecialToken"), "id");
    return json_is_string(id) ? id : NULL;
}

struct special_key {
    const char *cfg;     /* tokenizer_config.json field */
    const char *key;     /* GGUF key */
};

static const struct special_key special_keys[] = {
    { "bos_token", "tokenizer.ggml.bos_token_id" },
    { "eos_token", "tokenizer.ggml.eos_token_id" },
    { "unk_token", "tokenizer.ggml.unknown_token_id" },
    { "pad_token", "tokenizer.ggml.padding_token_id" },
};
enum { SK_BOS, SK_EOS, SK_COUNT = 4 };

static sprig_status write_config(struct conv *c, const json_t *cfg, const char *cfg_name, sprig_gguf_writer *w)
{
    sprig_error *err = c->err;
    sprig_status st;
    int ids[SK_COUNT];
    const char *content[SK_COUNT] = { 0 };
    size_t content_len[SK_COUNT] = { 0 };
    for (int k = 0; k < SK_COUNT; k++) {
        ids[k] = -1;
        const json_t *v = cfg ? json_object_get(cfg, special_keys[k].cfg) : NULL;
        if (!v || json_is_null(v)) continue;
        const json_t *s = json_is_object(v) ? json_object_get(v, "content") : v;
        if (!json_is_string(s))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: %s: %s, not a string or {\"content\": string}", cfg_name,
                             special_keys[k].cfg, jtype(s));
        content[k] = json_string_value(s);
        content_len[k] = json_string_length(s);
        ids[k] = find_token(c, content[k], content_len[k]);
        if (ids[k] < 0)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: %s \"%.*s\" is not a token of %s", cfg_name, special_keys[k].cfg,
                             SHOW(content[k], content_len[k]), c->name);
    }
    /* add_bos_token / add_eos_token: the config's word, else the post-processor's template */
    int add[2] = { -1, -1 };
    const char *const add_cfg[2] = { "add_bos_token", "add_eos_token" };
    for (int k = 0; k < 2; k++) {
        const json_t *v = cfg ? json_object_get(cfg, add_cfg[k]) : NULL;
        if (v && !json_is_null(v)) {
            if (!json_is_boolean(v))
                return sprig_err(err, SPRIG_E_FORMAT, "%s: %s: %s, not a boolean", cfg_name, add_cfg[k], jtype(v));
            add[k] = json_is_true(v);
            continue;
        }
        const json_t *sp = template_special(json_object_get(c->root, "post_processor"), k == 0, 0);
        if (!sp) continue;
        int sk = k == 0 ? SK_BOS : SK_EOS;
        const char *s = json_string_value(sp);
        size_t n = json_string_length(sp);
        if (ids[sk] < 0 && k == 0) {
            ids[sk] = find_token(c, s, n);
            if (ids[sk] < 0)
                return sprig_err(err, SPRIG_E_FORMAT, "%s: post_processor: special token \"%.*s\" is not a token",
                                 c->name, SHOW(s, n));
            add[k] = 1;
        } else if (ids[sk] >= 0 && content_len[sk] == n && !memcmp(content[sk], s, n)) {
            add[k] = 1;
        }
    }
    for (int k = 0; k < SK_COUNT; k++)
        if (ids[k] >= 0 && (st = sprig_gguf_w_u32(w, special_keys[k].key, (uint32_t)ids[k], err))) return st;
    const char *const add_key[2] = { "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token" };
    for (int k = 0; k < 2; k++)
        if (add[k] >= 0 && (st = sprig_gguf_w_bool(w, add_key[k], add[k] == 1, err))) return st;

    const json_t *tpl = cfg ? json_object_get(cfg, "chat_template") : NULL;
    if (!tpl || json_is_null(tpl)) return SPRIG_OK;
    if (json_is_string(tpl))
        return sprig_gguf_w_str(w, "tokenizer.chat_template", json_string_value(tpl), json_string_length(tpl), err);
    if (!json_is_array(tpl))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: chat_template: %s, not a string or a list", cfg_name, jtype(tpl));
    for (size_t i = 0; i < json_array_size(tpl); i++) {
        const json_t *e = json_array_get(tpl, i);
        size_t nlen = 0, tlen = 0;
        const char *name = obj_str(e, "name", &nlen), *text = obj_str(e, "template", &tlen);
        if (!name || !text)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: chat_template[%zu]: needs string fields name and template",
                             cfg_name, i);
        bool ok = nlen >= 1 && nlen <= 64;
        for (size_t j = 0; j < nlen && ok; j++) {
            char ch = name[j];
            ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        }
        if (!ok)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: chat_template[%zu].name: \"%.*s\" is not 1..64 of [A-Za-z0-9_-]",
                             cfg_name, i, SHOW(name, nlen));
        char key[96];
        if (!strcmp(name, "default")) snprintf(key, sizeof key, "tokenizer.chat_template");
        else snprintf(key, sizeof key, "tokenizer.chat_template.%s", name);
        if ((st = sprig_gguf_w_str(w, key, text, tlen, err))) return st;
    }
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- writer */

static sprig_status write_vocab(struct conv *c, sprig_gguf_writer *w)
{
    sprig_error *err = c->err;
    sprig_status st;
    const struct hf_kind_row *k = &kinds[c->kind];
    if ((st = sprig_gguf_w_str(w, "tokenizer.ggml.model", k->model, strlen(k->model), err))) return st;
    if (k->writes_pre && (st = sprig_gguf_w_str(w, "tokenizer.ggml.pre", c->pre->name, strlen(c->pre->name), err)))
        return st;
    size_t n = (size_t)c->n_tok;
    const char **s = malloc(n * sizeof *s);
    size_t *lens = malloc(n * sizeof *lens);
    int32_t *types = malloc(n * sizeof *types);
    if (!s || !lens || !types) {
        free(s); free(lens); free(types);
        return FAIL(c, SPRIG_E_NOMEM, "%s: out of memory", c->name);
    }
    for (size_t i = 0; i < n; i++) {
        s[i] = c->tok[i].s;
        lens[i] = c->tok[i].len;
        types[i] = c->tok[i].type;
    }
    st = sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", s, lens, n, err);
    if (!st) st = sprig_gguf_w_arr(w, "tokenizer.ggml.token_type", SPRIG_GGUF_I32, types, n, err);
    free(s); free(lens); free(types);
    if (st) return st;
    if (c->n_merges &&
        (st = sprig_gguf_w_arr_str(w, "tokenizer.ggml.merges", c->merge_s, c->merge_len, c->n_merges, err)))
        return st;
    return SPRIG_OK;
}

/* flags: JSON_DECODE_INT_AS_REAL for tokenizer_config.json, whose numbers are
 * never ids and may be huge (Llama 3's model_max_length is 1e30). */
static json_t *load_json(const void *data, size_t len, const char *name, size_t flags, sprig_error *err)
{
    if (len > SPRIG_HF_MAX_JSON) {
        sprig_err(err, SPRIG_E_FORMAT, "%s: %zu bytes exceed the limit of %zu", name, len, SPRIG_HF_MAX_JSON);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES | flags, &je);
    if (!root) {
        sprig_err(err, SPRIG_E_FORMAT, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        sprig_err(err, SPRIG_E_FORMAT, "%s: the top level is %s, not an object", name, jtype(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

sprig_status sprig_hf_tokenizer_to_gguf(const void *json, size_t json_len, const char *json_name,
                                        const void *cfg, size_t cfg_len, const char *cfg_name,
                                        sprig_gguf_writer *w, sprig_error *err)
{
    struct conv c = { .name = json_name ? json_name : "tokenizer.json", .err = err };
    if (!cfg_name) cfg_name = "tokenizer_config.json";
    if (!json || !w) return sprig_err(err, SPRIG_E_INVALID_ARG, "sprig_hf_tokenizer_to_gguf: NULL argument");
    json_t *cfg_root = NULL;
    c.root = load_json(json, json_len, c.name, 0, err);
    if (!c.root) return err ? err->code : SPRIG_E_FORMAT;
    sprig_status st = check_model(&c);
    if (!st) st = build_tokens(&c);
    if (!st) st = build_merges(&c);
    if (!st && cfg && !(cfg_root = load_json(cfg, cfg_len, cfg_name, JSON_DECODE_INT_AS_REAL, err))) st = err ? err->code : SPRIG_E_FORMAT;
    if (!st) st = write_vocab(&c, w);
    if (!st) st = write_config(&c, cfg_root, cfg_name, w);
    if (!st && kinds[c.kind].writes_space_prefix)
        st = sprig_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", false, err);
    json_decref(cfg_root);
    json_decref(c.root);
    free(c.tok);
    free(c.pad_blob);
    free(c.merge_s);
    free(c.merge_len);
    free(c.merge_blob);
    return st;
}

sprig_status sprig_convert_hf_tokenizer(const char *json_path, const char *config_path, const char *out_path,
                                        sprig_error *err)
{
    if (!json_path || !out_path) return sprig_err(err, SPRIG_E_INVALID_ARG, "convert hf-tokenizer: missing path");
    sprig_map jm = { 0 }, cm = { 0 };
    sprig_status st = sprig_map_file(json_path, &jm, err);
    if (st) return st;
    if (config_path && (st = sprig_map_file(config_path, &cm, err))) {
        sprig_unmap(&jm);
        return st;
    }
    sprig_gguf_writer *w = sprig_gguf_writer_create(err);
    if (!w) st = err ? err->code : SPRIG_E_NOMEM;
    if (!st) st = sprig_hf_tokenizer_to_gguf(jm.data, jm.size, json_path, config_path ? cm.data : NULL, cm.size,
                                             config_path, w, err);
    if (!st) st = sprig_gguf_writer_write(w, out_path, err);
    sprig_gguf_writer_free(w);
    sprig_unmap(&jm);
    if (config_path) sprig_unmap(&cm);
    return st;
}
