/*
 * mkmodel — see mkmodel.h. Presets, the architecture table (key prefix, the
 * extra tensors of each layout), validation, the synthetic vocabulary (or
 * one copied from another GGUF) and the weight generator (row-parallel on the thread pool, streamed into the
 * GGUF writer through its fill callback).
 */
#include "mkmodel/mkmodel.h"
#include "gguf/gguf.h"
#include "gguf/quant_mix.h"
#include "base/pool.h"
#include "base/rng.h"
#include "tensor/types.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- presets */

struct preset { const char *name; struct sprig_mkmodel_params p; };

static const struct preset presets[] = {
    { "tiny",     { .dim = 64,   .n_layers = 2,  .n_heads = 4,  .n_kv_heads = 2, .ffn = 128,  .vocab = 300,   .ctx = 512 } },
    { "small",    { .dim = 512,  .n_layers = 8,  .n_heads = 8,  .n_kv_heads = 4, .ffn = 1536, .vocab = 4096,  .ctx = 2048 } },
    { "llama-1b", { .dim = 2048, .n_layers = 16, .n_heads = 32, .n_kv_heads = 8, .ffn = 8192, .vocab = 32000, .ctx = 4096 } },
    /* Qwen 3's published shapes: head size 128 from key_length, theta 1e6, eps 1e-6, tied output */
    { "qwen3-0.6b", { .dim = 1024, .n_layers = 28, .n_heads = 16, .n_kv_heads = 8, .ffn = 3072, .vocab = 151936, .ctx = 40960,
                      .arch = "qwen3", .head_dim = 128, .rope_freq_base = 1000000.0f, .rms_eps = 1e-6f } },
    { "qwen3-1.7b", { .dim = 2048, .n_layers = 28, .n_heads = 16, .n_kv_heads = 8, .ffn = 6144, .vocab = 151936, .ctx = 40960,
                      .arch = "qwen3", .head_dim = 128, .rope_freq_base = 1000000.0f, .rms_eps = 1e-6f } },
    /* Gemma 3 1B's published shape: head size 256, one kv head, window 512 on five layers of six */
    { "gemma3-1b", { .dim = 1152, .n_layers = 26, .n_heads = 4, .n_kv_heads = 1, .ffn = 6912, .vocab = 262144, .ctx = 32768,
                     .arch = "gemma3", .head_dim = 256, .rope_freq_base = 1000000.0f, .rms_eps = 1e-6f, .window = 512,
                     .swa_pattern = 6 } },
    /* Qwen 3.5 0.8B's published shape (Qwen/Qwen3.5-0.8B config.json): head size 256, a quarter of it
     * rotated (IMROPE sections [11, 11, 10]), theta 1e7, eps 1e-6, tied output; linear attention with 16
     * key and 16 value heads of 128, conv kernel 4, every 4th layer full attention; one MTP layer */
    { "qwen35-0.8b", { .dim = 1024, .n_layers = 24, .n_heads = 8, .n_kv_heads = 2, .ffn = 3584, .vocab = 248320, .ctx = 262144,
                       .arch = "qwen35", .head_dim = 256, .rope_freq_base = 10000000.0f, .rms_eps = 1e-6f, .ssm_state = 128,
                       .ssm_v_heads = 16, .ssm_k_heads = 16, .ssm_conv = 4, .full_attn_interval = 4, .n_rot = 64,
                       .rope_sections = { 11, 11, 10, 0 }, .mtp = true } },
    /* Qwen3-30B-A3B's published layer (Qwen/Qwen3-30B-A3B config.json: hidden 2048, 32 heads of 128, 4 kv
     * heads, 128 experts of width 768, 8 used per token, theta 1e6, eps 1e-6, untied output) with 8 of its
     * 48 layers, so that the file (3.45 GB in Q4_K_M, 5.6B parameters) is made and read on a 24 GB machine */
    { "qwen3moe-a3b", { .dim = 2048, .n_layers = 8, .n_heads = 32, .n_kv_heads = 4, .ffn = 6144, .vocab = 151936, .ctx = 40960,
                        .arch = "qwen3moe", .head_dim = 128, .rope_freq_base = 1000000.0f, .rms_eps = 1e-6f, .n_experts = 128,
                        .n_experts_used = 8, .expert_ffn = 768, .output = SPRIG_MKMODEL_OUTPUT_UNTIED } },
};
#define N_PRESETS (int)(sizeof presets / sizeof presets[0])

const char *sprig_mkmodel_preset_names(void)
{
    return "tiny, small, llama-1b, qwen3-0.6b, qwen3-1.7b, gemma3-1b, qwen35-0.8b, qwen3moe-a3b";
}

sprig_status sprig_mkmodel_preset(const char *preset, struct sprig_mkmodel_params *p, sprig_error *err)
{
    for (int i = 0; i < N_PRESETS; i++)
        if (preset && !strcmp(preset, presets[i].name)) {
            *p = presets[i].p;
            p->type = SPRIG_TYPE_F32;
            p->ftype = NULL;
            p->seed = 1;
            if (!p->rope_freq_base) p->rope_freq_base = 10000.0f;
            if (!p->rms_eps) p->rms_eps = 1e-5f;
            p->name = NULL;
            p->chat_template = NULL;
            p->n_threads = 0;
            return SPRIG_OK;
        }
    return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: unknown preset '%s' (known: %s)", preset ? preset : "(null)",
                     sprig_mkmodel_preset_names());
}

/* ---------------------------------------------------------------- architectures */

/* Per-layer vectors an architecture adds to llama's tensors, written after
 * them (so a llama file's bytes do not move): F32, center + N(0, std). */
enum { XD_Q, XD_KV, XD_HEAD, XD_DIM };
struct extra { const char *name; int dim; float center, std; };

static const struct extra qwen2_extra[] = {
    { "blk.%d.attn_q.bias", XD_Q, 0.0f, 0.1f },
    { "blk.%d.attn_k.bias", XD_KV, 0.0f, 0.1f },
    { "blk.%d.attn_v.bias", XD_KV, 0.0f, 0.1f },
};
static const struct extra qwen3_extra[] = {
    { "blk.%d.attn_q_norm.weight", XD_HEAD, 1.0f, 0.2f },
    { "blk.%d.attn_k_norm.weight", XD_HEAD, 1.0f, 0.2f },
};
/* Gemma 3: per-head q/k norms and the post-attention / post-FFN norms (as
 * llama.cpp's converter stores Gemma's norms: the multiplier, 1 + w) */
static const struct extra gemma3_extra[] = {
    { "blk.%d.attn_q_norm.weight", XD_HEAD, 1.0f, 0.2f },
    { "blk.%d.attn_k_norm.weight", XD_HEAD, 1.0f, 0.2f },
    { "blk.%d.post_attention_norm.weight", XD_DIM, 1.0f, 0.2f },
    { "blk.%d.post_ffw_norm.weight", XD_DIM, 1.0f, 0.2f },
};

/* Gemma 2: the post-attention / post-FFN norms, no q/k norms */
static const struct extra gemma2_extra[] = {
    { "blk.%d.post_attention_norm.weight", XD_DIM, 1.0f, 0.2f },
    { "blk.%d.post_ffw_norm.weight", XD_DIM, 1.0f, 0.2f },
};

struct mk_arch {
    const char *name;             /* general.architecture and key prefix */
    bool tied;                    /* default: no output.weight */
    bool key_length;              /* always write attention.key_length / value_length */
    bool rope_llama3;             /* may carry rope_freqs */
    bool swa;                     /* sliding-window layers: attention.sliding_window(_pattern), rope.freq_base_swa */
    const struct extra *extra;
    int n_extra;
    bool per_layer;               /* gemma4: per-layer kinds, head sizes and kv heads; its own tensor list */
    bool assistant;               /* gemma4-assistant: matched to a gemma4 target; its own keys and tensors */
    bool hybrid;                  /* qwen35: linear-attention and full-attention layers, optional MTP layer */
    bool moe;                     /* qwen3moe: routed experts instead of the FFN */
};

static const struct mk_arch mk_arches[] = {
    { "llama", false, false, true, false, NULL, 0, false, false, false, false },
    { "qwen2", false, false, false, false, qwen2_extra, (int)(sizeof qwen2_extra / sizeof qwen2_extra[0]), false, false, false, false },
    { "qwen3", true, true, false, false, qwen3_extra, (int)(sizeof qwen3_extra / sizeof qwen3_extra[0]), false, false, false, false },
    { "qwen3moe", true, true, false, false, qwen3_extra, (int)(sizeof qwen3_extra / sizeof qwen3_extra[0]), false, false, false, true },
    { "gemma2", true, true, false, true, gemma2_extra, (int)(sizeof gemma2_extra / sizeof gemma2_extra[0]), false, false, false, false },
    { "gemma3", true, true, false, true, gemma3_extra, (int)(sizeof gemma3_extra / sizeof gemma3_extra[0]), false, false, false, false },
    { "gemma4", true, true, false, false, NULL, 0, true, false, false, false },
    { "gemma4-assistant", true, true, false, false, NULL, 0, false, true, false, false },
    { "qwen35", true, true, false, false, NULL, 0, false, false, true, false },
    { "qwen35moe", true, true, false, false, NULL, 0, false, false, true, true },
};

const char *sprig_mkmodel_arch_names(void)
{
    return "llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, gemma4, gemma4-assistant, qwen35, qwen35moe";
}

/* qwen3moe: the expert shape with its defaults (mkmodel.h) */
static int moe_e(const struct sprig_mkmodel_params *p) { return p->n_experts ? p->n_experts : 8; }
static int moe_k(const struct sprig_mkmodel_params *p) { return p->n_experts_used ? p->n_experts_used : 2; }
/* the projections llama.cpp reads a per-expert scale for (ffn_<name>_exps.scale) */
static const char *const expert_scale_names[3] = { "gate", "up", "down" };
static int moe_f(const struct sprig_mkmodel_params *p) { return p->expert_ffn ? p->expert_ffn : p->ffn; }
static int moe_s(const struct sprig_mkmodel_params *p) { return p->shared_expert_ffn ? p->shared_expert_ffn : p->ffn; }
/* whether the model has experts: qwen3moe and qwen35moe always, gemma4 when --experts is given */
static bool has_moe(const struct mk_arch *a, const struct sprig_mkmodel_params *p) { return a->moe || (a->per_layer && p->n_experts > 0); }

static const struct mk_arch *mk_arch_find(const char *name)
{
    if (!name) return &mk_arches[0];
    for (size_t i = 0; i < sizeof mk_arches / sizeof mk_arches[0]; i++)
        if (!strcmp(mk_arches[i].name, name)) return &mk_arches[i];
    return NULL;
}

static int head_size(const struct sprig_mkmodel_params *p) { return p->head_dim ? p->head_dim : p->dim / p->n_heads; }

/* gemma4: whether layer l is sliding (swa_layers, else the default pattern, see mkmodel.h) */
static bool g4_sliding(const struct sprig_mkmodel_params *p, int l)
{
    if (p->swa_layers) return p->swa_layers[l] == 's';
    const int period = p->swa_pattern > 0 ? p->swa_pattern : 5, n_kv = p->n_layers - p->shared_kv;
    if (p->shared_kv > 0 && l == n_kv - 2) return true;
    if (l == p->n_layers - 1 || (p->shared_kv > 0 && l == n_kv - 1)) return false;
    return l % period != period - 1;
}

/* gemma4: whether a layer is global (then rope_freqs is written: only global layers read it) */
static bool g4_any_global(const struct sprig_mkmodel_params *p)
{
    for (int l = 0; l < p->n_layers; l++)
        if (!g4_sliding(p, l)) return true;
    return false;
}

