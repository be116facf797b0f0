/*
 * quant_mix — see quant_mix.h. Tables: the file types, the tensor kinds by
 * name, the names never quantized, the per-(file type, kind) rules, the
 * fallbacks and the architectures whose 80-layer models are "70B".
 */
#include "gguf/quant_mix.h"
#include "tensor/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* llama.cpp's LLAMA_FTYPE_* values */
enum {
    FT_ALL_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10,
    FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17,
    FT_Q6_K = 18, FT_BF16 = 32,
};

static const struct sprig_ftype ftypes[] = {
    { "f32", FT_ALL_F32, SPRIG_TYPE_F32, false },   { "f16", FT_F16, SPRIG_TYPE_F16, false },
    { "bf16", FT_BF16, SPRIG_TYPE_BF16, false },    { "q8_0", FT_Q8_0, SPRIG_TYPE_Q8_0, false },
    { "q4_0", FT_Q4_0, SPRIG_TYPE_Q4_0, false },    { "q4_1", FT_Q4_1, SPRIG_TYPE_Q4_1, false },
    { "q5_0", FT_Q5_0, SPRIG_TYPE_Q5_0, false },    { "q5_1", FT_Q5_1, SPRIG_TYPE_Q5_1, false },
    { "q2_k", FT_Q2_K, SPRIG_TYPE_Q2_K, true },     { "q3_k_s", FT_Q3_K_S, SPRIG_TYPE_Q3_K, true },
    { "q3_k_m", FT_Q3_K_M, SPRIG_TYPE_Q3_K, true }, { "q3_k", FT_Q3_K_M, SPRIG_TYPE_Q3_K, true },
    { "q3_k_l", FT_Q3_K_L, SPRIG_TYPE_Q3_K, true }, { "q4_k_s", FT_Q4_K_S, SPRIG_TYPE_Q4_K, true },
    { "q4_k_m", FT_Q4_K_M, SPRIG_TYPE_Q4_K, true }, { "q4_k", FT_Q4_K_M, SPRIG_TYPE_Q4_K, true },
    { "q5_k_s", FT_Q5_K_S, SPRIG_TYPE_Q5_K, true }, { "q5_k_m", FT_Q5_K_M, SPRIG_TYPE_Q5_K, true },
    { "q5_k", FT_Q5_K_M, SPRIG_TYPE_Q5_K, true },   { "q6_k", FT_Q6_K, SPRIG_TYPE_Q6_K, true },
};
#define N_FTYPES (int)(sizeof ftypes / sizeof ftypes[0])

const struct sprig_ftype *sprig_ftype_find(const char *name)
{
    for (int i = 0; name && i < N_FTYPES; i++)
        if (!strcasecmp(ftypes[i].name, name)) return &ftypes[i];
    return NULL;
}

const char *sprig_ftype_names(void)
{
    return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m (q3_k), q3_k_l, q4_k_s, q4_k_m (q4_k), "
           "q5_k_s, q5_k_m (q5_k), q6_k";
}

/* ---------------------------------------------------------------- tensor kinds */

enum kind { K_OTHER, K_OUTPUT, K_TOKEN_EMBD, K_ATTN_V, K_ATTN_K, K_ATTN_Q, K_ATTN_OUT, K_FFN_UP, K_FFN_GATE, K_FFN_DOWN };

/* First match wins: exact names, then substrings (attn_qkv and attn_kv_b
 * are attn_v-like: llama.cpp gives them attn_v's rules). */
static const struct { const char *pat; bool exact; enum kind kind; } kinds[] = {
    { "output.weight", true, K_OUTPUT },          { "token_embd.weight", true, K_TOKEN_EMBD },
    { "per_layer_token_embd.weight", true, K_TOKEN_EMBD },
    { "attn_qkv.weight", false, K_ATTN_V },       { "attn_kv_b.weight", false, K_ATTN_V },
    { "attn_v.weight", false, K_ATTN_V },         { "attn_k.weight", false, K_ATTN_K },
    { "attn_q.weight", false, K_ATTN_Q },         { "attn_output.weight", false, K_ATTN_OUT },
    { "ffn_up", false, K_FFN_UP },                { "ffn_gate", false, K_FFN_GATE },
    { "ffn_down", false, K_FFN_DOWN },
};

static enum kind kind_of(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].exact ? !strcmp(name, kinds[i].pat) : strstr(name, kinds[i].pat) != NULL) return kinds[i].kind;
    return K_OTHER;
}

/* Matrices llama.cpp never quantizes (by substring; the exact ones below). */
static const char *const keep_sub[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight",
    "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
    "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_",
    ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};
static const char *const keep_exact[] = { "position_embd.weight", "token_types.weight" };

