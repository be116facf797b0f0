/*
 * convert — see convert.h. llama2.c checkpoint + tokenizer.bin -> GGUF.
 *
 * Both inputs are mapped, never copied: every tensor is handed to the GGUF
 * writer as a fill callback that copies its slice of the checkpoint mapping
 * at write time, so converting a checkpoint costs one pass over it. Every
 * size is computed in overflow-checked 64-bit arithmetic and the weights
 * must account for the checkpoint exactly, byte for byte.
 */
#include "gguf/convert.h"
#include "gguf/gguf.h"
#include "base/mmap.h"
#include "tensor/types.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 28

/* a*b (+ ...) in u64 with overflow tracking */
static uint64_t mul3(uint64_t a, uint64_t b, uint64_t c, bool *ovf)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r)) *ovf = true;
    return r;
}

static uint64_t add(uint64_t a, uint64_t b, bool *ovf)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) *ovf = true;
    return r;
}

sprig_status sprig_llama2c_parse_header(const void *data, size_t size, const char *name,
                                        struct sprig_llama2c_config *cfg, sprig_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    if (size < HEADER_BYTES)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: checkpoint is %zu bytes, too short for the %d-byte llama2.c header",
                         name, size, HEADER_BYTES);
    if (!memcmp(data, "ak42", 4)) {
        int32_t ver;
        memcpy(&ver, (const uint8_t *)data + 4, 4);
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: llama2.c export version %d (magic 'ak42') is not supported; "
                         "export the legacy format (version 0)", name, ver);
    }
    int32_t h[7];
    memcpy(h, data, sizeof h);
    static const char *const field[7] = { "dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len" };
    for (int i = 0; i < 7; i++) {
        if (i == 5 ? h[i] == 0 || h[i] == INT32_MIN : h[i] <= 0)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: header field %s = %d is not %s", name, field[i], h[i],
                             i == 5 ? "a nonzero vocabulary size" : "positive");
    }
    cfg->dim = h[0];
    cfg->hidden_dim = h[1];
    cfg->n_layers = h[2];
    cfg->n_heads = h[3];
    cfg->n_kv_heads = h[4];
    cfg->vocab_size = h[5];
    cfg->seq_len = h[6];
    cfg->shared_classifier = h[5] > 0;
    cfg->n_vocab = h[5] > 0 ? h[5] : -h[5];
    if (cfg->dim % cfg->n_heads)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header: dim %d is not divisible by n_heads %d", name, cfg->dim, cfg->n_heads);
    if (cfg->n_kv_heads > cfg->n_heads || cfg->n_heads % cfg->n_kv_heads)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header: n_heads %d is not a multiple of n_kv_heads %d", name,
                         cfg->n_heads, cfg->n_kv_heads);
    if (cfg->n_layers > SPRIG_LLAMA2C_MAX_LAYERS)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header: n_layers %d exceeds the limit of %d", name, cfg->n_layers,
                         SPRIG_LLAMA2C_MAX_LAYERS);
    cfg->head_size = cfg->dim / cfg->n_heads;
    if (cfg->head_size % 2)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header: head size %d (dim %d / n_heads %d) is odd; RoPE needs pairs",
                         name, cfg->head_size, cfg->dim, cfg->n_heads);
    cfg->kv_dim = cfg->head_size * cfg->n_kv_heads;
    if (cfg->n_vocab < 3)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header: vocab_size %d is too small (ids 0, 1, 2 are unk, bos, eos)",
                         name, cfg->vocab_size);

    bool ovf = false;
    uint64_t D = (uint64_t)cfg->dim, H = (uint64_t)cfg->hidden_dim, L = (uint64_t)cfg->n_layers;
    uint64_t V = (uint64_t)cfg->n_vocab, KV = (uint64_t)cfg->kv_dim;
    uint64_t n = mul3(V, D, 1, &ovf);                       /* token_embedding */
    n = add(n, mul3(L, D, 1, &ovf), &ovf);                  /* rms_att */
    n = add(n, mul3(L, D, D, &ovf), &ovf);                  /* wq */
    n = add(n, mul3(L, KV, D, &ovf), &ovf);                 /* wk */
    n = add(n, mul3(L, KV, D, &ovf), &ovf);                 /* wv */
    n = add(n, mul3(L, D, D, &ovf), &ovf);                  /* wo */
    n = add(n, mul3(L, D, 1, &ovf), &ovf);                  /* rms_ffn */
    n = add(n, mul3(L, H, D, &ovf), &ovf);                  /* w1 */
    n = add(n, mul3(L, D, H, &ovf), &ovf);                  /* w2 */
    n = add(n, mul3(L, H, D, &ovf), &ovf);                  /* w3 */
    n = add(n, D, &ovf);                                    /* rms_final */
    n = add(n, mul3((uint64_t)cfg->seq_len, (uint64_t)cfg->head_size, 1, &ovf), &ovf);   /* freq_cis real + imag */
    if (!cfg->shared_classifier) n = add(n, mul3(V, D, 1, &ovf), &ovf);                  /* wcls */
    uint64_t bytes = add(mul3(n, 4, 1, &ovf), HEADER_BYTES, &ovf);
    char desc[200];
    snprintf(desc, sizeof desc, "dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d",
             cfg->dim, cfg->hidden_dim, cfg->n_layers, cfg->n_heads, cfg->n_kv_heads, cfg->vocab_size, cfg->seq_len);
    if (ovf)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header (%s): the weight count overflows", name, desc);
    if (bytes != size)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: header (%s) implies %" PRIu64 " bytes but the file has %zu (%s)",
                         name, desc, bytes, size, bytes > size ? "truncated" : "trailing bytes");
    cfg->n_floats = n;
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- tokenizer */