/* gemma4: layer l's head size and kv heads */
static int g4_head(const struct sprig_mkmodel_params *p, int l)
{
    return g4_sliding(p, l) && p->head_dim_swa ? p->head_dim_swa : head_size(p);
}

static int g4_kv_heads(const struct sprig_mkmodel_params *p, int l)
{
    return g4_sliding(p, l) || !p->n_kv_heads_global ? p->n_kv_heads : p->n_kv_heads_global;
}

static int g4_window(const struct sprig_mkmodel_params *p)
{
    return p->window > 0 ? p->window : p->ctx < 512 ? p->ctx : 512;
}

/* gemma4: whether layer l writes attn_v (a KV layer, unless a global one under no_global_v) */
static bool g4_has_v(const struct sprig_mkmodel_params *p, int l)
{
    return l < p->n_layers - p->shared_kv && !(p->no_global_v && !g4_sliding(p, l));
}

/* gemma4-assistant: whether its layer l is sliding (swa_layers, else all but the last, which mirrors the
 * target's last layer; one layer: sliding), its head size and kv heads (the target's, for the layer kind),
 * whether a layer is global */
static bool as_sliding(const struct sprig_mkmodel_params *p, int l)
{
    if (p->swa_layers) return p->swa_layers[l] == 's';
    return l < p->n_layers - 1 || p->n_layers == 1 || p->tgt.swa_n1;
}

static int as_head(const struct sprig_mkmodel_params *p, int l) { return as_sliding(p, l) ? p->head_dim_swa : p->head_dim; }

static int as_kv_heads(const struct sprig_mkmodel_params *p, int l)
{
    return as_sliding(p, l) ? p->n_kv_heads : p->n_kv_heads_global;
}

static bool as_any_global(const struct sprig_mkmodel_params *p)
{
    for (int l = 0; l < p->n_layers; l++)
        if (!as_sliding(p, l)) return true;
    return false;
}

/* qwen35: the effective shape (mkmodel.h's defaults for the zero fields) */
static int q35_state(const struct sprig_mkmodel_params *p) { return p->ssm_state ? p->ssm_state : 32; }
static int q35_v_heads(const struct sprig_mkmodel_params *p) { return p->ssm_v_heads ? p->ssm_v_heads : p->n_heads; }
static int q35_k_heads(const struct sprig_mkmodel_params *p) { return p->ssm_k_heads ? p->ssm_k_heads : q35_v_heads(p); }
static int q35_conv(const struct sprig_mkmodel_params *p) { return p->ssm_conv ? p->ssm_conv : 4; }
static int q35_mtp(const struct sprig_mkmodel_params *p) { return p->mtp ? 1 : 0; }

static int q35_interval(const struct sprig_mkmodel_params *p)
{
    return p->full_attn_interval ? p->full_attn_interval : p->n_layers < 4 ? p->n_layers : 4;
}

/* whether layer l is a linear-attention (recurrent) layer, as llama.cpp's qwen35 load_arch_hparams marks
 * it: the MTP layer never; recurrent_layers, else every interval-th layer full attention */
static bool q35_recurrent(const struct sprig_mkmodel_params *p, int l)
{
    if (l >= p->n_layers) return false;
    if (p->recurrent_layers) return p->recurrent_layers[l] == 'r';
    return (l + 1) % q35_interval(p) != 0;
}

static int q35_rot(const struct sprig_mkmodel_params *p)
{
    if (p->n_rot) return p->n_rot;
    const int r = head_size(p) / 4 / 2 * 2;
    return r < 2 ? 2 : r;
}

/* rope.dimension_sections: given, else IMROPE's interleaving of the P = rot / 2 pairs over t, h, w as HF's
 * [11, 11, 10] for P = 32: sector j goes to t, h, w by j % 3 */
static void q35_sections(const struct sprig_mkmodel_params *p, int32_t s[4])
{
    if (p->rope_sections[0] || p->rope_sections[1] || p->rope_sections[2] || p->rope_sections[3]) {
        for (int i = 0; i < 4; i++) s[i] = p->rope_sections[i];
        return;
    }
    const int P = q35_rot(p) / 2;
    s[0] = (P + 2) / 3;
    s[1] = (P + 1) / 3;
    s[2] = P / 3;
    s[3] = 0;
}

static bool has_output(const struct sprig_mkmodel_params *p, const struct mk_arch *a)
{
    return p->output == SPRIG_MKMODEL_OUTPUT_DEFAULT ? !a->tied : p->output == SPRIG_MKMODEL_OUTPUT_UNTIED;
}

/* ggml's llama_ftype for general.file_type, by weight type */
static const struct { int type; uint32_t ftype; } ftypes[] = {
    { SPRIG_TYPE_F32, 0 }, { SPRIG_TYPE_F16, 1 }, { SPRIG_TYPE_Q4_0, 2 }, { SPRIG_TYPE_Q8_0, 7 }, { SPRIG_TYPE_BF16, 32 },
    { SPRIG_TYPE_Q4_1, 3 }, { SPRIG_TYPE_Q5_0, 8 }, { SPRIG_TYPE_Q5_1, 9 }, { SPRIG_TYPE_Q2_K, 10 },
    { SPRIG_TYPE_Q3_K, 12 }, { SPRIG_TYPE_Q4_K, 15 }, { SPRIG_TYPE_Q5_K, 17 }, { SPRIG_TYPE_Q6_K, 18 },
};

bool sprig_mkmodel_file_type(int type, uint32_t *ft)
{
    for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
        if (ftypes[i].type == type) {
            *ft = ftypes[i].ftype;
            return true;
        }
    return false;
}

/* gemma4's parameters: refused on other arches; shapes llama.cpp's gemma4 loader and cache accept */
static sprig_status validate_gemma4(const struct sprig_mkmodel_params *p, const struct mk_arch *a, int64_t blk,
                                    const char *tname, sprig_error *err)
{
    if (p->attn_softcap && strcmp(a->name, "gemma2"))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: attn-softcap is for the gemma2 arch, not %s", a->name);
    if (!a->per_layer) {
        const char *f = p->swa_layers ? "swa-layers" : p->head_dim_swa ? "head-dim-swa" : p->n_kv_heads_global ? "kv-heads-global"
                      : p->shared_kv ? "shared-kv" : p->per_layer_embd ? "per-layer-embd" : p->no_global_v ? "no-global-v" : NULL;
        if (f) return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s is for the gemma4 arch, not %s", f, a->name);
        return SPRIG_OK;
    }
    const int L = p->n_layers;
    if (p->head_dim_swa && (p->head_dim_swa < 2 || p->head_dim_swa > 4096 || p->head_dim_swa % 2))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: head-dim-swa %d must be even and in [2, 4096]", p->head_dim_swa);
    if (p->n_kv_heads_global && (p->n_kv_heads_global < 1 || p->n_kv_heads_global > p->n_heads || p->n_heads % p->n_kv_heads_global))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: heads %d is not a multiple of kv-heads-global %d", p->n_heads,
                         p->n_kv_heads_global);
    if (L < 2)   /* llama.cpp's gemma4 cache asserts n_layer_kv_from_start >= 2 */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4 needs layers >= 2 (llama.cpp's cache needs two KV layers), not %d", L);
    if (p->shared_kv < 0 || p->shared_kv > L - 2)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: shared-kv %d must be in [0, layers - 2 = %d] (llama.cpp's cache needs "
                         "two KV layers)", p->shared_kv, L - 2);
    if (p->per_layer_embd < 0 || p->per_layer_embd > 1 << 16)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: per-layer-embd %d is out of range [0, 65536]", p->per_layer_embd);
    if (p->per_layer_embd % blk)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs per-layer-embd (%d) to be a multiple of %" PRId64, tname,
                         p->per_layer_embd, blk);
    if (p->window < 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: window %d is negative", p->window);
    if (!(p->final_softcap >= 0) || !isfinite(p->final_softcap))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: softcap %g is not a positive number", (double)p->final_softcap);
    if (p->swa_layers) {
        const size_t n = strlen(p->swa_layers);
        if (strspn(p->swa_layers, "sg") != n)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: swa-layers '%s' may hold only s (sliding) and g (global)",
                             p->swa_layers);
        if (n != (size_t)L)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: swa-layers '%s' has %zu letters for %d layers", p->swa_layers, n, L);
    }
    int n_swa = 0;
    for (int l = 0; l < L; l++) n_swa += g4_sliding(p, l);
    if (!n_swa)   /* llama.cpp's iswa cache asserts a sliding layer */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4 needs a sliding layer (llama.cpp asserts one); %s%s%s has none",
                         p->swa_layers ? "swa-layers '" : "the default pattern (swa-pattern) for these layers",
                         p->swa_layers ? p->swa_layers : "", p->swa_layers ? "'" : "");
    /* a shared layer reads the cache of layer n - 2 (sliding) or n - 1 (global), n = the KV layers */
    const int n_kv = L - p->shared_kv;
    for (int l = n_kv; l < L; l++) {
        const bool swa = g4_sliding(p, l);
        const int src = n_kv - (swa ? 2 : 1);
        if (g4_sliding(p, src) != swa)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: shared-kv %d: layer %d (%s) would reuse the cache of layer %d, "
                             "which is %s (llama.cpp: shared sliding layers read layer %d, shared global ones layer %d)",
                             p->shared_kv, l, swa ? "sliding" : "global", src, swa ? "global" : "sliding", n_kv - 2, n_kv - 1);
    }
    const int hd_swa = p->head_dim_swa ? p->head_dim_swa : head_size(p);
    if (((int64_t)p->n_heads * hd_swa) % blk)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs heads x head-dim-swa (%d x %d) to be a multiple of %" PRId64,
                         tname, p->n_heads, hd_swa, blk);
    return SPRIG_OK;
}