static bool quantizable(const char *name, int n_dims)
{
    size_t n = strlen(name);
    if (n_dims < 2 || n < 6 || strcmp(name + n - 6, "weight")) return false;
    for (size_t i = 0; i < sizeof keep_sub / sizeof keep_sub[0]; i++)
        if (strstr(name, keep_sub[i])) return false;
    for (size_t i = 0; i < sizeof keep_exact / sizeof keep_exact[0]; i++)
        if (!strcmp(name, keep_exact[i])) return false;
    return true;
}

/* ---------------------------------------------------------------- the rules */

/* use_more_bits: the first and last eighth of the layers and every third
 * one between */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

enum cond { ALWAYS, MORE_BITS, FIRST_8TH, FIRST_16TH, FIRST_2, FIRST_4, GQA_4 };

/* For a (file type, kind) the first row decides: the type becomes `yes`
 * when cond holds for the tensor (its index i among the tensors of its
 * kind, of n), else `no` (-1: unchanged). */
static const struct rule { uint32_t ftype; enum kind kind; enum cond cond; int yes, no; } rules[] = {
    { FT_Q2_K,   K_ATTN_V,   GQA_4,      SPRIG_TYPE_Q4_K, SPRIG_TYPE_Q3_K },
    { FT_Q3_K_M, K_ATTN_V,   FIRST_2,    SPRIG_TYPE_Q5_K, SPRIG_TYPE_Q4_K },
    { FT_Q3_K_L, K_ATTN_V,   ALWAYS,     SPRIG_TYPE_Q5_K, -1 },
    { FT_Q4_K_M, K_ATTN_V,   MORE_BITS,  SPRIG_TYPE_Q6_K, -1 },
    { FT_Q5_K_M, K_ATTN_V,   MORE_BITS,  SPRIG_TYPE_Q6_K, -1 },
    { FT_Q4_K_S, K_ATTN_V,   FIRST_4,    SPRIG_TYPE_Q5_K, -1 },
    { FT_Q2_K,   K_FFN_DOWN, ALWAYS,     SPRIG_TYPE_Q3_K, -1 },
    { FT_Q3_K_M, K_FFN_DOWN, FIRST_16TH, SPRIG_TYPE_Q5_K, SPRIG_TYPE_Q4_K },
    { FT_Q3_K_L, K_FFN_DOWN, ALWAYS,     SPRIG_TYPE_Q5_K, -1 },
    { FT_Q4_K_M, K_FFN_DOWN, MORE_BITS,  SPRIG_TYPE_Q6_K, -1 },
    { FT_Q5_K_M, K_FFN_DOWN, MORE_BITS,  SPRIG_TYPE_Q6_K, -1 },
    { FT_Q4_K_S, K_FFN_DOWN, FIRST_8TH,  SPRIG_TYPE_Q5_K, -1 },
    { FT_Q2_K,   K_ATTN_OUT, ALWAYS,     SPRIG_TYPE_Q3_K, -1 },
    { FT_Q3_K_M, K_ATTN_OUT, ALWAYS,     SPRIG_TYPE_Q4_K, -1 },
    { FT_Q3_K_L, K_ATTN_OUT, ALWAYS,     SPRIG_TYPE_Q5_K, -1 },
};

/* 8-expert models: attn_output of these file types becomes Q5_K */
static const uint32_t expert8_attn_out[] = { FT_Q2_K, FT_Q3_K_S, FT_Q3_K_M, FT_Q4_K_S, FT_Q4_K_M };

/* A block type that does not fit a row falls back to a 32-block type */
static const struct { int from, to; } fallbacks[] = {
    { SPRIG_TYPE_Q2_K, SPRIG_TYPE_Q4_0 }, { SPRIG_TYPE_Q3_K, SPRIG_TYPE_Q4_0 }, { SPRIG_TYPE_Q4_K, SPRIG_TYPE_Q5_0 },
    { SPRIG_TYPE_Q5_K, SPRIG_TYPE_Q5_1 }, { SPRIG_TYPE_Q6_K, SPRIG_TYPE_Q8_0 },
};

/* Architectures llama.cpp sizes as "70B" by layer count (attn_v gets Q5_K
 * instead of Q3_K/Q4_K); gqa: only when n_head != n_head_kv (else 65B). */
static const struct { const char *arch; int n_layer; bool gqa; } type_70b[] = {
    { "llama", 80, true }, { "qwen2", 80, false }, { "deci", 80, false }, { "olmo", 80, false }, { "jais2", 68, false },
};