struct vocab {
    char **pieces;     /* [n] converted text */
    size_t *lens;      /* [n] */
    float *scores;     /* [n] */
    int32_t *types;    /* [n] */
    int32_t n;
};

static void vocab_free(struct vocab *v)
{
    if (v->pieces)
        for (int32_t i = 0; i < v->n; i++) free(v->pieces[i]);
    free(v->pieces);
    free(v->lens);
    free(v->scores);
    free(v->types);
    memset(v, 0, sizeof *v);
}

static int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<0xNN>" byte-fallback pieces */
static bool is_byte_piece(const uint8_t *s, size_t n)
{
    return n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && hexval(s[3]) >= 0 && hexval(s[4]) >= 0 && s[5] == '>';
}

/* One token: special ids renamed, spaces to U+2581, type from the table below. */
static sprig_status convert_piece(struct vocab *v, int32_t id, const uint8_t *s, size_t n, const char *name, sprig_error *err)
{
    static const char *const special[3] = { "<unk>", "<s>", "</s>" };
    static const int32_t special_type[3] = { 2 /* UNKNOWN */, 3 /* CONTROL */, 3 };
    if (id < 3) {
        s = (const uint8_t *)special[id];
        n = strlen(special[id]);
        v->types[id] = special_type[id];
    } else if (n == 0) {
        v->types[id] = 3;   /* CONTROL */
    } else if (is_byte_piece(s, n)) {
        v->types[id] = 6;   /* BYTE */
    } else {
        v->types[id] = 1;   /* NORMAL */
    }
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    size_t out = n + spaces * 2;   /* ' ' (1 byte) -> U+2581 (3 bytes) */
    char *p = malloc(out ? out : 1);
    if (!p) return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory at token %d", name, id);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(p + k, "\xe2\x96\x81", 3);
            k += 3;
        } else {
            p[k++] = (char)s[i];
        }
    }
    v->pieces[id] = p;
    v->lens[id] = out;
    return SPRIG_OK;
}