/* qwen35's parameters: refused on other arches; shapes llama.cpp's qwen35 loader and its graphs accept */
static sprig_status validate_qwen35(const struct sprig_mkmodel_params *p, const struct mk_arch *a, int64_t blk,
                                    const char *tname, sprig_error *err)
{
    if (!a->hybrid) {
        const bool sec = p->rope_sections[0] || p->rope_sections[1] || p->rope_sections[2] || p->rope_sections[3];
        const char *f = p->ssm_state ? "ssm-state" : p->ssm_v_heads ? "ssm-v-heads" : p->ssm_k_heads ? "ssm-k-heads"
                      : p->ssm_conv ? "ssm-conv" : p->full_attn_interval ? "full-attn-interval"
                      : p->recurrent_layers ? "recurrent-layers" : p->n_rot ? "rot" : sec ? "rope-sections"
                      : p->mtp ? "mtp" : p->mtp_head ? "mtp-head" : NULL;
        if (f) return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s is for the qwen35 arch, not %s", f, a->name);
        return SPRIG_OK;
    }
    const int L = p->n_layers, S = q35_state(p), Hv = q35_v_heads(p), Hk = q35_k_heads(p), K = q35_conv(p), hd = head_size(p);
    struct { const char *name; int v, lo, hi; } r[] = {
        { "ssm-state", S, 1, 4096 }, { "ssm-v-heads", Hv, 1, 4096 }, { "ssm-k-heads", Hk, 1, 4096 },
        { "ssm-conv", K, 2, 64 }, { "full-attn-interval", q35_interval(p), 1, SPRIG_MKMODEL_MAX_LAYERS },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (r[i].v < r[i].lo || r[i].v > r[i].hi)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s = %d is out of range [%d, %d]", r[i].name, r[i].v, r[i].lo, r[i].hi);
    if (Hk > Hv || Hv % Hk)   /* llama.cpp: GGML_ASSERT(num_v_heads % num_k_heads == 0) */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: ssm-v-heads %d is not a multiple of ssm-k-heads %d (value head h reads "
                         "key head h %% ssm-k-heads)", Hv, Hk);
    if (L + q35_mtp(p) > SPRIG_MKMODEL_MAX_LAYERS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: layers %d plus the MTP layer exceed %d", L, SPRIG_MKMODEL_MAX_LAYERS);
    if (p->recurrent_layers) {
        const size_t n = strlen(p->recurrent_layers);
        if (p->full_attn_interval)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: recurrent-layers and full-attn-interval both say which layers are "
                             "full attention; give one");
        if (strspn(p->recurrent_layers, "ra") != n)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: recurrent-layers '%s' may hold only r (linear attention) and a "
                             "(full attention)", p->recurrent_layers);
        if (n != (size_t)L)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: recurrent-layers '%s' has %zu letters for %d layers",
                             p->recurrent_layers, n, L);
    }
    int n_recr = 0;
    for (int l = 0; l < L; l++) n_recr += q35_recurrent(p, l);
    if (n_recr == 0 || n_recr == L) {   /* llama.cpp's hybrid memory asserts a buffer for its KV and its recurrent caches */
        char why[600];
        if (p->recurrent_layers) snprintf(why, sizeof why, "recurrent-layers '%s'", p->recurrent_layers);
        else snprintf(why, sizeof why, "%sfull-attn-interval %d", p->full_attn_interval ? "" : "the default (4, or layers when fewer) ",
                      q35_interval(p));
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: qwen35 needs a linear-attention and a full-attention layer (llama.cpp "
                         "aborts without either); %s makes all %d layer(s) %s", why, L, n_recr ? "linear" : "full attention");
    }
    const int rot = q35_rot(p);
    if (rot < 2 || rot > hd || rot % 2)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rot %d must be even and in [2, head size %d]", rot, hd);
    int32_t sec[4];
    q35_sections(p, sec);
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        if (sec[i] < 0)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rope-sections %d,%d,%d,%d: a section is negative", sec[0], sec[1],
                             sec[2], sec[3]);
        sum += sec[i];
    }
    if (sec[0] + sec[1] + sec[2] <= 0 || sum > hd)   /* ggml's rope asserts both */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rope-sections %d,%d,%d,%d: the first three must not all be 0 and the "
                         "four may add up to the head size %d at most", sec[0], sec[1], sec[2], sec[3], hd);
    if (p->mtp_head && !p->mtp)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: mtp-head needs mtp (it is the MTP layer's own embedding and output)");
    if (((int64_t)S * Hv) % blk)   /* ssm_out's rows */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs ssm-state x ssm-v-heads (%d x %d) to be a multiple of %" PRId64,
                         tname, S, Hv, blk);
    return SPRIG_OK;
}

/* gemma4-assistant's shape against its target's facts (p->tgt, from sprig_mkmodel_target): what llama.cpp's
 * loader, its KV sharing and its draft-mtp speculator need */
static sprig_status validate_assistant(const struct sprig_mkmodel_params *p, sprig_error *err)
{
    const char *f = p->shared_kv ? "shared-kv" : p->per_layer_embd ? "per-layer-embd" : p->no_global_v ? "no-global-v"
                  : p->final_softcap ? "softcap" : p->swa_pattern ? "swa-pattern" : p->vocab_from ? "vocab-from"
                  : p->output == SPRIG_MKMODEL_OUTPUT_UNTIED ? "untied" : NULL;
    if (f)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s is not for gemma4-assistant (its vocabulary, head sizes, kv heads, "
                         "window and RoPE are the target's; its output is its token_embd)", f);
    const int L = p->n_layers, TL = p->tgt.n_layers;
    if (p->swa_layers) {
        const size_t n = strlen(p->swa_layers);
        if (strspn(p->swa_layers, "sg") != n)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: swa-layers '%s' may hold only s (sliding) and g (global)",
                             p->swa_layers);
        if (n != (size_t)L)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: swa-layers '%s' has %zu letters for %d layers", p->swa_layers, n, L);
    }
    int n_swa = 0;
    for (int l = 0; l < L; l++) n_swa += as_sliding(p, l);
    if (!n_swa)   /* llama.cpp's iswa cache asserts a sliding layer */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4-assistant needs a sliding layer (llama.cpp asserts one); "
                         "swa-layers '%s' has none", p->swa_layers ? p->swa_layers : "");
    if (TL < 2)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: the target has %d layer(s); the assistant reads its layers n_layer - 2 "
                         "and n_layer - 1", TL);
    if (!p->tgt.swa_n2)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: the target's layer %d (n_layer - 2) is global, but llama.cpp's "
                         "gemma4-assistant reads it from its sliding layers (and needs one): the target does not fit", TL - 2);
    if (n_swa < L && p->tgt.swa_n1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: the target's layer %d (n_layer - 1) is sliding, but llama.cpp's "
                         "gemma4-assistant reads it from its global layers: swa-layers without g for this target", TL - 1);
    if (p->dim == p->tgt.dim)   /* llama.cpp: "requires embedding_length_out to carry the target hidden size" */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: dim %d equals the target's embedding_length; llama.cpp refuses a "
                         "gemma4-assistant whose embedding_length equals its embedding_length_out", p->dim);
    for (int g = 0; g < 2; g++) {
        const int kv = g ? p->n_kv_heads_global : p->n_kv_heads;
        if ((g ? n_swa < L : true) && (kv < 1 || p->n_heads % kv))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: heads %d is not a multiple of the target's %d kv heads (its layer "
                             "%d, whose cache the assistant's %s layers read)", p->n_heads, kv, TL - (g ? 1 : 2),
                             g ? "global" : "sliding");
    }
    return SPRIG_OK;
}

sprig_status sprig_mkmodel_validate(const struct sprig_mkmodel_params *p, sprig_error *err)
{
    const struct mk_arch *aa = mk_arch_find(p->arch);
    if (aa && aa->assistant && !p->target)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4-assistant needs a target (the gemma4 model it drafts for)");
    if (aa && aa->assistant && !p->tgt.dim)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4-assistant: the target %s is not read yet (sprig_mkmodel_target)",
                         p->target);
    struct { const char *name; int v, lo, hi; } r[] = {
        { "dim", p->dim, 2, 1 << 16 },
        { "layers", p->n_layers, 1, SPRIG_MKMODEL_MAX_LAYERS },
        { "heads", p->n_heads, 1, 1 << 12 },
        { "kv-heads", p->n_kv_heads, 1, 1 << 12 },
        { "ffn", p->ffn, 1, 1 << 20 },
        { "vocab", p->vocab, 260, SPRIG_MKMODEL_MAX_VOCAB },
        { "ctx", p->ctx, 1, 1 << 24 },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (r[i].v < r[i].lo || r[i].v > r[i].hi)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s = %d is out of range [%d, %d]", r[i].name, r[i].v, r[i].lo, r[i].hi);
    const struct mk_arch *a = mk_arch_find(p->arch);
    if (!a)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: arch '%s' is not one of %s", p->arch, sprig_mkmodel_arch_names());
    if (a->assistant) {
        sprig_status st = validate_assistant(p, err);
        if (st != SPRIG_OK) return st;
    }
    if (!a->hybrid && (p->ssm_state || p->ssm_v_heads || p->ssm_k_heads || p->ssm_conv || p->full_attn_interval ||
                       p->recurrent_layers || p->n_rot || p->mtp || p->mtp_head || p->rope_sections[0] || p->rope_sections[1] ||
                       p->rope_sections[2] || p->rope_sections[3]))
        return validate_qwen35(p, a, 1, "", err);   /* names the flag */
    if (!a->moe && !a->per_layer && (p->n_experts || p->n_experts_used || p->expert_ffn || p->shared_expert_ffn))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: --experts, --experts-used, --expert-ffn and --shared-expert-ffn are for "
                         "--arch qwen3moe or qwen35moe, not %s", a->name);
    if (a->per_layer && !p->n_experts && (p->n_experts_used || p->expert_ffn))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4: --experts-used and --expert-ffn need --experts");
    if (a->per_layer && p->shared_expert_ffn)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: --shared-expert-ffn is for --arch qwen35moe (gemma4's dense MLP runs "
                         "beside its experts)");
    if (p->expert_scales && !a->moe)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: --expert-scales is for --arch qwen3moe or qwen35moe, not %s%s",
                         a->name, a->per_layer ? " (gemma4 with --experts writes ffn_down_exps.scale always)" : "");
    if (a->moe && !a->hybrid && p->shared_expert_ffn)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: --shared-expert-ffn is for --arch qwen35moe (qwen3moe has no shared expert)");
    if (p->shared_expert_ffn < 0 || p->shared_expert_ffn > (1 << 20))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: shared-expert-ffn %d is out of range [1, %d]", p->shared_expert_ffn, 1 << 20);
    if (has_moe(a, p)) {
        if (p->n_experts < 0 || p->n_experts > 512)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: experts %d is out of range [1, 512]", p->n_experts);
        if (p->n_experts_used < 0 || moe_k(p) > moe_e(p))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: experts-used %d is out of range [1, experts = %d]", moe_k(p), moe_e(p));
        if (p->expert_ffn < 0 || p->expert_ffn > (1 << 20))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: expert-ffn %d is out of range [1, %d]", p->expert_ffn, 1 << 20);
    }
    if (p->head_dim && (p->head_dim < 2 || p->head_dim > 4096 || p->head_dim % 2))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: head-dim %d must be even and in [2, 4096]", p->head_dim);
    if (!p->head_dim && p->dim % p->n_heads)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: dim %d is not divisible by heads %d", p->dim, p->n_heads);
    if (!p->head_dim && (p->dim / p->n_heads) % 2)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: head size %d (dim / heads) is odd; RoPE needs pairs", p->dim / p->n_heads);
    if (p->rope_scaling != SPRIG_MKMODEL_ROPE_NONE && (p->rope_scaling != SPRIG_MKMODEL_ROPE_LLAMA3 || !a->rope_llama3))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rope scaling llama3 is for the llama arch, not %s", a->name);
    if (!(p->std >= 0 && p->std <= 10))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: std %g is out of range [0, 10]", (double)p->std);
    if (p->output < SPRIG_MKMODEL_OUTPUT_DEFAULT || p->output > SPRIG_MKMODEL_OUTPUT_TIED)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: output %d is not default, untied or tied", p->output);
    if (p->n_kv_heads > p->n_heads || p->n_heads % p->n_kv_heads)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: heads %d is not a multiple of kv-heads %d", p->n_heads, p->n_kv_heads);
    const struct sprig_type_traits *t = sprig_type_traits(p->type);
    uint32_t ft;
    if (!t || !sprig_type_quantizable(p->type) || !sprig_mkmodel_file_type(p->type, &ft))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: weight type %s is not one of %s",
                         sprig_type_name(p->type), sprig_ftype_names());
    if (p->ftype && p->ftype->type != p->type)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: file type %s is not made of %s", p->ftype->name, t->name);
    /* block types: rows of 32; a K-quant falls back per tensor where 256 does not divide (quant_mix.h) */
    int64_t blk = t->blck < SPRIG_QK ? t->blck : SPRIG_QK;
    if (p->dim % blk || p->ffn % blk)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs dim (%d) and ffn (%d) to be multiples of %" PRId64,
                         t->name, p->dim, p->ffn, blk);
    if (!(p->rope_freq_base > 0) || !isfinite(p->rope_freq_base))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rope freq base %g is not a positive number", (double)p->rope_freq_base);
    if (!(p->rms_eps > 0) || !isfinite(p->rms_eps))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: rms epsilon %g is not a positive number", (double)p->rms_eps);
    if (((int64_t)p->n_heads * head_size(p)) % blk)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs heads x head-dim (%d x %d) to be a multiple of %" PRId64,
                         t->name, p->n_heads, head_size(p), blk);
    if (a->assistant) {   /* attn_output of sliding layers; nextn.pre_projection's rows of 2 x the target's dim */
        if (((int64_t)p->n_heads * p->head_dim_swa) % blk)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs heads x the target's sliding head size (%d x %d) to be a "
                             "multiple of %" PRId64, t->name, p->n_heads, p->head_dim_swa, blk);
        if ((2 * (int64_t)p->tgt.dim) % blk)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: %s needs 2 x the target's dim (2 x %d) to be a multiple of %" PRId64,
                             t->name, p->tgt.dim, blk);
        return SPRIG_OK;
    }
    sprig_status st = validate_qwen35(p, a, blk, t->name, err);
    if (st != SPRIG_OK) return st;
    return validate_gemma4(p, a, blk, t->name, err);
}