void sprig_qmix_init(struct sprig_qmix *q, const struct sprig_ftype *ft, bool pure, const struct sprig_qmix_model *m)
{
    memset(q, 0, sizeof *q);
    q->ft = ft;
    q->pure = pure || !ft->mix;
    q->m = *m;
    if (q->m.n_attn_v <= 0) q->m.n_attn_v = m->n_layer;
    for (size_t i = 0; m->arch && i < sizeof type_70b / sizeof type_70b[0]; i++)
        if (!strcmp(m->arch, type_70b[i].arch) && m->n_layer == type_70b[i].n_layer && (!type_70b[i].gqa || m->n_head != m->n_head_kv))
            q->is_70b = true;
}

static bool holds(enum cond c, int i, int n, const struct sprig_qmix *q)
{
    switch (c) {   /* seven predicates of (i, n); the table above says which applies */
    case ALWAYS:     return true;
    case MORE_BITS:  return more_bits(i, n);
    case FIRST_8TH:  return i < n / 8;
    case FIRST_16TH: return i < n / 16;
    case FIRST_2:    return i < 2;
    case FIRST_4:    return i < 4;
    case GQA_4:      return q->m.n_head_kv > 0 && q->m.n_head / q->m.n_head_kv >= 4;
    }
    return false;
}

static int apply_rules(const struct sprig_qmix *q, enum kind k, int i, int n, int type)
{
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
        if (rules[r].ftype == q->ft->ftype && rules[r].kind == k) {
            int t = holds(rules[r].cond, i, n, q) ? rules[r].yes : rules[r].no;
            return t < 0 ? type : t;
        }
    return type;
}

/* The layer of an expert tensor from its name (experts are not in layer order) */
static int layer_of(const char *name, int counter, int n_expert)
{
    int l;
    if (n_expert > 1 && sscanf(name, "blk.%d.", &l) == 1) return l;
    return counter;
}

static int mix_type(struct sprig_qmix *q, enum kind k, const char *name, int64_t ne0, int type)
{
    const int n_layer = q->m.n_layer, n_expert = q->m.n_expert;
    if (k == K_OUTPUT || (q->m.tied && k == K_TOKEN_EMBD)) {
        const struct sprig_type_traits *t = sprig_type_traits(type);
        if (ne0 % t->blck) return SPRIG_TYPE_Q8_0;
        return type != SPRIG_TYPE_Q8_0 ? SPRIG_TYPE_Q6_K : type;
    }
    switch (k) {   /* the counters and the per-kind exceptions; the rest is the table */
    case K_ATTN_V:
        type = apply_rules(q, k, q->i_attn_v, q->m.n_attn_v, type);
        if (q->is_70b && (type == SPRIG_TYPE_Q3_K || type == SPRIG_TYPE_Q4_K)) type = SPRIG_TYPE_Q5_K;
        if (n_expert == 8) type = SPRIG_TYPE_Q8_0;
        q->i_attn_v++;
        return type;
    case K_ATTN_K:
        return n_expert == 8 ? SPRIG_TYPE_Q8_0 : type;
    case K_FFN_DOWN:
        type = apply_rules(q, k, layer_of(name, q->i_ffn_down, n_expert), n_layer, type);
        q->i_ffn_down++;
        return type;
    case K_ATTN_OUT:
        if (n_expert == 8) {
            for (size_t i = 0; i < sizeof expert8_attn_out / sizeof expert8_attn_out[0]; i++)
                if (expert8_attn_out[i] == q->ft->ftype) return SPRIG_TYPE_Q5_K;
            return type;
        }
        return apply_rules(q, k, 0, n_layer, type);
    case K_FFN_GATE:
        q->i_ffn_gate++;
        return type;
    case K_FFN_UP:
        q->i_ffn_up++;
        return type;
    default:
        return type;
    }
}

static int fallback(int type, int64_t ne0)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    if (ne0 % t->blck == 0) return type;
    int to = type;
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (fallbacks[i].from == type) to = fallbacks[i].to;
    return ne0 % sprig_type_traits(to)->blck == 0 ? to : SPRIG_TYPE_F16;
}

int sprig_qmix_type(struct sprig_qmix *q, const char *name, int n_dims, int64_t ne0, int src_type)
{
    if (!quantizable(name, n_dims)) return src_type;
    int type = q->ft->type;
    const struct sprig_type_traits *t = sprig_type_traits(type);
    if (t->blck == 1) return type;            /* f32 / f16 / bf16: no mix, no fallback */
    if (!q->pure) type = mix_type(q, kind_of(name), name, ne0, type);
    return fallback(type, ne0);
}

static int layer_num(const char *s)
{
    int l = -1;
    sscanf(s, "blk.%d.", &l);
    return l;
}

int sprig_qmix_cmp_names(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int lx = layer_num(x), ly = layer_num(y);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x, y);
}