static sprig_status load_vocab(const uint8_t *d, size_t size, const char *name, int32_t n_vocab, struct vocab *v,
                               sprig_error *err)
{
    memset(v, 0, sizeof *v);
    if (size < 4) return sprig_err(err, SPRIG_E_FORMAT, "%s: tokenizer is %zu bytes, too short for max_token_length", name, size);
    /* each token needs at least 8 bytes (score + length) */
    if ((uint64_t)n_vocab > (size - 4) / 8)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: the checkpoint's vocab_size %d needs at least %" PRIu64
                         " tokenizer bytes, the file has %zu (vocab size mismatch or truncated tokenizer)",
                         name, n_vocab, (uint64_t)n_vocab * 8 + 4, size);
    v->n = n_vocab;
    v->pieces = calloc((size_t)n_vocab, sizeof *v->pieces);
    v->lens = calloc((size_t)n_vocab, sizeof *v->lens);
    v->scores = calloc((size_t)n_vocab, sizeof *v->scores);
    v->types = calloc((size_t)n_vocab, sizeof *v->types);
    if (!v->pieces || !v->lens || !v->scores || !v->types) {
        vocab_free(v);
        return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory for %d tokens", name, n_vocab);
    }
    size_t off = 4;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (size - off < 8) {
            vocab_free(v);
            return sprig_err(err, SPRIG_E_FORMAT, "%s: token %d: score/length at offset %zu is past the end of the file "
                             "(%zu bytes): truncated, or fewer than the checkpoint's %d tokens", name, i, off, size, n_vocab);
        }
        uint32_t len;
        memcpy(&v->scores[i], d + off, 4);
        memcpy(&len, d + off + 4, 4);
        off += 8;
        if (len > size - off) {
            vocab_free(v);
            return sprig_err(err, SPRIG_E_FORMAT, "%s: token %d: length %u at offset %zu runs past the end of the file (%zu bytes)",
                             name, i, len, off - 4, size);
        }
        sprig_status st = convert_piece(v, i, d + off, len, name, err);
        if (st != SPRIG_OK) {
            vocab_free(v);
            return st;
        }
        off += len;
    }
    if (off != size) {
        vocab_free(v);
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %zu bytes left after the checkpoint's %d tokens (vocab size mismatch)",
                         name, size - off, n_vocab);
    }
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- conversion */

struct slice { const uint8_t *src; };

static sprig_status fill_slice(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    const struct slice *s = user;
    memcpy(dst, s->src, nbytes);
    return SPRIG_OK;
}

#define TRY(x) do { if ((st = (x)) != SPRIG_OK) goto done; } while (0)