int64_t sprig_mkmodel_n_params(const struct sprig_mkmodel_params *p)
{
    const struct mk_arch *a = mk_arch_find(p->arch);
    int64_t D = p->dim, F = p->ffn, V = p->vocab, H = head_size(p), Q = (int64_t)p->n_heads * H, KV = H * p->n_kv_heads;
    if (a && a->assistant) {   /* the tensors sprig_mkmodel_write writes for it */
        const int64_t T = p->tgt.dim;
        int64_t n = V * D + D + 2 * T * D + D * T + (as_any_global(p) ? H / 2 : 0) + (p->masked_embd ? 2 : 0);
        for (int l = 0; l < p->n_layers; l++) {
            const int64_t hd = as_head(p, l), q = hd * p->n_heads;
            n += 4 * D + 2 * D * q + hd + 3 * D * F + 1;   /* norms, q, o, q norm, ffn, scale */
        }
        return n;
    }
    if (a && a->per_layer) {   /* gemma4: the tensors sprig_mkmodel_write writes for it */
        const int64_t P = p->per_layer_embd, L = p->n_layers;
        int64_t n = (has_output(p, a) ? 2 : 1) * V * D + D + (g4_any_global(p) ? H / 2 : 0) + (P ? P * L * V + D * P * L + P : 0);
        for (int l = 0; l < L; l++) {
            const int64_t hd = g4_head(p, l), kv = hd * g4_kv_heads(p, l), q = hd * p->n_heads;
            n += 4 * D + 2 * D * q + hd + 3 * D * F + 1 + (P ? 2 * D * P + D : 0);   /* norms, q, o, q norm, ffn, scale */
            if (has_moe(a, p))   /* router and its scale, three norms, the experts and their scales */
                n += D * moe_e(p) + D + 3 * D + 3 * D * (int64_t)moe_f(p) * moe_e(p) + moe_e(p);
            if (l < L - p->shared_kv) n += D * kv + hd;                                  /* attn_k, attn_k_norm */
            if (g4_has_v(p, l)) n += D * kv;
        }
        return n;
    }
    if (a && a->hybrid) {   /* qwen35: the tensors sprig_mkmodel_write writes for it */
        const int64_t S = q35_state(p), Hv = q35_v_heads(p), Hk = q35_k_heads(p), K = q35_conv(p), VD = S * Hv, C = 2 * S * Hk + VD;
        const int64_t attn = D * 2 * Q + 2 * D * KV + Q * D + 2 * H;   /* attn_q (query + gate), k, v, output, q/k norms */
        int64_t n = (has_output(p, a) ? 2 : 1) * V * D + D;
        for (int l = 0; l < p->n_layers + q35_mtp(p); l++) {
            n += 2 * D + (a->moe ? D * moe_e(p) + 3 * D * (int64_t)moe_f(p) * moe_e(p) + D + 3 * D * (int64_t)moe_s(p)
                                   + (p->expert_scales ? 3 * moe_e(p) : 0)
                                 : 3 * D * F);   /* attn_norm, post_attention_norm, ffn (or router, experts, shared expert) */
            n += q35_recurrent(p, l) ? D * C + D * VD + K * C + 2 * Hv + 2 * D * Hv + S + VD * D : attn;
        }
        if (p->mtp) n += 2 * D * D + 3 * D + (p->mtp_head ? 2 * V * D : 0);   /* eh_proj, enorm, hnorm, shared_head_norm */
        return n;
    }
    int64_t layer = 2 * D + 2 * D * Q + 2 * D * KV +
                    (a && a->moe ? D * moe_e(p) + 3 * D * (int64_t)moe_f(p) * moe_e(p) + (p->expert_scales ? 3 * moe_e(p) : 0)
                                 : 3 * D * F);   /* router + experts (+ their scales) */
    for (int i = 0; a && i < a->n_extra; i++)
        layer += a->extra[i].dim == XD_Q ? Q : a->extra[i].dim == XD_KV ? KV : a->extra[i].dim == XD_DIM ? D : H;
    return (a && has_output(p, a) ? 2 : 1) * V * D + D + (int64_t)p->n_layers * layer +
           (p->rope_scaling == SPRIG_MKMODEL_ROPE_LLAMA3 ? H / 2 : 0);
}

/* ---------------------------------------------------------------- vocabulary */

#define N_BYTE_TOKENS 256
#define FIRST_PIECE (3 + N_BYTE_TOKENS)
#define N_SINGLES 94   /* printable ASCII '!'..'~' */

static void letters(int64_t j, int n, char *out)
{
    for (int k = n - 1; k >= 0; k--) {
        out[k] = (char)('a' + j % 26);
        j /= 26;
    }
}

size_t sprig_mkmodel_piece(int id, char *buf)
{
    static const char *const special[3] = { "<unk>", "<s>", "</s>" };
    if (id < 0) { buf[0] = 0; return 0; }
    if (id < 3) return (size_t)snprintf(buf, 64, "%s", special[id]);
    if (id < FIRST_PIECE) return (size_t)snprintf(buf, 64, "<0x%02X>", id - 3);
    int64_t r = id - FIRST_PIECE;
    if (r == 0) return (size_t)snprintf(buf, 64, "\xe2\x96\x81");
    r -= 1;
    if (r < N_SINGLES) return (size_t)snprintf(buf, 64, "%c", (char)('!' + r));
    r -= N_SINGLES;
    /* blocks: "▁" + n letters, then n + 1 letters, for n = 1, 2, ... */
    int64_t a = 26;
    for (int n = 1; n < 12; n++, a *= 26) {
        if (r < a) {
            memcpy(buf, "\xe2\x96\x81", 3);
            letters(r, n, buf + 3);
            buf[3 + n] = 0;
            return (size_t)(3 + n);
        }
        r -= a;
        if (r < a * 26) {
            letters(r, n + 1, buf);
            buf[n + 1] = 0;
            return (size_t)(n + 1);
        }
        r -= a * 26;
    }
    buf[0] = 0;   /* unreachable for vocab <= SPRIG_MKMODEL_MAX_VOCAB */
    return 0;
}

/* tokens / scores / token_type arrays */
static sprig_status write_vocab(sprig_gguf_writer *w, int n, sprig_error *err)
{
    char *text = malloc((size_t)n * 16);
    const char **pieces = malloc((size_t)n * sizeof *pieces);
    size_t *lens = malloc((size_t)n * sizeof *lens);
    float *scores = malloc((size_t)n * sizeof *scores);
    int32_t *types = malloc((size_t)n * sizeof *types);
    sprig_status st = SPRIG_OK;
    if (!text || !pieces || !lens || !scores || !types) {
        st = sprig_err(err, SPRIG_E_NOMEM, "mkmodel: out of memory for a %d-token vocabulary", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        char b[64];
        lens[i] = sprig_mkmodel_piece(i, b);
        SPRIG_ASSERT(lens[i] > 0 && lens[i] < 16);
        memcpy(text + (size_t)i * 16, b, lens[i]);
        pieces[i] = text + (size_t)i * 16;
        /* 2 UNKNOWN, 3 CONTROL, 6 BYTE, 1 NORMAL; pieces score by rank */
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < FIRST_PIECE ? 6 : 1;
        scores[i] = i < FIRST_PIECE ? 0.0f : -(float)(i - FIRST_PIECE);
    }
    if ((st = sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", pieces, lens, (uint64_t)n, err)) != SPRIG_OK) goto done;
    if ((st = sprig_gguf_w_arr(w, "tokenizer.ggml.scores", SPRIG_GGUF_F32, scores, (uint64_t)n, err)) != SPRIG_OK) goto done;
    st = sprig_gguf_w_arr(w, "tokenizer.ggml.token_type", SPRIG_GGUF_I32, types, (uint64_t)n, err);
done:
    free(text);
    free(pieces);
    free(lens);
    free(scores);
    free(types);
    return st;
}

/* ---------------------------------------------------------------- weights */

struct gen {
    uint64_t seed;
    sprig_pool *pool;
    int nth;
    float *scratch;        /* [nth][max_ne0] */
    int64_t max_ne0;
};

struct tdesc {
    struct gen *g;
    uint64_t index;        /* tensor number: part of every row's seed */
    int type;
    int64_t ne0, rows;
    float std;             /* 0: a norm (all ones) */
    float center;          /* added to every value (norms around 1) */
    bool negexp;           /* store -exp(value) (qwen35's ssm_a = -exp(A_log)) */
    size_t row_bytes;
};

struct job { const struct tdesc *t; uint8_t *dst; };

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Rows [lo, hi) of one tensor: per-row stream, four 16-bit uniforms summed
 * (Irwin-Hall, close to normal), scaled to t->std, quantized by the reference. */
static void gen_rows(void *ctx, int ith, int nth)
{
    const struct job *j = ctx;
    const struct tdesc *t = j->t;
    long lo, hi;
    sprig_split((long)t->rows, ith, nth, &lo, &hi);
    float *x = t->g->scratch + (size_t)ith * (size_t)t->g->max_ne0;   /* [ne0] */
    const float mean = 4 * 32767.5f;
    const float k = t->std / (65536.0f * 0.57735027f);   /* std of the sum: 65536 * sqrt(4/12) */
    sprig_from_f32_fn from = sprig_type_traits(t->type)->from_f32;
    for (long r = lo; r < hi; r++) {
        sprig_rng rng;
        sprig_rng_seed(&rng, mix64(mix64(t->g->seed + 0x9E3779B97F4A7C15ull * (t->index + 1)) + (uint64_t)r));
        for (int64_t i = 0; i < t->ne0; i++) {
            uint64_t u = sprig_rng_u64(&rng);
            float s = (float)(uint32_t)((u & 0xffff) + ((u >> 16) & 0xffff) + ((u >> 32) & 0xffff) + (u >> 48));
            x[i] = (s - mean) * k;
            if (t->center != 0) x[i] += t->center;
            if (t->negexp) x[i] = -expf(x[i]);
        }
        from(x, j->dst + (size_t)r * t->row_bytes, t->ne0);
    }
}

static sprig_status fill_tensor(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    const struct tdesc *t = user;
    SPRIG_ASSERT(nbytes == t->row_bytes * (size_t)t->rows);
    if (t->std == 0) {
        float *f = dst;
        for (size_t i = 0; i < nbytes / 4; i++) f[i] = 1.0f;
        return SPRIG_OK;
    }
    struct job j = { t, dst };
    sprig_pool_run(t->g->pool, gen_rows, &j, t->g->nth);
    return SPRIG_OK;
}

/* Llama 3 frequency divisors as the converter computes them (rope_type
 * "llama3"): factor 8, low/high frequency factors 1 and 4, original context
 * 8192; wavelengths above 8192 are divided by 8, below 2048 kept, smoothed
 * between. */
struct ropef { float base; int hd; };

static sprig_status fill_rope_freqs(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    const struct ropef *r = user;
    const double factor = 8.0, lo_ff = 1.0, hi_ff = 4.0, old_ctx = 8192.0;
    const double lo_wl = old_ctx / lo_ff, hi_wl = old_ctx / hi_ff;
    float *f = dst;
    SPRIG_ASSERT(nbytes == (size_t)(r->hd / 2) * sizeof(float));
    for (int i = 0; i < r->hd / 2; i++) {
        const float freq = 1.0f / powf(r->base, (float)(2 * i) / (float)r->hd);   /* float32, as torch */
        const double wl = 2 * 3.141592653589793 / (double)freq;
        if (wl < hi_wl) f[i] = 1.0f;
        else if (wl > lo_wl) f[i] = (float)factor;
        else {
            const double smooth = (old_ctx / wl - lo_ff) / (hi_ff - lo_ff);
            f[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
    (void)err;
    return SPRIG_OK;
}

/* Gemma 4's proportional RoPE on global layers, as llama.cpp's converter
 * writes it (partial_rotary_factor 0.25): the first quarter of the head's
 * dimensions rotate (factor 1), the other pairs get factor 1e30, a
 * frequency of ~0, i.e. unrotated. */
static sprig_status fill_rope_freqs_gemma4(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    const struct ropef *r = user;
    float *f = dst;
    SPRIG_ASSERT(nbytes == (size_t)(r->hd / 2) * sizeof(float));
    for (int i = 0; i < r->hd / 2; i++) f[i] = i < r->hd / 8 ? 1.0f : 1e30f;
    (void)err;
    return SPRIG_OK;
}

/* "<arch>.<suffix>" keys */
static sprig_status w_arch_u32(sprig_gguf_writer *w, const char *arch, const char *sfx, uint32_t v, sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, sfx);
    return sprig_gguf_w_u32(w, key, v, err);
}

static sprig_status w_arch_f32(sprig_gguf_writer *w, const char *arch, const char *sfx, float v, sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, sfx);
    return sprig_gguf_w_f32(w, key, v, err);
}

static sprig_status w_arch_arr(sprig_gguf_writer *w, const char *arch, const char *sfx, int et, const void *v, int n,
                               sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, sfx);
    return sprig_gguf_w_arr(w, key, et, v, (uint64_t)n, err);
}

/* tokenizer.ggml.tokens of a GGUF: its count (1..SPRIG_MKMODEL_MAX_VOCAB) */
static sprig_status vocab_count(const sprig_gguf *g, int *n, sprig_error *err)
{
    int et = 0;
    uint64_t cnt = 0;
    sprig_status st = sprig_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &cnt, true, err);
    if (st != SPRIG_OK) return st;
    if (et != SPRIG_GGUF_STR || cnt < 1 || cnt > SPRIG_MKMODEL_MAX_VOCAB)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: tokenizer.ggml.tokens must be 1..%d strings", sprig_gguf_path(g),
                         SPRIG_MKMODEL_MAX_VOCAB);
    *n = (int)cnt;
    return SPRIG_OK;
}

sprig_status sprig_mkmodel_vocab_from(const char *path, int *n_vocab, sprig_error *err)
{
    sprig_gguf *g = sprig_gguf_open(path, err);
    if (!g) return err ? err->code : SPRIG_E_FORMAT;
    sprig_status st = vocab_count(g, n_vocab, err);
    sprig_gguf_close(g);
    return st;
}

/* gemma4-assistant's target: key "gemma4.<sfx>", entry l of a scalar or a per-layer array of n integers,
 * in [lo, hi]; absent: *out is kept unless required */
static sprig_status tgt_int(const sprig_gguf *g, const char *sfx, int l, int n, bool required, int64_t lo, int64_t hi, int *out,
                            sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "gemma4.%s", sfx);
    const int64_t kv = sprig_gguf_find_kv(g, key);
    if (kv < 0) return required ? sprig_err(err, SPRIG_E_FORMAT, "%s: missing key '%s'", sprig_gguf_path(g), key) : SPRIG_OK;
    int64_t v = 0;
    sprig_status st;
    if (sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR) {
        int et = 0;
        uint64_t cnt = 0;
        if ((st = sprig_gguf_get_arr(g, key, &et, &cnt, true, err)) != SPRIG_OK) return st;
        if (cnt != (uint64_t)n || et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR || et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be an integer or %d of them (one per layer)", sprig_gguf_path(g),
                             key, n);
        v = sprig_gguf_arr_int(g, kv, (uint64_t)l);
    } else if (sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_BOOL) {
        bool b = false;
        if ((st = sprig_gguf_get_bool(g, key, &b, true, err)) != SPRIG_OK) return st;
        v = b;
    } else if ((st = sprig_gguf_get_i64(g, key, &v, true, err)) != SPRIG_OK) {
        return st;
    }
    if (v < lo || v > hi)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]",
                         sprig_gguf_path(g), key, v, lo, hi);
    *out = (int)v;
    return SPRIG_OK;
}

/* The target's facts as llama.cpp's loader derives them (its defaults where a key is absent: value_length
 * = key_length = dim / heads, rope.dimension_count = key_length, rope.dimension_count_swa = the global one,
 * rope bases 10000), and the defaults of the assistant's own shape. */
sprig_status sprig_mkmodel_target(struct sprig_mkmodel_params *p, sprig_error *err)
{
    if (!p->target)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "mkmodel: gemma4-assistant needs a target (the gemma4 model it drafts for)");
    sprig_gguf *g = sprig_gguf_open(p->target, err);
    if (!g) return err ? err->code : SPRIG_E_FORMAT;
    const char *path = sprig_gguf_path(g), *arch = "";
    size_t alen = 0;
    sprig_status st = sprig_gguf_get_str(g, "general.architecture", &arch, &alen, false, err);
    if (st != SPRIG_OK) goto done;
    if (alen != 6 || memcmp(arch, "gemma4", 6)) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: general.architecture is '%.*s', not gemma4 (a gemma4-assistant drafts for a "
                       "gemma4 model)", path, (int)(alen < 64 ? alen : 64), arch);
        goto done;
    }
    int D = 0, TL = 0, ctx = 0, window = 0, heads = 0, hd = 0, hd_v = 0, hd_swa = 0, hd_swa_v = 0, rot = 0, rot_swa = 0, shared = 0;
    int kv[2] = { 0, 0 }, sw[2] = { 0, 0 };
    float base = 10000.0f, base_swa = 10000.0f, eps = 0;
#define T_INT(sfx, l, req, lo, hi, out) do { if ((st = tgt_int(g, sfx, l, TL, req, lo, hi, out, err)) != SPRIG_OK) goto done; } while (0)
    T_INT("embedding_length", 0, true, 2, 1 << 16, &D);
    T_INT("block_count", 0, true, 1, SPRIG_MKMODEL_MAX_LAYERS, &TL);
    T_INT("context_length", 0, true, 1, 1 << 24, &ctx);
    T_INT("attention.sliding_window", 0, true, 1, 1 << 24, &window);
    T_INT("attention.shared_kv_layers", 0, false, 0, TL, &shared);
    if (TL < 2) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: the target has %d layer(s); a gemma4-assistant reads its layers n_layer - 2 "
                       "and n_layer - 1", path, TL);
        goto done;
    }
    /* the layers n - 2 and n - 1 whose caches the assistant reads, through the target's own sharing
     * (its layers from n_kv on reuse layer n_kv - 2 (sliding) or n_kv - 1 (global)) */
    for (int i = 0; i < 2; i++) {
        const int l = TL - 2 + i, n_kv = TL - shared;
        T_INT("attention.sliding_window_pattern", l, true, 0, 1, &sw[i]);
        int src = l;
        if (l >= n_kv) src = n_kv - (sw[i] ? 2 : 1);
        if (src < 0) {
            st = sprig_err(err, SPRIG_E_FORMAT, "%s: key 'gemma4.attention.shared_kv_layers' = %d leaves layer %d no cache to reuse",
                           path, shared, l);
            goto done;
        }
        T_INT("attention.head_count", src, true, 1, 1 << 12, &heads);
        kv[i] = heads;
        T_INT("attention.head_count_kv", src, false, 1, 1 << 12, &kv[i]);
        T_INT("attention.head_count", l, true, 1, 1 << 12, &heads);   /* the default query heads: layer n - 1's */
    }
    int heads0 = 0;
    T_INT("attention.head_count", 0, true, 1, 1 << 12, &heads0);
    hd = D / heads0;
    T_INT("attention.key_length", 0, false, 2, 4096, &hd);
    hd_v = D / heads0;
    T_INT("attention.value_length", 0, false, 2, 4096, &hd_v);
    T_INT("attention.key_length_swa", 0, true, 2, 4096, &hd_swa);
    T_INT("attention.value_length_swa", 0, true, 2, 4096, &hd_swa_v);
    if (hd != hd_v || hd_swa != hd_swa_v || hd % 2 || hd_swa % 2) {
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: key_length %d / value_length %d, key_length_swa %d / value_length_swa %d: a gemma4 "
                       "model has equal, even K and V head sizes", path, hd, hd_v, hd_swa, hd_swa_v);
        goto done;
    }
    rot = hd;
    T_INT("rope.dimension_count", 0, false, 2, hd, &rot);
    rot_swa = rot;
    T_INT("rope.dimension_count_swa", 0, false, 2, hd_swa, &rot_swa);
#undef T_INT
    if ((st = sprig_gguf_get_f32(g, "gemma4.attention.layer_norm_rms_epsilon", &eps, true, err)) != SPRIG_OK) goto done;
    if ((st = sprig_gguf_get_f32(g, "gemma4.rope.freq_base", &base, false, err)) != SPRIG_OK) goto done;
    if ((st = sprig_gguf_get_f32(g, "gemma4.rope.freq_base_swa", &base_swa, false, err)) != SPRIG_OK) goto done;
    int n_vocab = 0;
    if ((st = vocab_count(g, &n_vocab, err)) != SPRIG_OK) goto done;
    p->tgt.dim = D;
    p->tgt.n_layers = TL;
    p->tgt.n_rot = rot;
    p->tgt.n_rot_swa = rot_swa;
    p->tgt.rope_freq_base_swa = base_swa;
    p->tgt.swa_n2 = sw[0];
    p->tgt.swa_n1 = sw[1];
    p->vocab = n_vocab;
    p->ctx = ctx;
    p->window = window;
    p->head_dim = hd;
    p->head_dim_swa = hd_swa;
    p->n_kv_heads = kv[0];
    p->n_kv_heads_global = kv[1];
    p->rope_freq_base = base;
    p->rms_eps = eps;
    if (!p->dim) {
        p->dim = D / 2 / 32 * 32;
        if (p->dim < 32) p->dim = 32;
        if (p->dim == D) p->dim = D + 32;
    }
    if (!p->n_layers) p->n_layers = 2;
    if (!p->n_heads) p->n_heads = heads;
    if (!p->ffn) p->ffn = 4 * p->dim;
done:
    sprig_gguf_close(g);
    return st;
}

/* every tokenizer.* key of g (but its chat template when one is given) */
static sprig_status copy_vocab(sprig_gguf_writer *w, const sprig_gguf *g, bool skip_template, sprig_error *err)
{
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
        const char *k = sprig_gguf_kv_key(g, i);
        if (strncmp(k, "tokenizer.", 10) || (skip_template && !strcmp(k, "tokenizer.chat_template"))) continue;
        sprig_status st = sprig_gguf_w_copy_kv(w, g, i, err);
        if (st != SPRIG_OK) return st;
    }
    return SPRIG_OK;
}

#define TRY(x) do { if ((st = (x)) != SPRIG_OK) goto done; } while (0)

/* gemma4-assistant's keys (p resolved by sprig_mkmodel_target): the assistant's own shape, the target's
 * dim as embedding_length_out, the target's head sizes / kv heads / window / RoPE (see mkmodel.h) */