sprig_status sprig_convert_llama2c(const char *model_path, const char *tokenizer_path, const char *out_path,
                                   const struct sprig_convert_opts *opts, sprig_error *err)
{
    sprig_map mm = { 0 }, tm = { 0 };
    struct vocab voc = { 0 };
    struct slice *slices = NULL;
    sprig_gguf_writer *w = NULL;
    struct sprig_llama2c_config c;
    sprig_status st;
    TRY(sprig_map_file(model_path, &mm, err));
    TRY(sprig_llama2c_parse_header(mm.data, mm.size, model_path, &c, err));
    TRY(sprig_map_file(tokenizer_path, &tm, err));
    TRY(load_vocab(tm.data, tm.size, tokenizer_path, c.n_vocab, &voc, err));

    uint32_t n_ctx = opts && opts->context_length ? opts->context_length : (uint32_t)c.seq_len;
    const char *gname = opts && opts->name ? opts->name : "llama";
    w = sprig_gguf_writer_create(err);
    if (!w) { st = SPRIG_E_NOMEM; goto done; }
    TRY(sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)voc.pieces, voc.lens, (uint64_t)voc.n, err));
    TRY(sprig_gguf_w_arr(w, "tokenizer.ggml.scores", SPRIG_GGUF_F32, voc.scores, (uint64_t)voc.n, err));
    TRY(sprig_gguf_w_arr(w, "tokenizer.ggml.token_type", SPRIG_GGUF_I32, voc.types, (uint64_t)voc.n, err));
    TRY(sprig_gguf_w_str(w, "tokenizer.ggml.model", "llama", 5, err));
    TRY(sprig_gguf_w_str(w, "general.architecture", "llama", 5, err));
    TRY(sprig_gguf_w_str(w, "general.name", gname, strlen(gname), err));
    TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0, err));
    TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1, err));
    TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2, err));
    /* llama.cpp's spelling, and its "no token" value */
    TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.seperator_token_id", UINT32_MAX, err));
    TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.padding_token_id", UINT32_MAX, err));
    TRY(sprig_gguf_w_u32(w, "llama.context_length", n_ctx, err));
    TRY(sprig_gguf_w_u32(w, "llama.embedding_length", (uint32_t)c.dim, err));
    TRY(sprig_gguf_w_u32(w, "llama.feed_forward_length", (uint32_t)c.hidden_dim, err));
    TRY(sprig_gguf_w_u32(w, "llama.attention.head_count", (uint32_t)c.n_heads, err));
    TRY(sprig_gguf_w_u32(w, "llama.attention.head_count_kv", (uint32_t)c.n_kv_heads, err));
    TRY(sprig_gguf_w_u32(w, "llama.block_count", (uint32_t)c.n_layers, err));
    TRY(sprig_gguf_w_u32(w, "llama.rope.dimension_count", (uint32_t)c.head_size, err));
    TRY(sprig_gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f, err));

    /* slices of the checkpoint, in file order (float offsets) */
    const uint8_t *base = mm.data + HEADER_BYTES;
    uint64_t D = (uint64_t)c.dim, H = (uint64_t)c.hidden_dim, L = (uint64_t)c.n_layers, V = (uint64_t)c.n_vocab,
             KV = (uint64_t)c.kv_dim;
    uint64_t o_emb = 0, o_rms_att = o_emb + V * D, o_wq = o_rms_att + L * D, o_wk = o_wq + L * D * D,
             o_wv = o_wk + L * KV * D, o_wo = o_wv + L * KV * D, o_rms_ffn = o_wo + L * D * D,
             o_w1 = o_rms_ffn + L * D, o_w2 = o_w1 + L * H * D, o_w3 = o_w2 + L * D * H, o_rms_final = o_w3 + L * H * D,
             o_freq = o_rms_final + D, o_wcls = o_freq + (uint64_t)c.seq_len * (uint64_t)c.head_size;
    SPRIG_ASSERT((c.shared_classifier ? o_wcls : o_wcls + V * D) == c.n_floats);
    size_t n_t = 3 + 9 * (size_t)c.n_layers;
    slices = calloc(n_t, sizeof *slices);
    if (!slices) { st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", out_path); goto done; }
    size_t k = 0;
#define ADD(nm, nd, ne0, ne1, off) do { \
        slices[k].src = base + (off) * 4; \
        int64_t ne_[2] = { (int64_t)(ne0), (int64_t)(ne1) }; \
        TRY(sprig_gguf_w_tensor_fill(w, nm, SPRIG_TYPE_F32, nd, ne_, fill_slice, &slices[k], err)); \
        k++; \
    } while (0)
    ADD("token_embd.weight", 2, D, V, o_emb);
    ADD("output_norm.weight", 1, D, 1, o_rms_final);
    ADD("output.weight", 2, D, V, c.shared_classifier ? o_emb : o_wcls);
    for (uint64_t l = 0; l < L; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".attn_q.weight", l);
        ADD(nm, 2, D, D, o_wq + l * D * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".attn_k.weight", l);
        ADD(nm, 2, D, KV, o_wk + l * KV * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".attn_v.weight", l);
        ADD(nm, 2, D, KV, o_wv + l * KV * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".attn_output.weight", l);
        ADD(nm, 2, D, D, o_wo + l * D * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".attn_norm.weight", l);
        ADD(nm, 1, D, 1, o_rms_att + l * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".ffn_gate.weight", l);
        ADD(nm, 2, D, H, o_w1 + l * H * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".ffn_down.weight", l);
        ADD(nm, 2, H, D, o_w2 + l * D * H);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".ffn_up.weight", l);
        ADD(nm, 2, D, H, o_w3 + l * H * D);
        snprintf(nm, sizeof nm, "blk.%" PRIu64 ".ffn_norm.weight", l);
        ADD(nm, 1, D, 1, o_rms_ffn + l * D);
    }
#undef ADD
    TRY(sprig_gguf_writer_write(w, out_path, err));
done:
    sprig_gguf_writer_free(w);
    free(slices);
    vocab_free(&voc);
    sprig_unmap(&tm);
    sprig_unmap(&mm);
    return st;
}