static sprig_status assistant_keys(sprig_gguf_writer *w, const struct sprig_mkmodel_params *p, sprig_error *err)
{
    const char *an = "gemma4-assistant";
    const int L = p->n_layers;
    int32_t kv_heads[SPRIG_MKMODEL_MAX_LAYERS];
    uint8_t sliding[SPRIG_MKMODEL_MAX_LAYERS];
    for (int l = 0; l < L; l++) {
        kv_heads[l] = as_kv_heads(p, l);
        sliding[l] = as_sliding(p, l);
    }
    sprig_status st;
    TRY(w_arch_u32(w, an, "vocab_size", (uint32_t)p->vocab, err));
    TRY(w_arch_u32(w, an, "context_length", (uint32_t)p->ctx, err));
    TRY(w_arch_u32(w, an, "embedding_length", (uint32_t)p->dim, err));
    TRY(w_arch_u32(w, an, "embedding_length_out", (uint32_t)p->tgt.dim, err));
    TRY(w_arch_u32(w, an, "block_count", (uint32_t)L, err));
    TRY(w_arch_u32(w, an, "nextn_predict_layers", (uint32_t)L, err));
    TRY(w_arch_u32(w, an, "feed_forward_length", (uint32_t)p->ffn, err));
    TRY(w_arch_u32(w, an, "attention.head_count", (uint32_t)p->n_heads, err));
    TRY(w_arch_arr(w, an, "attention.head_count_kv", SPRIG_GGUF_I32, kv_heads, L, err));
    TRY(w_arch_u32(w, an, "attention.key_length", (uint32_t)p->head_dim, err));
    TRY(w_arch_u32(w, an, "attention.value_length", (uint32_t)p->head_dim, err));
    TRY(w_arch_u32(w, an, "attention.key_length_swa", (uint32_t)p->head_dim_swa, err));
    TRY(w_arch_u32(w, an, "attention.value_length_swa", (uint32_t)p->head_dim_swa, err));
    TRY(w_arch_u32(w, an, "rope.dimension_count", (uint32_t)p->tgt.n_rot, err));
    TRY(w_arch_u32(w, an, "rope.dimension_count_swa", (uint32_t)p->tgt.n_rot_swa, err));
    TRY(w_arch_f32(w, an, "rope.freq_base", p->rope_freq_base, err));
    TRY(w_arch_f32(w, an, "rope.freq_base_swa", p->tgt.rope_freq_base_swa, err));
    TRY(w_arch_f32(w, an, "attention.layer_norm_rms_epsilon", p->rms_eps, err));
    TRY(w_arch_u32(w, an, "attention.sliding_window", (uint32_t)p->window, err));
    TRY(w_arch_arr(w, an, "attention.sliding_window_pattern", SPRIG_GGUF_BOOL, sliding, L, err));
done:
    return st;
}

/* qwen35's keys (mkmodel.h), as the converter writes them; recurrent_layers as attention.recurrent_layers
 * (one bool per block, the MTP layer false) instead of full_attention_interval */
static sprig_status qwen35_keys(sprig_gguf_writer *w, const struct sprig_mkmodel_params *p, const struct mk_arch *a, sprig_error *err)
{
    const char *an = a->name;
    const int L = p->n_layers, N = L + q35_mtp(p), HD = head_size(p);
    int32_t sec[4];
    q35_sections(p, sec);
    sprig_status st;
    TRY(w_arch_u32(w, an, "vocab_size", (uint32_t)p->vocab, err));
    TRY(w_arch_u32(w, an, "context_length", (uint32_t)p->ctx, err));
    TRY(w_arch_u32(w, an, "embedding_length", (uint32_t)p->dim, err));
    TRY(w_arch_u32(w, an, "block_count", (uint32_t)N, err));
    if (p->mtp) TRY(w_arch_u32(w, an, "nextn_predict_layers", 1, err));
    TRY(w_arch_u32(w, an, "feed_forward_length", (uint32_t)p->ffn, err));
    TRY(w_arch_u32(w, an, "attention.head_count", (uint32_t)p->n_heads, err));
    TRY(w_arch_u32(w, an, "attention.head_count_kv", (uint32_t)p->n_kv_heads, err));
    TRY(w_arch_u32(w, an, "attention.key_length", (uint32_t)HD, err));
    TRY(w_arch_u32(w, an, "attention.value_length", (uint32_t)HD, err));
    TRY(w_arch_f32(w, an, "attention.layer_norm_rms_epsilon", p->rms_eps, err));
    TRY(w_arch_f32(w, an, "rope.freq_base", p->rope_freq_base, err));
    TRY(w_arch_u32(w, an, "rope.dimension_count", (uint32_t)q35_rot(p), err));
    TRY(w_arch_arr(w, an, "rope.dimension_sections", SPRIG_GGUF_I32, sec, 4, err));
    TRY(w_arch_u32(w, an, "ssm.conv_kernel", (uint32_t)q35_conv(p), err));
    TRY(w_arch_u32(w, an, "ssm.state_size", (uint32_t)q35_state(p), err));
    TRY(w_arch_u32(w, an, "ssm.group_count", (uint32_t)q35_k_heads(p), err));
    TRY(w_arch_u32(w, an, "ssm.time_step_rank", (uint32_t)q35_v_heads(p), err));
    TRY(w_arch_u32(w, an, "ssm.inner_size", (uint32_t)(q35_state(p) * q35_v_heads(p)), err));
    if (p->recurrent_layers) {
        uint8_t recr[SPRIG_MKMODEL_MAX_LAYERS];
        for (int l = 0; l < N; l++) recr[l] = q35_recurrent(p, l);
        TRY(w_arch_arr(w, an, "attention.recurrent_layers", SPRIG_GGUF_BOOL, recr, N, err));
    } else {
        TRY(w_arch_u32(w, an, "full_attention_interval", (uint32_t)q35_interval(p), err));
    }
    if (a->moe) {   /* qwen35moe: as the converter writes them (no expert_shared_count) */
        TRY(w_arch_u32(w, an, "expert_count", (uint32_t)moe_e(p), err));
        TRY(w_arch_u32(w, an, "expert_used_count", (uint32_t)moe_k(p), err));
        TRY(w_arch_u32(w, an, "expert_feed_forward_length", (uint32_t)moe_f(p), err));
        TRY(w_arch_u32(w, an, "expert_shared_feed_forward_length", (uint32_t)moe_s(p), err));
    }
done:
    return st;
}

sprig_status sprig_mkmodel_write(const struct sprig_mkmodel_params *pin, const char *path, sprig_error *err)
{
    struct sprig_mkmodel_params pv = *pin;
    const struct sprig_mkmodel_params *p = &pv;
    sprig_gguf *vsrc = NULL;
    sprig_status st;
    const struct mk_arch *a0 = mk_arch_find(pin->arch);
    if (a0 && a0->assistant) {   /* the target's facts; its tokenizer is the vocabulary */
        if ((st = sprig_mkmodel_target(&pv, err)) != SPRIG_OK) return st;
        vsrc = sprig_gguf_open(pv.target, err);
        if (!vsrc) return err ? err->code : SPRIG_E_FORMAT;
    } else if (pin->vocab_from) {   /* the vocabulary size is the source's */
        vsrc = sprig_gguf_open(pin->vocab_from, err);
        if (!vsrc) return err ? err->code : SPRIG_E_FORMAT;
        if ((st = vocab_count(vsrc, &pv.vocab, err)) != SPRIG_OK) {
            sprig_gguf_close(vsrc);
            return st;
        }
    }
    st = sprig_mkmodel_validate(p, err);
    if (st != SPRIG_OK) {
        sprig_gguf_close(vsrc);
        return st;
    }
    const struct mk_arch *arch = mk_arch_find(p->arch);
    const char *an = arch->name;
    const int L = p->n_layers, HDIM = head_size(p);
    const int64_t D = p->dim, F = p->ffn, V = p->vocab, KV = (int64_t)HDIM * p->n_kv_heads, Q = (int64_t)HDIM * p->n_heads;
    int64_t max_q = Q, n_attn_v = L;   /* gemma4: the widest attn_q of any layer; the attn_v tensors written */
    if (arch->per_layer) {
        n_attn_v = 0;
        for (int l = 0; l < L; l++) {
            if ((int64_t)g4_head(p, l) * p->n_heads > max_q) max_q = (int64_t)g4_head(p, l) * p->n_heads;
            n_attn_v += g4_has_v(p, l);
        }
    }
    if (arch->assistant)
        for (int l = 0; l < L; l++)
            if ((int64_t)as_head(p, l) * p->n_heads > max_q) max_q = (int64_t)as_head(p, l) * p->n_heads;
    const int NL = arch->hybrid ? L + q35_mtp(p) : L;   /* qwen35: block_count, the MTP layer included */
    if (arch->hybrid) {   /* ssm_out's rows (S x Hv), nextn.eh_proj's (2 D) */
        const int64_t vd = (int64_t)q35_state(p) * q35_v_heads(p);
        if (vd > max_q) max_q = vd;
        if (2 * D > max_q) max_q = 2 * D;
        n_attn_v = NL;   /* one attn_qkv or attn_v per block */
    }
    const int64_t PL = (int64_t)p->per_layer_embd * L;   /* gemma4: per_layer_token_embd's rows */
    struct ropef ropef = { p->rope_freq_base, HDIM };
    uint32_t ftype = 0;
    sprig_mkmodel_file_type(p->type, &ftype);
    struct sprig_ftype pure = { sprig_type_name(p->type), ftype, p->type, false };
    struct sprig_qmix mix;   /* per-tensor types, as llama-quantize chooses them for this layout */
    sprig_qmix_init(&mix, p->ftype ? p->ftype : &pure, false,
                    &(struct sprig_qmix_model){ .arch = an, .n_layer = NL, .n_head = p->n_heads,
                                                .n_head_kv = arch->per_layer ? g4_kv_heads(p, 0) : p->n_kv_heads,
                                                .tied = !has_output(p, arch), .n_attn_v = (int)n_attn_v,
                                                .n_expert = has_moe(arch, p) ? moe_e(p) : 0 });
    if (p->ftype) ftype = p->ftype->ftype;
    struct gen g = { .seed = p->seed, .max_ne0 = D > F ? (D > max_q ? D : max_q) : (F > max_q ? F : max_q) };
    if (has_moe(arch, p) && moe_f(p) > g.max_ne0) g.max_ne0 = moe_f(p);   /* ffn_down_exps' rows */
    if (arch->moe && arch->hybrid && moe_s(p) > g.max_ne0) g.max_ne0 = moe_s(p);   /* ffn_down_shexp's */
    if (PL > g.max_ne0) g.max_ne0 = PL;
    if (arch->assistant && 2 * (int64_t)p->tgt.dim > g.max_ne0) g.max_ne0 = 2 * (int64_t)p->tgt.dim;   /* nextn.pre_projection */
    sprig_gguf_writer *w = NULL;
    size_t n_t = arch->hybrid ? 8 + 25 * (size_t)NL : arch->assistant ? 6 + 13 * (size_t)L
               : arch->per_layer ? 6 + 27 * (size_t)L
               : 3 + (10 + (p->expert_scales ? 3 : 0) + (size_t)arch->n_extra) * (size_t)L;
    struct tdesc *td = calloc(n_t, sizeof *td);
    if (!td) {
        sprig_gguf_close(vsrc);
        return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    }
    g.pool = sprig_pool_create(p->n_threads, err);
    if (!g.pool) { st = err ? err->code : SPRIG_E_NOMEM; goto done; }
    g.nth = sprig_pool_size(g.pool);
    g.scratch = malloc((size_t)g.nth * (size_t)g.max_ne0 * sizeof(float));
    if (!g.scratch) { st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); goto done; }
    w = sprig_gguf_writer_create(err);
    if (!w) { st = SPRIG_E_NOMEM; goto done; }

    const char *name = p->name ? p->name : "sprig-synthetic";
    TRY(sprig_gguf_w_str(w, "general.architecture", an, strlen(an), err));
    TRY(sprig_gguf_w_str(w, "general.name", name, strlen(name), err));
    TRY(sprig_gguf_w_u32(w, "general.file_type", ftype, err));
    TRY(sprig_gguf_w_u32(w, "general.quantization_version", 2, err));
    if (arch->assistant) {
        TRY(assistant_keys(w, p, err));
        goto vocab;
    }
    if (arch->hybrid) {
        TRY(qwen35_keys(w, p, arch, err));
        goto vocab;
    }
    TRY(w_arch_u32(w, an, "vocab_size", (uint32_t)V, err));
    TRY(w_arch_u32(w, an, "context_length", (uint32_t)p->ctx, err));
    TRY(w_arch_u32(w, an, "embedding_length", (uint32_t)D, err));
    TRY(w_arch_u32(w, an, "block_count", (uint32_t)L, err));
    TRY(w_arch_u32(w, an, "feed_forward_length", (uint32_t)F, err));
    TRY(w_arch_u32(w, an, "rope.dimension_count", (uint32_t)HDIM, err));
    TRY(w_arch_u32(w, an, "attention.head_count", (uint32_t)p->n_heads, err));
    int32_t kv_heads[SPRIG_MKMODEL_MAX_LAYERS];
    uint8_t sliding[SPRIG_MKMODEL_MAX_LAYERS];
    if (arch->per_layer) {   /* gemma4: per layer (an i32 array, as the converter writes it) */
        for (int l = 0; l < L; l++) {
            kv_heads[l] = g4_kv_heads(p, l);
            sliding[l] = g4_sliding(p, l);
        }
        TRY(w_arch_arr(w, an, "attention.head_count_kv", SPRIG_GGUF_I32, kv_heads, L, err));
    } else {
        TRY(w_arch_u32(w, an, "attention.head_count_kv", (uint32_t)p->n_kv_heads, err));
    }
    if (p->head_dim || arch->key_length) {
        TRY(w_arch_u32(w, an, "attention.key_length", (uint32_t)HDIM, err));
        TRY(w_arch_u32(w, an, "attention.value_length", (uint32_t)HDIM, err));
    }
    TRY(w_arch_f32(w, an, "attention.layer_norm_rms_epsilon", p->rms_eps, err));
    TRY(w_arch_f32(w, an, "rope.freq_base", p->rope_freq_base, err));
    if (has_moe(arch, p)) {
        TRY(w_arch_u32(w, an, "expert_count", (uint32_t)moe_e(p), err));
        TRY(w_arch_u32(w, an, "expert_used_count", (uint32_t)moe_k(p), err));
        TRY(w_arch_u32(w, an, "expert_feed_forward_length", (uint32_t)moe_f(p), err));
    }
    const bool gemma2 = !strcmp(arch->name, "gemma2");
    if (arch->swa && p->window > 0) {   /* gemma2's converter writes no pattern (llama.cpp: period 2) nor local theta */
        TRY(w_arch_u32(w, an, "attention.sliding_window", (uint32_t)p->window, err));
        if (!gemma2 || p->swa_pattern > 0)
            TRY(w_arch_u32(w, an, "attention.sliding_window_pattern", (uint32_t)(p->swa_pattern > 0 ? p->swa_pattern : 6), err));
        if (!gemma2) TRY(w_arch_f32(w, an, "rope.freq_base_swa", 10000.0f, err));
    }
    if (gemma2) {   /* both caps, as Gemma 2's files carry them */
        TRY(w_arch_f32(w, an, "attn_logit_softcapping", p->attn_softcap > 0 ? p->attn_softcap : 50.0f, err));
        TRY(w_arch_f32(w, an, "final_logit_softcapping", p->final_softcap > 0 ? p->final_softcap : 30.0f, err));
    } else if (arch->swa && p->final_softcap > 0) {
        TRY(w_arch_f32(w, an, "final_logit_softcapping", p->final_softcap, err));
    }
    if (arch->per_layer) {   /* gemma4, as the converter writes them (llama.cpp requires the window, the pattern,
                                embedding_length_per_layer_input and key/value_length_swa) */
        const int hd_swa = p->head_dim_swa ? p->head_dim_swa : HDIM;
        TRY(w_arch_f32(w, an, "rope.freq_base_swa", 10000.0f, err));
        TRY(w_arch_f32(w, an, "final_logit_softcapping", p->final_softcap > 0 ? p->final_softcap : 30.0f, err));
        TRY(w_arch_u32(w, an, "attention.sliding_window", (uint32_t)g4_window(p), err));
        TRY(w_arch_u32(w, an, "attention.shared_kv_layers", (uint32_t)p->shared_kv, err));
        TRY(w_arch_u32(w, an, "embedding_length_per_layer_input", (uint32_t)p->per_layer_embd, err));
        TRY(w_arch_arr(w, an, "attention.sliding_window_pattern", SPRIG_GGUF_BOOL, sliding, L, err));
        TRY(w_arch_u32(w, an, "attention.key_length_swa", (uint32_t)hd_swa, err));
        TRY(w_arch_u32(w, an, "attention.value_length_swa", (uint32_t)hd_swa, err));
        TRY(w_arch_u32(w, an, "rope.dimension_count_swa", (uint32_t)hd_swa, err));
    }
vocab:
    if (vsrc) {
        TRY(copy_vocab(w, vsrc, p->chat_template != NULL, err));
    } else {
        TRY(sprig_gguf_w_str(w, "tokenizer.ggml.model", "llama", 5, err));
        TRY(write_vocab(w, (int)V, err));
        TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1, err));
        TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2, err));
        TRY(sprig_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0, err));
        TRY(sprig_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", true, err));
        TRY(sprig_gguf_w_bool(w, "tokenizer.ggml.add_eos_token", false, err));
    }
    if (p->chat_template)
        TRY(sprig_gguf_w_str(w, "tokenizer.chat_template", p->chat_template, strlen(p->chat_template), err));

    const float std = p->std > 0 ? p->std : 0.02f, std_out = std / sqrtf(2.0f * (float)L);
    size_t k = 0;
    /* a tensor of ne1_ rows of ne0_ (one row: a vector), N(center_, std_) (std_ 0: all ones) */
#define ADDX(nm, nd_, ne0_, ne1_, std_, center_, negexp_) do { \
        SPRIG_ASSERT(k < n_t); \
        struct tdesc *t_ = &td[k]; \
        t_->g = &g; t_->index = k; t_->ne0 = (ne0_); t_->rows = (ne1_); t_->std = (std_); t_->center = (center_); \
        t_->negexp = (negexp_); \
        t_->type = sprig_qmix_type(&mix, nm, (nd_), t_->ne0, SPRIG_TYPE_F32); \
        SPRIG_ASSERT(sprig_row_bytes(t_->type, t_->ne0, &t_->row_bytes)); \
        int64_t ne_[2] = { t_->ne0, t_->rows }; \
        TRY(sprig_gguf_w_tensor_fill(w, nm, t_->type, (nd_), ne_, fill_tensor, t_, err)); \
        k++; \
    } while (0)
#define ADDC(nm, ne0_, ne1_, std_, center_) ADDX(nm, (ne1_) == 1 ? 1 : 2, ne0_, ne1_, std_, center_, false)
    /* a 3-D expert tensor [ne0, ne1, ne2]: ne1 x ne2 rows of ne0 */
#define ADD3(nm, ne0_, ne1_, ne2_, std_) do { \
        SPRIG_ASSERT(k < n_t); \
        struct tdesc *t_ = &td[k]; \
        t_->g = &g; t_->index = k; t_->ne0 = (ne0_); t_->rows = (int64_t)(ne1_) * (ne2_); t_->std = (std_); \
        t_->type = sprig_qmix_type(&mix, nm, 3, t_->ne0, SPRIG_TYPE_F32); \
        SPRIG_ASSERT(sprig_row_bytes(t_->type, t_->ne0, &t_->row_bytes)); \
        int64_t ne_[3] = { t_->ne0, (ne1_), (ne2_) }; \
        TRY(sprig_gguf_w_tensor_fill(w, nm, t_->type, 3, ne_, fill_tensor, t_, err)); \
        k++; \
    } while (0)
#define ADD(nm, ne0_, ne1_, std_) ADDC(nm, ne0_, ne1_, std_, 0.0f)
    ADD("token_embd.weight", D, V, std);
    if (arch->hybrid) ADDC("output_norm.weight", D, 1, 0.2f, 1.0f);   /* qwen35: every norm random around 1 */
    else ADD("output_norm.weight", D, 1, 0);
    if (has_output(p, arch)) ADD("output.weight", D, V, std);
    if (arch->hybrid) {
        /* qwen35 (llama.cpp's qwen35.cpp load_block_trunk / load_block_mtp), in its order; matrices are 2-D
         * even with one row (ADDX), as llama.cpp declares them */
        const int64_t S = q35_state(p), Hv = q35_v_heads(p), Hk = q35_k_heads(p), KC = q35_conv(p), VD = S * Hv,
                      C = 2 * S * Hk + VD;
        const float std_conv = 1.0f / sqrtf(3.0f * (float)KC);
        for (int l = 0; l < NL; l++) {
            char nm[64];
#define BLK(sfx) snprintf(nm, sizeof nm, "blk.%d." sfx, l)
            BLK("attn_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            BLK("post_attention_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            if (q35_recurrent(p, l)) {
                BLK("attn_qkv.weight");
                ADDX(nm, 2, D, C, std, 0.0f, false);
                BLK("attn_gate.weight");
                ADDX(nm, 2, D, VD, std, 0.0f, false);
                BLK("ssm_conv1d.weight");
                ADDX(nm, 2, KC, C, std_conv, 0.0f, false);
                BLK("ssm_dt.bias");
                ADDX(nm, 1, Hv, 1, 0.5f, 0.0f, false);
                BLK("ssm_a");
                ADDX(nm, 1, Hv, 1, 0.6f, -1.0f, true);
                BLK("ssm_beta.weight");
                ADDX(nm, 2, D, Hv, std, 0.0f, false);
                BLK("ssm_alpha.weight");
                ADDX(nm, 2, D, Hv, std, 0.0f, false);
                BLK("ssm_norm.weight");
                ADDC(nm, S, 1, 0.2f, 1.0f);
                BLK("ssm_out.weight");
                ADDX(nm, 2, VD, D, std_out, 0.0f, false);
            } else {
                BLK("attn_q.weight");   /* per head: hd query rows, then hd gate rows */
                ADDX(nm, 2, D, 2 * Q, std, 0.0f, false);
                BLK("attn_k.weight");
                ADDX(nm, 2, D, KV, std, 0.0f, false);
                BLK("attn_v.weight");
                ADDX(nm, 2, D, KV, std, 0.0f, false);
                BLK("attn_output.weight");
                ADDX(nm, 2, Q, D, std_out, 0.0f, false);
                BLK("attn_q_norm.weight");
                ADDC(nm, HDIM, 1, 0.2f, 1.0f);
                BLK("attn_k_norm.weight");
                ADDC(nm, HDIM, 1, 0.2f, 1.0f);
            }
            if (arch->moe) {   /* qwen35moe (llama.cpp's load_block_trunk / load_block_mtp order) */
                const int64_t E = moe_e(p), FE = moe_f(p), FS = moe_s(p);
                BLK("ffn_gate_inp.weight");
                ADDX(nm, 2, D, E, std, 0.0f, false);
                BLK("ffn_down_exps.weight");
                ADD3(nm, FE, D, E, std_out);
                BLK("ffn_gate_exps.weight");
                ADD3(nm, D, FE, E, std);
                BLK("ffn_up_exps.weight");
                ADD3(nm, D, FE, E, std);
                for (int si = 0; p->expert_scales && si < 3; si++) {   /* llama.cpp's generic per-expert scales,
                                                                          read on every layer (n_layer_all) */
                    snprintf(nm, sizeof nm, "blk.%d.ffn_%s_exps.scale", l, expert_scale_names[si]);
                    ADDC(nm, E, 1, 0.2f, 1.0f);
                }
                BLK("ffn_gate_inp_shexp.weight");   /* the shared expert's gate: one value per token */
                ADDX(nm, 1, D, 1, std, 0.0f, false);
                BLK("ffn_gate_shexp.weight");
                ADDX(nm, 2, D, FS, std, 0.0f, false);
                BLK("ffn_up_shexp.weight");
                ADDX(nm, 2, D, FS, std, 0.0f, false);
                BLK("ffn_down_shexp.weight");
                ADDX(nm, 2, FS, D, std_out, 0.0f, false);
            } else {
                BLK("ffn_gate.weight");
                ADDX(nm, 2, D, F, std, 0.0f, false);
                BLK("ffn_down.weight");
                ADDX(nm, 2, F, D, std_out, 0.0f, false);
                BLK("ffn_up.weight");
                ADDX(nm, 2, D, F, std, 0.0f, false);
            }
            if (l == L) {   /* the MTP layer */
                BLK("nextn.eh_proj.weight");   /* input: [enorm(embedding); hnorm(hidden)] */
                ADDX(nm, 2, 2 * D, D, std, 0.0f, false);
                BLK("nextn.enorm.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                BLK("nextn.hnorm.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                if (p->mtp_head) {
                    BLK("nextn.embed_tokens.weight");
                    ADDX(nm, 2, D, V, std, 0.0f, false);
                    BLK("nextn.shared_head_head.weight");
                    ADDX(nm, 2, D, V, std, 0.0f, false);
                }
                BLK("nextn.shared_head_norm.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
            }
#undef BLK
        }
        goto write;
    }
    if (arch->assistant) {
        /* gemma4-assistant (llama.cpp's gemma4-assistant.cpp load_arch_tensors): as gemma4's layers without K and V;
         * token_embd is only the output head (its input is the target's token_embd) */
        const int64_t T = p->tgt.dim;
        ADD("nextn.pre_projection.weight", 2 * T, D, std);
        ADD("nextn.post_projection.weight", D, T, std);
        if (p->masked_embd) {   /* llama.cpp loads them, with no shape (one element), and never uses them */
            ADD("masked_embd_centroids.weight", 1, 1, 0);
            ADD("masked_embd_ordering", 1, 1, 0);
        }
        if (as_any_global(p)) {
            int64_t ne[1] = { HDIM / 2 };
            TRY(sprig_gguf_w_tensor_fill(w, "rope_freqs.weight", SPRIG_TYPE_F32, 1, ne, fill_rope_freqs_gemma4, &ropef, err));
        }
        for (int l = 0; l < L; l++) {
            const int64_t hd = as_head(p, l), q = hd * p->n_heads;
            char nm[64];
#define BLK(sfx) snprintf(nm, sizeof nm, "blk.%d." sfx, l)
            BLK("attn_norm.weight");
            ADD(nm, D, 1, 0);
            BLK("attn_q.weight");
            ADD(nm, D, q, std);
            BLK("attn_output.weight");
            ADD(nm, q, D, std_out);
            BLK("attn_q_norm.weight");
            ADDC(nm, hd, 1, 0.2f, 1.0f);
            BLK("post_attention_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            BLK("ffn_norm.weight");
            ADD(nm, D, 1, 0);
            BLK("ffn_gate.weight");
            ADD(nm, D, F, std);
            BLK("ffn_up.weight");
            ADD(nm, D, F, std);
            BLK("ffn_down.weight");
            ADD(nm, F, D, std_out);
            BLK("post_ffw_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            BLK("layer_output_scale.weight");
            ADDC(nm, 1, 1, 0.1f, 1.0f);
#undef BLK
        }
        goto write;
    }
    if (arch->per_layer) {
        /* gemma4 (llama.cpp's gemma4.cpp load_arch_tensors, dense): norms llama has are ones, Gemma's
         * extra norms random around 1, layer_output_scale a scalar near 1; shared layers (the last
         * shared_kv) have no attn_k / attn_v / attn_k_norm; rope_freqs only when a layer is global */
        const int64_t P = p->per_layer_embd;
        if (P > 0) {
            ADD("per_layer_token_embd.weight", PL, V, std);
            ADD("per_layer_model_proj.weight", D, PL, std);
            ADDC("per_layer_proj_norm.weight", P, 1, 0.2f, 1.0f);
        }
        if (g4_any_global(p)) {
            int64_t ne[1] = { HDIM / 2 };
            TRY(sprig_gguf_w_tensor_fill(w, "rope_freqs.weight", SPRIG_TYPE_F32, 1, ne, fill_rope_freqs_gemma4, &ropef, err));
        }
        for (int l = 0; l < L; l++) {
            const int64_t hd = g4_head(p, l), q = hd * p->n_heads, kv = hd * g4_kv_heads(p, l);
            const bool has_kv = l < L - p->shared_kv;
            char nm[64];
#define BLK(sfx) snprintf(nm, sizeof nm, "blk.%d." sfx, l)
            BLK("attn_norm.weight");
            ADD(nm, D, 1, 0);
            BLK("attn_q.weight");
            ADD(nm, D, q, std);
            if (has_kv) {
                BLK("attn_k.weight");
                ADD(nm, D, kv, std);
            }
            if (g4_has_v(p, l)) {
                BLK("attn_v.weight");
                ADD(nm, D, kv, std);
            }
            BLK("attn_output.weight");
            ADD(nm, q, D, std_out);
            BLK("attn_q_norm.weight");
            ADDC(nm, hd, 1, 0.2f, 1.0f);
            if (has_kv) {
                BLK("attn_k_norm.weight");
                ADDC(nm, hd, 1, 0.2f, 1.0f);
            }
            BLK("post_attention_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            BLK("ffn_norm.weight");
            ADD(nm, D, 1, 0);
            BLK("ffn_gate.weight");
            ADD(nm, D, F, std);
            BLK("ffn_up.weight");
            ADD(nm, D, F, std);
            BLK("ffn_down.weight");
            ADD(nm, F, D, std_out);
            BLK("post_ffw_norm.weight");
            ADDC(nm, D, 1, 0.2f, 1.0f);
            if (has_moe(arch, p)) {   /* llama.cpp's gemma4.cpp: the router with its input scale, the two branches'
                                         norms, the experts and their output scales (the converter's per_expert_scale) */
                const int64_t E = moe_e(p), FE = moe_f(p);
                BLK("ffn_gate_inp.weight");   /* it reads rms_norm(x) / sqrt(D): wider, so routing is as decided as
                                                 qwen3moe's (logits of spread ~ std x sqrt(D)) */
                ADD(nm, D, E, std * sqrtf((float)D));
                BLK("ffn_gate_inp.scale");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                BLK("pre_ffw_norm_2.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                BLK("post_ffw_norm_1.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                BLK("post_ffw_norm_2.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
                BLK("ffn_gate_exps.weight");
                ADD3(nm, D, FE, E, std);
                BLK("ffn_up_exps.weight");
                ADD3(nm, D, FE, E, std);
                BLK("ffn_down_exps.weight");
                ADD3(nm, FE, D, E, std_out);
                BLK("ffn_down_exps.scale");
                ADDC(nm, E, 1, 0.2f, 1.0f);
            }
            if (P > 0) {
                BLK("inp_gate.weight");
                ADD(nm, D, P, std);
                BLK("proj.weight");
                ADD(nm, P, D, std_out);
                BLK("post_norm.weight");
                ADDC(nm, D, 1, 0.2f, 1.0f);
            }
            BLK("layer_output_scale.weight");
            ADDC(nm, 1, 1, 0.1f, 1.0f);
#undef BLK
        }
        goto write;   /* that is all of gemma4's tensors */
    }
    for (int l = 0; l < L; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", l);
        ADD(nm, D, Q, std);
        snprintf(nm, sizeof nm, "blk.%d.attn_k.weight", l);
        ADD(nm, D, KV, std);
        snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", l);
        ADD(nm, D, KV, std);
        snprintf(nm, sizeof nm, "blk.%d.attn_output.weight", l);
        ADD(nm, Q, D, std_out);
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        ADD(nm, D, 1, 0);
        if (arch->moe) {   /* the router (F32, never quantized), then the experts back to back [ne0, ne1, E] */
            const int64_t E = moe_e(p), FE = moe_f(p);
            snprintf(nm, sizeof nm, "blk.%d.ffn_gate_inp.weight", l);
            ADD(nm, D, E, std);
            snprintf(nm, sizeof nm, "blk.%d.ffn_gate_exps.weight", l);
            ADD3(nm, D, FE, E, std);
            snprintf(nm, sizeof nm, "blk.%d.ffn_down_exps.weight", l);
            ADD3(nm, FE, D, E, std_out);
            snprintf(nm, sizeof nm, "blk.%d.ffn_up_exps.weight", l);
            ADD3(nm, D, FE, E, std);
            for (int si = 0; p->expert_scales && si < 3; si++) {   /* llama.cpp's per-expert output scales [E] */
                snprintf(nm, sizeof nm, "blk.%d.ffn_%s_exps.scale", l, expert_scale_names[si]);
                ADDC(nm, E, 1, 0.2f, 1.0f);
            }
        } else {
            snprintf(nm, sizeof nm, "blk.%d.ffn_gate.weight", l);
            ADD(nm, D, F, std);
            snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", l);
            ADD(nm, F, D, std_out);
            snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", l);
            ADD(nm, D, F, std);
        }
        snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", l);
        ADD(nm, D, 1, 0);
    }
    /* the architecture's extra per-layer vectors (F32), then Llama 3's rope_freqs */
    for (int l = 0; l < L; l++)
        for (int e = 0; e < arch->n_extra; e++) {
            const struct extra *x = &arch->extra[e];
            char nm[64];
            snprintf(nm, sizeof nm, x->name, l);
            struct tdesc *t = &td[k];
            t->g = &g; t->index = k; t->type = SPRIG_TYPE_F32; t->rows = 1;
            t->ne0 = x->dim == XD_Q ? Q : x->dim == XD_KV ? KV : x->dim == XD_DIM ? D : HDIM;
            t->std = x->std; t->center = x->center;
            t->row_bytes = (size_t)t->ne0 * sizeof(float);
            int64_t ne[1] = { t->ne0 };
            TRY(sprig_gguf_w_tensor_fill(w, nm, SPRIG_TYPE_F32, 1, ne, fill_tensor, t, err));
            k++;
        }
    if (p->rope_scaling == SPRIG_MKMODEL_ROPE_LLAMA3) {
        int64_t ne[1] = { HDIM / 2 };
        TRY(sprig_gguf_w_tensor_fill(w, "rope_freqs.weight", SPRIG_TYPE_F32, 1, ne, fill_rope_freqs, &ropef, err));
    }
#undef ADD
#undef ADD3
#undef ADDC
#undef ADDX
write:
    TRY(sprig_gguf_writer_write(w, path, err));
done:
    sprig_gguf_close(vsrc);
    sprig_gguf_writer_free(w);
    sprig_pool_free(g.pool);
    free(g.scratch);
    free(td);
    return st;
}
